"""A named daemon thread: how the package does any work in the background.

Every thread the package starts is a daemon (a kernel never waits for one at exit) and has a
name (``monad-...``, what a thread dump or a profile shows). What the work raises is logged on
the ``monad_notebook`` logger, which a kernel keeps for the next ``%%monad`` cell
(``cell/background.py``) instead of printing it in whichever cell runs, and it is kept in
``error`` for whoever waits. Work that can be asked to stop is given its way to stop (an event
it polls, a server's shutdown); waiting takes a timeout and never waits for the thread itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Daemon:
    """``target(*args)`` on a daemon thread named ``name``, once ``start`` is called; ``stop`` calls ``stop``."""

    def __init__(
        self, name: str, target: Callable[..., object], *args: object, stop: Callable[[], object] | None = None
    ) -> None:
        self.name = name
        self.error: BaseException | None = None  # what the work raised, also logged
        self._work = target, args
        self._stop = stop
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Daemon:
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Ask the work to end (nothing for work that cannot be asked); ``wait`` for it to have ended."""
        if self._stop is not None:
            self._stop()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: as long as it takes) for the work to end; True once it has.

        From the daemon's own thread, returns at once.
        """
        if self._thread is threading.current_thread():
            return False
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        target, args = self._work
        try:
            target(*args)
        except BaseException as exc:
            self.error = exc
            log.exception("%s crashed", self.name)
