"""Recall for one session: the index it keeps, the search the ``recall`` tool asks, the related-context block.

The session owns one and hands it to what uses it: the cascade indexes each committed step
(``index``), the turn's stages ask for the ``<related_context>`` block (``related``), and the
``recall`` tool searches (``search``). It follows ``models.embedding``, ``context.recall`` and
``context.retrieval`` (``reconfigure``): a new embedding model (or passage prefix) gets a new
indexer, which gives the stored history vectors from that model in the background, and the old
one stops. With ``context.recall.rewrite`` "fast", both searches also look for the fast model's
phrasings of the question (``rewrite.py``).

A search holds the foreground gate (``foreground.py``), so background work waits for it, and
first has a small backlog of vectors made (``RecallIndexer.settle``), so it searches all of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from monad_notebook.config import Config, EmbeddingConfig
from monad_notebook.context.recall.indexing import RecallIndexer, RecallStore
from monad_notebook.context.recall.retrieval import Retrieval
from monad_notebook.context.recall.rewrite import Rewriter
from monad_notebook.context.recall.search import Passage, Recall, shown_whole
from monad_notebook.context.recall.wordmatch import WordVectors, shared_word_vectors
from monad_notebook.context.window import Window
from monad_notebook.foreground import FOREGROUND
from monad_notebook.messages import Message
from monad_notebook.provider import ChatModel
from monad_notebook.provider.local_embedder import Embedder, make_embedder

Embedders = Callable[[EmbeddingConfig], "Embedder | None"]


class RecallService:
    def __init__(self, window: Window, store: RecallStore, embedders: Embedders = make_embedder) -> None:
        """``embedders`` builds the embedder ``models.embedding`` asks for (a fixed one in tests and demos)."""
        self.window = window
        self.store = store
        self._embedders = embedders
        self._embedding: EmbeddingConfig | None = None
        self._embedder: Embedder | None = None
        self._words: WordVectors | None = None
        self.indexer: RecallIndexer | None = None
        self.recall: Recall | None = None  # the recall tool's search; None when the tool is off
        self.retrieval: Retrieval | None = None  # the related-context block; None when retrieval is off
        self.rewriter: Rewriter | None = None
        self.snippet_chars = 0
        self.max_results = 0

    def reconfigure(self, config: Config, fast_model: ChatModel | None = None) -> None:
        """Follow the configuration: the embedder (and with it the indexer) when ``models.embedding`` changed.

        ``fast_model``: the fast tier where it is a real model (never the scripted demo), for the rewrite.
        """
        cfg = config.context
        self.snippet_chars, self.max_results = cfg.recall.snippet_chars, cfg.recall.max_results
        rewrite = cfg.recall.rewrite == "fast" and fast_model is not None
        self.rewriter = Rewriter(fast_model, cfg.recall.rewrite_timeout_seconds) if rewrite else None
        if not (cfg.retrieval.enabled or cfg.recall.enabled):
            self.retrieval = self.recall = self.indexer = None
            return
        if self.indexer is None or config.models.embedding != self._embedding:
            if self.indexer is not None:
                self.indexer.stop(0)
            self._embedder = self._embedders(config.models.embedding)
            self._embedding = config.models.embedding
            self._words = shared_word_vectors(self._embedder.name) if self._embedder is not None else None
            self.indexer = RecallIndexer(self.store, self._embedder, words=self._words)
        self.indexer.embed_max_chars = cfg.recall.embed_max_chars
        self.indexer.meet(self.window.session)
        words = self._words if cfg.recall.embed_max_chars > 0 else None
        pipeline = Recall(self.store.search, self._embedder, words, cfg.recall.steps)
        self.recall = pipeline if cfg.recall.enabled else None
        self.retrieval = Retrieval(pipeline, cfg.retrieval, self.indexer.unembedded) if cfg.retrieval.enabled else None

    def index(self, messages: list[Message], full_texts: dict[str, str]) -> None:
        """Newly stored messages: their words searchable now, their vectors made in the background.

        ``full_texts``: the saved full text of the truncated tool results among them, by call id.
        """
        if self.indexer is not None:
            self.indexer.add(self.window.session, messages, full_texts)

    def search(self, query: str, also: Sequence[str] = ()) -> list[Passage]:
        """The ``recall`` tool's search: the best passages the window does not show (at most ``maxResults``);
        [] when the tool is off. ``also``: other phrasings of ``query``, searched with it."""
        if self.recall is None:
            return []
        with FOREGROUND.held():
            guesses = self._rewrite(query)
            self._settle()
            return self.recall.search(
                self.window.session, query, self.max_results, also=also, guesses=guesses(), window=self.window.messages
            )

    def related(self, user: Message) -> str | None:
        """The ``<related_context>`` block for this turn's message, or None (retrieval off, or nothing worth it)."""
        if self.retrieval is None:
            return None
        with FOREGROUND.held():
            guesses = self._rewrite(user.content)
            self._settle()
            return self.retrieval.related_context(
                self.window.session, user.content, self.window.messages, query_id=user.id, guesses=guesses()
            )

    def _rewrite(self, question: str) -> Callable[[], list[str]]:
        """The fast model asked for other phrasings now, while the backlog settles; the wait for them."""
        return self.rewriter.ask(question) if self.rewriter is not None else list

    def _settle(self) -> None:
        """Wait (briefly) for the vectors the search could return: not those of what the window shows whole."""
        if self.indexer is not None:
            self.indexer.settle(self.window.session, skip=shown_whole(self.window.messages))

    def indexing(self) -> dict[str, Any]:
        """How far the index is behind: messages without their vectors (found by words meanwhile), messages not
        searchable at all yet, the seconds the vectors still take, and whether earlier history is still checked."""
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
