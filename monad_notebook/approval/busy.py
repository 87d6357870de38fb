"""Answering the panel's Run / Skip while the cell that asked is still running.

A running cell keeps the kernel's main shell busy, so a widget's messages would wait behind
it and an approval prompt could never be answered. ipykernel 7.3+ runs kernel subshells on
their own threads and lets a comm pick the subshell its frontend messages go to; the panel
sends the few messages that must work mid-cell (the approval answer, the inspector) to a
subshell this module owns, and everything else to the main shell as usual.

Older kernels cannot do this; there the approver defers to a fallback (stdin) or answers None.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

Approver = Callable[[str], "bool | None"]

_owned: dict[str, str] = {}
_owned_lock = threading.Lock()


def current_kernel() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    shell = get_ipython()
    return getattr(shell, "kernel", None)


def supports_busy_routing(kernel: Any) -> bool:
    """True when the kernel can hand a comm's messages to a subshell thread (ipykernel >= 7.3)."""
    if kernel is None or getattr(kernel, "shell_channel_thread", None) is None:
        return False
    try:
        import ipykernel
    except ImportError:  # pragma: no cover
        return False
    return tuple(ipykernel.version_info[:2]) >= (7, 3)


def owned_subshell(kernel: Any, timeout: float = 10.0) -> str:
    """The id of this process's panel subshell, created once on the shell channel thread."""
    with _owned_lock:
        if "id" in _owned:
            return _owned["id"]
        manager = kernel.shell_channel_thread.manager
        created: dict[str, Any] = {}
        done = threading.Event()

        def create() -> None:
            try:
                created["id"] = manager._create_subshell()
            except BaseException as exc:  # reported to the caller below
                created["error"] = exc
            done.set()

        manager._shell_channel_io_loop.add_callback(create)
        if not done.wait(timeout):
            raise RuntimeError("timed out creating a kernel subshell for the monad panel")
        if "error" in created:
            raise created["error"]
        _owned["id"] = created["id"]
        return _owned["id"]


def route_to_subshell(comm: Any, wanted: Callable[[Any], bool], subshell_id: str) -> None:
    """Send the comm's frontend messages for which ``wanted(data)`` holds to ``subshell_id``."""
    default_route = getattr(comm, "_reply_subshell_for", None)

    def route(data: Any, default: str | None) -> str | None:
        if wanted(data):
            return subshell_id
        return default_route(data, default) if default_route is not None else default

    comm._reply_subshell_for = route


class PendingAnswer:
    """One question waiting for a click; resolved from whichever thread handles the click.

    The first answer wins: the cell and the panel may both show the question, and a second
    click (or a late one) changes nothing.
    """

    def __init__(self) -> None:
        self.id = uuid.uuid4().hex[:12]
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.answer: bool | None = None
        self.always = False
        self.via = ""

    def resolve(self, answer: bool, *, always: bool = False, via: str = "") -> None:
        with self._lock:
            if self._done.is_set():
                return
            self.answer, self.always, self.via = answer, always and answer, via
            self._done.set()

    def wait(self, timeout: float) -> bool | None:
        """The answer, or None on timeout; waits in short slices so Ctrl-C / interrupt still works."""
        deadline = time.monotonic() + timeout
        while not self._done.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._done.wait(min(0.1, left))
        return self.answer
