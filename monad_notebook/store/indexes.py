"""The indexes a table grows into: lookups by session and seq, session filters, full text, vectors.

Each is built once, when a table first needs it, and kept current by the background optimize,
which folds new rows into every index; rows not yet folded are scanned, which stays correct.
"""

from __future__ import annotations

import logging
from typing import Any

from lancedb.index import FTS, Bitmap, BTree, IvfSq

from monad_notebook.store.rows import EMBEDDINGS_PREFIX, search_table
from monad_notebook.store.tables import LanceTables, _reason

log = logging.getLogger(__name__)
_PARTITIONS = 8
_VECTOR_INDEX = "IvfSq"  # the index_type LanceDB lists for it
# Reads by session and position: a turn's catch-up and a window's load ask for "seq > n" of one session.
_MESSAGE_LOOKUPS: dict[str, Any] = {"session": Bitmap, "seq": BTree}
# The recall indexer asks recall's tables which of a few messages they already hold ("message_id IN (...)").
_SEARCH_LOOKUPS: dict[str, Any] = {"message_id": BTree}


def _lookups(table: str) -> dict[str, Any]:
    if table == "messages":
        return _MESSAGE_LOOKUPS
    return _SEARCH_LOOKUPS if search_table(table) else {}


class IndexedTables(LanceTables):
    """Index building on top of the table plumbing; the searches that use them live in ``search.py``."""

    def _index_before_optimize(self, name: str) -> None:
        """Lookups first, so the pass that follows drops the versions their builds made."""
        if _lookups(name):
            self._index_lookups(name)

    def _index_after_optimize(self, name: str) -> None:
        if name.startswith(EMBEDDINGS_PREFIX):
            self._index_vectors(name)

    def _index_lookups(self, table: str) -> None:
        """A scalar index per looked-up column, built on a handle of its own outside the lock.

        Measured at 100k messages: "seq > n" of one session read 8.3 ms by a scan, 2.4 ms through
        the indexes, 30 ms and 17 ms with 150 appends not yet compacted; building both takes about
        25 ms. Asking recall's tables at 100k rows which of six messages they hold: 13 to 14 ms
        p50 by a scan of ``message_id`` (on both cores, beside the turn), 3.6 through a BTREE
        (built in about 40 ms). Without them reads stay correct, only slower, so a failure is
        only logged.
        """
        try:
            handle = self._db.open_table(table)
            indexed = {tuple(index.columns) for index in handle.list_indices()}
            for column, kind in _lookups(table).items():
                if (column,) not in indexed:
                    handle.create_index(column, config=kind())
        except Exception as exc:
            log.debug("cannot index the %s table for lookups (%s)", table, _reason(exc))

    def _index_filters(self, table: str) -> None:
        """Bitmap indexes on ``session`` and ``model``, so the search prefilter reads one session's rows.

        Measured at 100k rows in 100 sessions: 186 ms -> 9 ms per search. The background
        optimize folds new rows into them; rows not yet folded are scanned, which stays correct.
        """
        if table in self._filter_indexed:
            return
        with self._lock:
            handle = self._table(table, create=False)
            if handle is None:
                return
            try:
                indexed = {tuple(index.columns) for index in handle.list_indices()}
                for column in ("session", "model"):
                    if (column,) not in indexed:
                        handle.create_index(column, config=Bitmap())
            except Exception as exc:
                log.warning("cannot index the %s table (%s); search works, only slower", table, _reason(exc))
                return
            self._filter_indexed.add(table)

    def _index_text(self, table: str) -> bool:
        """A session bitmap and LanceDB's native full-text index on ``text``, created once; False if none.

        Measured on LanceDB 0.40: rows appended after the index was built are found at once
        (searched unindexed, a flat scan of just those rows: about 25 ms per 2,000 chunks), and
        the background optimize folds them into the index.
        """
        if table in self._filter_indexed:
            return True
        with self._lock:
            handle = self._table(table, create=False)
            if handle is None:
                return False
            try:
                indexed = {tuple(index.columns) for index in handle.list_indices()}
                if ("session",) not in indexed:
                    handle.create_index("session", config=Bitmap())
                if ("text",) not in indexed:
                    handle.create_index("text", config=FTS())
            except Exception as exc:
                log.warning("cannot index the %s table (%s); recall by words is off", table, _reason(exc))
                return False
            self._filter_indexed.add(table)
            return True

    def _index_vectors(self, table: str) -> None:
        """An IVF_SQ index on ``vector`` once the table holds ``ann_min_rows`` rows, built outside the lock.

        Searches probe every partition and rank by the index's 8-bit codes, then reorder twice
        the hits asked for by their full vectors (``search.py``), so distances are exact and,
        at 100k real 384-d embeddings on 2 cores, 60 questions got the exact top 18 every time,
        in 9 ms p50 against 12 for IVF_FLAT and 70 for a scan (a one-off check; BENCHMARKS.md). The codes are a
        quarter of the vectors' size, which matters most when the other core is busy. Building
        takes about 3 s at 100k rows; no lock is held, so writers keep committing and rows
        written meanwhile are searched flat until the next optimize folds them in. An index of
        another kind (IVF_FLAT, from earlier versions) is replaced once. A failed build is
        logged; search stays exact.
        """
        try:
            handle = self._db.open_table(table)
            kinds = [index.index_type for index in handle.list_indices() if index.columns == ["vector"]]
            if _VECTOR_INDEX in kinds or handle.count_rows() < self.ann_min_rows:
                return
            config = IvfSq(distance_type="cosine", num_partitions=_PARTITIONS)
            handle.create_index("vector", config=config, replace=True)
        except Exception as exc:
            log.warning("cannot build the vector index of the %s table (%s); search stays exact", table, _reason(exc))
