"""Indexing for recall: every stored message findable by its words at once, by its meaning soon after.

Words, at once. When a step is committed its messages are chunked and the chunks written to the
full-text table in one write on the committing thread (``add``): a few milliseconds, after which
the full-text search finds them (LanceDB scans rows appended after its index until the background
optimize folds them in). A tool result whose full text was saved is chunked from that text, so a
chunk's offset is the one ``read_tool_output`` pages by.

Vectors, soon. Embedding costs CPU (the offline model runs on the kernel's own cores), so it runs
on a worker thread, in batches, and makes way for what the user waits on, but never for long
(``pacing.py``). A search about to run (the ``<related_context>`` block, the ``recall`` tool)
asks for the session's backlog first when it can be embedded within ``settle_seconds``
(``settle``): the worker then works for it without stepping aside, and the search waits. Until a
message has its vectors, the search finds it by its words only (``unembedded`` names those).

History. The first time an indexer meets a session (``meet``) it indexes what the session stored
that the index lacks (``history.py``), every word first, then the vectors; with vectors, it also
learns each new word's vector (``word_learning.py``), the words of earlier history last.

The indexer coordinates its parts: the queue, its priorities and its worker thread
(``index_queue.py``), the account of what each session has indexed and what waits
(``backlog.py``), the history check (``history.py``), the passages' vectors (``vectors.py``),
the words' vectors (``word_learning.py``), the embedding calls made in turn with the foreground
(``pacing.py``) and the embedder's measured speed they are sized by (``throughput.py``).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections.abc import Collection, Iterable, Mapping
from functools import partial
from typing import Protocol

from monad_notebook.context.recall.backlog import Backlog
from monad_notebook.context.recall.chunks import message_chunks, said_before, worth_indexing
from monad_notebook.context.recall.history import unindexed
from monad_notebook.context.recall.index_queue import IndexJob, IndexQueue
from monad_notebook.context.recall.pacing import Pacing
from monad_notebook.context.recall.throughput import Throughput
from monad_notebook.context.recall.vectors import VectorWriter
from monad_notebook.context.recall.word_learning import WordLearner
from monad_notebook.context.recall.wordmatch import WordVectors
from monad_notebook.foreground import FOREGROUND, Foreground
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import Embedder
from monad_notebook.store.base import Chunk, SearchIndex, ToolOutputs, Transcript


class RecallStore(Transcript, ToolOutputs, Protocol):
    """What recall reads and writes: the messages it indexes, the saved full outputs it indexes from, its index."""

    search: SearchIndex


log = logging.getLogger(__name__)

EMBED_MAX_CHARS = 200_000
EXIT_WAIT_SECONDS = 10.0
_LIVE: weakref.WeakSet[RecallIndexer] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    """At interpreter exit, stop between batches: killing a thread inside the ONNX runtime aborts the process."""
    for indexer in list(_LIVE):
        indexer.stop(EXIT_WAIT_SECONDS)


class RecallIndexer:
    """Writes messages' chunks for full-text search at once and, with an embedder, their vectors in the background."""

    settle_seconds = 1.0  # a search waits for a backlog it expects to see embedded within this
    history_slice = 500  # stored messages indexed per pass when catching up with a session's history

    def __init__(
        self,
        store: RecallStore,
        embedder: Embedder | None,
        *,
        embed_max_chars: int = EMBED_MAX_CHARS,
        batch_size: int = 0,
        foreground: Foreground = FOREGROUND,
        words: WordVectors | None = None,
    ) -> None:
        """``words``: the word vectors to learn into, when vectors are made; ``batch_size``: vectors per write."""
        self.store = store
        self.embedder = embedder
        self.foreground = foreground
        self.embed_max_chars = embed_max_chars
        self.last_error: str | None = None
        self._cond = threading.Condition()  # the backlog's and the queue's: a search waits on both
        self.backlog = Backlog(self._cond)
        self.queue = IndexQueue(self._cond, self._work)
        self.speed = Throughput()
        self.pacing = Pacing(foreground, self.queue, self.speed)
        self.vectors = VectorWriter(store.search, self.backlog, self.pacing, self.speed, batch_size=batch_size)
        # A search started during a call stops it if the embedder allows (the local one), else shares the cores
        # with it: small calls keep either the lost work or the wait small.
        self.vectors.embed_batch = getattr(embedder, "chunks_per_call", self.vectors.embed_batch)
        self.learner = WordLearner(words, store.search, self.queue, self.pacing, self.speed)
        _LIVE.add(self)

    # --- what the cascade calls ----------------------------------------------------------

    def meet(self, session: str) -> None:
        """Compare the session's stored history with the index, once, in the background; returns at once."""
        with self._cond:
            if self.queue.stopping or not self.backlog.meet(session):
                return
            self.queue.put(IndexJob(session, [], history=True))

    def add(self, session: str, messages: Iterable[Message], full_texts: Mapping[str, str]) -> None:
        """Just stored: ``messages``' words written now (one write), their vectors queued.

        ``full_texts``: the saved full text of truncated tool results, by tool-call id. A failed
        write leaves the words to the worker, which tries again.
        """
        todo = [m for m in messages if worth_indexing(m)]
        if self.queue.stopping or not todo:
            return
        chunks = {
            m.id: message_chunks(m, full_texts.get(m.tool_call_id or "") if m.role == "tool" else None) for m in todo
        }
        try:
            self.store.search.save_chunks(session, [c for m in todo for c in chunks[m.id]])
        except Exception as exc:
            self._failed(session, exc)
            written = None
        else:
            written = chunks
        vectors = self._vector_embedder is not None
        with self._cond:
            self.backlog.stored(
                session, {m.id: len(chunks[m.id]) for m in todo}, worded=written is not None, vectors=vectors
            )
            if written is None or vectors:
                self.queue.put(IndexJob(session, todo, written))

    def settle(self, session: str, seconds: float | None = None, *, skip: Collection[str] = ()) -> bool:
        """Before a search: have the session's backlog embedded first when that takes at most ``seconds``.

        Waits, within ``seconds``, for the history check and the words of what it found too
        (cheap, and a search cannot find a message without them). ``skip``: messages the search
        will not return (the window shows them whole, the question's own among them), whose
        vectors it does not wait for. True when nothing else the session stored is left without
        its vectors; False when the backlog is larger (the search then finds what waits by its
        words only) or the time ran out.
        """
        seconds = self.settle_seconds if seconds is None else seconds
        deadline = time.monotonic() + seconds
        with self._cond:
            try:
                while self.backlog.words_pending(session) or self.backlog.wanted(session, skip):
                    left = deadline - time.monotonic()
                    cheap = self.backlog.words_pending(session)
                    if left <= 0 or (not cheap and self._expected(session, skip) > left):
                        return False
                    if not self.queue.pending:  # nothing in hand would make them: a failed batch
                        return False
                    self.queue.urgent.add(session)
                    self._cond.notify_all()
                    self.foreground.wake()
                    self._cond.wait(left)
                return True
            finally:
                self.queue.urgent.discard(session)

    def unembedded(self, session: str) -> set[str]:
        """Ids of the session's messages that are searched by their words only, for now."""
        return self.backlog.unembedded_ids(session)

    @property
    def waiting(self) -> int:
        """Messages stored but not fully indexed: not searchable by words yet, or without their vectors."""
        return self.backlog.waiting

    @property
    def unsearchable(self) -> int:
        """Messages stored but not in the full-text index yet: recall cannot find them at all."""
        return self.backlog.unsearchable

    @property
    def eta_seconds(self) -> float:
        """About how long the vectors still to make take, at the speed measured so far."""
        with self._cond:
            return sum(self._expected(session) for session in self.backlog.unembedded)

    @property
    def checking(self) -> bool:
        """A session's stored history is still to be compared with the index (how much is missing is not known yet)."""
        return bool(self.backlog.unchecked)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued message is indexed (or given up on); False on timeout."""
        return self.queue.flush(timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Drop queued work and wait for the batch in hand; later messages are not indexed."""
        with self._cond:
            self.queue.stop()
            self.backlog.unchecked.clear()
        self.foreground.wake()
        self.flush(timeout)

    # --- the worker ----------------------------------------------------------------------

    def _work(self, job: IndexJob) -> None:
        """One job, on the worker thread; a failed one is logged and its messages given up, and the next runs."""
        try:
            if job.history:
                self._history(job.session)
            else:
                self._index(job.session, job.messages, job.chunks)
        except Exception as exc:
            self._failed(job.session, exc)
            self.backlog.given_up(job.session, {m.id for m in job.messages})

    def _history(self, session: str) -> None:
        """Index what the session stored before this indexer met it, a slice at a time."""
        try:
            self.pacing.make_way()
            stored = unindexed(self.store, self.store.search, self.backlog, session, self._vector_embedder)
        finally:
            self.backlog.checked(session)
        slices = [stored[start : start + self.history_slice] for start in range(0, len(stored), self.history_slice)]
        for part in slices:  # every word first: a search finds the whole history by words long before by meaning
            if self.queue.stopping:
                return
            self._write_words(session, part)
        for part in slices:
            if self.queue.stopping:
                return
            self._index(session, part, None)
        embedder = self._vector_embedder
        if embedder is not None:
            self.learner.learn_history(embedder, session)

    def _index(self, session: str, messages: list[Message], chunks: dict[str, list[Chunk]] | None) -> None:
        """Write the words of ``messages`` unless ``chunks`` says they are written; then embed them."""
        if chunks is None:
            chunks = self._write_words(session, messages)
        embedder = self._vector_embedder
        if embedder is not None:
            todo = self.backlog.without_vectors(session, messages)
            before = said_before(todo, partial(self.store.message_at, session))
            self.vectors.write(embedder, session, todo, chunks, self.embed_max_chars, before)
            self.learner.learn(embedder, [c.text for m in messages for c in chunks[m.id]])

    def _write_words(self, session: str, messages: list[Message]) -> dict[str, list[Chunk]]:
        """Chunk ``messages`` and write those not yet in the full-text index, in one write; their chunks."""
        self.pacing.make_way(session)
        chunks = self._chunks(session, messages)
        unworded = self.backlog.without_words(session, messages)
        self.store.search.save_chunks(session, [c for m in unworded for c in chunks[m.id]])
        self.backlog.worded(session, [m.id for m in unworded], [m.id for m in messages])
        return chunks

    def _chunks(self, session: str, messages: list[Message]) -> dict[str, list[Chunk]]:
        """Each message's chunks, tool results from their saved full text when there is one."""
        calls = [m.tool_call_id for m in messages if m.role == "tool" and m.tool_call_id and not m.redacted]
        raw = self.store.get_raw_outputs(session, calls) if calls else {}
        return {m.id: message_chunks(m, raw.get(m.tool_call_id) if m.role == "tool" else None) for m in messages}

    def _expected(self, session: str, skip: Collection[str] = ()) -> float:
        """Seconds the session's vectors still to make take, at the measured speed."""
        return self.speed.seconds_for(self.backlog.inputs(session, skip))

    @property
    def _vector_embedder(self) -> Embedder | None:
        """The embedder when vectors are made: with ``embed_max_chars`` 0 only words are indexed."""
        return self.embedder if self.embedder is not None and self.embed_max_chars > 0 else None

    def _failed(self, session: str, exc: Exception) -> None:
        """Warn on the first failure only: a broken endpoint would otherwise log on every step."""
        first = self.last_error is None
        self.last_error = f"indexing messages of {session!r} for recall failed: {exc}"
        (log.warning if first else log.debug)("%s; recall will miss them", self.last_error)
