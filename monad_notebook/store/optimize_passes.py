"""The background optimize: when a table's pass is due, when it starts, and where it runs.

LanceDB makes a new version and fragment for every write, so a daemon thread has a table
compacted and cleaned up after every ``every`` writes to it (or once ``rows`` rows were added to
it since its last pass: rows not yet in a search index are scanned on every search), and a vector
table indexed once it is large. The pass waits for a pause in the writes and runs outside the
lock, in a helper process at the lowest CPU priority (``optimizer.py``), so a turn neither waits
for it nor shares the cores with it. Counting per table keeps a busy side table (recall's chunks)
from compacting the large messages table more often.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from monad_notebook.daemon import Daemon
from monad_notebook.errors import StoreError
from monad_notebook.foreground import Foreground
from monad_notebook.store.failures import reason
from monad_notebook.store.indexes import Indexes
from monad_notebook.store.optimizer import OptimizeWorker, WorkerUnavailable
from monad_notebook.store.rows import SCHEMAS, search_table

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# Cleaning up every old version is the point of the background optimize; reads retry on the latest version.
warnings.filterwarnings(
    "ignore", r"optimize\(cleanup_older_than=0\)", UserWarning, r"monad_notebook\.store\.optimize_passes"
)

OPTIMIZE_ROWS = 1000
# Claims read the version just before their own under the lock (claims.py): that version must stay.
_OPTIMIZED_UNDER_LOCK = frozenset({"claims"})


def writes_per_pass(table: str, optimize_every: int) -> int:
    """The writes to ``table`` that make its next background pass due.

    Recall's search tables are merged five times as often: a search opens every fragment a write
    left (``benchmarks/fragments.py`` measures what unmerged writes add to a search against what a
    pass costs the helper process).
    """
    return max(1, optimize_every // 5) if search_table(table) else optimize_every


class _Tables(Protocol):
    """What a pass needs of the tables (``tables.py``): the database, its handles, its lock and its retries."""

    uri: str
    storage_options: dict[str, str]
    ann_min_rows: int
    db: Any
    lock: threading.RLock
    indexes: Indexes

    def table(self, name: str, *, create: bool) -> Any | None: ...

    def retrying(self, verb: str, table: str, action: Callable[[], _T]) -> _T: ...


class OptimizePasses:
    """The tables' writes counted, and their passes run on a daemon thread when due; ``optimize`` runs them now."""

    def __init__(
        self,
        tables: _Tables,
        *,
        every: int,
        grace: timedelta,
        quiet: float,
        foreground: Foreground,
        worker: OptimizeWorker | None,
    ) -> None:
        self.tables = tables
        self.every = every
        self.rows = OPTIMIZE_ROWS
        self.grace = grace
        self.quiet = quiet
        self.max_delay = 30.0
        self.foreground = foreground
        self.worker = worker  # None: background passes run in this process
        self.runs = 0  # background passes finished
        self.last_error: str | None = None
        self._last_write = 0.0
        self._wake = threading.Event()
        self._dirty: dict[str, int] = {}  # table -> writes since its last pass
        self._rows: dict[str, int] = {}  # table -> rows added since its last pass
        self._daemon: Daemon | None = None
        self._running = False  # a daemon is running its passes; set and cleared under the lock
        self._closed = False

    def rows_added(self, table: str, rows: int) -> None:
        """Rows about to be added (the tables' lock held)."""
        self._rows[table] = self._rows.get(table, 0) + rows

    def wrote(self, table: str) -> None:
        """A write committed (the tables' lock held): start the passes that came due, unless they run already."""
        self._dirty[table] = self._dirty.get(table, 0) + 1
        self._last_write = time.monotonic()
        if self._closed or self._running or self.every <= 0:
            return  # a pass in hand takes up what came due meanwhile when it ends
        tables = self._take_due_tables()
        if tables:
            self._running = True
            self._daemon = Daemon("monad-store-optimize", self._run_while_due, tables).start()

    def _take_due_tables(self) -> list[str]:
        """Tables with ``writes_per_pass`` writes or ``rows`` rows since their last pass; counts reset."""
        tables = sorted(
            t
            for t, writes in self._dirty.items()
            if writes >= writes_per_pass(t, self.every) or self._rows.get(t, 0) >= self.rows
        )
        for table in tables:
            self._dirty.pop(table)
            self._rows.pop(table, None)
        return tables

    def _run_while_due(self, tables: list[str]) -> None:
        """Background passes until none is due: writes that came while a pass ran (a slow pass,
        a burst of writes) get the next one without waiting for another write."""
        try:
            while tables:
                self._optimize_tables(tables, background=True)
                with self.tables.lock:
                    tables = [] if self._closed else self._take_due_tables()
                    self._running = bool(tables)
        finally:
            if tables:  # an unexpected error ended the passes: the next write starts them again
                with self.tables.lock:
                    self._running = False

    def optimize(self) -> None:
        """Compact every table and drop every old version now; waits for a background run first."""
        self.wait()
        with self.tables.lock:
            tables = [n for n in SCHEMAS if self.tables.table(n, create=False) is not None]
            self._dirty, self._rows = {}, {}
        self._optimize_tables(tables, background=False)

    def _optimize_tables(self, tables: list[str], *, background: bool) -> None:
        """Compact each table, drop its old versions and fold new rows into its indexes.

        In the background this runs outside the lock, in the helper process (here, on a handle
        of its own, when the helper is unavailable): at 100k rows a pass takes seconds, and a
        turn's writes and reads must not wait for it. The claims table, small, is the exception
        (``_OPTIMIZED_UNDER_LOCK``). LanceDB
        reconciles the compaction with writes committed meanwhile, as it does with another
        kernel's; the files of a write still in flight are never removed (unreferenced new
        files are kept), and versions younger than ``grace`` are kept for readers.
        An explicit ``optimize()`` holds the lock and drops every old version at once.
        """
        due = time.monotonic()
        indexes = self.tables.indexes
        for name in tables:
            if background and not self._quiet(due):
                return
            if not background:
                indexes.before_optimize(name)
                with self.tables.lock:
                    self._optimize_table(name, self.tables.table(name, create=False), timedelta(0), raise_errors=True)
                indexes.after_optimize(name)
            elif name in _OPTIMIZED_UNDER_LOCK:
                with self.tables.lock:
                    self.alone(name, self.grace)
            elif not self._elsewhere(name):
                self.alone(name, self.grace)
        if background:
            self.runs += 1

    def alone(self, name: str, grace: timedelta) -> None:
        """One table's background pass on a handle of its own: in the helper process, or here as a fallback."""
        self.tables.indexes.before_optimize(name)
        self._optimize_table(name, self._own_handle(name), grace)
        self.tables.indexes.after_optimize(name)

    def _elsewhere(self, name: str) -> bool:
        """Hand the pass to the helper process; False when it cannot take it (the pass then runs here)."""
        if self.worker is None:
            return False
        tables = self.tables
        try:
            logged, error = self.worker.optimize(
                tables.uri, name, self.grace, storage_options=tables.storage_options, ann_min_rows=tables.ann_min_rows
            )
        except WorkerUnavailable as exc:
            log.debug("optimizing the %s table in this process: %s", name, exc)
            return False
        for warning in logged:
            log.warning("%s", warning)
        if error is not None:
            self.last_error = error
        return True

    def _quiet(self, due: float) -> bool:
        """Wait for ``quiet`` seconds without writes and no search in the foreground.

        A pass costs the cores a turn needs (seconds at 100k rows on 2 cores), so it starts
        in a pause between writes rather than between a turn's steps, and not while the user
        waits for a search (``foreground.py``); ``max_delay`` after ``due`` it runs
        anyway. False once closed: the pass is left for the next one.
        """
        while not self._closed:
            now = time.monotonic()
            idle = now - self._last_write
            late = now - due >= self.max_delay
            if late or (idle >= self.quiet and not self.foreground.busy):
                return True
            wait = max(self.quiet - idle, 0.05)
            self._wake.wait(min(wait, self.max_delay - (now - due)))
        return False

    def _own_handle(self, name: str) -> Any | None:
        try:
            return self.tables.db.open_table(name)
        except Exception as exc:
            log.debug("cannot open the %s table to optimize it (%s)", name, reason(exc))
            return None

    def _optimize_table(self, name: str, handle: Any | None, grace: timedelta, *, raise_errors: bool = False) -> None:
        if handle is None:
            return
        try:
            self.tables.retrying("optimize", name, lambda: handle.optimize(cleanup_older_than=grace))
        except StoreError as exc:
            self.last_error = str(exc)
            if raise_errors:
                raise
            log.warning("%s", self.last_error)

    def wait(self) -> None:
        """Wait for the passes running in the background, if any (not from their own thread)."""
        if self._daemon is not None:
            self._daemon.wait()

    def close(self) -> None:
        """Waits for an in-flight pass, so the process never exits mid-compaction; a pending one is dropped."""
        with self.tables.lock:
            self._closed = True
        self._wake.set()
        self.wait()
