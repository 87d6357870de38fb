"""The LanceDB plumbing under the store: one connection, cached table handles, retries.

Every write is counted towards the table's next background optimize (``optimize_passes.py``).
Another kernel may commit between our read and our write: conflicting commits and versions
removed under us are retried on the latest version. Every other part of the store that talks
to LanceDB is given this object: ``lance.py`` composes the Store protocol from it and its parts
(``search.py``, ``claims.py``); ``indexes.py`` builds the indexes the optimize passes keep current.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import lancedb
import pyarrow as pa

from monad_notebook.config_schema import monad_home
from monad_notebook.errors import StoreError
from monad_notebook.foreground import FOREGROUND, Foreground
from monad_notebook.store.failures import ADVICE, reason
from monad_notebook.store.indexes import Indexes
from monad_notebook.store.optimize_passes import OptimizePasses
from monad_notebook.store.optimizer import WORKER, OptimizeWorker
from monad_notebook.store.rows import (
    EMBEDDINGS_PREFIX,
    NULL_AS,
    SCHEMAS,
    arrow_table,
    embeddings_table,
    sql_in,
)

log = logging.getLogger(__name__)
_T = TypeVar("_T")

_RETRIES = 4
IDS_PER_READ = 500  # ids per IN (...) filter
_RETRYABLE = ("not found", "incompatible transaction", "commit conflict", "retryable")


def default_db_uri() -> str:
    """``$MONAD_HOME/db``, or ``~/.monad/db``: one database shared by every kernel of this user."""
    return str(monad_home() / "db")


class LanceTables:
    """Thread-safe access to the tables of one LanceDB database, shared with other kernels."""

    def __init__(
        self,
        uri: str | Path,
        *,
        storage_options: dict[str, str] | None = None,
        optimize_every: int = 50,
        read_consistency_interval: float | None = 0.0,
        cleanup_grace: timedelta = timedelta(minutes=2),
        ann_min_rows: int = 20_000,
        optimize_quiet: float = 1.0,
        foreground: Foreground = FOREGROUND,
        optimize_worker: OptimizeWorker | None = WORKER,
    ) -> None:
        text = str(uri)
        self.uri = text if "://" in text else str(Path(text).expanduser().absolute())
        self.storage_options = dict(storage_options or {})
        self.ann_min_rows = ann_min_rows
        self.rows_read = 0
        self.lock = threading.RLock()
        self._read_count_lock = threading.Lock()
        self._tables: dict[str, Any] = {}
        self.added: dict[str, int] = {}  # table -> rows this store has added to it, ever
        self.deletions: dict[str, int] = {}  # table -> deletes this store has made from it, ever
        interval = None if read_consistency_interval is None else timedelta(seconds=read_consistency_interval)
        try:
            self.db = lancedb.connect(self.uri, read_consistency_interval=interval, storage_options=storage_options)
        except Exception as exc:
            why = reason(exc)
            fix = "check its storage options" if "://" in self.uri else "point MONAD_HOME at a writable directory"
            fix = "" if why in ADVICE else f"; {fix}"
            raise StoreError(f"cannot open the database at {self.uri} ({why}){fix}") from None
        self.indexes = Indexes(self)
        self.passes = OptimizePasses(
            self,
            every=optimize_every,
            grace=cleanup_grace,
            quiet=optimize_quiet,
            foreground=foreground,
            worker=optimize_worker,
        )

    def table(self, name: str, *, create: bool) -> Any | None:
        """The cached handle; created on first write, so reads of a fresh database create nothing."""
        handle = self._tables.get(name)
        if handle is not None:
            return handle
        try:
            if name in self.db.list_tables(limit=1000).tables:
                handle = self._open_when_created(name)
                self._add_missing_columns(handle, SCHEMAS[name])
            elif create:
                try:
                    handle = self.db.create_table(name, schema=SCHEMAS[name], exist_ok=True)
                except Exception:  # another kernel is creating it this very moment
                    handle = self._open_when_created(name)
            else:
                return None
        except Exception as exc:
            raise StoreError(
                f"cannot open the {name} table at {self.uri} ({reason(exc)}){self._repair(name)}"
            ) from None
        self._tables[name] = handle
        return handle

    def _open_when_created(self, name: str) -> Any:
        """Open a table another kernel is creating: its first version may take a moment to commit."""
        for attempt in range(_RETRIES + 1):
            try:
                return self.db.open_table(name)
            except Exception as exc:
                if attempt == _RETRIES or "not found" not in str(exc).lower():
                    raise
                time.sleep(random.uniform(0.05, 0.1) * (attempt + 1))
        raise AssertionError("unreachable")

    def _repair(self, table: str) -> str:
        """How to fall back to the previous version when the newest one will not open (local databases)."""
        versions = Path(self.uri) / f"{table}.lance" / "_versions"
        if "://" in self.uri or not versions.is_dir():
            return ""
        manifests = sorted(versions.glob("*.manifest"), key=lambda p: p.stat().st_mtime_ns)
        if len(manifests) < 2:
            return ""
        newest = manifests[-1]
        return f"; if its newest version is damaged, repair: mv {newest} {newest}.damaged (falls back to the previous)"

    @staticmethod
    def _add_missing_columns(handle: Any, schema: pa.Schema) -> None:
        """Tables written by an older version get newer (nullable) columns as nulls."""
        missing = [f for f in schema if f.name not in handle.schema.names]
        if missing:
            handle.add_columns(missing)

    def read(self, table: str, where: str | None, columns: list[str] | None = None) -> list[dict[str, Any]]:
        """Rows as dicts with nulls (columns added after the row was written) read as empty values."""
        handle = self.handle(table)
        if handle is None:
            return []
        query = handle.search().select(columns or SCHEMAS[table].names)
        if where is not None:
            query = query.where(where)
        rows = self.retrying("read", table, lambda: query.to_arrow().to_pylist())
        self.count_read(rows)
        nulls = {f.name: NULL_AS[f.type] for f in SCHEMAS[table]}
        return [{k: nulls[k] if v is None else v for k, v in row.items()} for row in rows]

    def distinct(self, table: str, where: str, column: str, among: Iterable[str] | None = None) -> set[str]:
        """One column's distinct values (only those in ``among``, when given), read as Arrow columns, not rows.

        Building row dicts holds the interpreter lock for most of the read, which slows the turn
        while the recall indexer reads on its own thread; one Arrow column holds it briefly, and
        asking only about the ids in ``among`` reads just those rows.
        """
        handle = self.handle(table)
        if handle is None:
            return set()
        wanted = None if among is None else sorted(set(among))
        filters = (
            [where]
            if wanted is None
            else [
                f"{where} AND {column} IN {sql_in(wanted[start : start + IDS_PER_READ])}"
                for start in range(0, len(wanted), IDS_PER_READ)
            ]
        )
        found: set[str] = set()
        for condition in filters:
            query = handle.search().where(condition).select([column])
            values = self.retrying("read", table, lambda q=query: q.to_arrow()[column])
            with self._read_count_lock:
                self.rows_read += len(values)
            found.update(values.to_pylist())
        found.discard(None)  # type: ignore[arg-type]
        return found

    def retrying(self, verb: str, table: str, action: Callable[[], _T]) -> _T:
        """Retry on the latest version when another kernel got there first.

        Its cleanup may have removed the version we held ("not found"), or its commit may
        conflict with ours ("incompatible transaction", "commit conflict"): a few retries with
        a short jittered pause, then a one-line StoreError.
        """
        for attempt in range(_RETRIES + 1):
            try:
                return action()
            except Exception as exc:
                message = str(exc).lower()
                if attempt == _RETRIES or not any(mark in message for mark in _RETRYABLE):
                    hint = self._repair(table) if verb == "read" else ""
                    raise StoreError(f"cannot {verb} the {table} table at {self.uri} ({reason(exc)}){hint}") from None
            time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
            with contextlib.suppress(Exception):
                self._tables[table].checkout_latest()
        raise AssertionError("unreachable")

    def handle(self, table: str) -> Any | None:
        """The table's handle for a read, or None if it does not exist yet.

        Only a first lookup takes the lock, and the query runs outside it, so a turn's read never
        waits behind another thread's write or the recall indexer's search. LanceDB handles are
        safe to share between threads, and each read sees the latest committed version.
        """
        handle = self._tables.get(table)
        if handle is not None:
            return handle
        with self.lock:
            return self.table(table, create=False)

    def count_read(self, rows: list[dict[str, Any]]) -> None:
        with self._read_count_lock:
            self.rows_read += len(rows)

    def count(self, table: str, where: str | None) -> int:
        handle = self.handle(table)
        return 0 if handle is None else int(self.retrying("read", table, lambda: handle.count_rows(where)))

    def write(self, table: str, operation: Callable[[Any], object]) -> int | None:
        """One LanceDB operation, counted towards the next background optimize; the version it committed."""
        with self.lock:
            handle = self.table(table, create=True)
            result = self.retrying("write", table, lambda: operation(handle))
            self.passes.wrote(table)
        version = getattr(result, "version", None)
        return version if isinstance(version, int) else None

    def add(self, table: str, rows: list[dict[str, Any]]) -> int | None:
        if not rows:
            return None
        with self.lock:
            self.passes.rows_added(table, len(rows))
            self.added[table] = self.added.get(table, 0) + len(rows)
            return self.write(table, lambda h: h.add(arrow_table(rows, SCHEMAS[table])))

    def version(self, table: str) -> int | None:
        """The latest committed version (one small read of the manifest), 0 before the table exists; None if unknown."""
        handle = self.handle(table)
        if handle is None:
            return 0
        try:
            return int(handle.version)
        except Exception:
            return None

    def delete(self, table: str, where: str) -> None:
        self.deletions[table] = self.deletions.get(table, 0) + 1
        if self.count(table, where):
            self.write(table, lambda h: h.delete(where))

    def embedding_tables(self) -> list[str]:
        """Every vector-width table in the database, whichever process created it."""
        try:
            names = self.db.list_tables(limit=1000).tables
        except Exception as exc:
            raise StoreError(f"cannot list the tables at {self.uri} ({reason(exc)})") from None
        suffixes = [n.removeprefix(EMBEDDINGS_PREFIX) for n in names if n.startswith(EMBEDDINGS_PREFIX)]
        return [embeddings_table(int(s)) for s in suffixes if s.isdigit()]

    def table_stats(self) -> dict[str, dict[str, int]]:
        """Versions, fragments and rows per existing table: what background optimize keeps bounded."""
        stats: dict[str, dict[str, int]] = {}
        with self.lock:
            for name in SCHEMAS:
                handle = self.table(name, create=False)
                if handle is not None:
                    info = handle.stats()
                    stats[name] = {
                        "versions": len(handle.list_versions()),
                        "fragments": int(info["fragment_stats"]["num_fragments"]),
                        "rows": int(info["num_rows"]),
                    }
        return stats

    def table_version(self, name: str) -> int:
        """The table's current LanceDB version (0 if it does not exist yet): one per write."""
        with self.lock:
            handle = self.table(name, create=False)
            return 0 if handle is None else int(handle.version)
