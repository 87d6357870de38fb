"""Indexing for recall: chunks of every stored message and saved output, on a daemon thread.

Each batch of new messages becomes one full-text write (``recall_text``), then, when an
embedder is configured, vectors for those chunks in writes of up to ``write_chunks``.
Jobs queued while the thread is busy, or within ``linger`` of each other, are merged, so a
burst of steps costs a few writes rather than one per message, and a turn whose steps come
back to back does not contend with its own indexing for the store at every step. Ids already
indexed are skipped: the store is asked about those of a batch this indexer has not indexed
itself, so handing over the same messages again is cheap.

The first time an indexer meets a session it also goes over what the session stored before:
messages a kernel stored but never indexed (it stopped with work queued, or crashed) and, after
the embedding model changed, messages without a vector from the new one. Recall is only as good
as its index: a message that is in the store but not in the index cannot be found by meaning
or by words.

A tool result whose full text was saved (truncated when it arrived) is indexed from that
text, read back in one query per batch. Vectors cost CPU (the offline model embeds on the
kernel's own cores), so at most ``embed_max_chars`` of one message are embedded; full-text
search always covers all of it.

With vectors, the indexer also learns each new word's vector (``wordmatch.WordVectors``),
so recall can match a question's words to a passage's by meaning; the first time it meets a
session, it learns the words of what the session indexed before, a slice at a time.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections.abc import Iterable

from monad_notebook.context.recall.chunks import embedding_inputs, indexed_text, message_chunks
from monad_notebook.context.recall.wordmatch import WordVectors, words_of
from monad_notebook.foreground import FOREGROUND, Foreground, lower_priority
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import Embedder, EmbeddingInterrupted
from monad_notebook.store.base import Chunk, Store

log = logging.getLogger(__name__)

EMBED_MAX_CHARS = 200_000
EXIT_WAIT_SECONDS = 10.0
BACKGROUND_NICE = 10  # a thread this much nicer gets about a tenth of a core its turn's thread wants
_LIVE: weakref.WeakSet[RecallIndexer] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    """At interpreter exit, stop between batches: killing a thread inside the ONNX runtime aborts the process."""
    for indexer in list(_LIVE):
        indexer.stop(EXIT_WAIT_SECONDS)


class RecallIndexer:
    """Chunks messages into the store for full-text search and, with an embedder, vector search."""

    write_chunks = 256
    embed_batch = 8  # chunks per embedding call, unless the embedder says (``chunks_per_call``)
    linger = 0.5  # seconds a job waits for the next ones, so back-to-back steps share their writes
    backfill_slice = 500  # stored messages indexed per pass when catching up with a session's history
    backfill_quiet = 1.0  # seconds without new messages before catching up starts (a pause between turns)
    backfill_max_delay = 60.0  # ... or this long after the session was met, pause or not
    max_yield = 5.0  # seconds one unit of work waits for the foreground at most, so indexing always progresses
    max_interruptions = 5  # searches that may stop one embedding call before it runs to its end
    words_per_call = 64  # words are a few tokens each: many of them cost what one chunk does

    def __init__(
        self,
        store: Store,
        embedder: Embedder | None,
        *,
        embed_max_chars: int = EMBED_MAX_CHARS,
        batch_size: int = 0,
        foreground: Foreground = FOREGROUND,
        words: WordVectors | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.words = words  # learnt from what is indexed, when given and vectors are made
        # A search started during a call stops it if the embedder allows (the local one), else shares the cores
        # with it: small calls keep either the lost work or the wait small.
        self.embed_batch = getattr(embedder, "chunks_per_call", self.embed_batch)
        self.foreground = foreground
        self.embed_max_chars = embed_max_chars
        self.write_chunks = batch_size or self.write_chunks
        self.last_error: str | None = None
        self._cond = threading.Condition()
        self._queue: list[tuple[str, list[Message] | None]] = []  # None: the session's stored history
        self._pending = 0
        self._worker: threading.Thread | None = None
        self._texted: dict[str, set[str]] = {}
        self._embedded: dict[str, set[str]] = {}
        self._standouts: dict[str, set[int]] = {}  # session -> hashes of the standout lines it embedded
        self._met: dict[str, float] = {}  # session -> when this indexer met it
        self._last_new = 0.0
        self._queued = 0  # new messages queued or in hand
        self._backlog = 0  # earlier messages of a session still to index
        self._unchecked: set[str] = set()  # sessions whose stored history is not yet compared with the index
        self._stopping = False
        _LIVE.add(self)

    def index_pending(self, session: str, messages: Iterable[Message]) -> None:
        """Queue the messages worth indexing (and, the first time, the session's unindexed history); returns at once."""
        todo = [m for m in messages if _worth_indexing(m)]
        if self._stopping or not (todo or session not in self._met):
            return
        with self._cond:
            if session not in self._met:
                self._met[session] = time.monotonic()
                if not any(m.seq == 0 for m in todo):  # holding its first message, a session has no history
                    self._unchecked.add(session)
                    self._queue.append((session, None))
                    self._pending += 1
            if todo:
                self._queue.append((session, todo))
                self._pending += 1
                self._queued += len(todo)
                self._last_new = time.monotonic()
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="monad-recall-index", daemon=True)
                self._worker.start()

    @property
    def waiting(self) -> int:
        """Messages stored but not yet indexed: recall cannot find them until they are."""
        return self._queued + self._backlog

    @property
    def checking(self) -> bool:
        """A session's stored history is still to be compared with the index (how much is missing is not known yet)."""
        return bool(self._unchecked)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued message is indexed (or given up on); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Drop queued work and wait for the batch in hand; later messages are not indexed."""
        with self._cond:
            self._stopping = True
            self._unchecked.clear()
            self._pending -= len(self._queue)
            self._queued -= sum(len(messages or ()) for _, messages in self._queue)
            self._queue = []
            self._cond.notify_all()
        self.flush(timeout)

    def _run(self) -> None:
        lower_priority(BACKGROUND_NICE)
        while True:
            with self._cond:
                deadline = time.monotonic() + self.linger
                while self._queue and not self._stopping and time.monotonic() < deadline:
                    self._cond.wait(deadline - time.monotonic())
                if not self._queue:
                    self._worker = None
                    return
                jobs, self._queue = self._queue, []
                later = [job for job in jobs if job[1] is None and not self._backfill_due(job[0])]
                jobs = [job for job in jobs if job not in later]
            try:
                self._process(jobs)
            finally:
                with self._cond:
                    self._pending -= len(jobs) + (len(later) if self._stopping else 0)
                    self._queued -= sum(len(messages or ()) for _, messages in jobs)
                    if not self._stopping:
                        self._queue[:0] = later
                    self._cond.notify_all()

    def _backfill_due(self, session: str) -> bool:
        """Catching up reads a whole session's ids (and indexes what is missing): it waits for a pause."""
        now = time.monotonic()
        return now - self._last_new >= self.backfill_quiet or now - self._met[session] >= self.backfill_max_delay

    def _process(self, jobs: list[tuple[str, list[Message] | None]]) -> None:
        by_session: dict[str, dict[str, Message]] = {}
        for session, messages in jobs:
            by_session.setdefault(session, {}).update((m.id, m) for m in messages or ())
        for session, messages in by_session.items():
            try:
                if any(job == (session, None) for job in jobs):
                    self._backfill(session)
                self._index(session, list(messages.values()))
            except Exception as exc:
                self._failed(session, exc)

    def _backfill(self, session: str) -> None:
        """Index what the session stored before this indexer started, a slice at a time.

        Ids first: a large session whose history is all indexed costs three reads of one
        column, not the texts of every message. Stored vectors are read again here: a remote
        model's width is learnt from its first answer, and until then none could be counted.
        """
        self._yield()
        self._learn_history(session)
        try:
            known = self.store.chunked_ids(session)
            self._texted.setdefault(session, set()).update(known)
            if self._embeds:
                embedded = self._stored_vectors(session)
                self._embedded.setdefault(session, set()).update(embedded)
                known = known & embedded
            missing = self.store.message_ids(session) - known
            if not missing:
                return
            self._yield()
            stored = [m for m in self.store.load_messages(session, ids=missing) if _worth_indexing(m)]
            self._backlog = len(stored)
        finally:
            self._unchecked.discard(session)
        try:
            for start in range(0, len(stored), self.backfill_slice):
                if self._stopping:
                    return
                self._index(session, stored[start : start + self.backfill_slice])
                self._backlog = max(0, len(stored) - start - self.backfill_slice)
        finally:
            self._backlog = 0

    def _fresh(self, session: str, messages: list[Message]) -> list[Message]:
        """The messages not yet in the full-text index, or (when it embeds) without their vectors.

        The store is asked only about ids this indexer has not seen indexed: reading every id
        of a large session here would cost the turn's thread (see ``LanceTables.distinct``).
        """
        texted = self._texted.setdefault(session, set())
        embedded = self._embedded.setdefault(session, set())
        unsure = [m.id for m in messages if m.id not in texted]
        if unsure:
            texted |= self.store.chunked_ids(session, among=unsure)
        unsure = [m.id for m in messages if m.id not in embedded]
        if unsure and self._embeds:
            embedded |= self._stored_vectors(session, among=unsure)
        return [m for m in messages if m.id not in texted or (self._embeds and m.id not in embedded)]

    @property
    def _embeds(self) -> bool:
        """Vectors are made: an embedder, and ``embed_max_chars`` above 0 (0: words only)."""
        return self.embedder is not None and self.embed_max_chars > 0

    def _index(self, session: str, messages: list[Message]) -> None:
        self._yield()
        fresh = self._fresh(session, messages)
        if not fresh:
            return
        texted, embedded = self._texted[session], self._embedded[session]
        chunks = self._chunks(session, fresh)
        new_text = [c for m in fresh if m.id not in texted for c in chunks[m.id]]
        self._yield()
        self.store.save_chunks(session, new_text)
        texted.update(m.id for m in fresh)
        if self.embedder is not None:
            self._embed(session, [m for m in fresh if m.id not in embedded], chunks, embedded)
        self._learn([c.text for m in fresh for c in chunks[m.id]])

    def _learn_history(self, session: str) -> None:
        """Learn the words of the chunks the session stored before this indexer met it."""
        if self.words is None or not self._embeds:
            return
        for texts in self.store.chunk_texts(session):
            if self._stopping or self.words.full:
                return
            self._yield()
            self._learn(texts)

    def _learn(self, texts: list[str]) -> None:
        """Embed the words of ``texts`` that have no vector yet, ``words_per_call`` at a time."""
        if self.words is None or not self._embeds:
            return
        unknown = self.words.unknown(w for text in texts for w in words_of(text))
        for start in range(0, len(unknown), self.words_per_call):
            part = unknown[start : start + self.words_per_call]
            vectors = self._embed_unit(part)
            if vectors is None:
                return
            self.words.learn(part, vectors)

    def _chunks(self, session: str, messages: list[Message]) -> dict[str, list[Chunk]]:
        """Each message's chunks, tool results from their saved full text when there is one."""
        calls = [m.tool_call_id for m in messages if m.role == "tool" and m.tool_call_id and not m.redacted]
        raw = self.store.get_raw_outputs(session, calls) if calls else {}
        return {m.id: message_chunks(m, raw.get(m.tool_call_id) if m.role == "tool" else None) for m in messages}

    def _embed(self, session: str, messages: list[Message], chunks: dict[str, list[Chunk]], done: set[str]) -> None:
        assert self.embedder is not None
        todo: list[tuple[Chunk, str]] = []
        for message in messages:
            kept = [c for c in chunks[message.id] if c.offset < self.embed_max_chars]
            todo += embedding_inputs(message, kept, self._standouts.setdefault(session, set()))
        for start in range(0, len(todo), self.write_chunks):
            batch = todo[start : start + self.write_chunks]
            vectors: list[list[float]] = []
            for at in range(0, len(batch), self.embed_batch):
                unit = self._embed_unit([text for _, text in batch[at : at + self.embed_batch]])
                if unit is None:
                    return
                vectors += unit
            self._yield()
            rows = [(chunk, vector) for (chunk, _), vector in zip(batch, vectors, strict=True)]
            self.store.save_embeddings(session, rows, self.embedder.name)
        done.update(m.id for m in messages)

    def _embed_unit(self, texts: list[str]) -> list[list[float]] | None:
        """One embedding call, once no search holds the foreground; None when stopping.

        An embedder that can be interrupted (the local one) is stopped by a search that starts
        during the call, rather than share the cores with it, and called again after the search;
        after ``max_interruptions`` in a row, the call runs to its end.
        """
        assert self.embedder is not None
        interruptible = getattr(self.embedder, "embed_in_background", None)
        interruptions = 0
        while True:
            self._yield()
            if self._stopping:
                return None
            if interruptible is None or interruptions >= self.max_interruptions:
                return self.embedder.embed(texts)
            try:
                return interruptible(texts, self.foreground)
            except EmbeddingInterrupted:
                interruptions += 1

    def _yield(self) -> None:
        """Let a search the user waits for finish first: its embedding and ours would share the cores."""
        self.foreground.wait_free(self.max_yield, cancelled=lambda: self._stopping)

    def _stored_vectors(self, session: str, among: list[str] | None = None) -> set[str]:
        dims = self.embedder.dims if self.embedder is not None else 0
        if not dims or self.embedder is None:
            return set()
        return self.store.embedded_ids(session, model=self.embedder.name, dims=dims, among=among)

    def _failed(self, session: str, exc: Exception) -> None:
        """Warn on the first failure only: a broken endpoint would otherwise log on every step."""
        first = self.last_error is None
        self.last_error = f"indexing messages of {session!r} for recall failed: {exc}"
        (log.warning if first else log.debug)("%s; recall will miss them", self.last_error)


def _worth_indexing(message: Message) -> bool:
    return message.role != "system" and (message.role == "tool" or bool(indexed_text(message)))
