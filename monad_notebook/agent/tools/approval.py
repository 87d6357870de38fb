"""Asking before the python tool runs code: one gate per session, whatever frontend asks.

The gate holds the session's "allow python for this session" override (set by an answer, shown
by ``%monad status``, gone with the Session object) and records every decision as a
``tool.approval`` event, so the store keeps who ran what. How the question is put (a widget
in the running cell, the panel, the frontend's input prompt) is the asker's business.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from monad_notebook.agent.tools.code_view import shown_lines, summary
from monad_notebook.events import APPROVAL, Emit

RUN, SKIP, ALLOW_SESSION, NO_ANSWER = "run", "skip", "allow for session", "no answer"


@dataclass(frozen=True)
class Answer:
    """One reply to "run this code?": ``run`` None when nobody could or did answer."""

    run: bool | None
    always: bool = False  # also allow python for the rest of this session
    via: str = ""  # cell, panel, prompt, session

    @property
    def decision(self) -> str:
        if self.run is None:
            return NO_ANSWER
        if not self.run:
            return SKIP
        return ALLOW_SESSION if self.always else RUN


Asker = Callable[[str], Answer]


class ApprovalGate:
    """``session.approve``: asks through ``ask`` unless python is allowed for this session.

    Returns True (run), False (skip) or None (nobody answered), as the python tool expects.
    """

    def __init__(self, ask: Asker, emit: Emit | None = None) -> None:
        self.ask = ask
        self.emit = emit
        self.allowed_for_session = False

    def __call__(self, code: str) -> bool | None:
        if self.allowed_for_session:
            answer = Answer(True, via="session")
        else:
            answer = self.ask(code)
            if answer.run and answer.always:
                self.allowed_for_session = True
        self._record(code, answer)
        return answer.run

    def reset(self) -> None:
        """Ask again from the next request on."""
        self.allowed_for_session = False

    def _record(self, code: str, answer: Answer) -> None:
        if self.emit is None:
            return
        lines = shown_lines(code)
        self.emit(
            APPROVAL,
            decision=answer.decision,
            via=answer.via,
            summary=summary(code),
            first_line=(lines[0] if lines else "")[:120],
            code_sha256=hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest(),
        )
