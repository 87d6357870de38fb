"""The per-turn stages: memory facts, the recitation anchor, retrieval reinjection.

They append to the prompt, so they run once per turn (never per step): :meth:`TurnStages.blocks`
returns the turn's blocks, which the window holds until the next turn replaces them (a related-context
block stays on its message longer, while that keeps the provider's cache: ``Window.set_blocks``).
Whenever the recall tool or retrieval is on, each committed step's words are written for
full-text search at once and its vectors made on a worker thread (``recall/indexing.py``); the
retrieval stage and the recall tool hold the foreground gate (``foreground.py``), so that work
waits for them, and first have a small backlog of vectors made, so they search all of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from monad_notebook import events as ev
from monad_notebook.config import Config, EmbeddingConfig
from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.context.recall.retrieval import Retrieval
from monad_notebook.context.recall.search import Passage, Recall
from monad_notebook.context.recall.wordmatch import WordVectors, shared_word_vectors
from monad_notebook.context.recitation import plan_body
from monad_notebook.context.window import Window
from monad_notebook.events import Emit, EventBus
from monad_notebook.foreground import FOREGROUND
from monad_notebook.memory import MemoryPromotion, MemoryService, resolve_scope, visible_scopes
from monad_notebook.messages import Message
from monad_notebook.provider import ChatModel
from monad_notebook.provider.local_embedder import Embedder, make_embedder
from monad_notebook.redaction.redactor import Redactor
from monad_notebook.store.base import Store, Summary


class TurnStages:
    def __init__(
        self,
        *,
        session: str,
        store: Store,
        config: Callable[[], Config],
        redactor: Redactor,
        emit: Emit,
        bus: EventBus,
        fast_model: Callable[[], ChatModel],
        embedders: Callable[[EmbeddingConfig], Embedder | None] = make_embedder,
    ) -> None:
        self.session = session
        self.store = store
        self._embedders = embedders
        self.config = config
        self.emit = emit
        self.memory = MemoryService(store, redactor, notify=bus.emit)
        self._fast_model = fast_model
        self._embedding_provider: object = None
        self._embedder: Embedder | None = None
        self._words: WordVectors | None = None
        self.retrieval: Retrieval | None = None
        self.recall: Recall | None = None
        self.indexer: RecallIndexer | None = None
        self.reconfigure(redactor)

    def reconfigure(self, redactor: Redactor) -> None:
        """Follow config changes: the redactor, promotion mode, and the embedder when retrieval is on."""
        config = self.config()
        cfg = config.context
        self.memory.redactor = redactor
        self.promotion = MemoryPromotion(
            self.memory, self._fast_model, cfg.memory_promotion.mode, cfg.memory_promotion.max_facts
        )
        if not (cfg.retrieval.enabled or cfg.recall.enabled):
            self.retrieval = self.recall = self.indexer = None
            return
        provider = config.models.embedding
        if self.indexer is None or provider != self._embedding_provider:
            self._embedder = self._embedders(provider)
            self._embedding_provider = provider
            self._words = shared_word_vectors(self._embedder.name) if self._embedder is not None else None
            self.indexer = RecallIndexer(self.store, self._embedder, words=self._words)
        self.indexer.embed_max_chars = cfg.recall.embed_max_chars
        self.indexer.meet(self.session)
        words = self._words if cfg.recall.embed_max_chars > 0 else None
        pipeline = Recall(self.store, self._embedder, words, cfg.recall.steps)
        self.recall = pipeline if cfg.recall.enabled else None
        unembedded = self.indexer.unembedded
        self.retrieval = Retrieval(pipeline, cfg.retrieval, unembedded) if cfg.retrieval.enabled else None

    @property
    def agent(self) -> str | None:
        """The memory scope's owner (``agent.name``); None means global."""
        return self.config().agent.name

    @property
    def scope(self) -> str:
        return resolve_scope(self.agent)

    def blocks(self, window: Window, user: Message, count_text: Callable[[str], int]) -> dict[str, str]:
        """This turn's injected blocks: memory facts (within their budget by ``count_text``), the plan anchor,
        related context."""
        cfg = self.config().context
        blocks: dict[str, str] = {}
        memory = self.memory.prompt_block(visible_scopes(self.agent), cfg.memory.prompt_budget_tokens, count_text)
        if memory:
            blocks["memory"] = memory
        if cfg.recitation.enabled and window.summary is not None:
            plan = plan_body(window.summary.text)
            if plan:
                blocks["plan"] = plan
        if self.retrieval is not None:
            with FOREGROUND.held():
                self._settle()
                related = self.retrieval.related_context(
                    window.session, user.content, window.messages, query_id=user.id
                )
            if related:
                blocks["related_context"] = related
                self.emit(ev.REINJECTED, chars=len(related), hits=related.count("\n- "))
        return blocks

    def index(self, messages: list[Message], full_texts: dict[str, str]) -> None:
        """Newly stored messages: their words searchable now, their vectors made in the background.

        ``full_texts``: the saved full text of the truncated tool results among them, by call id.
        """
        if self.indexer is not None:
            self.indexer.add(self.session, messages, full_texts)

    def _settle(self) -> None:
        """Before a search: the session's small backlog of vectors made first, so the search sees all of it."""
        if self.indexer is not None:
            self.indexer.settle(self.session)

    def search(self, window: Window, query: str, k: int, also: Sequence[str] = ()) -> list[Passage]:
        """Recall's passages that ``window`` does not show; [] when recall is off.

        ``also``: other phrasings of ``query``, searched with it.
        """
        if self.recall is None:
            return []
        with FOREGROUND.held():
            self._settle()
            return self.recall.search(window.session, query, k, also=also, window=window.messages)

    def on_summary_saved(self, session: str, span: list[Message], summary: Summary) -> None:
        """The folded span's last chance: promote durable facts (best-effort, never raises)."""
        self.promotion.on_summary_saved(session, span, self.agent)

    def indexing(self) -> dict[str, Any]:
        """How far recall's index is behind: messages without their vectors (found by words meanwhile), messages
        not searchable at all yet, the seconds the vectors still take, and whether earlier history is still checked."""
        indexer = self.indexer
        if indexer is None:
            return {"unindexed": 0, "unsearchable": 0, "index_eta_seconds": 0.0, "recall_checking": False}
        return {
            "unindexed": indexer.waiting,
            "unsearchable": indexer.unsearchable,
            "index_eta_seconds": round(indexer.eta_seconds, 1),
            "recall_checking": indexer.checking,
        }

    def flush(self, timeout: float | None = None) -> None:
        if self.indexer is not None:
            self.indexer.flush(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Let queued indexing finish within ``timeout``, then stop: what is left is dropped (recall is best-effort)."""
        if self.indexer is not None:
            self.indexer.flush(timeout)
            self.indexer.stop(timeout)
