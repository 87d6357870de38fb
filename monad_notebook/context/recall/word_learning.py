"""Learning each new word's vector as the indexer goes, so recall can match a question's words to a passage's.

The words of every passage indexed with vectors are learnt (``wordmatch.WordVectors``); the
first time the indexer meets a session, the words of what the session indexed before too, a
slice of its chunks at a time, until the vectors kept are full.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from monad_notebook.context.recall.index_queue import IndexQueue
from monad_notebook.context.recall.pacing import Pacing
from monad_notebook.context.recall.throughput import Throughput
from monad_notebook.context.recall.wordmatch import WordVectors, words_of
from monad_notebook.provider.local_embedder import Embedder
from monad_notebook.store.base import SearchIndex


@dataclass
class WordLearner:
    """Embeds the words the word vectors do not know yet; nothing without word vectors to learn into."""

    words: WordVectors | None
    search: SearchIndex
    queue: IndexQueue
    pacing: Pacing
    speed: Throughput
    words_per_call: ClassVar[int] = 64  # words are a few tokens each: many of them cost what one chunk does

    def learn(self, embedder: Embedder, texts: list[str]) -> None:
        """Embed the words of ``texts`` that have no vector yet, ``words_per_call`` at a time."""
        if self.words is None:
            return
        unknown = self.words.unknown(w for text in texts for w in words_of(text))
        start = 0
        while start < len(unknown):
            part = unknown[start : start + self.speed.call_size(self.words_per_call, words=True)]
            vectors = self.pacing.embed(embedder, part, words=True)
            if vectors is None:
                return
            self.words.learn(part, vectors)
            start += len(part)

    def learn_history(self, embedder: Embedder, session: str) -> None:
        """Learn the words of the chunks the session stored before the indexer met it."""
        if self.words is None:
            return
        for texts in self.search.chunk_texts(session):
            if self.queue.stopping or self.words.full:
                return
            self.pacing.make_way()
            self.learn(embedder, texts)
