"""What the user did in the notebook between two turns: the cells they ran, in order, and how each ended; and,
where the notebook extension answers, the cells the agent read that they changed or deleted since.

Heard from IPython's ``post_run_cell`` (registered by ``load_ipython_extension``): each cell the user ran
is kept as its number, its id when the frontend sent one, the first line of its source and its outcome
(ok, or the error's type and last line). Cells that are not the user's work are not kept: code run
without history (the agent's python tool), a cell the agent queued (``execute_cell``), the cell a turn
ran in (a ``%%monad`` cell, ``Session.ask`` in a cell) and ``%monad`` commands.

Each source and error is redacted whole, by the session's redactor, before it is cut or kept. The
cells since the last turn are shown once, as the ``<notebook_activity>`` block at the end of each
request of the next turn; once the model answered that turn they are dropped, so no later turn
repeats them. A turn the model never answered drops nothing: the next one shows them.
"""

from __future__ import annotations

import logging
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from monad_notebook.notebook.agent_runs import AGENT_RUNS

if TYPE_CHECKING:
    from monad_notebook.redaction.redactor import Redactor

log = logging.getLogger(__name__)

MAX_CELLS = 20  # the newest kept; older ones are counted
MAX_TOKENS = 600  # the block's budget: it ends the requests of one turn, after the provider's cached prefix
MAX_LINE_CHARS = 100  # a cell's first line, shortened
MAX_ERROR_CHARS = 200  # an error's last line, shortened
HEADER = "Cells the user ran in the notebook since your last turn, oldest first (their first line, how each ended):"
EDITED = "Cells you read that the user changed since (read_cell shows them as they are now):"
EARLIER = "({count:,} earlier cell(s) not shown)"


class Edits(Protocol):
    """The open notebook as the activity reads it (``NotebookFrontend``): the user's edits of cells the agent read."""

    def edits(self) -> list[tuple[str, str, str]]: ...
    def edits_told(self, edits: list[tuple[str, str, str]]) -> None: ...


@dataclass(frozen=True)
class CellRun:
    """One cell the user ran, as kept: already redacted and shortened."""

    number: int | None  # IPython's execution count
    cell_id: str  # nbformat's id when the frontend sent one, else ""
    first_line: str
    outcome: str  # "ok", or "<ErrorType>: <the error's last line>"

    def line(self) -> str:
        where = f"[{self.number}]" if self.number is not None else "[?]"
        if self.cell_id:
            where += f" cell {self.cell_id}"
        return f"- {where} `{self.first_line}`: {self.outcome}"


class NotebookActivity:
    """One session's account of the user's cells since its last turn; ``shell`` tells the cell a turn runs in."""

    def __init__(self, shell: Any = None) -> None:
        self.shell = shell
        self.enabled = False
        self.redactor: Redactor | None = None
        self.runs: deque[CellRun] = deque(maxlen=MAX_CELLS)
        self.dropped = 0  # cells pushed out of ``runs`` by newer ones, since the last turn
        self.shown = 0  # how many of ``runs`` (and of ``dropped``) the running turn's block holds
        self.shown_dropped = 0
        self._turn_cell: int | None = None  # the execution count of the cell the last turn ran in
        self.notebook: Edits | None = None  # the open notebook, whose cells the user edits between turns
        self.shown_edits: list[tuple[str, str, str]] = []

    def reconfigure(self, enabled: bool, redactor: Redactor | None) -> None:
        self.enabled, self.redactor = enabled, redactor
        if not enabled:
            self.runs.clear()
            self.dropped = self.shown = self.shown_dropped = 0

    def after_cell(self, result: Any) -> None:
        """IPython's ``post_run_cell``: keep the cell if it was the user's own work (a failure here is logged: it
        never breaks the user's cell)."""
        try:
            self._hear(result)
        except Exception as exc:
            log.warning("the notebook activity left out a cell: %s", exc)

    def _hear(self, result: Any) -> None:
        info = getattr(result, "info", None)
        if not self.enabled or info is None or not getattr(info, "store_history", True):
            return
        source = getattr(info, "raw_cell", "")
        number = getattr(result, "execution_count", None)
        if not isinstance(source, str) or _calls_monad(source) or number == self._turn_cell:
            return
        if AGENT_RUNS.started_by_agent():
            return
        error = getattr(result, "error_before_exec", None) or getattr(result, "error_in_exec", None)
        told = _error_text(error) if error is not None else ""
        cell_id = str(getattr(info, "cell_id", None) or "")
        source, told, kind, cell_id = self._redact(
            [source, told, type(error).__name__ if error is not None else "", cell_id]
        )
        first = next((line.strip() for line in source.splitlines() if line.strip()), "")
        self._keep(CellRun(number, cell_id[:64], _shorten(first), _outcome(kind, told) if error is not None else "ok"))

    def _keep(self, run: CellRun) -> None:
        """The newest ``MAX_CELLS`` are kept, the older ones counted (no cell runs while a turn's block is out)."""
        self.dropped += len(self.runs) == self.runs.maxlen
        self.runs.append(run)

    def block(self, count_text: Callable[[str], int], max_tokens: int = MAX_TOKENS) -> str:
        """The block for the turn starting now (empty when the user ran nothing), within ``max_tokens``: the newest
        cells are kept, the older ones counted. Marks the cell this turn runs in, which is never listed."""
        self._turn_cell = _running_cell(self.shell)
        self.shown, self.shown_dropped = len(self.runs), self.dropped
        self.shown_edits = self._edits()
        edited = self._redact([f"- cell {cell_id}: {what}" for cell_id, _, what in self.shown_edits[:MAX_CELLS]])
        edited = [EDITED, *edited] if edited else []
        if not self.runs:
            return "\n".join(["<notebook_activity>", *edited, "</notebook_activity>"]) if edited else ""
        lines = [run.line() for run in self.runs]
        fixed = count_text(
            "\n".join(["<notebook_activity>", HEADER, EARLIER.format(count=999_999), *edited, "</notebook_activity>"])
        )
        left, kept = max_tokens - fixed, 0
        for line in reversed(lines):
            cost = count_text(line) + 1
            if cost > left:
                break
            left -= cost
            kept += 1
        earlier = self.dropped + len(lines) - kept
        out = ["<notebook_activity>", HEADER]
        out += [EARLIER.format(count=earlier)] if earlier else []
        out += lines[len(lines) - kept :]
        return "\n".join([*out, *edited, "</notebook_activity>"])

    def _edits(self) -> list[tuple[str, str, str]]:
        """The user's edits of cells the agent read (a failure to look is logged: the turn goes on without them)."""
        if not self.enabled or self.notebook is None:
            return []
        try:
            return self.notebook.edits()
        except Exception as exc:
            log.warning("the notebook activity left out the user's edits: %s", exc)
            return []

    def seen(self) -> None:
        """The model answered the turn whose block was built last: what it showed is not shown again."""
        for _ in range(min(self.shown, len(self.runs))):
            self.runs.popleft()
        self.dropped = max(0, self.dropped - self.shown_dropped)
        self.shown = self.shown_dropped = 0
        if self.shown_edits and self.notebook is not None:
            self.notebook.edits_told(self.shown_edits)
        self.shown_edits = []

    def _redact(self, texts: list[str]) -> list[str]:
        return self.redactor.redact_each(texts) if self.redactor is not None else texts


def _running_cell(shell: Any) -> int | None:
    """The execution count of the cell running now, None outside one: IPython puts a cell's source in its input
    history (``In``) as it starts and counts it when it ends."""
    count = getattr(shell, "execution_count", None)
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    return count if isinstance(count, int) and history is not None and len(history) > count else None


def _calls_monad(source: str) -> bool:
    """A ``%%monad`` cell or a ``%monad`` command: the session's own business, not the user's work."""
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return first.startswith(("%%monad", "%monad"))


def _error_text(error: BaseException) -> str:
    """The error as a traceback ends: its type and message (whose ``__str__`` is the user's code, so guarded)."""
    try:
        return "".join(traceback.format_exception_only(type(error), error))
    except Exception:
        return type(error).__name__


def _outcome(kind: str, told: str) -> str:
    """ "<ErrorType>: <the last line of its message>", shortened."""
    last = next((line.strip() for line in reversed(told.splitlines()) if line.strip()), "")
    outcome = last if last.startswith(kind) else f"{kind}: {last}"
    return outcome if len(outcome) <= MAX_ERROR_CHARS else outcome[: MAX_ERROR_CHARS - 3] + "..."


def _shorten(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..."
