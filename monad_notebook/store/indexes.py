"""The indexes a table grows into: lookups by session and seq, session filters, full text, vectors.

Each is built once, when a table first needs it, and kept current by the background optimize,
which folds new rows into every index; rows not yet folded are scanned, which stays correct.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from lancedb.index import FTS, Bitmap, BTree, IvfSq

from monad_notebook.store.failures import reason
from monad_notebook.store.rows import EMBEDDINGS_PREFIX, search_table

log = logging.getLogger(__name__)
_PARTITIONS = 8
_VECTOR_INDEX = "IvfSq"  # the index_type LanceDB lists for it
# Reads by session and position: a turn's catch-up and a window's load ask for "seq > n" of one session.
_MESSAGE_LOOKUPS: dict[str, Any] = {"session": Bitmap, "seq": BTree}
# The recall indexer asks recall's tables which of a few messages they already hold ("message_id IN (...)").
_SEARCH_LOOKUPS: dict[str, Any] = {"message_id": BTree}
# What recall's searches filter and match on (``search.py`` builds them on a table's first write).
FILTER_INDEXES: dict[str, Any] = {"session": Bitmap, "model": Bitmap}
TEXT_INDEXES: dict[str, Any] = {"session": Bitmap, "text": FTS}


def build_missing(handle: Any, columns: dict[str, Any]) -> None:
    """One index per column, of the kind given, for the columns that have none yet."""
    indexed = {tuple(index.columns) for index in handle.list_indices()}
    for column, kind in columns.items():
        if (column,) not in indexed:
            handle.create_index(column, config=kind())


def _lookups(table: str) -> dict[str, Any]:
    if table == "messages":
        return _MESSAGE_LOOKUPS
    return _SEARCH_LOOKUPS if search_table(table) else {}


class _Database(Protocol):
    """What building indexes needs of the tables (``tables.py``): the connection and the size for a vector index."""

    db: Any
    ann_min_rows: int


class Indexes:
    """What a table's optimize pass builds around it: lookups before, a vector index after.

    The full-text index and the search filters are built by the searches that need them
    (``search.py``), on their first write.
    """

    def __init__(self, tables: _Database) -> None:
        self.tables = tables

    def before_optimize(self, name: str) -> None:
        """Lookups first, so the pass that follows drops the versions their builds made."""
        if _lookups(name):
            self._index_lookups(name)

    def after_optimize(self, name: str) -> None:
        if name.startswith(EMBEDDINGS_PREFIX):
            self._index_vectors(name)

    def _index_lookups(self, table: str) -> None:
        """A scalar index per looked-up column, built on a handle of its own outside the lock.

        Reading a session's messages after a seq, and asking recall's tables which messages they
        hold, would otherwise scan the whole table on every turn. Building them is cheap; without
        them reads stay correct, only slower, so a failure is only logged.
        """
        try:
            build_missing(self.tables.db.open_table(table), _lookups(table))
        except Exception as exc:
            log.debug("cannot index the %s table for lookups (%s)", table, reason(exc))

    def _index_vectors(self, table: str) -> None:
        """An IVF_SQ index on ``vector`` once the table holds ``ann_min_rows`` rows, built outside the lock.

        Searches probe every partition and rank by the index's 8-bit codes, then reorder twice
        the hits asked for by their full vectors (``search.py``), so distances are exact while
        the search reads codes a quarter of the vectors' size (BENCHMARKS.md, "Tails", compares
        it with IVF_FLAT and a scan). Building takes seconds at large sizes; no lock is held, so
        writers keep committing and rows written meanwhile are searched flat until the next
        optimize folds them in. An index of another kind (IVF_FLAT, from earlier versions) is
        replaced once. A failed build is logged; search stays exact.
        """
        try:
            handle = self.tables.db.open_table(table)
            kinds = [index.index_type for index in handle.list_indices() if index.columns == ["vector"]]
            if _VECTOR_INDEX in kinds or handle.count_rows() < self.tables.ann_min_rows:
                return
            config = IvfSq(distance_type="cosine", num_partitions=_PARTITIONS)
            handle.create_index("vector", config=config, replace=True)
        except Exception as exc:
            log.warning("cannot build the vector index of the %s table (%s); search stays exact", table, reason(exc))
