"""The kernel's line to the notebook extension in JupyterLab and Notebook 7: a comm, one reply per request.

The kernel is busy running the ``%%monad`` turn while the agent reads or changes the notebook,
so the frontend's replies would wait behind the cell on the main shell. They are routed to the
kernel subshell the approvals already use (``approval/busy.py``, ipykernel >= 7.3),
whose thread hands each reply to the turn waiting for it. A frontend with no extension (VS Code,
others) never answers, or closes the comm at once (JupyterLab without the extension): the
request then fails in bounded time and the caller takes the other path.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from monad_notebook.approval.busy import owned_subshell, route_to_subshell, supports_busy_routing

TARGET = "monad-notebook"
HELLO_SECONDS = 3.0  # how long a frontend has to answer that it holds the running cell
REPLY_SECONDS = 15.0


class BridgeError(Exception):
    """No answer from the extension: it is not there, the page was closed, or it took too long."""


class _Reply:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.data: dict[str, Any] | None = None


class Bridge:
    """Requests to the notebook extension of one kernel; ``on_message`` hears what the user did there."""

    def __init__(self, kernel: Any, on_message: Callable[[dict[str, Any]], None]) -> None:
        self.kernel = kernel
        self.on_message = on_message
        self._comm: Any = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._waiting: dict[str, _Reply] = {}
        self.closed_by_frontend = threading.Event()

    @property
    def possible(self) -> bool:
        """A reply can reach this kernel while a cell runs (ipykernel >= 7.3 subshells)."""
        return supports_busy_routing(self.kernel)

    def request(self, op: str, *, timeout: float = REPLY_SECONDS, **data: Any) -> dict[str, Any]:
        """Ask the extension; its reply, or BridgeError when none came in ``timeout`` seconds."""
        comm = self._comm if self._comm is not None else self._open()
        request_id = f"r{next(self._ids)}"
        reply = _Reply()
        with self._lock:
            self._waiting[request_id] = reply
        try:
            comm.send({"id": request_id, "op": op, **data})
            deadline = time.monotonic() + timeout
            while not reply.done.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
                if self.closed_by_frontend.is_set():
                    raise BridgeError("the notebook frontend closed the connection: it has no monad-notebook extension")
                if time.monotonic() >= deadline:
                    raise BridgeError(f"the notebook extension did not answer in {timeout:g} s")
        finally:
            with self._lock:
                self._waiting.pop(request_id, None)
        return reply.data or {}

    def send(self, data: dict[str, Any]) -> None:
        """Tell the extension something unasked (an answer to what the page asked); lost when no comm is open."""
        comm = self._comm
        if comm is not None:
            with contextlib.suppress(Exception):  # closed meanwhile: the page that asked is gone
                comm.send(data)

    def reopen(self) -> None:
        """Drop the current comm: the next request opens a new one (after a page reload, say)."""
        comm, self._comm = self._comm, None
        if comm is not None:
            with contextlib.suppress(Exception):  # already closed on the other side
                comm.close()

    def _open(self) -> Any:
        from comm import create_comm

        self.closed_by_frontend.clear()
        comm = create_comm(target_name=TARGET, data={})
        route_to_subshell(comm, lambda _data: True, owned_subshell(self.kernel))
        comm.on_msg(self._on_msg)
        comm.on_close(lambda _msg: self._on_close(comm))
        self._comm = comm
        return comm

    def _on_msg(self, msg: dict[str, Any]) -> None:
        data = (msg.get("content") or {}).get("data")
        if not isinstance(data, dict):
            return
        request_id = data.get("id")
        if isinstance(request_id, str):
            with self._lock:
                reply = self._waiting.get(request_id)
            if reply is not None and not reply.done.is_set():
                reply.data = data
                reply.done.set()
            return
        self.on_message(data)

    def _on_close(self, comm: Any) -> None:
        if comm is self._comm:
            self._comm = None
            self.closed_by_frontend.set()
