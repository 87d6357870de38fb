"""Where a notebook asks "run this code?": in the running cell, mirrored in an open panel, else the input prompt.

The running cell is where the user looks, so a Jupyter frontend that can answer (it allows input
and the kernel can take a click mid-cell) gets the question there, and an open panel shows the
same question. A frontend that allows input but draws no widgets (jupyter console, qtconsole,
editors that embed a kernel) never reports the question on screen, so within about two seconds
it gets the input prompt instead; so does a terminal. Where nobody can answer (nbclient,
papermill) the prompt reports that, and the python tool refuses with its usual explanation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from monad_notebook.approval.busy import Approver
from monad_notebook.approval.gate import PYTHON, Answer, ApprovalGate, Asker, Seconds, stdin_asker
from monad_notebook.config import Config


@dataclass(frozen=True)
class AskIn:
    """Where a notebook's kernel asks its questions: in the running cell when the frontend draws widgets
    (``rich``), mirrored in the session's panel if one is open (``panel(name)``: the session's open panel
    or None), else at the input prompt."""

    rich: bool
    panel: Callable[[str], Any] = lambda _name: None


class Asking(Protocol):
    """What a gate needs of its session: the configuration in force (how long a question waits, read at each
    question) and where its decisions are recorded."""

    config: Config

    def emit(self, kind: str, **data: Any) -> None: ...


def notebook_asker(shell: Any, *, rich: bool, panel: Callable[[], Any], timeout: Seconds) -> Asker:
    """``panel()`` returns the session's open panel, or None; ``timeout()`` how long a question waits."""
    prompt = stdin_asker(shell, timeout)

    def ask(code: str, subject: str = PYTHON) -> Answer:
        kernel = getattr(shell, "kernel", None)
        if rich and kernel is not None:
            from IPython.display import display

            from monad_notebook.approval.in_cell import ask_in_cell, can_ask_in_cell

            if can_ask_in_cell(kernel):
                seconds, open_panel = timeout(), panel()
                mirrors = []
                if open_panel is not None and getattr(open_panel, "answers_while_busy", False):
                    mirrors.append(
                        lambda pending, shown: open_panel.show_approval(
                            pending, shown, timeout=seconds, subject=subject
                        )
                    )
                answer = ask_in_cell(code, display=display, mirrors=mirrors, timeout=seconds, subject=subject)
                if answer is not None:
                    return answer
        return prompt(code, subject)

    return ask


def notebook_gate(session: Asking, shell: Any, *, rich: bool, panel: Callable[[], Any]) -> ApprovalGate:
    """The session's approval gate: decisions recorded as its events, "allow for session" kept with it."""
    timeout = lambda: session.config.tools.python.approval_timeout_seconds  # noqa: E731 - read at each question
    return ApprovalGate(notebook_asker(shell, rich=rich, panel=panel, timeout=timeout), emit=session.emit)


class PanelApprover:
    """``session.approve`` that asks in the panel: shows the code with Run / Skip and blocks for the click.

    Returns True (Run), False (Skip) or None (no answer within ``timeout`` seconds). Where the
    kernel cannot deliver the click while the cell runs, ``fallback`` decides instead (None if unset).
    """

    def __init__(self, panel: Any, *, timeout: float = 600.0, fallback: Approver | None = None) -> None:
        self.panel = panel
        self.timeout = timeout
        self.fallback = fallback

    def __call__(self, code: str, subject: str = PYTHON) -> bool | None:
        if not self.panel.answers_while_busy:
            if self.fallback is None:
                return None
            return self.fallback(code) if subject == PYTHON else self.fallback(code, subject=subject)
        return self.panel.request_approval(code, timeout=self.timeout, subject=subject)
