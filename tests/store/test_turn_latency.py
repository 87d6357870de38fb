"""A turn's reads and writes never wait behind slow store work on other threads.

The background optimize compacts and re-indexes for seconds at 100k rows, and the recall
indexer writes large batches: a turn's own write or read must return promptly meanwhile,
and nothing may be lost. Slowness is made deterministic by slowing LanceDB's own calls, so
the passes here run in this process, as they do when the helper process cannot start;
``test_optimizer.py`` slows the helper itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lancedb.table import LanceTable

from monad_notebook.messages import Message
from monad_notebook.store.base import Chunk
from monad_notebook.store.lance import LanceStore

SLOW = 2.0  # seconds the slowed LanceDB call takes
PROMPT = 0.8  # what a turn may wait at most, well under SLOW


def user(seq: int, session: str = "s") -> Message:
    return Message(role="user", content=f"question {seq} about the churn extract", session=session, seq=seq)


class Slowed:
    """Wraps one LanceTable method so calls on ``table`` signal their start, then take ``SLOW`` seconds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, method: str, table: str) -> None:
        self.started = threading.Event()
        self.finished = threading.Event()
        original: Callable[..., Any] = getattr(LanceTable, method)

        def slow(handle: LanceTable, *args: Any, **kwargs: Any) -> Any:
            if handle.name != table:
                return original(handle, *args, **kwargs)
            self.started.set()
            time.sleep(SLOW)
            try:
                return original(handle, *args, **kwargs)
            finally:
                self.finished.set()

        monkeypatch.setattr(LanceTable, method, slow)


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LanceStore]:
    s = LanceStore(tmp_path / "db", optimize_every=3, optimize_worker=None)
    yield s
    s.close()


def test_a_turns_write_returns_while_a_slow_background_optimize_runs(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    optimize = Slowed(monkeypatch, "optimize", "messages")
    for seq in range(3):
        store.append_messages([user(seq)])
    assert optimize.started.wait(5)

    waited = seconds(lambda: store.append_messages([user(3)]))

    assert not optimize.finished.is_set()
    assert waited < PROMPT
    store.close()
    assert optimize.finished.is_set()
    assert [m.seq for m in store.load_messages("s")] == [0, 1, 2, 3]
    assert store.tables.passes.last_error is None


def test_a_turns_read_and_search_return_while_a_slow_background_optimize_runs(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.search.save_chunks("s", [Chunk("m0", 0, "the churn extract lives in data/raw", seq=0)])
    optimize = Slowed(monkeypatch, "optimize", "messages")
    for seq in range(3):
        store.append_messages([user(seq)])
    assert optimize.started.wait(5)

    loaded: list[Message] = []
    waited = seconds(lambda: loaded.extend(store.load_messages("s")))
    searched = seconds(lambda: store.search.search_chunks("s", "churn extract", 3))

    assert not optimize.finished.is_set()
    assert (waited < PROMPT, searched < PROMPT) == (True, True)
    assert [m.seq for m in loaded] == [0, 1, 2]


def test_a_turns_read_returns_while_another_thread_writes_a_slow_batch(
    store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append_messages([user(0)])
    store.search.save_chunks("s", [Chunk("m0", 0, "the churn extract lives in data/raw", seq=0)])
    write = Slowed(monkeypatch, "add", "recall_text")
    indexer = threading.Thread(
        target=store.search.save_chunks, args=("s", [Chunk("m1", 0, "a big batch of chunks", seq=1)])
    )
    indexer.start()
    assert write.started.wait(5)

    waited = seconds(lambda: store.load_messages("s"))
    hits = store.search.search_chunks("s", "churn extract", 3)

    assert waited < PROMPT
    assert [h.message_id for h in hits] == ["m0"]
    indexer.join()
    assert {h.message_id for h in store.search.search_chunks("s", "churn extract big batch", 3)} == {"m0", "m1"}


def test_close_waits_for_a_slow_background_optimize_and_keeps_every_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=3, optimize_worker=None)
    optimize = Slowed(monkeypatch, "optimize", "messages")
    for seq in range(3):
        store.append_messages([user(seq)])
    assert optimize.started.wait(5)
    for seq in range(3, 6):
        store.append_messages([user(seq)])

    store.close()

    assert optimize.finished.is_set()
    reopened = LanceStore(tmp_path / "db", optimize_every=0)
    assert [m.seq for m in reopened.load_messages("s")] == list(range(6))
    assert reopened.tables.table_stats()["messages"]["rows"] == 6


def test_a_background_optimize_waits_for_a_pause_in_the_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=3, optimize_quiet=0.6, optimize_worker=None)
    optimize = Slowed(monkeypatch, "optimize", "messages")
    for seq in range(12):  # a turn's steps, back to back: the pass is due after the third
        store.append_messages([user(seq)])
        time.sleep(0.15)

    assert not optimize.started.is_set()
    assert optimize.started.wait(3)
    store.close()
    assert [m.seq for m in store.load_messages("s")] == list(range(12))
