"""What background threads have to say, kept for the next ``%%monad`` cell instead of any cell's stderr.

In a kernel, whatever a thread writes to stderr lands in the cell that happens to be running,
often a plain Python cell that has nothing to do with it. So the kernel's ``monad_notebook``
logger gets a handler that keeps warnings here (nothing reaches stderr), and the session's
events from worker threads (a failed background compaction) are kept here too; the next
``%%monad`` cell shows them once, as notes.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass

from monad_notebook import events as ev
from monad_notebook.events import Event
from monad_notebook.redaction.redactor import builtin_redactor

MAX_KEPT = 20
LOGGER = "monad_notebook"


@dataclass(frozen=True)
class Notice:
    kind: str  # warning | error
    text: str


def on_worker_thread() -> bool:
    return threading.current_thread() is not threading.main_thread()


class Inbox(logging.Handler):
    """Warnings and background errors, at most ``MAX_KEPT`` (the oldest go first), each shown once."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self._kept: deque[Notice] = deque(maxlen=MAX_KEPT)
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a bad format string must not become a traceback on stderr
            text = str(record.msg)
        kind = "error" if record.levelno >= logging.ERROR else "warning"
        text = builtin_redactor().redact(text).text  # whole, before its first line is taken
        self.add(Notice(kind, text.splitlines()[0] if text else ""))

    def on_event(self, event: Event) -> None:
        """A session listener: keeps errors that a worker thread emits (the turn's own are shown live)."""
        if event.kind == ev.ERROR and on_worker_thread():
            self.add(Notice("error", f"session {event.session}: {event.data.get('message', '')}"))

    def add(self, notice: Notice) -> None:
        with self._guard:
            if notice not in self._kept:
                self._kept.append(notice)

    def drain(self) -> list[Notice]:
        with self._guard:
            kept, self._kept = list(self._kept), deque(maxlen=MAX_KEPT)
        return kept

    @classmethod
    def installed(cls) -> Inbox:
        """This process's inbox on the package's logger (one, however often the extension loads).

        With a handler there, logging's stderr handler of last resort never runs for the package.
        """
        logger = logging.getLogger(LOGGER)
        for handler in logger.handlers:
            if isinstance(handler, cls):
                return handler
        inbox = cls()
        logger.addHandler(inbox)
        return inbox
