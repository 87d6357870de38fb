"""Semantic reinjection: bring back what eviction and summarization hid, when a turn needs it.

The store keeps every message's original text, so a vector search over the session's
whole history can recover a detail the window no longer shows. ``EmbeddingIndexer``
embeds messages in the background as they are written; ``Retrieval`` embeds the new
user message once per turn and returns a ``<related_context>`` block of the best
earlier hits that are not already in the window.

Both are best-effort by design: retrieval is an optimisation, so a missing embedder,
a store hiccup or an embedding failure yields no block (or no vectors), never a
failed turn.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import replace

from monad_notebook.config import RetrievalConfig
from monad_notebook.context.eviction import PLACEHOLDER_PREFIX
from monad_notebook.messages import Message
from monad_notebook.store.base import EmbeddingHit, Store
from monad_notebook.store.embeddings import Embedder

log = logging.getLogger(__name__)

EMBED_MAX_CHARS = 2000
MAX_TERMS = 6
_TOKEN = re.compile(r"[\w][\w.:/-]*[\w]")
OPEN_TAG, CLOSE_TAG = "<related_context>", "</related_context>"
INTRO = (
    "Earlier messages from this session that may bear on the request below, found by similarity"
    " or by a name they share with it (they may be out of date; the window no longer shows them):"
)


def identifier_terms(query: str) -> list[str]:
    """The words of ``query`` that name one thing: ids, file names, snake_case columns, long numbers.

    Sentence embeddings place "order ORD-48213" next to every other order, so these are
    looked up verbatim. Plain words (and short numbers such as years) are left to the vector.
    """
    terms: list[str] = []
    for token in _TOKEN.findall(query):
        token = token.rstrip(".:/-")
        named = any(c.isdigit() for c in token) or "_" in token or re.search(r"[A-Za-z]\.[A-Za-z]", token)
        if len(token) >= 4 and named and not (token.isdigit() and len(token) < 5) and token not in terms:
            terms.append(token)
    return terms[:MAX_TERMS]


def embedding_text(message: Message) -> str:
    """What to embed for a message: its original text (plus any tool calls), clipped; "" to skip it.

    System prompts are not history, and a placeholder says nothing about what it
    replaced, so neither is worth a vector.
    """
    if message.role == "system":
        return ""
    parts = [message.content.strip()]
    parts += [f"{call.name}({call.arguments})" for call in message.tool_calls]
    text = "\n".join(part for part in parts if part)
    if not text or text.startswith(PLACEHOLDER_PREFIX):
        return ""
    return text[:EMBED_MAX_CHARS]


class Retrieval:
    """Finds earlier messages of one session that relate to a new user message."""

    def __init__(self, store: Store, embedder: Embedder | None, cfg: RetrievalConfig) -> None:
        self.store = store
        self.embedder = embedder
        self.cfg = cfg

    def related_context(
        self, session: str, query: str, window_ids: Iterable[str], *, query_id: str | None = None
    ) -> str | None:
        """The ``<related_context>`` block for ``query``, or None when there is nothing worth adding.

        Messages already in the window (``window_ids``) and the query's own message are
        skipped: repeating what the model can see wastes the budget this stage exists to save.
        """
        if not self.cfg.enabled or self.embedder is None or not query.strip():
            return None
        try:
            hits = self._hits(session, query, {*window_ids, *([query_id] if query_id else [])})
        except Exception as exc:
            log.debug("retrieval skipped for this turn: %s", exc)
            return None
        return format_related(hits, self.cfg.snippet_chars) if hits else None

    def _hits(self, session: str, query: str, excluded: set[str]) -> list[EmbeddingHit]:
        """Messages naming the query's identifiers first, then the nearest vectors above ``minScore``."""
        assert self.embedder is not None
        vector = self.embedder.embed([query[:EMBED_MAX_CHARS]])[0]
        limit, model = self.cfg.max_results, self.embedder.name
        terms = identifier_terms(query)
        named = self.store.search_embedded_text(
            session, terms, limit + 1, model=model, dims=len(vector), exclude_ids=excluded
        )
        near = self.store.search_embeddings(session, vector, limit + 1, model=model, exclude_ids=excluded)
        asked, seen = query.strip(), set()
        kept = []
        for hit in [*named, *(h for h in near if h.score >= self.cfg.min_score)]:
            if hit.message_id not in seen and hit.snippet.strip() != asked:
                seen.add(hit.message_id)
                kept.append(hit)
        return kept[:limit]


def format_related(hits: list[EmbeddingHit], snippet_chars: int) -> str:
    """The block the model reads: one ``- `` line per hit, oldest first, each with role and ``#seq``."""
    lines = [OPEN_TAG, INTRO]
    for hit in sorted(hits, key=lambda h: h.seq):
        who = f"tool {hit.name}" if hit.role == "tool" and hit.name else hit.role or "message"
        lines.append(f"- [#{hit.seq} {who}, turn {hit.turn}] {_snippet(hit.snippet, snippet_chars)}")
    lines.append(CLOSE_TAG)
    return "\n".join(lines)


def _snippet(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, cut at a word where one is near.

    Whitespace is collapsed so every hit stays one line (a hit's own newlines cannot pass
    for another hit), and the block's tags cannot be forged from inside a snippet.
    """
    text = " ".join(text.split()).replace(CLOSE_TAG, "</related-context>").replace(OPEN_TAG, "<related-context>")
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 0)]
    space = cut.rfind(" ")
    if space >= limit * 0.8:
        cut = cut[:space]
    return cut.rstrip() + "…"


class EmbeddingIndexer:
    """Embeds messages on a daemon thread, in batches, one store write per batch.

    Jobs queued while the thread is busy are merged, so a burst of steps costs a few
    writes rather than one per message. Ids already embedded (read from the store once
    per session) are skipped, so handing over the whole window again is cheap.
    """

    batch_size = 32

    def __init__(self, store: Store, embedder: Embedder, *, batch_size: int | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.batch_size = batch_size or self.batch_size
        self.last_error: str | None = None
        self._cond = threading.Condition()
        self._queue: list[tuple[str, list[Message]]] = []
        self._pending = 0
        self._worker: threading.Thread | None = None
        self._done: dict[str, set[str]] = {}

    def index_pending(self, session: str, messages: Iterable[Message]) -> None:
        """Queue the messages worth embedding; returns at once."""
        todo = [m for m in messages if embedding_text(m)]
        if not todo:
            return
        with self._cond:
            self._queue.append((session, todo))
            self._pending += 1
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="monad-embeddings", daemon=True)
                self._worker.start()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued message is embedded (or given up on); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
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

    def _process(self, jobs: list[tuple[str, list[Message]]]) -> None:
        by_session: dict[str, dict[str, Message]] = {}
        for session, messages in jobs:
            by_session.setdefault(session, {}).update((m.id, m) for m in messages)
        for session, messages in by_session.items():
            try:
                self._index(session, list(messages.values()))
            except Exception as exc:
                self._failed(session, exc)

    def _index(self, session: str, messages: list[Message]) -> None:
        done = self._embedded(session)
        fresh = [m for m in messages if m.id not in done]
        for start in range(0, len(fresh), self.batch_size):
            batch = fresh[start : start + self.batch_size]
            texts = [embedding_text(m) for m in batch]
            vectors = self.embedder.embed(texts)
            rows = [(replace(m, content=t), v) for m, t, v in zip(batch, texts, vectors, strict=True)]
            self.store.save_embeddings(session, rows, self.embedder.name)
            done.update(m.id for m in batch)

    def _embedded(self, session: str) -> set[str]:
        done = self._done.get(session)
        if done is None:
            dims = self.embedder.dims
            done = self.store.embedded_ids(session, model=self.embedder.name, dims=dims) if dims else set()
            self._done[session] = done
        return done

    def _failed(self, session: str, exc: Exception) -> None:
        """Warn on the first failure only: a broken endpoint would otherwise log on every step."""
        first = self.last_error is None
        self.last_error = f"embedding messages of {session!r} failed: {exc}"
        (log.warning if first else log.debug)("%s; retrieval will miss them", self.last_error)
