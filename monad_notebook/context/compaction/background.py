"""One background job at a time for a session, its result kept until the turn's thread takes it.

Background compaction works on a snapshot of the window on a daemon thread; the turn goes on at
full width and lands the result at its next step (``take``). A finished result not yet taken
refuses a new job: compacting the unapplied window again would fold the same messages against
the superseded summary.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from monad_notebook.daemon import Daemon

T = TypeVar("T")


class Background(Generic[T]):
    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._worker: Daemon | None = None
        self._result: T | None = None
        self._closed = False

    @property
    def in_flight(self) -> bool:
        worker = self._worker
        return worker is not None and worker.running

    def start(self, job: Callable[[], T | None]) -> bool:
        """Run ``job`` on a daemon thread; False if one is running, a result waits, or this was closed."""
        with self._lock:
            if self._closed or self.in_flight or self._result is not None:
                return False
            self._worker = Daemon(self.name, self._run, job).start()
        return True

    def _run(self, job: Callable[[], T | None]) -> None:
        result = job()  # what it raises is logged by the daemon
        if result is not None:
            with self._lock:
                self._result = result

    def wait(self, timeout: float | None = None) -> None:
        worker = self._worker
        if worker is not None:
            worker.wait(timeout)

    def take(self) -> T | None:
        """The finished result, once; None while running or when there is none."""
        with self._lock:
            result, self._result = self._result, None
        return result

    def close(self, timeout: float | None = 30.0) -> None:
        """Refuse new jobs and let the running one finish (what it saved is durable either way)."""
        with self._lock:
            self._closed = True
        self.wait(timeout)
