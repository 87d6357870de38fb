"""Asking before code runs or a user's MCP tool is called: one gate per session, whatever frontend asks.

A question has a subject: ``"python"`` for the python tool's code, ``"mcp:<server>"`` for a call
to one of the user's MCP servers (the text shown is then the call: server, tool and its exact
arguments), ``"tool:<name>"`` for another tool that changes things, ``"cell:..."`` for a notebook cell the
agent wants run (:func:`cell_subject`: the question names the cell and says it runs once the turn ends;
allowing python allows it, since a cell's code is python run in the same kernel). A call read from the model's
text (``agent/text_calls.py``) is asked about under its subject marked ``"text:"``: the question
says where the call came from, and no "allow for this session" covers it. The gate holds the
session's "allow ... for this session" overrides, one per subject (set by an answer, shown by
``%monad status``, gone with the Session object), and records every decision as a
``tool.approval`` event, so the store keeps who ran what and how long the user took to answer (``waited``,
kept apart from the call's own time). How the question is put (a widget
in the running cell, the panel, the frontend's input prompt) is the asker's business; the
input prompt's asker (:func:`stdin_asker`) is here, the notebook's are in ``asking.py``.

Every question is bounded in time (``tools.python.approvalTimeoutSeconds``) and says so; no
answer in time means the code does not run. An interrupt during the question ends it at once:
it is recorded as a skip and the turn stops with the call answered "did not run".
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from monad_notebook.approval.code_view import shown_lines, summary, terminal_view
from monad_notebook.config_schema import PythonToolConfig
from monad_notebook.events import APPROVAL, Emit, Excerpt
from monad_notebook.time_limit import CodeTimedOut, TimeLimit

RUN, SKIP, ALLOW_SESSION, NO_ANSWER = "run", "skip", "allow for session", "no answer"
TIMEOUT = PythonToolConfig().approval_timeout_seconds
INTERRUPTED_QUESTION = "interrupted: the user stopped the turn while asked to approve this code; it did not run."
Seconds = Callable[[], float]  # the question's time limit, read when it is asked (the config may change)


class QuestionInterrupted(KeyboardInterrupt):
    """An interrupt while the user was asked: the turn stops, and the call's result says the code did not run."""

    result = INTERRUPTED_QUESTION


PYTHON = "python"
TOOL = "tool:"  # another tool that changes things: "tool:remember"
CELL = "cell:"  # a notebook cell to run once the turn ends: "cell:<number>:<id>:<where it is>"
WRITTEN = "text:"  # the call was read from the model's text: "text:python", "text:mcp:warehouse"
FIRST_LINE_SHOWN = 120  # characters of the code's first line a tool.approval event keeps, after redaction


def written(subject: str) -> str:
    """The subject of a question about a call the model wrote in its text instead of making it."""
    return WRITTEN + subject


def cell_subject(number: int, cell_id: str, where: str = "") -> str:
    """The subject of "run this cell?": the cell's place from the top (1 is the first), its id, where it is."""
    return f"{CELL}{number}:{cell_id}:{where}"


def allowance(subject: str) -> str:
    """What "allow ... for this session" allows when it answers a question about ``subject``."""
    return PYTHON if subject.startswith(CELL) else subject


@dataclass(frozen=True)
class Wording:
    """A question's subject in its own words: what the agent wants, what "allow" allows, how it ended."""

    action: str  # "run this code"
    allow: str  # "python"
    done: str  # "the code ran"
    not_done: str  # "the code did not run"


def wording(subject: str) -> Wording:
    """The words of a question; ``allow`` is "" where no answer may allow the subject for the session."""
    if subject.startswith(WRITTEN):
        words = wording(subject.removeprefix(WRITTEN))
        action = f"{words.action}, a call read from the model's text rather than made through the API"
        return Wording(action, "", words.done, words.not_done)
    if subject == PYTHON:
        return Wording("run this code", "python", "the code ran", "the code did not run")
    if subject.startswith(CELL):
        return _cell_wording(subject)
    if subject.startswith(TOOL):
        name = subject.removeprefix(TOOL)
        return Wording(f"call its tool {name}", "", "the tool was called", "the tool was not called")
    server = subject.removeprefix("mcp:")
    return Wording(f"call a tool of the MCP server {server}", server, "the tool was called", "the tool was not called")


def _cell_wording(subject: str) -> Wording:
    """The cell runs only once the turn ends (the kernel is busy with the turn): every word says so."""
    number, cell_id, where = [*subject.removeprefix(CELL).split(":", 2), "", ""][:3]
    shown_id = cell_id if len(cell_id) <= 12 else cell_id[:8] + "\u2026"
    about = f"cell {number} (id {shown_id}" + (f", {where})" if where else ")")
    return Wording(
        f"run {about} when this turn ends",
        "python",
        f"cell {number} will run when this turn ends",
        f"cell {number} will not run",
    )


def within(seconds: float) -> str:
    """How a question states its time limit: "10 min", "90 s"."""
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:g} s"


@dataclass(frozen=True)
class Answer:
    """One reply to "run this code?": ``run`` None when nobody could or did answer."""

    run: bool | None
    always: bool = False  # also allow the question's subject (python, an MCP server) for the rest of this session
    via: str = ""  # cell, panel, prompt, session, interrupt
    why: str = ""  # why nobody answered, when it is known: "page gone"

    @property
    def decision(self) -> str:
        if self.run is None:
            return NO_ANSWER
        if not self.run:
            return SKIP
        return ALLOW_SESSION if self.always else RUN


Asker = Callable[..., Answer]  # ask(text, subject=PYTHON) -> Answer


class ApprovalGate:
    """``session.approve``: asks through ``ask`` unless the subject is allowed for this session.

    Returns True (run), False (skip) or None (nobody answered), as the tools expect.
    """

    def __init__(self, ask: Asker, emit: Emit | None = None) -> None:
        self.ask = ask
        self.emit = emit
        self.allowed: set[str] = set()  # subjects allowed for the rest of this session

    @property
    def allowed_for_session(self) -> bool:
        """Python is allowed for the rest of this session."""
        return PYTHON in self.allowed

    def __call__(self, code: str, subject: str = PYTHON) -> bool | None:
        if allowance(subject) in self.allowed:
            self._record(code, subject, Answer(True, via="session"))
            return True
        started = time.monotonic()
        try:
            answer = self.ask(code) if subject == PYTHON else self.ask(code, subject=subject)
        except KeyboardInterrupt:
            self._record(code, subject, Answer(False, via="interrupt"), time.monotonic() - started)
            raise QuestionInterrupted(INTERRUPTED_QUESTION) from None
        if answer.run and answer.always and wording(subject).allow:
            self.allowed.add(allowance(subject))
        self._record(code, subject, answer, time.monotonic() - started)
        return answer.run

    def reset(self) -> None:
        """Ask again from the next request on."""
        self.allowed.clear()

    def _record(self, code: str, subject: str, answer: Answer, waited: float | None = None) -> None:
        """``waited``: seconds the question waited for the user (None: nobody was asked)."""
        if self.emit is None:
            return
        lines = shown_lines(code)
        about = {} if subject == PYTHON else {"subject": subject}
        if waited is not None:
            about["waited"] = round(waited, 2)
        if answer.why:
            about["why"] = answer.why
        self.emit(
            APPROVAL,
            decision=answer.decision,
            via=answer.via,
            summary=summary(code),
            first_line=Excerpt(lines[0] if lines else "", FIRST_LINE_SHOWN),
            code_sha256=hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest(),
            **about,
        )


def prompt_choices(subject: str) -> str:
    allow = wording(subject).allow
    return f"[y/N, a = allow {allow} for this session]" if allow else "[y/N]"


def stdin_asker(shell: Any = None, timeout: Seconds = lambda: TIMEOUT) -> Asker:
    """Shows the code and asks "Run this code? [y/N, a = ...]" on the frontend's stdin.

    The code is shown through ``code_view``: numbered lines, hidden characters as markers, long
    lines wrapped, and the line count repeated in the question itself. "a" runs this code and
    allows python for the rest of the session. In a kernel, no answer within ``timeout()``
    seconds counts as no answer (a terminal's user is at the keyboard that asks).

    Answers ``run=None`` when nobody can answer: a kernel whose client does not allow stdin
    (nbclient, papermill) or a script whose stdin is not a terminal.
    """

    def ask(code: str, subject: str = PYTHON) -> Answer:
        in_kernel = getattr(shell, "kernel", None) is not None
        if not in_kernel and not (sys.stdin is not None and sys.stdin.isatty()):
            return Answer(None, via="prompt")
        from IPython.core.error import StdinNotImplementedError

        facts, seconds = summary(code), timeout()
        bound = f"; no answer in {within(seconds)}: not run" if in_kernel else ""
        words = wording(subject)
        action = words.action
        print(f"The agent wants to {action} ({facts}{bound}):\n\n{terminal_view(code)}\n", flush=True)
        try:
            with TimeLimit(seconds if in_kernel else None):
                reply = input(f"{action.capitalize()} ({facts})? {prompt_choices(subject)} ").strip().lower()
        except CodeTimedOut:
            print(f"No answer in {within(seconds)}: {words.not_done}.", flush=True)
            return Answer(None, via="prompt")
        except (StdinNotImplementedError, EOFError):
            return Answer(None, via="prompt")
        if reply in {"a", "always", "allow"} and words.allow:
            return Answer(True, always=True, via="prompt")
        return Answer(reply in {"y", "yes"}, via="prompt")

    return ask


def stdin_approver(shell: Any = None) -> Callable[..., bool | None]:
    """``stdin_asker`` as a plain approver: True (run), False (skip) or None (nobody can answer)."""
    ask = stdin_asker(shell)
    return lambda code, subject=PYTHON: ask(code, subject).run
