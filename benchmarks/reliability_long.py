"""The long reliability runs: many seeded kill -9s of writers and compactions, minutes of concurrent appends.

Each run starts a child (``tests/reliability/writer.py``) that writes through ``LanceStore``
or ``Session`` and prints an ack after each write returns; the child is killed with SIGKILL
at a seeded random moment, and the database is then checked: every acknowledged batch is
present exactly once and whole, no tool call is orphaned, a summary is whole or absent.
Then two kernels (``tests/reliability/kernel.py``) share one session, taking turns and at
once: no seq twice, every acknowledged turn stored once, refusals clean, no orphan tool
result in any request, every message behind the final boundary summarized.

    python benchmarks/reliability_long.py [--kills 200] [--compactions 20] [--procs 4] [--seconds 120]
                                          [--shared-turns 60] [--shared-seconds 60]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the writer lives with the tests

from monad_notebook.store.lance import LanceStore
from tests.reliability import sharing
from tests.reliability.crashes import batch_problems, finish, kill_at_random, start
from tests.reliability.writer import BATCH_SIZE


@dataclass
class Row:
    scenario: str
    runs: int = 0
    acked: int = 0
    bad_runs: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def kill_writer(seed: int, root: Path) -> tuple[int, list[str]]:
    db = root / f"kill-{seed}"
    optimize_every = random.Random(seed).choice(["1", "2", "4", "50"])
    outcome = kill_at_random("batches", db, "crash", seed, "1000000", optimize_every, max_delay=3.0)
    if outcome.returncode != -9:
        return len(outcome.acks), [f"seed {seed}: writer ended by itself ({outcome.stderr.strip()[-200:]})"]
    store = LanceStore(db)
    problems = [f"seed {seed}: {p}" for p in batch_problems(store, "crash", outcome.acked_ids, BATCH_SIZE)]
    store.close()
    return len(outcome.acks), problems


def kill_compaction(seed: int, root: Path) -> tuple[int, list[str]]:
    db = root / f"compact-{seed}"
    outcome = kill_at_random("compact", db, "folded", seed, "1000", max_delay=6.0)
    store = LanceStore(db)
    acked = [a["summary"] for a in outcome.acks]
    problems: list[str] = []
    try:
        summary = store.load_summary("folded")
        if summary is None and acked:
            problems.append(f"seed {seed}: {len(acked)} acknowledged summaries, none stored")
        elif summary is not None and (not summary.text.strip() or summary.boundary_seq < max(acked, default=-1)):
            problems.append(f"seed {seed}: summary older than acknowledged or empty")
    except Exception as exc:  # a report, not a crash: count it and go on
        problems.append(f"seed {seed}: {type(exc).__name__}: {exc}")
    store.close()
    return len(acked), problems


def concurrent_appends(procs: int, seconds: float, root: Path) -> tuple[int, list[str]]:
    db = root / "concurrent"
    children = {f"proc{i}": start("batches", db, f"proc{i}", 100 + i, "1000000", "3") for i in range(procs)}
    time.sleep(seconds)
    outcomes = {name: finish(child, kill_after=0) for name, child in children.items()}
    store = LanceStore(db)
    problems = []
    for name, outcome in outcomes.items():
        if outcome.returncode != -9:
            problems.append(f"{name} died early: {outcome.stderr.strip()[-200:]}")
        problems += [f"{name}: {p}" for p in batch_problems(store, name, outcome.acked_ids, BATCH_SIZE)]
    store.close()
    return sum(len(o.acks) for o in outcomes.values()), problems


def shared_session(root: Path, turns: int, seconds: float) -> list[Row]:
    """Two kernels on one session: taking ``turns`` turns in alternation, then running at once."""
    taking = sharing.take_turns(root / "taking-turns", "shared", turns)
    both = sharing.at_once(root / "at-once", "shared", seconds)
    rows = []
    for scenario, run, db in (
        (f"2 kernels, 1 session, {turns} turns", taking, root / "taking-turns"),
        (f"2 kernels, 1 session, at once {seconds:g} s", both, root / "at-once"),
    ):
        store = LanceStore(db)
        problems = sharing.problems(run, store, "shared")
        if run is taking:
            problems += sharing.saw_the_other_kernels_turns(run)
        store.close()
        name = f"{scenario} ({len(run.answers('refused'))} refused, {len(run.answers('summary'))} summaries)"
        rows.append(Row(name, 1, len(run.answers("turn")), bool(problems), run.seconds, problems))
    return rows


def run_many(row: Row, seeds: range, job: Callable[[int, Path], tuple[int, list[str]]], root: Path, jobs: int) -> Row:
    started = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        for acked, problems in pool.map(lambda s: job(s, root), seeds):
            row.runs += 1
            row.acked += acked
            row.bad_runs += bool(problems)
            row.problems += problems
            print(f"\r{row.scenario}: {row.runs}/{len(seeds)} runs, {row.bad_runs} bad", end="", file=sys.stderr)
    print(file=sys.stderr)
    row.seconds = time.perf_counter() - started
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200, help="seeded kill -9 runs of a batch writer")
    parser.add_argument("--compactions", type=int, default=20, help="seeded kill -9 runs during compactions")
    parser.add_argument("--procs", type=int, default=4, help="processes appending to one database at once")
    parser.add_argument("--seconds", type=float, default=120, help="how long they append")
    parser.add_argument("--jobs", type=int, default=2, help="kill runs in parallel, each on its own database")
    parser.add_argument("--shared-turns", type=int, default=60, help="turns two kernels take in one session")
    parser.add_argument("--shared-seconds", type=float, default=60, help="how long they run turns at once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = [
            run_many(Row("kill -9 batch writer"), range(args.kills), kill_writer, root, args.jobs),
            run_many(Row("kill -9 during compaction"), range(args.compactions), kill_compaction, root, args.jobs),
        ]
        started = time.perf_counter()
        print(f"{args.procs} processes appending for {args.seconds:g} s", file=sys.stderr)
        acked, problems = concurrent_appends(args.procs, args.seconds, root)
        name = f"{args.procs} processes x {args.seconds:g} s"
        rows.append(Row(name, 1, acked, bool(problems), time.perf_counter() - started, problems))
        rows += shared_session(root, args.shared_turns, args.shared_seconds)
    print(f"{'scenario':64} {'runs':>5} {'acked writes':>13} {'bad runs':>9} {'seconds':>8}")
    for row in rows:
        print(f"{row.scenario:64} {row.runs:>5} {row.acked:>13} {row.bad_runs:>9} {row.seconds:>8.1f}")
    for row in rows:
        for problem in row.problems[:10]:
            print(f"  {row.scenario}: {problem}")


if __name__ == "__main__":
    main()
