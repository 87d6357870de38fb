"""The vectors of messages' passages: embedded in short calls, written in few writes, a message's together.

A tool output's standout lines are embedded beside its chunks (``chunks.embedding_inputs``),
each line once per session, and an agent's reply's first chunk after the user's message it answers. What is
embedded is written every ``write_chunks`` vectors or ``write_seconds``, so a long backlog is
found as it goes; a message's vectors are written together, so a process stopped in its middle
leaves it whole to the next one's history check.
"""

from __future__ import annotations

import time
from collections import Counter

from monad_notebook.context.recall.backlog import Backlog
from monad_notebook.context.recall.chunks import embedding_inputs
from monad_notebook.context.recall.pacing import Pacing
from monad_notebook.context.recall.throughput import Throughput
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import Embedder
from monad_notebook.store.base import Chunk, SearchIndex


class VectorWriter:
    """Embeds messages' chunks and writes their vectors, reporting each message done to the backlog."""

    write_chunks = 256  # vectors per write at most (a longer message's own excepted) ...
    write_seconds = 1.0  # ... and what is embedded is written this often, so a long backlog is found as it goes
    embed_batch = 8  # chunks per call at most, unless the embedder says (``chunks_per_call``); fewer when slow

    def __init__(
        self, search: SearchIndex, backlog: Backlog, pacing: Pacing, speed: Throughput, *, batch_size: int = 0
    ) -> None:
        self.search = search
        self.backlog = backlog
        self.pacing = pacing
        self.speed = speed
        self.write_chunks = batch_size or self.write_chunks

    def write(
        self,
        embedder: Embedder,
        session: str,
        messages: list[Message],
        chunks: dict[str, list[Chunk]],
        max_chars: int,
        before: dict[str, str],
    ) -> None:
        """Embed the chunks of ``messages`` that start within ``max_chars`` and write their vectors; stops when the
        indexer does. ``before``: the user's message each agent's reply answers, by the reply's id (``said_before``)."""
        todo: list[tuple[Chunk, str]] = []
        seen = self.backlog.standouts.setdefault(session, set())
        for message in messages:
            kept = [c for c in chunks[message.id] if c.offset < max_chars]
            todo += embedding_inputs(message, kept, seen, before=before.get(message.id, ""))
        counts = Counter(chunk.message_id for chunk, _ in todo)
        left = {m.id: counts[m.id] for m in messages}
        self.backlog.counted(session, left)
        rows: list[tuple[Chunk, list[float]]] = []
        written = time.monotonic()
        at = 0
        while at < len(todo):
            batch = todo[at : at + self.speed.call_size(self.embed_batch)]
            unit = self.pacing.embed(embedder, [text for _, text in batch], session)
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
                self.pacing.make_way(session)
                self.search.save_embeddings(session, ready, embedder.name)
                for chunk, _ in ready:
                    left[chunk.message_id] -= 1
                self.backlog.vectors_stored(session, left)
                rows, written = rows[len(ready) :], time.monotonic()
        self.backlog.vectors_stored(session, {m.id: 0 for m in messages if not left[m.id]})
