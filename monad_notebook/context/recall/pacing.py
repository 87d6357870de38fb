"""How the indexer's background work makes way for what the user waits on, and calls the embedder.

Embedding costs CPU (the offline model runs on the kernel's own cores), so before each unit of
work the worker steps aside while the foreground is held (``foreground.py``), but never for
long: it waits at most as long as keeps its ``share`` of the time, so a backlog drains while
turns follow each other back to back. A search that starts during an embedding call stops it
when the embedder allows (the local one), rather than share the cores with it. Neither happens
while a search waits on this very work (``IndexQueue.urgent``).
"""

from __future__ import annotations

import time

from monad_notebook.context.recall.index_queue import IndexQueue
from monad_notebook.context.recall.throughput import Throughput
from monad_notebook.foreground import Foreground
from monad_notebook.provider.local_embedder import Embedder, EmbeddingInterrupted
from monad_notebook.provider.prefixes import as_documents


class Pacing:
    """Steps aside for the foreground (``make_way``) and makes embedding calls that do (``embed``)."""

    share = 0.25  # the least share of the time embedding keeps while the foreground is held without a pause
    max_interruptions = 5  # searches that may stop one embedding call before it runs to its end

    def __init__(self, foreground: Foreground, queue: IndexQueue, speed: Throughput) -> None:
        self.foreground = foreground
        self.queue = queue
        self.speed = speed

    def make_way(self, session: str | None = None) -> None:
        """Let what the user waits on go first, for as long as keeps this work its ``share`` of the time.

        No wait while a search waits on this work (``RecallIndexer.settle``), or when stopping.
        """
        urgent = self.queue.urgent
        if urgent and (session is None or session in urgent):
            return
        patience = max(self.speed.unit, 0.005) * (1 - self.share) / self.share
        self.foreground.wait_free(patience, cancelled=lambda: self.queue.stopping or bool(self.queue.urgent))

    def embed(
        self, embedder: Embedder, texts: list[str], session: str | None = None, *, words: bool = False
    ) -> list[list[float]] | None:
        """One embedding call of ``texts`` as passages, after making way; None when stopping.

        Stopped by a search that starts during the call when the embedder allows, and called
        again after it; after ``max_interruptions`` in a row, or when a search waits for this
        very session, the call runs to its end.
        """
        interruptible = getattr(embedder, "embed_in_background", None)
        interruptions, passages = 0, as_documents(embedder, texts)
        while True:
            self.make_way(session)
            if self.queue.stopping:
                return None
            started = time.monotonic()
            try:
                if interruptible is None or interruptions >= self.max_interruptions or session in self.queue.urgent:
                    vectors = embedder.embed(passages)
                else:
                    vectors = interruptible(passages, self.foreground)
            except EmbeddingInterrupted:
                interruptions += 1
                continue
            self.speed.measured(time.monotonic() - started, len(texts), words=words)
            return vectors
