"""Answering the panel's Run / Skip while the cell that asked is still running.

A running cell keeps the kernel's main shell busy, so a widget's messages would wait behind
it and an approval prompt could never be answered. ipykernel 7.3+ runs kernel subshells on
their own threads and lets a comm pick the subshell its frontend messages go to; the panel
sends the few messages that must work mid-cell (the approval answer, the inspector) to a
subshell this module owns, and everything else to the main shell as usual.

Older kernels cannot do this; there the approver defers to a fallback (stdin) or answers None.

A kernel publishes "busy" and then "idle" around every message it handles, on the subshell and
the control channel too, and JupyterLab and Notebook 7 show the last status they received as the
kernel's. So each message handled there while a cell runs would show the kernel idle while the
cell still waits for an answer. :class:`MainShell` knows whether a cell runs (IPython's
``pre_run_cell`` / ``post_run_cell``) and, after any other request's "idle", says "busy" again for
the running cell's request; a lock orders it before the cell's own "idle" at its end.
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


class MainShell:
    """Whether the kernel's main shell runs a cell, and the request it runs, to say "busy" for it."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self._lock = threading.Lock()
        self._depth = 0  # cells running, the agent's code run inside the %%monad cell included
        self._parent: dict[str, Any] = {}
        self._publish = kernel._publish_status

    def watch(self, shell: Any) -> None:
        """Follow the shell's cells and the kernel's statuses; called on the main thread, maybe inside a running
        cell (then counted)."""
        publish = self._publish

        def published(status: str, channel: str, parent: Any = None) -> None:
            publish(status, channel, parent)
            if status == "idle":
                self._other_idle(parent or self.kernel.get_parent(channel))

        self.kernel._publish_status = published
        shell.events.register("pre_run_cell", self._started)
        shell.events.register("post_run_cell", self._ended)
        if threading.current_thread() is threading.main_thread():
            self._started()

    def _started(self, *_info: Any) -> None:
        with self._lock:
            if self._depth == 0:
                self._parent = self.kernel.get_parent() or {}
            self._depth += 1

    def _ended(self, *_result: Any) -> None:
        with self._lock:
            self._depth = max(0, self._depth - 1)

    def _other_idle(self, parent: Any) -> None:
        """Another request than the running cell's ended: the cell still runs, so the kernel is still busy."""
        ended = ((parent or {}).get("header") or {}).get("msg_id")
        with self._lock:
            if self._depth > 0 and self._parent and ended != self._parent.get("header", {}).get("msg_id"):
                self._publish("busy", "shell", parent=self._parent)


def owned_subshell(kernel: Any, timeout: float = 10.0) -> str:
    """The id of this process's panel subshell, created once on the shell channel thread."""
    with _owned_lock:
        if "id" in _owned:
            return _owned["id"]
        shell = getattr(kernel, "shell", None)
        if shell is not None and hasattr(kernel, "_publish_status"):
            MainShell(kernel).watch(shell)
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

    def settled(self, timeout: float) -> bool:
        """True once answered; waits at most ``timeout`` seconds."""
        return self._done.wait(max(0.0, timeout))

    def wait(self, timeout: float) -> bool | None:
        """The answer, or None on timeout; waits in short slices so Ctrl-C / interrupt still works."""
        deadline = time.monotonic() + timeout
        while not self._done.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._done.wait(min(0.1, left))
        return self.answer
