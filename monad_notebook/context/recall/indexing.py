"""Indexing for recall: every stored message findable by its words at once, by its meaning soon after.

Words, at once. When a step is committed its messages are chunked and the chunks written to the
full-text table in one write on the committing thread (``add``): a few milliseconds, after which
the full-text search finds them (LanceDB scans rows appended after its index until the background
optimize folds them in). A tool result whose full text was saved is chunked from that text, so a
chunk's offset is the one ``read_tool_output`` pages by.

Vectors, soon. Embedding costs CPU (the offline model runs on the kernel's own cores), so it runs
on a daemon thread, in batches, at a lower priority, and steps aside while the user waits on the
kernel (``foreground.py``), but never for long: after each unit of work it waits for the foreground
at most as long as keeps its ``share`` of the time, so a backlog drains while turns follow each
other back to back. And a search about to run (the ``<related_context>`` block, the ``recall``
tool) asks for the session's backlog first when it can be embedded within ``settle_seconds``
(``settle``): the worker then works for it without stepping aside, and the search waits. Until a
message has its vectors, the search finds it by its words only (``unembedded`` names those).

History. The first time an indexer meets a session (``meet``) it compares the session's stored
messages with the index (one read of one column per table) and indexes what is missing: messages
a kernel stored but never indexed (it stopped with work queued, or crashed) and, after the
embedding model (or its passage prefix) changed, messages without a vector from the new one. What was embedded stays
embedded: a new process finds it in the store and leaves it.

With vectors, the indexer also learns each new word's vector (``wordmatch.WordVectors``), so
recall can match a question's words to a passage's by meaning; the first time it meets a session,
it learns the words of what the session indexed before, a slice at a time.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from monad_notebook.context.recall.chunks import embedding_inputs, indexed_text, message_chunks
from monad_notebook.context.recall.tuning import TUNING
from monad_notebook.context.recall.wordmatch import WordVectors, words_of
from monad_notebook.foreground import FOREGROUND, Foreground, lower_priority
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import Embedder, EmbeddingInterrupted
from monad_notebook.provider.prefixes import as_documents
from monad_notebook.store.base import Chunk, SearchIndex, ToolOutputs, Transcript


class RecallStore(Transcript, ToolOutputs, Protocol):
    """What recall reads and writes: the messages it indexes, the saved full outputs it indexes from, its index."""

    search: SearchIndex


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


@dataclass
class _Job:
    """Messages of one session to index: their chunks when the words are written already, else None."""

    session: str
    messages: list[Message]
    chunks: dict[str, list[Chunk]] | None = None
    history: bool = False  # compare the session's stored history with the index first


class RecallIndexer:
    """Writes messages' chunks for full-text search at once and, with an embedder, their vectors in the background."""

    write_chunks = 256  # vectors per write at most (a longer message's own excepted) ...
    write_seconds = 1.0  # ... and what is embedded is written this often, so a long backlog is found as it goes
    embed_batch = 8  # chunks per embedding call, unless the embedder says (``chunks_per_call``) ...
    call_seconds = 0.5  # ... and fewer when that would take longer: a search's question waits behind a call
    linger = 0.5  # seconds a job waits for the next ones, so back-to-back steps share their writes
    history_slice = 500  # stored messages indexed per pass when catching up with a session's history
    share = 0.25  # the least share of the time embedding keeps while the foreground is held without a pause
    settle_seconds = 1.0  # a search waits for a backlog it expects to see embedded within this
    first_guess_seconds = 0.02  # per chunk, until the embedder's own speed is measured
    max_interruptions = 5  # searches that may stop one embedding call before it runs to its end
    words_per_call = 64  # words are a few tokens each: many of them cost what one chunk does

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
        self._queue: list[_Job] = []
        self._queued_at = 0.0  # when the oldest queued job was queued
        self._pending = 0  # jobs queued or in hand
        self._worker: threading.Thread | None = None
        self._texted: dict[str, set[str]] = {}
        self._embedded: dict[str, set[str]] = {}
        self._unworded: dict[str, set[str]] = {}  # session -> stored ids not yet in the full-text index
        self._unembedded: dict[str, dict[str, int]] = {}  # session -> id -> embedding inputs still to make
        self._standouts: dict[str, set[int]] = {}  # session -> hashes of the standout lines it embedded
        self._met: set[str] = set()
        self._unchecked: set[str] = set()  # sessions whose stored history is not yet compared with the index
        self._urgent: set[str] = set()  # sessions a search waits on: their vectors come first, without yielding
        self._per_chunk: float | None = None  # seconds one embedding input takes, as measured ...
        self._per_word: float | None = None  # ... and one word, learnt for the word ranking
        self._unit = 0.0  # seconds the last unit of background work took
        self._calls = 0
        self._stopping = False
        _LIVE.add(self)

    # --- what the cascade calls ----------------------------------------------------------

    def meet(self, session: str) -> None:
        """Compare the session's stored history with the index, once, in the background; returns at once."""
        with self._cond:
            if self._stopping or session in self._met:
                return
            self._met.add(session)
            self._unchecked.add(session)
            self._enqueue(_Job(session, [], history=True))

    def add(self, session: str, messages: Iterable[Message], full_texts: Mapping[str, str]) -> None:
        """Just stored: ``messages``' words written now (one write), their vectors queued.

        ``full_texts``: the saved full text of truncated tool results, by tool-call id. A failed
        write leaves the words to the worker, which tries again.
        """
        todo = [m for m in messages if _worth_indexing(m)]
        if self._stopping or not todo:
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
        with self._cond:
            if written is not None:
                self._texted.setdefault(session, set()).update(chunks)
            else:
                self._unworded.setdefault(session, set()).update(chunks)
            if self._embeds:
                waiting = self._unembedded.setdefault(session, {})
                waiting.update((m.id, len(chunks[m.id])) for m in todo)
            if written is None or self._embeds:
                self._enqueue(_Job(session, todo, written))

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
                while session in self._unchecked or self._unworded.get(session) or self._wanted(session, skip):
                    left = deadline - time.monotonic()
                    cheap = session in self._unchecked or self._unworded.get(session)
                    if left <= 0 or (not cheap and self._expected(session, skip) > left):
                        return False
                    if not self._pending:  # nothing in hand would make them: a failed batch
                        return False
                    self._urgent.add(session)
                    self._cond.notify_all()
                    self.foreground.wake()
                    self._cond.wait(left)
                return True
            finally:
                self._urgent.discard(session)

    def _wanted(self, session: str, skip: Collection[str] = ()) -> dict[str, int]:
        """The session's messages still without vectors, but those in ``skip``: id -> inputs left (condition held)."""
        waiting = self._unembedded.get(session, {})
        return {m: n for m, n in waiting.items() if m not in skip} if skip else waiting

    def unembedded(self, session: str) -> set[str]:
        """Ids of the session's messages that are searched by their words only, for now."""
        with self._cond:
            return set(self._unembedded.get(session, ()))

    @property
    def waiting(self) -> int:
        """Messages stored but not fully indexed: not searchable by words yet, or without their vectors."""
        with self._cond:
            ids = set().union(*self._unworded.values(), *(set(w) for w in self._unembedded.values()))
            return len(ids)

    @property
    def unsearchable(self) -> int:
        """Messages stored but not in the full-text index yet: recall cannot find them at all."""
        with self._cond:
            return sum(len(ids) for ids in self._unworded.values())

    @property
    def eta_seconds(self) -> float:
        """About how long the vectors still to make take, at the speed measured so far."""
        with self._cond:
            return sum(self._expected(session) for session in self._unembedded)

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
            self._queue = []
            self._cond.notify_all()
        self.foreground.wake()
        self.flush(timeout)

    # --- the worker ----------------------------------------------------------------------

    def _enqueue(self, job: _Job) -> None:
        """Queue ``job`` (the condition held) and start the worker if it is not running."""
        if not self._queue:
            self._queued_at = time.monotonic()
        self._queue.append(job)
        self._pending += 1
        self._cond.notify_all()
        if self._worker is None:
            self._worker = threading.Thread(target=self._run, name="monad-recall-index", daemon=True)
            self._worker.start()

    def _run(self) -> None:
        lower_priority(BACKGROUND_NICE)
        while True:
            with self._cond:
                deadline = self._queued_at + self.linger  # a queue older than that is taken at once
                while self._queue and not (self._stopping or self._urgent) and time.monotonic() < deadline:
                    self._cond.wait(deadline - time.monotonic())
                if not self._queue:
                    self._worker = None
                    return
                jobs, self._queue = self._queue, []
            try:
                self._process(jobs)
            finally:
                with self._cond:
                    self._pending -= len(jobs)
                    self._cond.notify_all()

    def _process(self, jobs: list[_Job]) -> None:
        """Each session's history check first, then its new messages in one batch (the urgent session's first)."""
        for job in sorted(_merged(jobs), key=lambda j: (j.session not in self._urgent, not j.history)):
            try:
                if job.history:
                    self._history(job.session)
                else:
                    self._index(job.session, job.messages, job.chunks)
            except Exception as exc:
                self._failed(job.session, exc)
                self._given_up(job)

    def _given_up(self, job: _Job) -> None:
        """A failed job's messages wait no more: the next process's history check finds them again."""
        with self._cond:
            ids = {m.id for m in job.messages}
            self._unworded.get(job.session, set()).difference_update(ids)
            for message_id in ids:
                self._unembedded.get(job.session, {}).pop(message_id, None)
            self._cond.notify_all()

    def _history(self, session: str) -> None:
        """Index what the session stored before this indexer met it, a slice at a time.

        Ids first: a large session whose history is all indexed costs three reads of one
        column, not the texts of every message. Stored vectors are read again here: a remote
        model's width is learnt from its first answer, and until then none could be counted.
        """
        try:
            self._yield()
            chunked = self.store.search.chunked_ids(session)
            embedded = self._embedded.setdefault(session, set())
            if self._embeds:
                embedded |= self._stored_vectors(session)
            with self._cond:
                texted = self._texted.setdefault(session, set())
                texted |= chunked
                done = texted & embedded if self._embeds else set(texted)
            missing = self.store.message_ids(session) - done
            stored = (
                [m for m in self.store.load_messages(session, ids=missing) if _worth_indexing(m)] if missing else []
            )
            with self._cond:
                self._unworded.setdefault(session, set()).update(m.id for m in stored if m.id not in texted)
                if self._embeds:
                    waiting = self._unembedded.setdefault(session, {})
                    waiting.update((m.id, _inputs_guess(m)) for m in stored if m.id not in embedded)
        finally:
            with self._cond:
                self._unchecked.discard(session)
                self._cond.notify_all()
        slices = [stored[start : start + self.history_slice] for start in range(0, len(stored), self.history_slice)]
        for part in slices:  # every word first: a search finds the whole history by words long before by meaning
            if self._stopping:
                return
            self._write_words(session, part)
        for part in slices:
            if self._stopping:
                return
            self._index(session, part, None)
        self._learn_history(session)

    def _index(self, session: str, messages: list[Message], chunks: dict[str, list[Chunk]] | None) -> None:
        """Write the words of ``messages`` unless ``chunks`` says they are written; then embed them."""
        if chunks is None:
            chunks = self._write_words(session, messages)
        if self.embedder is not None and self._embeds:
            embedded = self._embedded.setdefault(session, set())
            self._embed(session, [m for m in messages if m.id not in embedded], chunks, embedded)
            self._learn([c.text for m in messages for c in chunks[m.id]])

    def _write_words(self, session: str, messages: list[Message]) -> dict[str, list[Chunk]]:
        """Chunk ``messages`` (tool results from their saved full text) and write those not yet in the full-text
        index, in one write; their chunks."""
        self._yield(session)
        chunks = self._chunks(session, messages)
        with self._cond:
            texted = self._texted.setdefault(session, set())
            unworded = [m for m in messages if m.id not in texted]
        self.store.search.save_chunks(session, [c for m in unworded for c in chunks[m.id]])
        with self._cond:
            texted.update(m.id for m in unworded)
            self._unworded.get(session, set()).difference_update(m.id for m in messages)
            self._cond.notify_all()
        return chunks

    def _learn_history(self, session: str) -> None:
        """Learn the words of the chunks the session stored before this indexer met it."""
        if self.words is None or not self._embeds:
            return
        for texts in self.store.search.chunk_texts(session):
            if self._stopping or self.words.full:
                return
            self._yield()
            self._learn(texts)

    def _learn(self, texts: list[str]) -> None:
        """Embed the words of ``texts`` that have no vector yet, ``words_per_call`` at a time."""
        if self.words is None or not self._embeds:
            return
        unknown = self.words.unknown(w for text in texts for w in words_of(text))
        start = 0
        while start < len(unknown):
            part = unknown[start : start + self._call_size(self.words_per_call, self._per_word)]
            vectors = self._embed_unit(part, words=True)
            if vectors is None:
                return
            self.words.learn(part, vectors)
            start += len(part)

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
        counts = Counter(chunk.message_id for chunk, _ in todo)
        left = {m.id: counts[m.id] for m in messages}
        with self._cond:
            waiting = self._unembedded.setdefault(session, {})
            waiting.update((m, n) for m, n in left.items() if m in waiting)
        rows: list[tuple[Chunk, list[float]]] = []
        written = time.monotonic()
        at = 0
        while at < len(todo):
            batch = todo[at : at + self._call_size(self.embed_batch, self._per_chunk)]
            unit = self._embed_unit([text for _, text in batch], session)
            if unit is None:
                return
            rows += [(chunk, vector) for (chunk, _), vector in zip(batch, unit, strict=True)]
            at += len(batch)
            last = at >= len(todo)
            due = last or len(rows) >= self.write_chunks or time.monotonic() - written >= self.write_seconds
            # a message's vectors are written together: a process stopped in its middle leaves it to the next
            following = None if last else todo[at][0].message_id
            ready = [row for row in rows if row[0].message_id != following]
            if due and ready:
                self._yield(session)
                self.store.search.save_embeddings(session, ready, self.embedder.name)
                self._embedded_inputs(session, [chunk.message_id for chunk, _ in ready], left, done)
                rows, written = rows[len(ready) :], time.monotonic()
        self._embedded_inputs(session, [], {m.id: 0 for m in messages if not left[m.id]}, done)

    def _embedded_inputs(self, session: str, ids: list[str], left: dict[str, int], done: set[str]) -> None:
        """Count embedding inputs stored; a message with none left has all its vectors."""
        for message_id in ids:
            left[message_id] -= 1
        with self._cond:
            waiting = self._unembedded.get(session, {})
            for message_id, count in left.items():
                if count <= 0 and message_id not in done:
                    done.add(message_id)
                    waiting.pop(message_id, None)
                elif message_id in waiting:
                    waiting[message_id] = count
            self._cond.notify_all()

    def _call_size(self, most: int, per_input: float | None) -> int:
        """Inputs for the next embedding call: ``most``, fewer when at ``per_input`` seconds each the call would
        outlast ``call_seconds`` (a one-slot server embeds a search's question only after the call in hand)."""
        return most if per_input is None else max(1, min(most, int(self.call_seconds / per_input)))

    def _embed_unit(
        self, texts: list[str], session: str | None = None, *, words: bool = False
    ) -> list[list[float]] | None:
        """One embedding call, after yielding to the foreground; None when stopping.

        An embedder that can be interrupted (the local one) is stopped by a search that starts
        during the call, rather than share the cores with it, and called again after the search;
        after ``max_interruptions`` in a row, or when a search waits for this very backlog, the
        call runs to its end.
        """
        assert self.embedder is not None
        interruptible = getattr(self.embedder, "embed_in_background", None)
        interruptions, passages = 0, as_documents(self.embedder, texts)
        while True:
            self._yield(session)
            if self._stopping:
                return None
            started = time.monotonic()
            try:
                if interruptible is None or interruptions >= self.max_interruptions or session in self._urgent:
                    vectors = self.embedder.embed(passages)
                else:
                    vectors = interruptible(passages, self.foreground)
            except EmbeddingInterrupted:
                interruptions += 1
                continue
            self._measured(time.monotonic() - started, len(texts), words=words)
            return vectors

    def _measured(self, seconds: float, inputs: int, *, words: bool = False) -> None:
        """The speed of the embedder, as its last calls went, per chunk (what ``settle`` and ``eta_seconds``
        expect) or per word. The first call is not counted: it loads the model.
        """
        self._unit = seconds
        self._calls += 1
        if inputs and self._calls > 1:
            per, known = seconds / inputs, self._per_word if words else self._per_chunk
            mean = per if known is None else 0.7 * known + 0.3 * per
            if words:
                self._per_word = mean
            else:
                self._per_chunk = mean

    def _expected(self, session: str, skip: Collection[str] = ()) -> float:
        """Seconds the session's vectors still to make take, at the measured speed (the condition held)."""
        inputs = sum(self._wanted(session, skip).values())
        return inputs * (self._per_chunk if self._per_chunk is not None else self.first_guess_seconds)

    def _yield(self, session: str | None = None) -> None:
        """Let what the user waits on go first, for as long as keeps this work its ``share`` of the time.

        No wait while a search waits on this work (``settle``), or when stopping.
        """
        if self._urgent and (session is None or session in self._urgent):
            return
        patience = max(self._unit, 0.005) * (1 - self.share) / self.share
        self.foreground.wait_free(patience, cancelled=lambda: self._stopping or bool(self._urgent))

    @property
    def _embeds(self) -> bool:
        """Vectors are made: an embedder, and ``embed_max_chars`` above 0 (0: words only)."""
        return self.embedder is not None and self.embed_max_chars > 0

    def _stored_vectors(self, session: str) -> set[str]:
        """Ids the session has vectors for from this embedder (at any width while a remote model's is not known)."""
        if self.embedder is None:
            return set()
        return self.store.search.embedded_ids(session, model=self.embedder.name, dims=self.embedder.dims or None)

    def _failed(self, session: str, exc: Exception) -> None:
        """Warn on the first failure only: a broken endpoint would otherwise log on every step."""
        first = self.last_error is None
        self.last_error = f"indexing messages of {session!r} for recall failed: {exc}"
        (log.warning if first else log.debug)("%s; recall will miss them", self.last_error)


def _merged(jobs: list[_Job]) -> list[_Job]:
    """Jobs of one session and kind as one: back-to-back steps share their writes."""
    merged: dict[tuple[str, bool, bool], _Job] = {}
    for job in jobs:
        key = (job.session, job.history, job.chunks is None)
        if key not in merged:
            merged[key] = _Job(job.session, [], None if job.chunks is None else {}, job.history)
        merged[key].messages += job.messages
        if job.chunks is not None and merged[key].chunks is not None:
            merged[key].chunks.update(job.chunks)
    return list(merged.values())


def _inputs_guess(message: Message) -> int:
    """About how many chunks a stored message makes, before its full text is read."""
    return max(1, len(indexed_text(message)) // TUNING.chunk_chars)


def _worth_indexing(message: Message) -> bool:
    return message.role != "system" and (message.role == "tool" or bool(indexed_text(message)))
