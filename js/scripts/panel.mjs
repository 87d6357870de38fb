// Build the context panel's one ES module, ../monad_notebook/widget/panel.js, from its parts in panel/.
//
// anywidget hands the browser a single module, from which relative imports cannot resolve, so
// webpack joins the parts into one scope (module concatenation), left readable: no minifying,
// module ids named by path, so the build is the same whichever directory it runs in.

import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import webpack from 'webpack';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const widget = join(here, '..', 'monad_notebook', 'widget');

if (process.argv.includes('--clean')) {
  rmSync(join(widget, 'panel.js'), { force: true });
  process.exit(0);
}

const banner = '// Built from js/panel/ by `cd js && npm run build` (scripts/panel.mjs): edit the parts there, not this file.';
const compiler = webpack({
  mode: 'production',
  context: here,
  entry: './panel/index.js',
  target: ['web', 'es2020'],
  experiments: { outputModule: true },
  output: { path: widget, filename: 'panel.js', library: { type: 'module' } },
  optimization: { minimize: false, moduleIds: 'named' },
  plugins: [new webpack.BannerPlugin({ banner, raw: true })],
  devtool: false,
  performance: { hints: false }
});

compiler.run((error, stats) => {
  if (error || stats.hasErrors()) {
    console.error(error ?? stats.toString({ all: false, errors: true }));
    process.exitCode = 1;
  }
  compiler.close(() => {});
});
