"""Asking "run this code?" in the running cell itself, where the user is looking.

A small widget shows the code (highlighted, hidden characters as markers) with Run, Skip and
"Allow python for this session"; Enter and Esc answer it. Its answer reaches the kernel while the
cell still runs through the panel's subshell routing (``approval.py``). An open panel shows the
same question, and whichever is answered first wins. Once answered, the widget is replaced by
one line saying what was decided, so a saved notebook keeps the record without the widget.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import anywidget
import traitlets as t

from monad_notebook.agent.tools.approval import Answer
from monad_notebook.agent.tools.code_html import CODE_CSS, code_html
from monad_notebook.agent.tools.code_view import summary
from monad_notebook.widget.approval import (
    PendingAnswer,
    current_kernel,
    owned_subshell,
    route_to_subshell,
    supports_busy_routing,
)

HERE = Path(__file__).resolve().parent
TIMEOUT = 600.0

DECIDED = {
    "run": "approved: the code ran",
    "skip": "skipped: the code did not run",
    "allow for session": "approved, and python is allowed for the rest of this session",
    "no answer": "no answer: the code did not run",
    "cancelled": "interrupted: the code did not run",
}
_WHERE = {"cell": "in this cell", "panel": "in the panel"}

Mirror = Callable[[PendingAnswer, str], Callable[[], None]]  # shows the question elsewhere; returns its clear()


def _is_answer(data: Any) -> bool:
    if not isinstance(data, dict) or data.get("method") != "custom":
        return False
    content = data.get("content")
    return isinstance(content, dict) and content.get("type") == "approval"


def can_ask_in_cell(kernel: Any) -> bool:
    """True when someone is there to click (the frontend allows input) and the click can arrive mid-cell."""
    return kernel is not None and bool(getattr(kernel, "_allow_stdin", False)) and supports_busy_routing(kernel)


class CellApproval(anywidget.AnyWidget):
    """One question, one widget: a new request never inherits an earlier answer's state."""

    _esm = HERE / "cell_approval.js"
    _css = CODE_CSS + (HERE / "cell_approval.css").read_text(encoding="utf-8")

    request = t.Dict().tag(sync=True)
    status = t.Unicode("waiting").tag(sync=True)

    def __init__(self, code: str, pending: PendingAnswer, **kwargs: Any) -> None:
        super().__init__(request={"id": pending.id, "summary": summary(code), "html": code_html(code)}, **kwargs)
        self.pending = pending
        self.on_msg(self._on_frontend_msg)

    def route(self, kernel: Any) -> bool:
        """Send this widget's answers to the panel subshell, so they arrive while the cell runs."""
        if kernel is None or self.comm is None or not hasattr(self.comm, "kernel"):
            return True
        try:
            route_to_subshell(self.comm, _is_answer, owned_subshell(kernel))
        except Exception:  # an unexpected kernel: the caller falls back to the input prompt
            return False
        return True

    def _on_frontend_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "approval" and content.get("id") == self.pending.id:
            self.pending.resolve(bool(content.get("run")), always=bool(content.get("always")), via="cell")


def decided_html(answer: Answer) -> str:
    where = _WHERE.get(answer.via, "")
    text = DECIDED.get(answer.decision, answer.decision) + (f" (answered {where})" if where else "")
    kind = "ok" if answer.run else "no"
    return f'<div class="monad-decided monad-decided-{kind}" data-role="approval-decided">{html.escape(text)}</div>'


def ask_in_cell(
    code: str, *, display: Callable[..., Any], mirrors: Iterable[Mirror] = (), timeout: float = TIMEOUT
) -> Answer | None:
    """Show the question in the cell (and the mirrors) and wait; None when the widget cannot be answered here."""
    kernel = current_kernel()
    pending = PendingAnswer()
    widget = CellApproval(code, pending)
    if not widget.route(kernel):
        widget.close()
        return None
    handle = display(widget, display_id=True)
    clears = [mirror(pending, code) for mirror in mirrors]
    status = "no answer"
    try:
        run = pending.wait(timeout)
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
        shown = Answer(pending.answer, always=pending.always, via=pending.via)
        text = decided_html(shown) if status != "cancelled" else f"<div>{DECIDED['cancelled']}</div>"
        handle.update({"text/html": text, "text/plain": DECIDED.get(status, status)}, raw=True)
        widget.close()
