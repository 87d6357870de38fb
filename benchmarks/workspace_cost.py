"""What taking the workspace record costs per tool call, and the block per request, at 10 to 100,000 names.

    python benchmarks/workspace_cost.py [--calls 200] [--sizes 10 1000 10000 100000] [--big-rows 1000000]

The namespace holds ``size`` names: a tenth of them DataFrames (five of them with
``--big-rows`` rows, the rest small), the others ints, strings and lists; the notebook's
directory holds 300 files. Each simulated call does what an agent's python call does (binds
a new frame, grows a list, writes a file with ``to_parquet``, deletes a name), outside the
timing, and hands the record the code it ran, as the python tool does; then
``WorkspaceRecord.take`` is timed: the look at the namespace, the scan of the directory, the
descriptions of what changed and their redaction (the configuration's default redactor), on a
heap settled as the extension settles the kernel's after its first ``%%monad`` cell
(``cell/heap.py``: collected once, then frozen). The write to LanceDB that follows at the step's
commit (one per step, whatever the number of calls) is timed separately, on a real LanceDB in a
temporary directory. The look at the namespace and the scan of the directory are also timed
alone, so a slow machine's share can be told from the record's. Last, the ``<workspace>`` block
each request carries: its size in tokens at the default budget of a 128k window, and the time to
build it. The first look at a large namespace is bounded in time, so it may finish over the first
calls: how many, and the takes' p95 after it, are printed too.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.redaction.redactor import Redactor
from monad_notebook.store.lance import LanceStore
from monad_notebook.workspace.block import budget
from monad_notebook.workspace.file_watch import scan
from monad_notebook.workspace.record import WorkspaceRecord


def namespace(size: int, big_rows: int) -> dict[str, object]:
    ns: dict[str, object] = {"__name__": "__main__", "pd": pd, "np": np}
    big = pd.DataFrame(np.zeros((big_rows, 8)), columns=[f"c{i}" for i in range(8)])
    frames = max(1, size // 10)
    for i in range(size):
        if i < frames:
            ns[f"df_{i}"] = big.copy(deep=False) if i < 5 else pd.DataFrame({"a": [i], "b": [str(i)]})
        elif i % 3 == 0:
            ns[f"n_{i}"] = i
        elif i % 3 == 1:
            ns[f"s_{i}"] = f"value {i}"
        else:
            ns[f"l_{i}"] = list(range(i % 50))
    return ns


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(size: int, calls: int, big_rows: int, root: Path, db: Path) -> dict[str, float]:
    for i in range(300):
        (root / f"data_{i:03}.csv").write_text("a,b\n1,2\n")
    store = LanceStore(db)
    store.create_session(f"s{size}")
    ns = namespace(size, big_rows)
    record = WorkspaceRecord(store, f"s{size}", ns, root=root)
    record.reconfigure(True, Redactor())
    gc.collect()
    gc.freeze()  # as the kernel is after its first %%monad cell (cell/heap.py): what it loaded is out of full GCs
    takes, saves = [], []
    first_look = 0  # calls over which the first look at the namespace was spread (it is bounded in time)
    grown = next(k for k in ns if k.startswith("l_"))
    for call in range(calls):
        code = [f"result_{call} = pd.DataFrame({{'x': [{call}], 'y': [{call * 2}]}})", f"{grown}.append({call})"]
        ns[f"result_{call}"] = pd.DataFrame({"x": [call], "y": [call * 2]})
        ns[grown].append(call)  # type: ignore[union-attr]
        pd.DataFrame({"x": [call]}).to_parquet(root / f"out_{call % 20}.parquet")
        code.append(f"pd.DataFrame({{'x': [{call}]}}).to_parquet('out_{call % 20}.parquet')")
        if call % 5 == 4:
            del ns[f"result_{call - 1}"]
            code.append(f"del result_{call - 1}")
        first_look += record.snapshot.rounds == 0
        started = time.perf_counter()
        record.take(f"call_{call}", "\n".join(code))
        takes.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        record.save()
        saves.append((time.perf_counter() - started) * 1000)
    store.close()
    snapshots, scans, blocks = [], [], []
    counter, limit = TokenCounter("gpt-4o"), budget(None, 128_000)
    for _ in range(calls):  # the two parts of a look whose cost does not depend on what changed, timed alone
        started = time.perf_counter()
        record.snapshot.take(ns, {})
        snapshots.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        scan(root)
        scans.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        block = record.block(counter.count_text, limit)
        blocks.append((time.perf_counter() - started) * 1000)
    steady = takes[first_look:] or takes
    return {
        "first_look_calls": first_look,
        "steady_p95": percentile(steady, 0.95),
        "block_tokens": counter.count_text(block),
        "block_p50": statistics.median(blocks),
        "snapshot_p50": statistics.median(snapshots),
        "scan_p50": statistics.median(scans),
        "take_p50": statistics.median(takes),
        "take_p95": percentile(takes, 0.95),
        "save_p50": statistics.median(saves),
        "save_p95": percentile(saves, 0.95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000, 10000, 100000])
    parser.add_argument("--big-rows", type=int, default=1_000_000)
    args = parser.parse_args()
    print(
        f"{'names':>7} {'take p50 ms':>12} {'take p95 ms':>12} {'LanceDB write p50 ms':>21} {'p95 ms':>8}"
        f" {'snapshot p50 ms':>16} {'scan p50 ms':>12} {'block tokens':>13} {'block p50 ms':>13}"
        f" {'first look: calls':>18} {'take p95 after ms':>18}"
    )
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            root, db = Path(tmp, "notebook"), Path(tmp, "db")
            root.mkdir()
            cwd = os.getcwd()
            try:
                os.chdir(root)
                got = run(size, args.calls, args.big_rows, root, db)
            finally:
                os.chdir(cwd)
        print(
            f"{size:>7,} {got['take_p50']:>12.2f} {got['take_p95']:>12.2f} {got['save_p50']:>21.2f} "
            f"{got['save_p95']:>8.2f} {got['snapshot_p50']:>16.2f} {got['scan_p50']:>12.2f}"
            f" {got['block_tokens']:>13,} {got['block_p50']:>13.2f}"
            f" {got['first_look_calls']:>18} {got['steady_p95']:>18.2f}"
        )


if __name__ == "__main__":
    main()
