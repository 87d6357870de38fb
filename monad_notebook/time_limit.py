"""A time limit for the agent's code (``tools.python.timeoutSeconds``): stop it, keep the session.

The same limit bounds whatever else may run the user's code on the kernel's main thread: the
workspace record's look at the namespace, ``list_variables`` and ``describe``.

On the main thread of a POSIX process (a notebook kernel runs cells there, so does a script)
the limit is a one-shot ``SIGALRM``: Python runs the handler between bytecodes and also wakes
blocking calls that retry on a signal (``time.sleep``, socket reads), so both a busy loop and a
long sleep stop. Elsewhere (another thread, Windows) it is an exception planted in the running
thread with ``PyThreadState_SetAsyncExc``, which lands at the next bytecode: a blocking call or
a long C routine (one huge numpy operation) is only stopped once it returns.

``CodeTimedOut`` derives from ``BaseException`` so that ``except Exception`` in the agent's code
does not swallow it; a bare ``except:`` still can.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from types import FrameType
from typing import Any

PYTHON_SETTING = "tools.python.timeoutSeconds"


class CodeTimedOut(BaseException):
    """The agent's code ran past ``tools.python.timeoutSeconds``."""


def _use_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _raise_in(thread_id: int, exc_type: ctypes.py_object | None) -> None:
    """Plant ``exc_type`` in that thread, raised at its next bytecode; ``None`` takes a planted one back."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), exc_type)


class TimeLimit:
    """``with TimeLimit(seconds):`` raises ``CodeTimedOut`` in this thread once ``seconds`` pass.

    ``None`` means no limit. The exception can surface anywhere inside the block, even while the
    block exits, so callers catch it around the ``with``. A ``SIGALRM`` handler and timer that were
    there before are put back afterwards.
    """

    def __init__(self, seconds: float | None, setting: str = PYTHON_SETTING) -> None:
        """``setting``: where the limit comes from, as the message names it."""
        self.seconds, self.setting = seconds, setting
        self._armed = False
        self._fired = False
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._thread_id = 0
        self._previous: tuple[Any, tuple[float, float], float] | None = None

    def __enter__(self) -> TimeLimit:
        if self.seconds is None:
            return self
        self._armed = True
        if _use_alarm():
            handler = signal.signal(signal.SIGALRM, self._on_alarm)
            self._previous = (handler, signal.setitimer(signal.ITIMER_REAL, self.seconds), time.monotonic())
        else:
            self._thread_id = threading.get_ident()
            self._timer = threading.Timer(self.seconds, self._plant)
            self._timer.daemon = True
            self._timer.start()
        return self

    @property
    def message(self) -> str:
        """The tool result's one line for code stopped at the limit."""
        told = f"stopped after {self.seconds or 0:g} s ({self.setting})"
        return f"{told}; the output it printed before that is kept above" if self.setting == PYTHON_SETTING else told

    def __exit__(self, *exc_info: object) -> None:
        try:
            self._armed = False
        finally:
            self._disarm()

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        if self._armed:
            self._armed = False
            raise CodeTimedOut(self.message)

    def _plant(self) -> None:
        with self._lock:
            if self._armed:
                self._fired = True
                _raise_in(self._thread_id, ctypes.py_object(CodeTimedOut))

    def _disarm(self) -> None:
        if self._previous is not None:
            handler, (delay, interval), started = self._previous
            self._previous = None
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL if handler is None else handler)
            if delay > 0:
                signal.setitimer(signal.ITIMER_REAL, max(0.001, delay - (time.monotonic() - started)), interval)
        if self._timer is not None:
            with self._lock:
                self._armed = False
                if self._fired:  # planted but perhaps not yet raised: take it back
                    _raise_in(self._thread_id, None)
            self._timer.cancel()
            self._timer = None
