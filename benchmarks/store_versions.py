"""How many LanceDB versions and fragments a long session leaves, with and without background optimize.

Simulates a session of N steps (one append_messages of 2-3 messages per step, an event
batch every 10 steps, a raw-output spill and an eviction every 25) and prints, per
configuration, what is left on disk and how long loading the transcript takes.

    python benchmarks/store_versions.py [--steps 1000]    # with the package installed (pip install -e .)
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from monad_notebook.events import TOOL_FINISHED, TURN_FINISHED, Event
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.lance import LanceStore

SESSION = "benchmark"
WORDS = ("region", "sales", "grew", "quarter", "mean", "median", "column", "rows", "null", "total")


def prose(rng: random.Random, chars: int) -> str:
    """Incompressible-enough text, so disk sizes resemble real tool output."""
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS) + str(rng.randrange(1000)))
    return " ".join(words)


def step_messages(rng: random.Random, step: int, seq: int) -> list[Message]:
    call = ToolCall(id=f"call-{step}", name="run_python", arguments='{"code": "df.describe()"}')
    out = [
        Message(role="assistant", content="", session=SESSION, seq=seq, step=step, tool_calls=[call]),
        Message(role="tool", content=prose(rng, 800), session=SESSION, seq=seq + 1, step=step, tool_call_id=call.id),
    ]
    if step % 3 == 0:
        out.append(Message(role="user", content=f"next question {step}", session=SESSION, seq=seq + 2, step=step))
    return out


def simulate(root: Path, steps: int, optimize_every: int) -> dict[str, object]:
    store = LanceStore(root, optimize_every=optimize_every)
    store.create_session(SESSION)
    rng = random.Random(0)
    seq, writes, started = 0, 1, time.perf_counter()
    evictable: list[str] = []
    for step in range(steps):
        batch = step_messages(rng, step, seq)
        store.append_messages(batch)
        seq, writes = seq + len(batch), writes + 1
        evictable.append(batch[1].id)
        if step % 10 == 9:
            store.append_events([Event(TOOL_FINISHED, SESSION, {"step": step}), Event(TURN_FINISHED, SESSION, {})])
            writes += 1
        if step % 25 == 24:
            store.save_raw_outputs(SESSION, {f"call-{s}": prose(rng, 4000) for s in range(step - 24, step + 1)})
            store.set_placeholders(SESSION, {i: "[context-cleared]" for i in evictable})
            evictable, writes = [], writes + 2
    store.close()
    write_seconds = time.perf_counter() - started
    full = median_ms(lambda: store.load_messages(SESSION))
    window = median_ms(lambda: store.load_messages(SESSION, after_seq=seq - 50))
    assert len(store.load_messages(SESSION)) == seq
    disk = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return {
        "writes": writes,
        "write_s": write_seconds,
        "load_ms": full,
        "window_ms": window,
        "disk_mb": disk / 1e6,
        "messages": seq,
        "tables": store.tables.table_stats(),
    }


def median_ms(read: Callable[[], object], runs: int = 5) -> float:
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        read()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    results = {}
    for label, every in [("optimize every 50 writes", 50), ("optimize off", 0)]:
        with tempfile.TemporaryDirectory() as tmp:
            results[label] = simulate(Path(tmp) / "db", args.steps, every)

    print(f"### {args.steps} steps, {next(iter(results.values()))['messages']} messages\n")
    print("| configuration | writes | write time (s) | disk (MB) | load all (ms) | load last 50 (ms) |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, r in results.items():
        row = [
            r["writes"],
            f"{r['write_s']:.1f}",
            f"{r['disk_mb']:.1f}",
            f"{r['load_ms']:.1f}",
            f"{r['window_ms']:.1f}",
        ]
        print(f"| {label} | " + " | ".join(map(str, row)) + " |")
    print("\n| configuration | table | versions | fragments | rows |")
    print("|---|---|---:|---:|---:|")
    for label, r in results.items():
        for table, s in r["tables"].items():
            print(f"| {label} | {table} | {s['versions']} | {s['fragments']} | {s['rows']} |")


if __name__ == "__main__":
    main()
