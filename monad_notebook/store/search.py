"""Recall storage: chunks for full-text search and their vectors, on LanceDB.

Every message and every saved tool output is kept in chunks twice over: in ``recall_text``
under LanceDB's native full-text index (BM25), and in ``embeddings_<dims>`` with one vector
per chunk. The full-text index is built once, on the first write; rows appended later are
searched unindexed (a flat scan of only those rows) until the background optimize folds them
in, so a chunk is findable as soon as it is written. Filters are raw SQL: every value goes
through ``sql_str``; the words of a full-text query are reduced to plain word tokens first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from monad_notebook.errors import StoreError
from monad_notebook.messages import Message
from monad_notebook.store.base import Chunk, EmbeddingHit
from monad_notebook.store.indexes import FILTER_INDEXES, TEXT_INDEXES, build_missing
from monad_notebook.store.rows import (
    EMBEDDED_TEXT_MAX_CHARS,
    TEXT_TABLE,
    as_chunk,
    best_hits,
    check_query_vector,
    check_vectors,
    embeddings_table,
    query_words,
    sql_str,
)

if TYPE_CHECKING:
    from monad_notebook.store.tables import LanceTables

log = logging.getLogger(__name__)

_EVERY_PARTITION = 1_000_000
_REFINE = 2
_WITHOUT_TEXT = "recall by words is off"
_HIT_COLUMNS = ["message_id", "offset", "seq", "turn", "role", "name", "tool_call_id", "text", "created_at"]


class LanceSearch:
    """Recall's index (the ``SearchIndex`` role): chunk and vector tables and the two searches over them, one session
    at a time, never another's."""

    small_recount_seconds = 60.0  # a session below ann_min_rows is counted again at least this often

    def __init__(self, tables: LanceTables) -> None:
        self.tables = tables
        self._filter_indexed: set[str] = set()
        # (table, filter) known to hold ann_min_rows rows, as of the table's deletions then
        self._indexed_scopes: dict[tuple[str, str], int] = {}
        # (table, filter) known to hold fewer: until tables.added reaches the mark, and until the monotonic deadline
        self._small_scopes: dict[tuple[str, str], tuple[int, float]] = {}

    # full-text

    def save_chunks(self, session: str, chunks: list[Chunk]) -> None:
        """One write for the whole batch; the full-text index is created with the table."""
        if not chunks:
            return
        sql_str(session)
        now = time.time()
        rows = [
            {
                "session": session,
                "message_id": c.message_id,
                "offset": c.offset,
                "seq": c.seq,
                "turn": c.turn,
                "role": c.role,
                "name": c.name,
                "tool_call_id": c.tool_call_id,
                "text": c.text,
                "created_at": c.created_at or now,
            }
            for c in chunks
        ]
        self.tables.add(TEXT_TABLE, rows)
        self._indexed(TEXT_TABLE, TEXT_INDEXES, _WITHOUT_TEXT)

    def chunked_ids(self, session: str, among: Iterable[str] | None = None) -> set[str]:
        return self.tables.distinct(TEXT_TABLE, f"session = {sql_str(session)}", "message_id", among)

    def chunk_texts(self, session: str, batch: int = 2000) -> Iterator[list[str]]:
        handle = self.tables.handle(TEXT_TABLE)
        if handle is None:
            return
        query = handle.search().where(f"session = {sql_str(session)}").select(["text"])
        reader = self.tables.retrying("read", TEXT_TABLE, lambda: query.to_batches(batch))
        for rows in reader:
            yield rows.column("text").to_pylist()

    def search_chunks(
        self,
        session: str,
        words: str,
        k: int,
        *,
        exclude_ids: Iterable[str] = (),
        shown: Mapping[str, str] | None = None,
    ) -> list[EmbeddingHit]:
        """BM25 over this session's chunks; the best chunk of each message, best first.

        A query with no word left after reduction finds nothing (rather than everything).
        """
        words = query_words(words)
        if k <= 0 or not words:
            return []
        excluded = set(exclude_ids)
        where = f"session = {sql_str(session)}"
        handle = self.tables.handle(TEXT_TABLE)
        if handle is None or not self._indexed(TEXT_TABLE, TEXT_INDEXES, _WITHOUT_TEXT):
            return []
        query = (
            handle.search(words, query_type="fts", fts_columns="text")
            .where(where, prefilter=True)
            .select([*_HIT_COLUMNS, "_score"])
        )
        return self._per_message(TEXT_TABLE, query, k, excluded, shown)

    def _per_message(
        self,
        table: str,
        query: Any,
        k: int,
        excluded: set[str],
        shown: Mapping[str, str] | None,
        *,
        each_chunk: bool = False,
    ) -> list[EmbeddingHit]:
        """The best chunk of up to ``k`` messages, best first: two rows per message asked for, then more.

        Rows beyond ``k`` leave room for a message's other chunks and for what the window shows
        (``excluded`` messages, ``shown`` chunks). The narrow read nearly always suffices; only
        when it falls short while more rows exist is it read again wide (four rows per message,
        plus one per excluded id), so the answer is then the wide one. Each row read costs, and a
        vector search reorders twice the rows by their full vectors. ``each_chunk``: the chunks
        among the ``k`` best rows, in one read.
        """
        limits = (k,) if each_chunk else (2 * k, 4 * k + len(excluded) + len(shown or ()))
        for limit in limits:
            rows = self._search_rows(table, query.limit(limit))
            hits = best_hits(rows, k, excluded, shown, each_chunk=each_chunk)
            if len(hits) == k or len(rows) < limit:
                break
        return hits

    def _search_rows(self, table: str, query: Any) -> list[dict[str, Any]]:
        rows = self.tables.retrying("search", table, lambda: query.to_arrow().to_pylist())
        self.tables.count_read(rows)
        return rows

    def copy(self, source: str, target: str, ids: Mapping[str, str]) -> None:
        """A branch's chunks and vectors, pointing at the branch's own message ids: one write per table."""
        sql_str(target)
        for table in (TEXT_TABLE, *self.tables.embedding_tables()):
            rows = self.tables.read(table, f"session = {sql_str(source)}")
            copies = [
                {**r, "session": target, "message_id": ids[r["message_id"]]} for r in rows if r["message_id"] in ids
            ]
            self.tables.add(table, copies)

    def drop(self, session: str) -> None:
        """The session's chunks and vectors, gone with it (a table without any leaves no empty version)."""
        for table in (TEXT_TABLE, *self.tables.embedding_tables()):
            self.tables.delete(table, f"session = {sql_str(session)}")

    def _indexed(self, table: str, columns: dict[str, Any], without: str) -> bool:
        """The search indexes of ``table`` (``indexes.py``), created once; False, logged, if they cannot be.

        Without the session bitmap every search scans every session's rows; without the full-text
        index there is no search by words. Rows appended after an index was built are found at
        once (LanceDB scans just those rows flat), and the background optimize folds them in.
        """
        if table in self._filter_indexed:
            return True
        with self.tables.lock:
            handle = self.tables.table(table, create=False)
            if handle is None:
                return False
            try:
                self.tables.retrying("index", table, lambda: build_missing(handle, columns))
            except StoreError as exc:  # retried first when another writer's index got there first
                log.warning("%s; %s", exc, without)
                return False
            self._filter_indexed.add(table)
            return True

    # vectors

    def save_embeddings(self, session: str, rows: list[tuple[Message | Chunk, list[float]]], model: str) -> None:
        """One write; every vector must be finite and of one width, or nothing is stored."""
        if not rows:
            return
        sql_str(session)
        dims = check_vectors(vector for _, vector in rows)
        now = time.time()
        data = [_vector_row(session, as_chunk(item), vector, model, now) for item, vector in rows]
        table = embeddings_table(dims)
        self.tables.add(table, data)
        self._indexed(table, FILTER_INDEXES, "search works, only slower")

    def embedded_ids(
        self, session: str, *, model: str, dims: int | None = None, among: Iterable[str] | None = None
    ) -> set[str]:
        where = f"session = {sql_str(session)} AND model = {sql_str(model)}"
        tables = [embeddings_table(dims)] if dims is not None else self.tables.embedding_tables()
        return set().union(*(self.tables.distinct(table, where, "message_id", among) for table in tables))

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
        """Cosine search behind a ``where`` prefilter on the session; the nearest chunk of each message.

        A session holding ``ann_min_rows`` vectors or more is searched through the table's
        vector index (when built), probing every partition and reordering by the full vectors:
        exact distances and the hits of a scan, in less time (BENCHMARKS.md, "Retrieval"). Smaller
        sessions bypass it and are scanned exactly: reading their few rows through the session's
        bitmap index is faster than scanning the whole index, and a probe of only some partitions
        could miss them.
        The choice counts rows (table metadata, then a bitmap lookup) and is kept (``_through_index``).
        What the window shows is skipped after the search (``_per_message`` reads further when it
        crowds the first rows), so a window of hundreds of ids never becomes a huge SQL filter.
        """
        if k <= 0 or not vector:
            return []
        check_query_vector(vector)
        where = f"session = {sql_str(session)}" + ("" if model is None else f" AND model = {sql_str(model)}")
        excluded = set(exclude_ids)
        table = embeddings_table(len(vector))
        handle = self.tables.handle(table)
        if handle is None:
            return []
        exact = not self._through_index(table, where)
        query = self._vector_query(handle, vector, where, exact=exact)
        return self._per_message(table, query, k, excluded, shown, each_chunk=each_chunk)

    def _through_index(self, table: str, where: str) -> bool:
        """Whether both the table and the session's rows number ``ann_min_rows`` or more.

        Once true, it is remembered until this store deletes from the table (``tables.deletions``): a session's vectors
        only grow otherwise, and counting on every search would cost each search two reads.
        While false, it is remembered until this store has added to the table as many rows as the
        session lacked, or for ``small_recount_seconds``: a session grows through the kernel that
        holds it (``lease.py``). A stale answer either way (another process deleting the
        session, or writing to it) costs speed only: the index path probes every partition and
        finds what a scan finds.
        """
        key = (table, where)
        if self._indexed_scopes.get(key) == self.tables.deletions.get(table, 0):
            return True
        added = self.tables.added.get(table, 0)
        until_added, until = self._small_scopes.get(key, (0, 0.0))
        if added < until_added and time.monotonic() < until:
            return False
        for scope in (None, where):
            count = self.tables.count(table, scope)
            if count < self.tables.ann_min_rows:
                recount = time.monotonic() + self.small_recount_seconds
                self._small_scopes[key] = (added + self.tables.ann_min_rows - count, recount)
                return False
        self._indexed_scopes[key] = self.tables.deletions.get(table, 0)
        return True

    @staticmethod
    def _vector_query(handle: Any, vector: list[float], where: str, *, exact: bool) -> Any:
        """The search itself: a scan of the rows, or of the index probing every partition (same results).

        The index ranks by 8-bit codes; ``_REFINE`` times the limit are then reordered by their
        full vectors, which also gives exact distances for the score floor recall applies.
        """
        query = (
            handle.search([float(v) for v in vector], vector_column_name="vector")
            .distance_type("cosine")
            .where(where, prefilter=True)
            .select([*_HIT_COLUMNS, "_distance"])
        )
        return query.bypass_vector_index() if exact else query.nprobes(_EVERY_PARTITION).refine_factor(_REFINE)


def _vector_row(session: str, chunk: Chunk, vector: list[float], model: str, now: float) -> dict[str, Any]:
    return {
        "session": session,
        "message_id": chunk.message_id,
        "seq": chunk.seq,
        "turn": chunk.turn,
        "role": chunk.role,
        "name": chunk.name,
        "text": chunk.text[:EMBEDDED_TEXT_MAX_CHARS],
        "model": model,
        "created_at": chunk.created_at or now,
        "offset": chunk.offset,
        "tool_call_id": chunk.tool_call_id,
        "vector": [float(v) for v in vector],
    }
