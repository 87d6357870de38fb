"""How a question ends in the cell: one line saying what was decided, each ending its own look.

Once a question is answered (or ends without an answer) its widget is replaced by this line, so a
saved notebook keeps the record without the widget. The line carries its own small stylesheet on
the notebook theme's variables: a bar green for what was approved, grey for a skip, amber for a
question nobody answered, red for one the user interrupted. The words say it too, so nothing
depends on the colour alone.
"""

from __future__ import annotations

import html

from monad_notebook.approval.gate import PYTHON, Answer, wording

DECIDED = {  # filled with the question's Wording
    "run": "approved: {done}",
    "skip": "skipped: {not_done}",
    "allow for session": "approved: {done}; {allow} is allowed for the rest of this session",
    "no answer": "no answer: {not_done}",
    "cancelled": "interrupted: {not_done}",
    "gone": "the page showing this question went away (closed, reloaded or stopped answering): {not_done}",
    "not shown": "this frontend did not draw the question: it is asked at the input prompt",
}
LOOKS = {  # status -> the record's look
    "run": "ran",
    "allow for session": "ran",
    "skip": "skipped",
    "no answer": "unanswered",
    "gone": "unanswered",
    "not shown": "unanswered",
    "cancelled": "interrupted",
}
DECIDED_CSS = """
.monad-decided { margin: 3px 0; padding: 2px 8px; border-left: 3px solid var(--jp-border-color1, #bdbdbd);
  font-family: var(--jp-ui-font-family, sans-serif); font-size: var(--jp-ui-font-size1, 13px);
  color: var(--jp-ui-font-color1, #222); }
.monad-decided-ran { border-left-color: var(--jp-success-color1, #16a34a); }
.monad-decided-skipped { border-left-color: var(--jp-border-color1, #bdbdbd); border-left-style: dashed; }
.monad-decided-unanswered { border-left-color: var(--jp-warn-color1, #f59e0b); }
.monad-decided-interrupted { border-left-color: var(--jp-error-color1, #d32f2f); border-left-width: 4px; }
"""
_WHERE = {"cell": "in this cell", "panel": "in the panel"}


def said(status: str, subject: str = PYTHON) -> str:
    """How a question ended, in its subject's words (the code ran, the tool was called)."""
    words = wording(subject)
    return DECIDED.get(status, status).format(done=words.done, not_done=words.not_done, allow=words.allow)


def status_of(answer: Answer) -> str:
    """The record's status for an answer: its decision, or "gone" when the page showing it went away."""
    return "gone" if answer.run is None and answer.why == "page gone" else answer.decision


def record_html(status: str, text: str, role: str = "approval-decided") -> str:
    """One line in the look of ``status``, with the stylesheet it needs."""
    look = LOOKS.get(status, "unanswered")
    return (
        f"<style>{DECIDED_CSS}</style>"
        f'<div class="monad-decided monad-decided-{look}" data-role="{role}" data-status="{html.escape(status)}">'
        f"{html.escape(text)}</div>"
    )


def decided_html(answer: Answer, subject: str = PYTHON, status: str = "") -> str:
    """The record of a question that ended with ``answer`` (``status`` when it ended otherwise: cancelled...)."""
    status = status or status_of(answer)
    where = _WHERE.get(answer.via, "") if status in ("run", "skip", "allow for session") else ""
    return record_html(status, said(status, subject) + (f" (answered {where})" if where else ""))
