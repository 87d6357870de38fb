"""Asking before the python tool runs code: one gate per session, whatever frontend asks.

The gate holds the session's "allow python for this session" override (set by an answer, shown
by ``%monad status``, gone with the Session object) and records every decision as a
``tool.approval`` event, so the store keeps who ran what. How the question is put (a widget
in the running cell, the panel, the frontend's input prompt) is the asker's business; the
input prompt's asker (:func:`stdin_asker`) is here, the widgets' are in ``cell/``.

Every question is bounded in time (``tools.python.approvalTimeoutSeconds``) and says so; no
answer in time means the code does not run. An interrupt during the question ends it at once:
it is recorded as a skip and the turn stops with the call answered "did not run".
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from monad_notebook.agent.tools.code_view import shown_lines, summary, terminal_view
from monad_notebook.agent.tools.time_limit import CodeTimedOut, TimeLimit
from monad_notebook.config_schema import PythonToolConfig
from monad_notebook.events import APPROVAL, Emit

RUN, SKIP, ALLOW_SESSION, NO_ANSWER = "run", "skip", "allow for session", "no answer"
TIMEOUT = PythonToolConfig().approval_timeout_seconds
INTERRUPTED_QUESTION = "interrupted: the user stopped the turn while asked to approve this code; it did not run."
Seconds = Callable[[], float]  # the question's time limit, read when it is asked (the config may change)


class QuestionInterrupted(KeyboardInterrupt):
    """An interrupt while the user was asked: the turn stops, and the call's result says the code did not run."""

    result = INTERRUPTED_QUESTION


def within(seconds: float) -> str:
    """How a question states its time limit: "10 min", "90 s"."""
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:g} s"


@dataclass(frozen=True)
class Answer:
    """One reply to "run this code?": ``run`` None when nobody could or did answer."""

    run: bool | None
    always: bool = False  # also allow python for the rest of this session
    via: str = ""  # cell, panel, prompt, session, interrupt

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
            try:
                answer = self.ask(code)
            except KeyboardInterrupt:
                self._record(code, Answer(False, via="interrupt"))
                raise QuestionInterrupted(INTERRUPTED_QUESTION) from None
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


PROMPT_CHOICES = "[y/N, a = allow python for this session]"


def stdin_asker(shell: Any = None, timeout: Seconds = lambda: TIMEOUT) -> Asker:
    """Shows the code and asks "Run this code? [y/N, a = ...]" on the frontend's stdin.

    The code is shown through ``code_view``: numbered lines, hidden characters as markers, long
    lines wrapped, and the line count repeated in the question itself. "a" runs this code and
    allows python for the rest of the session. In a kernel, no answer within ``timeout()``
    seconds counts as no answer (a terminal's user is at the keyboard that asks).

    Answers ``run=None`` when nobody can answer: a kernel whose client does not allow stdin
    (nbclient, papermill) or a script whose stdin is not a terminal.
    """

    def ask(code: str) -> Answer:
        in_kernel = getattr(shell, "kernel", None) is not None
        if not in_kernel and not (sys.stdin is not None and sys.stdin.isatty()):
            return Answer(None, via="prompt")
        from IPython.core.error import StdinNotImplementedError

        facts, seconds = summary(code), timeout()
        bound = f"; no answer in {within(seconds)}: not run" if in_kernel else ""
        print(f"The agent wants to run this code ({facts}{bound}):\n\n{terminal_view(code)}\n", flush=True)
        try:
            with TimeLimit(seconds if in_kernel else None):
                reply = input(f"Run this code ({facts})? {PROMPT_CHOICES} ").strip().lower()
        except CodeTimedOut:
            print(f"No answer in {within(seconds)}: the code did not run.", flush=True)
            return Answer(None, via="prompt")
        except (StdinNotImplementedError, EOFError):
            return Answer(None, via="prompt")
        if reply in {"a", "always", "allow"}:
            return Answer(True, always=True, via="prompt")
        return Answer(reply in {"y", "yes"}, via="prompt")

    return ask


def stdin_approver(shell: Any = None) -> Callable[[str], bool | None]:
    """``stdin_asker`` as a plain approver: True (run), False (skip) or None (nobody can answer)."""
    ask = stdin_asker(shell)
    return lambda code: ask(code).run
