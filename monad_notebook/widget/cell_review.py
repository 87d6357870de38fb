"""A proposed notebook change reviewed in the running cell, where no notebook extension can show it at its cell.

The fallback of the notebook tools for frontends without the monad-notebook extension (VS Code and
others that draw widgets): the diff, every line as text with hidden characters as markers, and
Accept / Reject. It is the same live question as "run this code?" (``approval/in_cell.py``): its
answer reaches the kernel while the turn runs, a frontend that never reports it on screen gets
the input prompt instead, and once answered it is replaced by one line saying what was decided.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from monad_notebook.approval.busy import PendingAnswer
from monad_notebook.approval.decided import record_html
from monad_notebook.approval.gate import TIMEOUT, Answer, within
from monad_notebook.approval.in_cell import BOUNDS, Bounds, LiveQuestion, put_in_cell
from monad_notebook.approval.in_cell import HERE as QUESTION_ASSETS

HERE = Path(__file__).resolve().parent
DONE = {
    "run": "Accepted.",
    "skip": "Rejected: nothing changed.",
    "no answer": "No answer: nothing changed.",
    "cancelled": "Interrupted: nothing changed.",
    "gone": "The page showing the review went away (closed, reloaded or stopped answering): nothing changed.",
    "not shown": "This frontend did not draw the review: it is asked at the input prompt.",
}


class CellReview(LiveQuestion):
    """One proposed change: a title, the diff rows, Accept and Reject."""

    _esm = QUESTION_ASSETS / "in_cell.js"
    _css = (QUESTION_ASSETS / "in_cell.css").read_text(encoding="utf-8") + (HERE / "cell_review.css").read_text(
        encoding="utf-8"
    )

    def __init__(
        self, title: str, lines: Sequence[tuple[str, str]], pending: PendingAnswer, *, timeout: float, **kwargs: Any
    ) -> None:
        request = {
            "id": pending.id,
            "title": title,
            "lines": [[sign, text] for sign, text in lines],
            "limit": within(timeout),
            "done": DONE,
        }
        super().__init__(request, pending, **kwargs)

    def __repr__(self) -> str:
        """What a frontend that draws no widgets prints in its place."""
        return f"The agent proposes {self.request.get('title', 'a change')}: waiting for Accept or Reject"


def review_in_cell(
    title: str,
    lines: Sequence[tuple[str, str]],
    *,
    display: Callable[..., Any],
    timeout: float = TIMEOUT,
    bounds: Bounds = BOUNDS,
) -> Answer | None:
    """Show the change in the running cell and wait for Accept (``run`` True) or Reject, at most ``timeout`` s.

    None when it cannot be answered here (no view reported it on screen within ``bounds.shown_wait`` seconds).
    """
    pending = PendingAnswer()
    widget = CellReview(title, lines, pending, timeout=timeout)

    def record(status: str) -> dict[str, str]:
        text = f"{title}: {DONE.get(status, status)}"
        return {"text/html": record_html(status, text, role="review-decided"), "text/plain": text}

    return put_in_cell(widget, display=display, record=record, timeout=timeout, bounds=bounds)
