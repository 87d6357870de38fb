"""The foreground gate: background work steps aside while the user waits on the kernel.

A turn's own work (its writes, the cascade, a retrieval stage's search, the ``recall`` tool)
runs while the user waits; the recall indexer's embeddings and the store's optimize passes
need the same cores (two, on a laptop or a shared machine). Whoever the user waits on holds
the gate, and sets it aside while it only waits itself (for the model's answer, for a tool);
the background waits for it to be free before each small unit of work, and a unit that can be
stopped (a local embedding) is stopped when the gate is taken, so it does not share the cores
with the turn either. One gate per process: the embedder and the cores are shared by every session.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator


class Foreground:
    """Counts the holds of whoever the user waits on (a turn, a search); background work waits until there are none."""

    # Seconds the gate must have been free before background work starts: a wait shorter than this
    # (a quick tool, a search's own tool call) ends before work started in it would, and meets it.
    settle = 0.05

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held = 0
        self._freed = float("-inf")  # when the last hold ended
        self._interrupts: set[Callable[[], None]] = set()
        self._mine = threading.local()  # .holds: how many of the holds are this thread's

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the gate for the block: background work started after this waits for its end, and
        interruptible work in progress is interrupted."""
        self._take(1)
        try:
            yield
        finally:
            self._give(1)

    @contextlib.contextmanager
    def aside(self) -> Iterator[None]:
        """Give up this thread's holds for the block (it only waits, on a model or a tool), take them back after.

        A thread holding nothing gives nothing up: another thread's search keeps the gate.
        """
        holds = getattr(self._mine, "holds", 0)
        self._give(holds)
        try:
            yield
        finally:
            self._take(holds)

    def _take(self, holds: int) -> None:
        if not holds:
            return
        self._mine.holds = getattr(self._mine, "holds", 0) + holds
        with self._cond:
            self._held += holds
            for interrupt in self._interrupts:
                interrupt()

    def _give(self, holds: int) -> None:
        if not holds:
            return
        self._mine.holds -= holds
        with self._cond:
            self._held -= holds
            if not self._held:
                self._freed = time.monotonic()
                self._cond.notify_all()

    @contextlib.contextmanager
    def interruptible(self, interrupt: Callable[[], None]) -> Iterator[None]:
        """Background work in the block that ``interrupt`` stops (at once, without blocking) when the
        gate is taken; if it is already held, at once."""
        with self._cond:
            self._interrupts.add(interrupt)
            if self._held:
                interrupt()
        try:
            yield
        finally:
            with self._cond:
                self._interrupts.discard(interrupt)

    def wake(self) -> None:
        """Have every ``wait_free`` look at its ``cancelled`` again now."""
        with self._cond:
            self._cond.notify_all()

    @property
    def busy(self) -> bool:
        return self._held > 0

    def wait_free(self, timeout: float, *, cancelled: Callable[[], bool] = lambda: False) -> bool:
        """Wait until no one has held the gate for ``settle`` seconds, at most ``timeout`` seconds; True then.

        The timeout bounds how long background work can be put off (a stuck holder, or turns
        back to back, must not stop indexing for good); ``cancelled`` is polled so a stopping
        worker does not wait it out.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while not cancelled():
                now = time.monotonic()
                pause = 0.1 if self._held else self._freed + self.settle - now
                if pause <= 0:
                    return True
                if now >= deadline:
                    return False
                self._cond.wait(min(deadline - now, pause))
            return not self._held


FOREGROUND = Foreground()


def lower_priority(niceness: int, *, own_process: bool = False) -> None:
    """Make the calling thread at least this nice, so the work it does cedes the cores to the foreground.

    The gate stops new background work, not a unit already running. On Linux a thread's niceness
    is its own, and threads it starts later inherit it; elsewhere niceness is the whole process's,
    so it is changed only by a process of its own (``own_process``: the optimize helper).
    """
    with contextlib.suppress(OSError):
        if sys.platform == "linux":
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), niceness))
        elif own_process and hasattr(os, "nice"):
            os.nice(max(0, niceness - os.nice(0)))
