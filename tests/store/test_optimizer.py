"""The background optimize runs in a helper process at the lowest priority, and falls back to the kernel.

Real LanceDB in a temp dir and a real helper process: each test gets a helper of its own,
so killing or slowing one never touches another test's store.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from monad_notebook.messages import Message
from monad_notebook.store.lance import LanceStore
from monad_notebook.store.optimize_process import serve
from monad_notebook.store.optimizer import MAX_FAILURES, OptimizeWorker

# A helper that takes SLOW seconds before each pass: a pass still in hand, deterministically.
SLOW = 2.0
SLOW_HELPER = f"""
import sys, time
from monad_notebook.store import optimize_process
def slowly(lines):
    for line in lines:
        time.sleep({SLOW})
        yield line
optimize_process.serve(slowly(sys.stdin), sys.stdout)
"""
# A helper that answers LATE seconds after each pass: writes land after the pass read the table.
LATE = 4.0
LATE_HELPER = f"""
import sys, time
from monad_notebook.store import optimize_process
class Late:
    def write(self, text):
        time.sleep({LATE})
        sys.stdout.write(text)
    def flush(self):
        sys.stdout.flush()
optimize_process.serve(sys.stdin, Late())
"""


def user(seq: int) -> Message:
    return Message(role="user", content=f"question {seq} about the churn extract", session="s", seq=seq)


def write(store: LanceStore, seqs: range) -> None:
    for seq in seqs:
        store.append_messages([user(seq)])


def compacted(store: LanceStore) -> bool:
    """The passes merged one fragment per write into at most two (an indexed one is kept apart from newer rows)."""
    return store.tables.table_stats()["messages"]["fragments"] <= 2


def wait_until(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


def wait_for_passes(store: LanceStore, runs: int, timeout: float = 60) -> None:
    wait_until(lambda: store.tables.passes.runs >= runs, timeout)
    assert store.tables.passes.runs >= runs


@pytest.fixture
def worker() -> Iterator[OptimizeWorker]:
    helper = OptimizeWorker()
    yield helper
    helper.close()


def test_a_background_pass_runs_in_a_helper_at_the_lowest_priority_and_compacts(
    tmp_path: Path, worker: OptimizeWorker
) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=10, optimize_quiet=0, optimize_worker=worker)
    write(store, range(10))
    wait_for_passes(store, 1)

    assert worker.pid is not None and worker.pid != os.getpid()
    if hasattr(os, "getpriority"):
        assert os.getpriority(os.PRIO_PROCESS, worker.pid) == 19
    assert store.tables.table_stats()["messages"]["fragments"] == 1
    assert [m.seq for m in store.load_messages("s")] == list(range(10))
    assert store.tables.passes.last_error is None
    store.close()


def test_a_turns_write_and_read_return_while_the_helper_is_slow_and_close_waits_for_it(tmp_path: Path) -> None:
    slow = OptimizeWorker([sys.executable, "-c", SLOW_HELPER])
    store = LanceStore(tmp_path / "db", optimize_every=3, optimize_quiet=0, optimize_worker=slow)
    write(store, range(3))
    wait_until(lambda: slow.pid is not None, timeout=5)

    started = time.perf_counter()
    store.append_messages([user(3)])
    loaded = store.load_messages("s")
    waited = time.perf_counter() - started

    assert store.tables.passes.runs == 0
    assert waited < SLOW / 2
    assert [m.seq for m in loaded] == [0, 1, 2, 3]
    store.close()
    assert store.tables.passes.runs == 1
    assert store.tables.table_stats()["messages"]["fragments"] == 1
    slow.close()


def test_writes_that_land_while_a_pass_runs_get_the_next_pass_without_another_write(tmp_path: Path) -> None:
    late = OptimizeWorker([sys.executable, "-c", LATE_HELPER])
    store = LanceStore(tmp_path / "db", optimize_every=10, optimize_quiet=0, optimize_worker=late)
    write(store, range(10))
    wait_until(lambda: compacted(store))
    assert compacted(store) and store.tables.passes.runs == 0  # the pass committed; its answer is LATE seconds away
    write(store, range(10, 25))  # a burst, then the session goes quiet

    store.tables.passes.wait()

    assert store.tables.passes.runs == 2
    assert compacted(store)
    assert [m.seq for m in store.load_messages("s")] == list(range(25))
    store.close()
    late.close()


def test_a_helper_that_cannot_start_leaves_the_pass_to_the_kernel_and_is_given_up(tmp_path: Path) -> None:
    broken = OptimizeWorker([sys.executable, "-c", "raise SystemExit(3)"])
    store = LanceStore(tmp_path / "db", optimize_every=3, optimize_quiet=0, optimize_worker=broken)
    for round_ in range(MAX_FAILURES + 1):
        write(store, range(3 * round_, 3 * round_ + 3))
        wait_for_passes(store, round_ + 1)

    assert broken.failures == MAX_FAILURES
    assert compacted(store)
    assert [m.seq for m in store.load_messages("s")] == list(range(3 * MAX_FAILURES + 3))
    assert store.tables.passes.last_error is None
    store.close()


def test_a_helper_killed_between_passes_is_started_again(tmp_path: Path, worker: OptimizeWorker) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=3, optimize_quiet=0, optimize_worker=worker)
    write(store, range(3))
    wait_for_passes(store, 1)
    first = worker.pid
    assert first is not None
    os.kill(first, 9)
    wait_until(lambda: worker.pid is None, 10)  # dead before the next pass (on a busy machine, not at once)

    write(store, range(3, 6))
    wait_for_passes(store, 2)

    assert worker.pid not in (None, first)
    assert compacted(store)
    assert [m.seq for m in store.load_messages("s")] == list(range(6))
    store.close()


def test_what_the_helper_reports_reaches_the_kernels_log_and_last_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    failing = (
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    error = 'cannot optimize the messages table (out of disk space)'\n"
        "    print(json.dumps({'warnings': [error], 'error': error}), flush=True)\n"
    )
    helper = OptimizeWorker([sys.executable, "-c", failing])
    store = LanceStore(tmp_path / "db", optimize_every=3, optimize_quiet=0, optimize_worker=helper)
    with caplog.at_level(logging.WARNING, logger="monad_notebook"):
        write(store, range(3))
        wait_for_passes(store, 1)

    assert store.tables.passes.last_error == "cannot optimize the messages table (out of disk space)"
    assert [r.getMessage() for r in caplog.records] == [store.tables.passes.last_error]
    assert [m.seq for m in store.load_messages("s")] == [0, 1, 2]
    helper.close()
    store.close()


def test_the_helpers_loop_compacts_the_table_asked_for_and_reports_a_database_it_cannot_open(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=0)
    write(store, range(5))
    assert store.tables.table_stats()["messages"]["fragments"] == 5
    (tmp_path / "not-a-dir").write_text("a file where a database should be")
    request = {"storage_options": {}, "ann_min_rows": 20_000, "table": "messages", "grace": 0}
    requests = [{**request, "uri": store.uri}, {**request, "uri": str(tmp_path / "not-a-dir")}]
    replies = io.StringIO()

    serve(io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), replies)

    good, bad = (json.loads(line) for line in replies.getvalue().splitlines())
    assert good == {"warnings": [], "error": None}
    assert store.tables.table_stats()["messages"]["fragments"] == 1
    assert bad["error"] and "\n" not in bad["error"] and bad["warnings"] == [bad["error"]]


def test_once_the_helper_is_closed_passes_run_in_the_kernel_and_no_helper_starts(
    tmp_path: Path, worker: OptimizeWorker
) -> None:
    worker.close()
    store = LanceStore(tmp_path / "db", optimize_every=3, optimize_quiet=0, optimize_worker=worker)
    write(store, range(3))
    wait_for_passes(store, 1)

    assert worker.pid is None
    assert compacted(store)
    assert [m.seq for m in store.load_messages("s")] == list(range(3))
    store.close()
