"""Embedders for recall's tests: one axis per vocabulary word, so a test chooses the similarities."""

from __future__ import annotations

import re
import threading

from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.context.recall.wordmatch import WordVectors
from monad_notebook.errors import ModelError
from monad_notebook.messages import Message

VOCABULARY = ("cat", "revenue", "pizza", "python", "weather", "train")


class KeywordEmbedder:
    """A fake embedder: one axis per vocabulary word, so tests choose the similarities."""

    name = "keywords"
    dims = len(VOCABULARY) + 1

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.fail = False
        self.gate: threading.Event | None = None
        self.entered = threading.Event()

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail:
            raise ModelError("the embedding endpoint is down")
        return [self._vector(t) for t in texts]

    @staticmethod
    def _vector(text: str) -> list[float]:
        words = re.findall(r"[a-z]+", text.lower())
        counts = [float(words.count(w)) for w in VOCABULARY] + [0.05]
        norm = sum(c * c for c in counts) ** 0.5
        return [c / norm for c in counts]


def index(
    store,
    embedder,
    session: str,
    messages: list[Message],
    timeout: float = 60,
    words: WordVectors | None = None,
    full_texts: dict[str, str] | None = None,
) -> RecallIndexer:
    """A new indexer meets ``session`` and indexes ``messages`` as a committed step (``full_texts``: the saved
    text of truncated results), and everything is waited for."""
    indexer = RecallIndexer(store, embedder, words=words)
    indexer.meet(session)
    indexer.add(session, messages, full_texts or {})
    assert indexer.flush(timeout=timeout)
    assert indexer.last_error is None
    return indexer
