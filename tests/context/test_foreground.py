"""Background work steps aside while the user waits on the kernel, never for good, and loses nothing by it.

A turn, the retrieval stage and the recall tool hold the foreground gate; while it is held the
recall indexer keeps only its share of the time (so its backlog still drains when turns follow
each other without a pause), a search stops the offline embedding in flight, and the store's
optimize does not start a pass.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.context.recall.pacing import Pacing
from monad_notebook.context.recall.wordmatch import WordVectors
from monad_notebook.foreground import FOREGROUND, Foreground
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import EmbeddingInterrupted, LocalEmbedder
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel, tool_call
from tests.context.embedders import KeywordEmbedder

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")


class TimedEmbedder(KeywordEmbedder):
    """Records when each call started, on which thread, and whether the foreground was held."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[tuple[float, str, bool]] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.started.append((time.monotonic(), threading.current_thread().name, FOREGROUND.busy))
        return super().embed(texts)


def notes(count: int, start: int = 0) -> list[Message]:
    return [Message("user", f"cat note {i}", session="s", seq=i, turn=i) for i in range(start, start + count)]


class SlowEmbedder(TimedEmbedder):
    """Takes ``seconds`` per call, one chunk a call, as the offline model does on a busy core."""

    chunks_per_call = 1
    seconds = 0.02

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = super().embed(texts)
        time.sleep(self.seconds)
        return vectors


def test_while_a_turn_holds_the_foreground_without_a_pause_embedding_keeps_only_its_share_and_never_stops(store):
    embedder = SlowEmbedder()
    indexer = RecallIndexer(store, embedder)
    messages = notes(200)
    held_for = 1.5
    with FOREGROUND.held():
        indexer.add("s", messages, {})
        searchable = len(store.search.search_chunks("s", "note", 300))
        started = time.monotonic()
        time.sleep(held_for)
        during = [at for at, _, _ in embedder.started if at >= started]

    assert searchable == 200  # the words at once
    busy = len(during) * SlowEmbedder.seconds
    assert 0 < busy <= indexer.pacing.share * held_for + 0.2  # its share, never none
    assert indexer.flush(timeout=60)
    assert store.search.embedded_ids("s", model=embedder.name, dims=embedder.dims) == {m.id for m in messages}


def test_indexing_a_committed_step_reads_nothing_from_the_store(store, monkeypatch):
    indexer = RecallIndexer(store, TimedEmbedder())
    indexer.meet("s")
    assert indexer.flush(timeout=30)
    reads: list[str] = []
    reading = [(store.search, name) for name in ("chunked_ids", "embedded_ids", "chunk_texts")]
    reading += [(store, name) for name in ("message_ids", "load_messages", "get_raw_outputs")]
    for role, name in reading:
        original = getattr(role, name)
        monkeypatch.setattr(role, name, lambda *a, _o=original, _n=name, **k: reads.append(_n) or _o(*a, **k))

    indexer.add("s", notes(3), {})
    assert indexer.flush(timeout=30)

    assert reads == []
    assert len(store.search.embedded_ids("s", model="keywords", dims=KeywordEmbedder.dims)) == 3


def test_the_indexer_embeds_in_small_batches_so_a_search_waits_for_at_most_one(store):
    embedder = TimedEmbedder()
    indexer = RecallIndexer(store, embedder)
    indexer.add("s", notes(40), {})
    assert indexer.flush(timeout=30)

    assert max(len(call) for call in embedder.calls) <= 8
    assert sum(len(call) for call in embedder.calls) == 40


def test_a_slow_embedder_gets_fewer_chunks_per_call_so_a_search_waits_behind_half_a_second_at_most(store):
    class Slow(TimedEmbedder):  # 0.2 s a chunk: EmbeddingGemma on one CPU thread, behind a one-slot server
        def embed(self, texts: list[str]) -> list[list[float]]:
            time.sleep(0.2 * len(texts))
            return super().embed(texts)

    embedder = Slow()
    indexer = RecallIndexer(store, embedder)
    indexer.add("s", notes(24), {})
    assert indexer.flush(timeout=60)

    # the first call loads a model and is not timed; from the second, 0.5 s / 0.2 s a chunk = 2 a call
    assert [len(call) for call in embedder.calls] == [8, 8, 2, 2, 2, 2]
    assert len(store.search.embedded_ids("s", model=embedder.name, dims=embedder.dims)) == 24


def test_the_words_a_slow_embedder_learns_come_in_calls_of_half_a_second_too(store):
    class Slow(TimedEmbedder):  # 0.02 s an input: 64 words would take 1.3 s
        def embed(self, texts: list[str]) -> list[list[float]]:
            time.sleep(0.02 * len(texts))
            return super().embed(texts)

    embedder = Slow()
    words = WordVectors(embedder.name)
    indexer = RecallIndexer(store, embedder, words=words)
    vocabulary = [f"metric{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(300)]
    indexer.add("s", [Message("assistant", " ".join(vocabulary), session="s", seq=0)], {})
    assert indexer.flush(timeout=60)

    sizes = [len(call) for call in embedder.calls]
    assert 64 in sizes[:3] and max(sizes[3:]) <= 25  # once timed: 0.5 s / 0.02 s a word
    assert words.unknown(vocabulary) == []


def test_the_offline_embedder_gets_one_chunk_per_call_so_a_search_waits_for_one_chunk_at_most(store):
    class Recording(LocalEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[list[str]] = []

        def embed_in_background(self, texts: list[str], foreground: Foreground) -> list[list[float]]:
            self.calls.append(texts)
            return super().embed_in_background(texts, foreground)

    embedder = Recording()
    indexer = RecallIndexer(store, embedder)
    messages = notes(5)
    indexer.add("s", messages, {})
    assert indexer.flush(timeout=60)

    assert [len(call) for call in embedder.calls] == [1] * 5
    assert store.search.embedded_ids("s", model=embedder.name, dims=embedder.dims) == {m.id for m in messages}


def test_a_search_stops_the_offline_embedding_in_flight_at_once_and_the_model_still_embeds_after() -> None:
    embedder = LocalEmbedder()
    gate = Foreground()
    long_texts = [f"output line {i}: " + "churn rate by region and month, " * 60 for i in range(32)]
    outcome: list[object] = []

    def background() -> None:
        try:
            outcome.append(embedder.embed_in_background(long_texts, gate))
        except EmbeddingInterrupted as exc:
            outcome.append(exc)

    embedder.embed(["load the model first"])
    worker = threading.Thread(target=background)
    started = time.monotonic()
    worker.start()
    time.sleep(0.2)
    with gate.held():
        worker.join(timeout=10)
        stopped = time.monotonic() - started

    assert len(outcome) == 1 and isinstance(outcome[0], EmbeddingInterrupted)
    full = time.monotonic()
    whole = embedder.embed(long_texts)
    assert stopped < (time.monotonic() - full) / 2  # stopped well before the call's end
    assert embedder.embed_in_background(long_texts[:2], gate) == whole[:2]
    with gate.held(), pytest.raises(EmbeddingInterrupted):
        embedder.embed_in_background(long_texts[:2], gate)  # the gate already held: stopped before it starts


def test_an_interrupted_embedding_runs_again_after_the_search_and_at_last_to_its_end(store):
    class Interrupted(KeywordEmbedder):
        def __init__(self, interruptions: int) -> None:
            super().__init__()
            self.interruptions = interruptions
            self.attempts = 0

        def embed_in_background(self, texts: list[str], foreground: Foreground) -> list[list[float]]:
            self.attempts += 1
            if self.attempts <= self.interruptions:
                raise EmbeddingInterrupted("a search took the foreground")
            return self.embed(texts)

    twice, always = Interrupted(2), Interrupted(1_000)
    for session, embedder in (("s", twice), ("t", always)):
        indexer = RecallIndexer(store, embedder)
        messages = [Message("user", "cat note", session=session, seq=0, turn=0)]
        indexer.add(session, messages, {})
        assert indexer.flush(timeout=30)
        assert store.search.embedded_ids(session, model=embedder.name, dims=embedder.dims) == {messages[0].id}

    assert (twice.attempts, len(twice.calls)) == (3, 1)
    assert (always.attempts, len(always.calls)) == (Pacing.max_interruptions, 1)


def test_a_gate_held_for_too_long_delays_indexing_but_never_stops_it(store):
    embedder = TimedEmbedder()
    indexer = RecallIndexer(store, embedder)
    messages = notes(3)
    with FOREGROUND.held():
        indexer.add("s", messages, {})
        assert indexer.flush(timeout=10)
    assert store.search.embedded_ids("s", model=embedder.name, dims=embedder.dims) == {m.id for m in messages}


def test_stopping_an_indexer_that_works_beside_a_held_foreground_returns_at_once(store):
    embedder = SlowEmbedder()
    indexer = RecallIndexer(store, embedder)
    with FOREGROUND.held():
        indexer.add("s", notes(300), {})
        time.sleep(indexer.queue.linger + 0.2)
        started = time.monotonic()
        indexer.stop(timeout=10)
        assert time.monotonic() - started < 1.0
    calls = len(embedder.started)
    time.sleep(0.2)
    assert len(embedder.started) == calls < 300


def test_a_turns_question_is_embedded_with_the_foreground_held(store):
    embedder = TimedEmbedder()
    config = Config.model_validate(
        {"tools": {"python": {"approval": "auto"}}, "context": {"retrieval": {"enabled": True}}}
    )
    model = ScriptedModel([tool_call("recall", {"query": "the pizza order"}), "done"], context_window=100_000)
    session = Session("s", config=config, store=store, model=model, embedder=embedder)
    session.ask("which cat note was about pizza?")
    session.close()

    on_turn = [busy for _, thread, busy in embedder.started if thread == threading.current_thread().name]
    assert len(on_turn) == 2  # the retrieval stage's question and the recall tool's query
    assert all(on_turn)
    assert not FOREGROUND.busy


def test_a_background_optimize_does_not_start_while_a_search_holds_the_foreground(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=3, optimize_quiet=0.2)
    try:
        with FOREGROUND.held():
            for seq in range(3):
                store.append_messages([Message("user", f"question {seq}", session="s", seq=seq)])
            time.sleep(1.0)
            assert store.tables.passes.runs == 0
        deadline = time.monotonic() + 60  # the pass runs in a helper process, slow to start on a loaded machine
        while store.tables.passes.runs == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.tables.passes.runs == 1
        assert [m.seq for m in store.load_messages("s")] == [0, 1, 2]
    finally:
        store.close()


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread niceness is a Linux feature")
def test_the_indexer_embeds_at_a_lower_priority_than_the_turns_thread(store):
    priorities: list[int] = []

    class PriorityEmbedder(KeywordEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            priorities.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            return super().embed(texts)

    indexer = RecallIndexer(store, PriorityEmbedder())
    indexer.add("s", notes(3), {})
    assert indexer.flush(timeout=30)

    assert priorities and min(priorities) > os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_a_turn_holds_the_foreground_for_its_own_work_and_sets_it_aside_while_the_model_and_tools_run(store):
    """The turn's writes are what the user waits on; the model's answer and a tool run leave the cores free."""
    seen: dict[str, list[bool]] = {"model": [], "tool": [], "messages written": [], "turn claimed": []}

    class Watched(ScriptedModel):
        def complete(self, *args, **kwargs):
            seen["model"].append(FOREGROUND.busy)
            return super().complete(*args, **kwargs)

    def watched(func, key: str):
        def call(*args, **kwargs):
            seen[key].append(FOREGROUND.busy)
            return func(*args, **kwargs)

        return call

    store.append_messages = watched(store.append_messages, "messages written")
    store.claims.claim_session = watched(store.claims.claim_session, "turn claimed")
    config = Config.model_validate({"tools": {"python": {"approval": "auto"}}})
    session = Session("s", config=config, store=store, model=Watched([tool_call("list_variables", {}), "done"]))
    session.runner.run = watched(session.runner.run, "tool")  # type: ignore[method-assign]

    session.ask("what is defined?")
    session.close()

    assert seen["model"] == [False, False] and seen["tool"] == [False]
    assert seen["turn claimed"] == [True] and seen["messages written"] and all(seen["messages written"])
    assert not FOREGROUND.busy


def test_setting_the_gate_aside_frees_only_this_threads_holds_and_stops_nothing_of_another_search() -> None:
    gate = Foreground()
    interrupted: list[str] = []
    with gate.held(), gate.held():
        with gate.aside():
            assert not gate.busy and gate.wait_free(1)
            work = gate.interruptible(lambda: interrupted.append("stopped"))
            work.__enter__()  # background work starts while the turn waits on its model
            assert interrupted == []
        assert gate.busy and interrupted == ["stopped"]  # the turn resumed: that work is stopped
        work.__exit__(None, None, None)

    searching, done = threading.Event(), threading.Event()

    def search() -> None:  # another thread's search
        with gate.held():
            searching.set()
            done.wait(10)

    other = threading.Thread(target=search)
    other.start()
    searching.wait(10)
    with gate.aside():
        assert gate.busy  # this thread held nothing: the other's hold stays
    done.set()
    other.join()
    assert not gate.busy


def test_waiting_for_another_kernels_turn_leaves_the_gate_free(tmp_path: Path) -> None:
    from monad_notebook.store.lease import TurnLease

    kernels = [LanceStore(tmp_path / "db"), LanceStore(tmp_path / "db")]
    holder, waiter = TurnLease(kernels[0].claims, "shared"), TurnLease(kernels[1].claims, "shared")
    holder.acquire()
    while_waiting: list[bool] = []
    timer = threading.Timer(0.6, holder.release)
    sampler = threading.Timer(0.3, lambda: while_waiting.append(FOREGROUND.busy))
    timer.start()
    sampler.start()
    with FOREGROUND.held():
        waiter.acquire(wait=5)
        assert FOREGROUND.busy
    waiter.release()
    sampler.join()
    timer.join()
    for kernel in kernels:
        kernel.close()
    assert while_waiting == [False]


def test_background_work_does_not_start_in_a_gap_shorter_than_the_settle_time_but_does_after_a_longer_one() -> None:
    """A quick tool sets the gate aside for a moment; work started then would meet the turn when it resumes."""
    gate = Foreground()
    started: list[float] = []
    waiting = threading.Event()

    def background() -> None:
        waiting.set()
        gate.wait_free(10)
        started.append(time.monotonic())

    with gate.held():
        worker = threading.Thread(target=background)
        worker.start()
        waiting.wait(5)
        for _ in range(5):  # quick tool runs between steps
            with gate.aside():
                time.sleep(gate.settle / 5)
            time.sleep(0.05)
        assert started == []
        with gate.aside():  # the model answers
            freed = time.monotonic()
            worker.join(timeout=5)
    assert len(started) == 1 and gate.settle <= started[0] - freed < gate.settle + 0.5
