"""Recall's index in memory: the ``SearchIndex`` part of ``MemoryStore``.

Full-text search ranks by BM25 over plain word tokens and vector search by cosine, one chunk per
message, skipping what the window shows, as the LanceDB store's ``search.py`` answers.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, replace
from typing import Any

from monad_notebook.messages import Message
from monad_notebook.store.base import Chunk, EmbeddingHit
from monad_notebook.store.rows import (
    EMBEDDED_TEXT_MAX_CHARS,
    as_chunk,
    as_text,
    best_hits,
    check_query_vector,
    check_vectors,
    query_words,
    sql_str,
)

_BM25_K1, _BM25_B = 1.2, 0.75


def checked(name: str) -> str:
    """Refuses what the LanceDB store's filters refuse (NUL, lone surrogates), with the same message."""
    sql_str(name)
    return name


class MemorySearch:
    """Every session's chunks and vectors; ``lock`` is the store's, so a branch's copy sees no write land midway."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self._chunks: dict[str, list[Chunk]] = defaultdict(list)
        self._vectors: dict[str, list[tuple[Chunk, str, list[float]]]] = defaultdict(list)  # session -> rows

    def save_chunks(self, session: str, chunks: list[Chunk]) -> None:
        with self.lock:
            self._chunks[checked(session)].extend(replace(c, text=as_text(c.text)) for c in chunks)

    def chunked_ids(self, session: str, among: Iterable[str] | None = None) -> set[str]:
        with self.lock:
            ids = {c.message_id for c in self._chunks.get(checked(session), [])}
        return ids if among is None else ids & set(among)

    def chunk_texts(self, session: str, batch: int = 2000) -> Iterator[list[str]]:
        with self.lock:
            texts = [c.text for c in self._chunks.get(checked(session), [])]
        for start in range(0, len(texts), batch):
            yield texts[start : start + batch]

    def search_chunks(
        self,
        session: str,
        words: str,
        k: int,
        *,
        exclude_ids: Iterable[str] = (),
        shown: Mapping[str, str] | None = None,
    ) -> list[EmbeddingHit]:
        """BM25 over this session's chunks (lower-cased word tokens, any of the query's words)."""
        terms = set(query_words(words).lower().split())
        if k <= 0 or not terms:
            return []
        with self.lock:
            chunks = list(self._chunks.get(checked(session), []))
        documents = [Counter(query_words(c.text).lower().split()) for c in chunks]
        if not documents:
            return []
        average = sum(sum(d.values()) for d in documents) / len(documents) or 1.0
        frequency = {t: sum(1 for d in documents if t in d) for t in terms}
        rows = []
        for chunk, document in zip(chunks, documents, strict=True):
            length = sum(document.values())
            score = sum(
                math.log(1 + (len(documents) - frequency[t] + 0.5) / (frequency[t] + 0.5))
                * document[t]
                * (_BM25_K1 + 1)
                / (document[t] + _BM25_K1 * (1 - _BM25_B + _BM25_B * length / average))
                for t in terms
                if t in document
            )
            if score > 0:
                rows.append({**_hit_row(chunk), "_score": score})
        rows.sort(key=lambda r: r["_score"], reverse=True)
        return best_hits(rows, k, set(exclude_ids), shown)

    def save_embeddings(self, session: str, rows: list[tuple[Message | Chunk, list[float]]], model: str) -> None:
        if not rows:
            return
        check_vectors(vector for _, vector in rows)
        with self.lock:
            self._vectors[checked(session)].extend(
                (_embedded(item), model, [float(v) for v in vector]) for item, vector in rows
            )

    def embedded_ids(
        self, session: str, *, model: str, dims: int | None = None, among: Iterable[str] | None = None
    ) -> set[str]:
        with self.lock:
            rows = self._vectors.get(checked(session), [])
            ids = {c.message_id for c, m, v in rows if m == model and dims in (None, len(v))}
        return ids if among is None else ids & set(among)

    def search_embeddings(
        self,
        session: str,
        vector: list[float],
        k: int,
        *,
        model: str | None = None,
        exclude_ids: Iterable[str] = (),
        shown: Mapping[str, str] | None = None,
        each_chunk: bool = False,
    ) -> list[EmbeddingHit]:
        if k <= 0 or not vector:
            return []
        check_query_vector(vector)
        with self.lock:
            stored = [
                (c, v)
                for c, m, v in self._vectors.get(checked(session), [])
                if len(v) == len(vector) and (model is None or m == model)
            ]
        rows = [{**_hit_row(c), "_distance": 1.0 - _cosine(vector, v)} for c, v in stored]
        rows.sort(key=lambda r: r["_distance"])
        if each_chunk:
            rows = rows[:k]
        return best_hits(rows, k, set(exclude_ids), shown, each_chunk=each_chunk)

    def copy(self, source: str, target: str, ids: Mapping[str, str]) -> None:
        with self.lock:
            self._chunks[checked(target)] = [
                replace(c, message_id=ids[c.message_id]) for c in self._chunks.get(source, []) if c.message_id in ids
            ]
            self._vectors[target] = [
                (replace(c, message_id=ids[c.message_id]), model, list(v))
                for c, model, v in self._vectors.get(source, [])
                if c.message_id in ids
            ]

    def drop(self, session: str) -> None:
        with self.lock:
            self._chunks.pop(session, None)
            self._vectors.pop(session, None)


def _embedded(item: Message | Chunk) -> Chunk:
    """The chunk as the vector's row keeps it: its text cut to what a snippet shows."""
    chunk = as_chunk(item)
    return replace(chunk, text=as_text(chunk.text)[:EMBEDDED_TEXT_MAX_CHARS])


def _hit_row(chunk: Chunk) -> dict[str, Any]:
    return asdict(chunk)  # the columns a stored chunk has, as LanceDB's rows name them


def _cosine(a: list[float], b: list[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0
