"""Asking "run this code?" in the running cell itself, where the user is looking.

A small widget shows the code (highlighted, hidden characters as markers) with Run, Skip and
"Allow python for this session"; Enter and Esc answer it. Its answer reaches the kernel while the
cell still runs through the panel's subshell routing (``approval.py``). An open panel shows the
same question, and whichever is answered first wins. Once answered, the widget is replaced by
one line saying what was decided (``decided.py``).

A frontend may allow input yet draw no widgets (jupyter console, qtconsole, editors that embed
a kernel): the widget would wait for a click nobody can give. So the question is relied on only
once its view reports that it is on screen; without that report within ``SHOWN_WAIT`` seconds
the widget is taken back and the caller asks at the input prompt instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import anywidget
import traitlets as t

from monad_notebook.approval.busy import (
    PendingAnswer,
    current_kernel,
    owned_subshell,
    route_to_subshell,
    supports_busy_routing,
)
from monad_notebook.approval.code_html import CODE_CSS, code_html
from monad_notebook.approval.code_view import summary
from monad_notebook.approval.decided import DECIDED, decided_html, said
from monad_notebook.approval.gate import PYTHON, TIMEOUT, Answer, within, wording

HERE = Path(__file__).resolve().parent
SHOWN_WAIT = 2.0  # how long a frontend has to report that it drew the question

Mirror = Callable[[PendingAnswer, str], Callable[[], None]]  # shows the question elsewhere; returns its clear()


def _is_live(data: Any) -> bool:
    """The messages that must reach the kernel while the asking cell runs: the answer, and "shown"."""
    if not isinstance(data, dict) or data.get("method") != "custom":
        return False
    content = data.get("content")
    return isinstance(content, dict) and content.get("type") in ("approval", "shown")


def can_ask_in_cell(kernel: Any) -> bool:
    """True when someone is there to click (the frontend allows input) and the click can arrive mid-cell."""
    return kernel is not None and bool(getattr(kernel, "_allow_stdin", False)) and supports_busy_routing(kernel)


class LiveQuestion(anywidget.AnyWidget):
    """A question in the running cell whose answer arrives while the cell runs; one widget per question."""

    request = t.Dict().tag(sync=True)
    status = t.Unicode("waiting").tag(sync=True)

    def __init__(self, request: dict[str, Any], pending: PendingAnswer, **kwargs: Any) -> None:
        super().__init__(request=request, **kwargs)
        self.pending = pending
        self.shown = threading.Event()
        self.on_msg(self._on_frontend_msg)

    def route(self, kernel: Any) -> bool:
        """Send this widget's answers to the panel subshell, so they arrive while the cell runs."""
        if kernel is None or self.comm is None or not hasattr(self.comm, "kernel"):
            return True
        try:
            route_to_subshell(self.comm, _is_live, owned_subshell(kernel))
        except Exception:  # an unexpected kernel: the caller falls back to the input prompt
            return False
        return True

    def wait_shown(self, seconds: float) -> bool:
        """True once a view reports the question on screen; waits in short slices so an interrupt gets through."""
        deadline = time.monotonic() + seconds
        while not self.shown.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                return False
        return True

    def _on_frontend_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("id") != self.pending.id:
            return
        if content.get("type") in ("shown", "approval"):  # an answer shows it was on screen too
            self.shown.set()
        if content.get("type") == "approval":
            self.pending.resolve(bool(content.get("run")), always=bool(content.get("always")), via="cell")


class CellApproval(LiveQuestion):
    """Asks "run this code?": the code highlighted, Run, Skip and "Allow ... for this session"."""

    _esm = HERE / "in_cell.js"
    _css = CODE_CSS + (HERE / "in_cell.css").read_text(encoding="utf-8")

    def __init__(
        self, code: str, pending: PendingAnswer, *, timeout: float = TIMEOUT, subject: str = PYTHON, **kwargs: Any
    ) -> None:
        words = wording(subject)
        request = {
            "id": pending.id,
            "summary": summary(code),
            "html": code_html(code),
            "limit": within(timeout),
            "action": words.action,
            "allow": words.allow,
            "done": {status: said(status, subject).capitalize() + "." for status in DECIDED},
        }
        super().__init__(request, pending, **kwargs)

    def __repr__(self) -> str:
        """What a frontend that draws no widgets prints in its place."""
        request = self.request
        return f"The agent wants to {request.get('action', '')} ({request.get('summary', '')}): waiting for an answer"


def ask_in_cell(
    code: str,
    *,
    display: Callable[..., Any],
    mirrors: Iterable[Mirror] = (),
    timeout: float = TIMEOUT,
    shown_wait: float = SHOWN_WAIT,
    subject: str = PYTHON,
) -> Answer | None:
    """Show the question in the cell (and the mirrors) and wait for an answer, at most ``timeout`` seconds.

    None when the widget cannot be answered here: it cannot be routed, or no view reported it on
    screen within ``shown_wait`` seconds.
    """
    pending = PendingAnswer()
    widget = CellApproval(code, pending, timeout=timeout, subject=subject)
    mirrored = [lambda pending, mirror=mirror: mirror(pending, code) for mirror in mirrors]

    def record(status: str) -> dict[str, str]:
        answer = Answer(pending.answer, always=pending.always, via=pending.via)
        return {"text/html": decided_html(answer, subject, status), "text/plain": said(status, subject)}

    return put_in_cell(widget, display=display, record=record, mirrors=mirrored, timeout=timeout, shown_wait=shown_wait)


def put_in_cell(
    widget: LiveQuestion,
    *,
    display: Callable[..., Any],
    record: Callable[[str], dict[str, str]],
    mirrors: Iterable[Callable[[PendingAnswer], Callable[[], None]]] = (),
    timeout: float = TIMEOUT,
    shown_wait: float = SHOWN_WAIT,
) -> Answer | None:
    """Show ``widget`` in the running cell and wait for its answer; once it ends, ``record(status)`` replaces it.

    None when the widget cannot be answered here: it cannot be routed, or no view reported it on
    screen within ``shown_wait`` seconds.
    """
    deadline = time.monotonic() + timeout
    pending = widget.pending
    if not widget.route(current_kernel()):
        widget.close()
        return None
    handle = display(widget, display_id=True)
    clears: list[Callable[[], None]] = []
    status = "no answer"
    try:
        if not widget.wait_shown(shown_wait):
            status = "not shown"
            return None
        clears = [mirror(pending) for mirror in mirrors]
        run = pending.wait(deadline - time.monotonic())
        answer = Answer(run, always=pending.always, via=pending.via or "cell")
        status = answer.decision
        return answer
    except KeyboardInterrupt:
        status = "cancelled"
        raise
    finally:
        for clear in clears:
            clear()
        widget.status = status
        handle.update(record(status), raw=True)
        widget.close()
