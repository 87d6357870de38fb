"""Asking "run this code?" in the running cell itself, where the user is looking.

A small widget shows the code (highlighted, hidden characters as markers) with Run, Skip and
"Allow python for this session"; Enter and Esc answer it while it has the focus. Its answer
reaches the kernel while the cell still runs through the panel's subshell routing (``busy.py``).
An open panel shows the same question, and whichever is answered first wins. Once it ends, the
widget is replaced by one line saying what was decided (``decided.py``).

A question counts as shown only while a page says it has it. Each view of the widget reports
itself once it is in an open page ("shown"), answers the kernel's "ping" every ``ping_every``
seconds ("here"), and says "gone" when it is taken off its page or the page is closed or reloaded.
So:

- a frontend that allows input yet draws no widgets (jupyter console, qtconsole, editors that
  embed a kernel) never reports the question: after ``shown_wait`` the widget is taken back and
  the caller asks at the input prompt instead;
- a frontend that drew a question before in this kernel (the same page: the session id of the
  request) and does not report this one within ``known_wait`` has lost its page; so has a question
  whose every view said "gone" (after ``gone_grace``, time for a redrawn view to report) or that no
  view answered for ``lost_after`` seconds. Such a question ends at once, in one line, rather than
  waiting its full time limit, and the next questions of the same cell run are refused without
  being asked: the input prompt would go to the page that is gone too.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
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
from monad_notebook.approval.decided import DECIDED, decided_html, said, status_of
from monad_notebook.approval.gate import PYTHON, TIMEOUT, Answer, within, wording

HERE = Path(__file__).resolve().parent
PAGE_GONE = "page gone"  # Answer.why when the page showing the question went away


@dataclass(frozen=True)
class Bounds:
    """How long a question waits for a page to report it, and how long it believes a page that went quiet."""

    shown_wait: float = 2.0  # a frontend not yet seen drawing a question: then the input prompt
    known_wait: float = 10.0  # a frontend that drew one before: then its page is taken as gone
    ping_every: float = 5.0  # the kernel asks the question's views whether they are still on a page
    lost_after: float = 30.0  # no view answered for this long: no page has the question any more
    gone_grace: float = 3.0  # after the last view said "gone": time for a redrawn view to report


BOUNDS = Bounds()


class Pages:
    """Which frontends draw questions (by the session id of their requests) and which cell runs lost their page."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._drew: set[str] = set()
        self._lost: deque[str] = deque(maxlen=64)

    def drew(self, client: str) -> None:
        if client:
            with self._lock:
                self._drew.add(client)

    def draws(self, client: str) -> bool:
        with self._lock:
            return bool(client) and client in self._drew

    def lose(self, execution: str) -> None:
        if execution:
            with self._lock:
                self._lost.append(execution)

    def lost(self, execution: str) -> bool:
        with self._lock:
            return bool(execution) and execution in self._lost


PAGES = Pages()


def running_request(kernel: Any) -> tuple[str, str]:
    """(client, execution): the session id of the frontend that sent the running cell, and that request's id."""
    parent = kernel.get_parent() if kernel is not None and hasattr(kernel, "get_parent") else None
    header = (parent or {}).get("header") or {}
    return str(header.get("session") or ""), str(header.get("msg_id") or "")


Mirror = Callable[[PendingAnswer, str], Callable[[], None]]  # shows the question elsewhere; returns its clear()


def _is_live(data: Any) -> bool:
    """The messages that must reach the kernel while the asking cell runs: the answer, and where the views are."""
    if not isinstance(data, dict) or data.get("method") != "custom":
        return False
    content = data.get("content")
    return isinstance(content, dict) and content.get("type") in ("approval", "shown", "here", "gone")


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
        self._views_lock = threading.Lock()
        self._heard: dict[str, float] = {}  # view id -> when it last reported
        self._left_at: float | None = None  # when the last view said it went away
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

    def on_a_page(self, bounds: Bounds, now: float) -> bool:
        """Some view still has the question: not every view said it went, and one answered lately."""
        with self._views_lock:
            if self._left_at is not None:
                return now - self._left_at < bounds.gone_grace
            return any(now - heard < bounds.lost_after for heard in self._heard.values())

    def ping(self) -> None:
        """Ask the views whether they are still on a page; each answers "here"."""
        self.send({"type": "ping", "id": self.pending.id})

    def _on_frontend_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("id") != self.pending.id:
            return
        kind, view, now = content.get("type"), str(content.get("view") or ""), time.monotonic()
        with self._views_lock:
            if kind in ("shown", "here", "approval"):  # an answer shows it was on screen too
                self._heard[view], self._left_at = now, None
            elif kind == "gone":
                self._heard.pop(view, None)
                self._left_at = now if not self._heard else None
        if kind in ("shown", "here", "approval"):
            self.shown.set()
        if kind == "approval":
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
    bounds: Bounds = BOUNDS,
    subject: str = PYTHON,
) -> Answer | None:
    """Show the question in the cell (and the mirrors) and wait for an answer, at most ``timeout`` seconds.

    None when the input prompt should ask instead: the widget cannot be routed, or a frontend not
    seen drawing questions did not report this one within ``bounds.shown_wait``.
    """
    pending = PendingAnswer()
    widget = CellApproval(code, pending, timeout=timeout, subject=subject)
    mirrored = [lambda pending, mirror=mirror: mirror(pending, code) for mirror in mirrors]

    def record(status: str) -> dict[str, str]:
        answer = Answer(pending.answer, always=pending.always, via=pending.via)
        return {"text/html": decided_html(answer, subject, status), "text/plain": said(status, subject)}

    return put_in_cell(widget, display=display, record=record, mirrors=mirrored, timeout=timeout, bounds=bounds)


def put_in_cell(
    widget: LiveQuestion,
    *,
    display: Callable[..., Any],
    record: Callable[[str], dict[str, str]],
    mirrors: Iterable[Callable[[PendingAnswer], Callable[[], None]]] = (),
    timeout: float = TIMEOUT,
    bounds: Bounds = BOUNDS,
) -> Answer | None:
    """Show ``widget`` in the running cell and wait for its answer; once it ends, ``record(status)`` replaces it.

    None when the input prompt should ask instead (see :func:`ask_in_cell`); an answer with ``why``
    "page gone" when the page that showed it, or the page that ran the cell, went away.
    """
    deadline = time.monotonic() + timeout
    kernel = current_kernel()
    client, execution = running_request(kernel)
    if PAGES.lost(execution):
        widget.close()
        display(record("gone"), raw=True)
        return Answer(None, via="cell", why=PAGE_GONE)
    if not widget.route(kernel):
        widget.close()
        return None
    handle = display(widget, display_id=True)
    clears: list[Callable[[], None]] = []
    status = "no answer"
    try:
        known = PAGES.draws(client)
        if widget.wait_shown(bounds.known_wait if known else bounds.shown_wait):
            PAGES.drew(client)
            clears = [mirror(widget.pending) for mirror in mirrors]
            answer = _watch(widget, deadline, bounds)
        elif known:
            answer = Answer(None, via="cell", why=PAGE_GONE)
        else:
            status = "not shown"
            return None
        status = status_of(answer)
        if answer.why == PAGE_GONE:
            PAGES.lose(execution)
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


def _watch(widget: LiveQuestion, deadline: float, bounds: Bounds) -> Answer:
    """Wait for the answer while some page has the question, asking its views now and then whether they still do."""
    pending = widget.pending
    asked = time.monotonic()
    while not pending.settled(min(0.25, max(0.0, deadline - time.monotonic()))):
        now = time.monotonic()
        if now >= deadline:
            return Answer(None, via="cell")
        if not widget.on_a_page(bounds, now):
            return Answer(None, via="cell", why=PAGE_GONE)
        if now - asked >= bounds.ping_every:
            widget.ping()
            asked = now
    return Answer(pending.answer, always=pending.always, via=pending.via or "cell")
