"""Proposals where no notebook extension shows them at their cell: reviewed in the ``%%monad`` cell's output.

VS Code and other frontends draw widgets but run no JupyterLab extension, so the kernel cannot
touch their document. The review is the running cell's own output: the diff with Accept /
Reject (the input prompt where no widget is drawn), and the tool waits for the answer. An
accepted new code cell below the ``%%monad`` cell is applied the one way a kernel can: IPython's
``set_next_input``, which these frontends apply when the cell finishes, once per execution. Any
other accepted change is shown in the output as code to copy, and the result says which. A change
whose cell the user edited and saved while it waited is shown again, applied on top of their edit
(``merge.py``, as the extension does), and only that, once accepted, is what is given to copy.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from monad_notebook.notebook.proposals import ACCEPTED, APPLIED, NO_ANSWER, OUTDATED, REJECTED, Proposal
from monad_notebook.time_limit import CodeTimedOut, TimeLimit

INSERTED = "it will be inserted below the %%monad cell when this turn ends"
COPY = "this frontend cannot {what}, so the source is shown in the %%monad cell's output for the user to copy"


class OutputReview:
    """Reviews one proposal at a time in the running cell, and applies what was accepted as far as it can."""

    def __init__(self, shell: Any, timeout: Callable[[], float]) -> None:
        self.shell = shell
        self.timeout = timeout
        self._inserted_in = ""  # the execution whose one set_next_input is taken

    def decide(
        self, proposal: Proposal, *, mode: str, execution: str, now: Callable[[], str | None]
    ) -> tuple[str, str, str, Proposal]:
        """(decision, via, what happened, what landed) for ``proposal``; "auto" accepts without asking.

        ``now`` reads the cell's saved source: a change the user edited and saved while it waited is
        applied on top of their edit only once they accepted it as it then reads.
        """
        if mode == "auto":
            return APPLIED, "auto", self._apply(proposal, execution), proposal
        answer, via = self._ask(proposal)
        if answer and proposal.kind == "change" and (edited := now()) != proposal.base:
            if edited is None:
                return OUTDATED, via, "the cell is no longer in the saved notebook", proposal
            on_top = proposal.on_top_of(edited)
            if isinstance(on_top, str):
                return OUTDATED, via, f"the user edited the cell while the change waited: {on_top}", proposal
            proposal = on_top
            answer, via = self._ask(on_top)
        if answer is None:
            return NO_ANSWER, via, "", proposal
        if not answer:
            return REJECTED, via, "", proposal
        return ACCEPTED, via, self._apply(proposal, execution), proposal

    def _ask(self, proposal: Proposal) -> tuple[bool | None, str]:
        kernel = getattr(self.shell, "kernel", None)
        title = proposal.summary()
        if kernel is not None:
            from IPython.display import display

            from monad_notebook.approval.in_cell import can_ask_in_cell
            from monad_notebook.widget.cell_review import review_in_cell

            if can_ask_in_cell(kernel):
                answer = review_in_cell(title, proposal.lines, display=display, timeout=self.timeout())
                if answer is not None:
                    return answer.run, "output"
        return self._prompt(title, proposal), "prompt"

    def _prompt(self, title: str, proposal: Proposal) -> bool | None:
        """The input prompt, for frontends that draw no widgets; None when nobody can answer."""
        from IPython.core.error import StdinNotImplementedError

        seconds = self.timeout()
        rows = "\n".join(f"{sign} {text}" for sign, text in proposal.lines) or "  (empty)"
        print(f"The agent proposes {title}:\n\n{rows}\n", flush=True)
        try:
            with TimeLimit(seconds):
                reply = input("Accept this change? [y/N] ").strip().lower()
        except CodeTimedOut:
            print("No answer in time: nothing changed.", flush=True)
            return None
        except (StdinNotImplementedError, EOFError):
            return None
        return reply in {"y", "yes"}

    def _apply(self, proposal: Proposal, execution: str) -> str:
        reason = self._why_not_inserted(proposal, execution)
        if not reason:
            self.shell.set_next_input(proposal.source, replace=False)
            self._inserted_in = execution
            return INSERTED
        _show_to_copy(proposal)
        return COPY.format(what=reason)

    def _why_not_inserted(self, proposal: Proposal, execution: str) -> str:
        if proposal.kind == "change":
            return f"change cell {proposal.cell_id} from the kernel"
        if proposal.cell_type != "code":
            return f"add a {proposal.cell_type} cell from the kernel"
        if not (proposal.anchor_is_running and proposal.position == "below"):
            return "add a cell anywhere but just below the %%monad cell"
        if self._inserted_in == execution:
            return "add more than one new cell per turn"
        return ""


def _show_to_copy(proposal: Proposal) -> None:
    from IPython.display import display

    where = f"cell {proposal.cell_id}" if proposal.kind == "change" else f"a new {proposal.cell_type} cell"
    label = f"Accepted: copy this into {where}"
    display(
        {
            "text/html": f'<div data-role="review-copy"><div>{html.escape(label)}:</div>'
            f'<pre class="monad-code">{html.escape(proposal.source)}</pre></div>',
            "text/plain": f"{label}:\n{proposal.source}",
        },
        raw=True,
    )
