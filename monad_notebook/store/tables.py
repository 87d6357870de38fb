"""The LanceDB plumbing under the store: one connection, cached table handles, retries, optimize.

LanceDB makes a new version and fragment for every write, so a daemon thread has a table
compacted and cleaned up after every ``optimize_every`` writes to it (or once ``optimize_rows`` rows
were added to it since its last pass: rows not yet in a search index are scanned on every search),
and a vector table indexed once it is large. The pass waits for a pause in the writes and runs
outside the lock, in a helper process at the lowest CPU priority (``optimizer.py``), so a turn
neither waits for it nor shares the cores with it.
Counting per table keeps a busy side table (recall's chunks) from compacting the large messages
table more often.
Another kernel may commit between our read and our write: conflicting commits and versions
removed under us are retried on the latest version. Every other part of the store that talks
to LanceDB is given this object: ``lance.py`` composes the Store protocol from it and its parts
(``search.py``, ``claims.py``); ``indexes.py`` builds the indexes its optimize keeps current.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
import warnings
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
from monad_notebook.store.optimizer import WORKER, OptimizeWorker, WorkerUnavailable
from monad_notebook.store.rows import (
    EMBEDDINGS_PREFIX,
    NULL_AS,
    SCHEMAS,
    arrow_table,
    embeddings_table,
    search_table,
    sql_in,
)

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# Cleaning up every old version is the point of the background optimize; reads retry on the latest version.
warnings.filterwarnings("ignore", r"optimize\(cleanup_older_than=0\)", UserWarning, r"monad_notebook\.store\.tables")

_RETRIES = 4
IDS_PER_READ = 500  # ids per IN (...) filter
OPTIMIZE_ROWS = 1000
# Claims read the version just before their own under the lock (claims.py): that version must stay.
_OPTIMIZED_UNDER_LOCK = frozenset({"claims"})
_RETRYABLE = ("not found", "incompatible transaction", "commit conflict", "retryable")


def default_db_uri() -> str:
    """``$MONAD_HOME/db``, or ``~/.monad/db``: one database shared by every kernel of this user."""
    return str(monad_home() / "db")


def writes_per_pass(table: str, optimize_every: int) -> int:
    """The writes to ``table`` that make its next background pass due.

    Recall's search tables are merged five times as often: a search opens every fragment a write
    left (``benchmarks/fragments.py`` measures what unmerged writes add to a search against what a
    pass costs the helper process).
    """
    return max(1, optimize_every // 5) if search_table(table) else optimize_every


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
        self.optimize_worker = optimize_worker  # None: background passes run in this process
        self.optimize_every = optimize_every
        self.cleanup_grace = cleanup_grace
        self.ann_min_rows = ann_min_rows
        self.rows_read = 0
        self.optimize_runs = 0  # background passes finished
        self.optimize_quiet = optimize_quiet
        self.foreground = foreground
        self.optimize_max_delay = 30.0
        self._last_write = 0.0
        self._wake = threading.Event()
        self.last_optimize_error: str | None = None
        self.lock = threading.RLock()
        self._read_count_lock = threading.Lock()
        self._tables: dict[str, Any] = {}
        self._dirty: dict[str, int] = {}  # table -> writes since its last optimize
        self._rows: dict[str, int] = {}  # table -> rows added since its last optimize
        self.optimize_rows = OPTIMIZE_ROWS
        self._optimizer: threading.Thread | None = None
        self._optimizing = False  # a background thread is running its passes; set and cleared under the lock
        self._closed = False
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
            self._dirty[table] = self._dirty.get(table, 0) + 1
            self._maybe_optimize_in_background()
        version = getattr(result, "version", None)
        return version if isinstance(version, int) else None

    def add(self, table: str, rows: list[dict[str, Any]]) -> int | None:
        if not rows:
            return None
        with self.lock:
            self._rows[table] = self._rows.get(table, 0) + len(rows)
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

    def _maybe_optimize_in_background(self) -> None:
        self._last_write = time.monotonic()
        if self._closed or self._optimizing or self.optimize_every <= 0:
            return  # a pass in hand takes up what came due meanwhile when it ends
        tables = self._take_due_tables()
        if not tables:
            return
        self._optimizing = True
        self._optimizer = threading.Thread(
            target=self._optimize_while_due,
            args=(tables,),
            name="monad-store-optimize",
            daemon=True,
        )
        self._optimizer.start()

    def _take_due_tables(self) -> list[str]:
        """Tables with ``writes_per_pass`` writes or ``optimize_rows`` rows since their last pass; counts reset."""
        tables = sorted(
            t
            for t, writes in self._dirty.items()
            if writes >= writes_per_pass(t, self.optimize_every) or self._rows.get(t, 0) >= self.optimize_rows
        )
        for table in tables:
            self._dirty.pop(table)
            self._rows.pop(table, None)
        return tables

    def _optimize_while_due(self, tables: list[str]) -> None:
        """Background passes until none is due: writes that came while a pass ran (a slow pass,
        a burst of writes) get the next one without waiting for another write."""
        try:
            while tables:
                self._optimize_tables(tables, background=True)
                with self.lock:
                    tables = [] if self._closed else self._take_due_tables()
                    self._optimizing = bool(tables)
        finally:
            if tables:  # an unexpected error ended the passes: the next write starts them again
                with self.lock:
                    self._optimizing = False

    def _optimize_tables(self, tables: list[str], *, background: bool) -> None:
        """Compact each table, drop its old versions and fold new rows into its indexes.

        In the background this runs outside the lock, in the helper process (here, on a handle
        of its own, when the helper is unavailable): at 100k rows a pass takes seconds, and a
        turn's writes and reads must not wait for it. The claims table, small, is the exception
        (``_OPTIMIZED_UNDER_LOCK``). LanceDB
        reconciles the compaction with writes committed meanwhile, as it does with another
        kernel's; the files of a write still in flight are never removed (unreferenced new
        files are kept), and versions younger than ``cleanup_grace`` are kept for readers.
        An explicit ``optimize()`` holds the lock and drops every old version at once.
        """
        due = time.monotonic()
        for name in tables:
            if background and not self._quiet(due):
                return
            if not background:
                self.indexes.before_optimize(name)
                with self.lock:
                    self._optimize_table(name, self.table(name, create=False), timedelta(0), raise_errors=True)
                self.indexes.after_optimize(name)
            elif name in _OPTIMIZED_UNDER_LOCK:
                with self.lock:
                    self.optimize_alone(name, self.cleanup_grace)
            elif not self._optimize_elsewhere(name):
                self.optimize_alone(name, self.cleanup_grace)
        if background:
            self.optimize_runs += 1

    def optimize_alone(self, name: str, grace: timedelta) -> None:
        """One table's background pass on a handle of its own: in the helper process, or here as a fallback."""
        self.indexes.before_optimize(name)
        self._optimize_table(name, self._own_handle(name), grace)
        self.indexes.after_optimize(name)

    def _optimize_elsewhere(self, name: str) -> bool:
        """Hand the pass to the helper process; False when it cannot take it (the pass then runs here)."""
        if self.optimize_worker is None:
            return False
        try:
            logged, error = self.optimize_worker.optimize(
                self.uri, name, self.cleanup_grace, storage_options=self.storage_options, ann_min_rows=self.ann_min_rows
            )
        except WorkerUnavailable as exc:
            log.debug("optimizing the %s table in this process: %s", name, exc)
            return False
        for warning in logged:
            log.warning("%s", warning)
        if error is not None:
            self.last_optimize_error = error
        return True

    def _quiet(self, due: float) -> bool:
        """Wait for ``optimize_quiet`` seconds without writes and no search in the foreground.

        A pass costs the cores a turn needs (seconds at 100k rows on 2 cores), so it starts
        in a pause between writes rather than between a turn's steps, and not while the user
        waits for a search (``foreground.py``); ``optimize_max_delay`` after ``due`` it runs
        anyway. False once closed: the pass is left for the next one.
        """
        while not self._closed:
            now = time.monotonic()
            idle = now - self._last_write
            late = now - due >= self.optimize_max_delay
            if late or (idle >= self.optimize_quiet and not self.foreground.busy):
                return True
            wait = max(self.optimize_quiet - idle, 0.05)
            self._wake.wait(min(wait, self.optimize_max_delay - (now - due)))
        return False

    def _own_handle(self, name: str) -> Any | None:
        try:
            return self.db.open_table(name)
        except Exception as exc:
            log.debug("cannot open the %s table to optimize it (%s)", name, reason(exc))
            return None

    def _optimize_table(self, name: str, handle: Any | None, grace: timedelta, *, raise_errors: bool = False) -> None:
        if handle is None:
            return
        try:
            self.retrying("optimize", name, lambda: handle.optimize(cleanup_older_than=grace))
        except StoreError as exc:
            self.last_optimize_error = str(exc)
            if raise_errors:
                raise
            log.warning("%s", self.last_optimize_error)

    def wait_for_optimizer(self) -> None:
        optimizer = self._optimizer
        if optimizer is not None and optimizer is not threading.current_thread():
            optimizer.join()

    def embedding_tables(self) -> list[str]:
        """Every vector-width table in the database, whichever process created it."""
        try:
            names = self.db.list_tables(limit=1000).tables
        except Exception as exc:
            raise StoreError(f"cannot list the tables at {self.uri} ({reason(exc)})") from None
        suffixes = [n.removeprefix(EMBEDDINGS_PREFIX) for n in names if n.startswith(EMBEDDINGS_PREFIX)]
        return [embeddings_table(int(s)) for s in suffixes if s.isdigit()]

    # housekeeping

    def optimize(self) -> None:
        """Compact every table and drop every old version now; waits for a background run first."""
        self.wait_for_optimizer()
        with self.lock:
            tables = [n for n in SCHEMAS if self.table(n, create=False) is not None]
            self._dirty, self._rows = {}, {}
        self._optimize_tables(tables, background=False)

    def close(self) -> None:
        """Waits for an in-flight optimize, so the process never exits mid-compaction; a pending one is dropped."""
        with self.lock:
            self._closed = True
        self._wake.set()
        self.wait_for_optimizer()

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
