"""The per-turn stages: memory facts, the recitation anchor, retrieval reinjection.

They append to the prompt, so they run once per turn (never per step); their blocks live
in ``session.turn_blocks`` until the next turn replaces them. Embedding new messages for
retrieval happens on a worker thread, in batches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monad_notebook import events as ev
from monad_notebook.agent.model import ChatModel
from monad_notebook.context.recitation import plan_body
from monad_notebook.context.retrieval import EmbeddingIndexer, Retrieval
from monad_notebook.memory import MemoryPromotion, MemoryService, resolve_scope, visible_scopes
from monad_notebook.messages import Message
from monad_notebook.store.base import Summary
from monad_notebook.store.embeddings import make_embedder

if TYPE_CHECKING:
    from monad_notebook.session import Session


class TurnStages:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.memory = MemoryService(session.store, session.lossless.redactor, notify=session.events.emit)
        self._embedding_provider: object = None
        self.retrieval: Retrieval | None = None
        self.indexer: EmbeddingIndexer | None = None
        self.reconfigure()

    def reconfigure(self) -> None:
        """Follow config changes: promotion mode, and the embedder when retrieval is on."""
        s = self.session
        cfg = s.config.context
        self.memory.redactor = s.lossless.redactor
        self.promotion = MemoryPromotion(
            self.memory, self._fast_model, cfg.memory_promotion.mode, cfg.memory_promotion.max_facts
        )
        if not cfg.retrieval.enabled:
            self.retrieval = None
            return
        provider = s.config.models.embedding
        if self.retrieval is None or provider != self._embedding_provider:
            embedder = make_embedder(provider)
            self._embedding_provider = provider
            self.indexer = EmbeddingIndexer(s.store, embedder) if embedder is not None else None
            self.retrieval = Retrieval(s.store, embedder, cfg.retrieval)
        self.retrieval.cfg = cfg.retrieval

    def _fast_model(self) -> ChatModel:
        from monad_notebook.session import build_model

        return build_model(self.session.config, "fast")

    @property
    def agent(self) -> str | None:
        """The memory scope's owner (``agent.name``); None means global."""
        return self.session.config.agent.name

    @property
    def scope(self) -> str:
        return resolve_scope(self.agent)

    def run(self, user: Message) -> None:
        s = self.session
        cfg = s.config.context
        blocks: dict[str, str] = {}
        memory = self.memory.prompt_block(
            visible_scopes(self.agent), cfg.memory.prompt_budget_tokens, s.counter.count_text
        )
        if memory:
            blocks["memory"] = memory
        if cfg.recitation.enabled and s.summary is not None:
            plan = plan_body(s.summary.text)
            if plan:
                blocks["plan"] = plan
        if self.retrieval is not None:
            window_ids = {m.id for m in s.window}
            related = self.retrieval.related_context(s.name, user.content, window_ids, query_id=user.id)
            if related:
                blocks["related_context"] = related
                s.emit(ev.REINJECTED, chars=len(related), hits=related.count("\n- "))
        s.turn_blocks = blocks

    def index(self, messages: list[Message]) -> None:
        """Queue newly stored messages for embedding (background, batched)."""
        if self.indexer is not None and self.retrieval is not None:
            self.indexer.index_pending(self.session.name, messages)

    def after_compact(self, span: list[Message], summary: Summary) -> None:
        """The folded span's last chance: promote durable facts (best-effort, never raises)."""
        self.promotion.after_compact(self.session.name, span, self.agent)
