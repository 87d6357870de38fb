"""How long a user waits before the first answer: ``%load_ext monad_notebook``, then the first cell.

Each run is a fresh Python process with an IPython shell (nothing imported before), a
temporary ``MONAD_HOME`` and the scripted demo model, so no network and no model time:
what is measured is the extension's own cost. The first cell is run right after
``%load_ext`` (the worst case: the background warm-up has had no time) and, in a second
run, after a pause as a user typing would give it.

    python benchmarks/startup.py [--runs 5] [--pause 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
started = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
ipython_ready = time.perf_counter()
shell.run_line_magic("load_ext", "monad_notebook")
loaded = time.perf_counter()
heavy_at_load = sorted(m for m in ("lancedb", "openai") if m in sys.modules)
time.sleep(float(sys.argv[1]))
first = time.perf_counter()
shell.run_cell_magic("monad", "--model scripted-demo", "Load data/sales.csv and tell me what's in it.")
done = time.perf_counter()
print(json.dumps({"ipython": ipython_ready - started, "load_ext": loaded - ipython_ready,
                  "first_cell": done - first, "heavy_at_load": heavy_at_load}))
"""


def run_once(pause: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "MONAD_HOME": home}
        for name in ("OPENAI_API_KEY", "MONAD_CONFIG"):
            env.pop(name, None)
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(pause)], cwd=home, env=env, capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0 or "monad:" in done.stderr:
            raise SystemExit(f"the child run failed: {done.stderr.strip().splitlines()[-1:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pause", type=float, default=3.0, help="seconds between %%load_ext and the first cell")
    args = parser.parse_args()
    print(f"`python benchmarks/startup.py --runs {args.runs} --pause {args.pause:g}`: fresh process per run\n")
    print("| first cell | runs | `%load_ext` p50 (s) | first cell p50 (s) | lancedb/openai loaded by `%load_ext` |")
    print("|---|---:|---:|---:|---|")
    for label, pause in (("right after `%load_ext`", 0.0), (f"after a {args.pause:g} s pause", args.pause)):
        rows = [run_once(pause) for _ in range(args.runs)]
        load = statistics.median(float(r["load_ext"]) for r in rows)  # type: ignore[arg-type]
        first = statistics.median(float(r["first_cell"]) for r in rows)  # type: ignore[arg-type]
        heavy = sorted({m for r in rows for m in r["heavy_at_load"]})  # type: ignore[attr-defined]
        print(f"| {label} | {args.runs} | {load:.2f} | {first:.2f} | {', '.join(heavy) or 'no'} |")


if __name__ == "__main__":
    main()
