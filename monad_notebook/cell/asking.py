"""Where a notebook asks "run this code?": in the running cell, mirrored in an open panel, else the input prompt.

The running cell is where the user looks, so a Jupyter frontend that can answer (it allows input
and the kernel can take a click mid-cell) gets the question there, and an open panel shows the
same question. A terminal gets the input prompt. Where nobody can answer (nbclient, papermill)
the prompt reports that, and the python tool refuses with its usual explanation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from monad_notebook.agent.tools.approval import Answer, ApprovalGate, Asker, stdin_asker

if TYPE_CHECKING:
    from monad_notebook.session import Session


def notebook_asker(shell: Any, *, rich: bool, panel: Callable[[], Any]) -> Asker:
    """``panel()`` returns the session's open panel, or None."""
    prompt = stdin_asker(shell)

    def ask(code: str) -> Answer:
        kernel = getattr(shell, "kernel", None)
        if rich and kernel is not None:
            from IPython.display import display

            from monad_notebook.widget.cell_approval import TIMEOUT, ask_in_cell, can_ask_in_cell

            if can_ask_in_cell(kernel):
                open_panel = panel()
                mirrors = []
                if open_panel is not None and getattr(open_panel, "answers_while_busy", False):
                    mirrors.append(lambda pending, shown: open_panel.show_approval(pending, shown, timeout=TIMEOUT))
                answer = ask_in_cell(code, display=display, mirrors=mirrors)
                if answer is not None:
                    return answer
        return prompt(code)

    return ask


def notebook_gate(session: Session, shell: Any, *, rich: bool, panel: Callable[[], Any]) -> ApprovalGate:
    """The session's approval gate: decisions recorded as its events, "allow for session" kept with it."""
    return ApprovalGate(notebook_asker(shell, rich=rich, panel=panel), emit=session.emit)
