// Build the prebuilt extension into ../monad_notebook/labextension with @jupyterlab/builder.
//
// The builder reads JupyterLab's core package metadata from <core-path>/package.json; it comes
// from @jupyterlab/core-meta, pinned in package-lock.json, so the build depends on the lockfile
// alone, never on which JupyterLab happens to be installed in Python.

import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const require = createRequire(join(here, 'package.json'));
const output = join(here, '..', 'monad_notebook', 'labextension');

if (process.argv.includes('--clean')) {
  rmSync(join(here, 'lib'), { recursive: true, force: true });
  rmSync(output, { recursive: true, force: true });
  process.exit(0);
}

const core = join(here, 'node_modules', '.core-meta');
mkdirSync(core, { recursive: true });
copyFileSync(require.resolve('@jupyterlab/core-meta/core.package.json'), join(core, 'package.json'));
rmSync(output, { recursive: true, force: true });
const builder = require.resolve('@jupyterlab/builder/lib/build-labextension.js');
const run = spawnSync(process.execPath, [builder, '--core-path', core, here], { stdio: 'inherit' });
process.exit(run.status ?? 1);
