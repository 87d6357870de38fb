"""What the agent proposed for the notebook, and what the user decided about each proposal.

A proposal is a new cell or a new source for an existing cell, with the source the agent read
(``base``): a change applies only while the cell still holds exactly that, so nothing the user
typed since is overwritten. Each proposal and each decision is a persisted event (the store
keeps them, the panel draws them); the decisions the agent has not been told yet wait here
until the next tool result or the next user message carries them. Events hold ids, kinds and
line counts, never a cell's text: a source may hold a secret.
"""

from __future__ import annotations

import itertools
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from monad_notebook.approval.code_view import shown_lines, summary
from monad_notebook.events import NOTEBOOK_DECIDED, NOTEBOOK_PROPOSED
from monad_notebook.notebook.line_diff import line_diff
from monad_notebook.notebook.merge import merge_on_top

Emit = Callable[..., None]

ACCEPTED, REJECTED, OUTDATED, APPLIED, NO_ANSWER = "accepted", "rejected", "outdated", "applied", "no answer"
CELL_TYPES = ("code", "markdown", "raw")
POSITIONS = ("below", "above")
DECISIONS_TAG = "notebook-decisions"
_NUMBERS = itertools.count(1)  # proposal ids are unique in the kernel, whichever session proposes
TOLD_SOURCE_CHARS = 4_000  # of a cell's new source, what the agent is told with the decision (read_cell has it all)


def diff_lines(base: str, source: str) -> list[tuple[str, str]]:
    """Every line of ``base`` and ``source`` as ("-"|"+"|" ", text); a new cell (no base) is all "+".

    Lines are split where Python and IPython split them, with hidden characters shown as markers
    (``<U+202E>``), so what the user accepts is what they saw; the diff takes bounded time
    (``line_diff.py``), however large the cell.
    """
    return line_diff(shown_lines(base), shown_lines(source))


def new_cell_id() -> str:
    """An nbformat 4.5 cell id (letters, digits, "-"), as JupyterLab makes them."""
    return str(uuid.uuid4())


@dataclass
class Proposal:
    """One change the agent asked for: a new cell (``insert``) or a new source (``change``); or one a rewind asks
    for, to undo what the agent's accepted proposals did (``remove`` a cell it put in, ``change`` one back)."""

    id: str
    kind: str  # insert | change | remove
    cell_id: str  # the cell to change or remove, or the cell a new one goes against
    source: str
    base: str = ""  # change: the source the agent read
    cell_type: str = "code"
    position: str = "below"
    new_id: str = ""  # insert: the id the new cell gets
    anchor_is_running: bool = False  # insert: placed against the running %%monad cell
    written: str = ""  # the call was read from the model's text: the user is asked, whatever the approval setting
    on_top: bool = False  # change: the agent's change applied on top of the user's edit (``base`` is that edit)
    by: str = ""  # "rewind": proposed by a rewind, not the agent; the agent is not told what became of it
    lines: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.lines:
            self.lines = diff_lines("" if self.kind == "insert" else self.base, self.source)

    @property
    def added(self) -> int:
        return sum(1 for sign, _ in self.lines if sign == "+")

    @property
    def removed(self) -> int:
        return sum(1 for sign, _ in self.lines if sign == "-")

    def size(self) -> str:
        """What the cell would hold, as the python approval states code: lines, hidden characters, longest line."""
        facts = summary(self.source)
        if self.kind == "remove":
            return f"\u2212{self.removed} lines"
        if self.kind == "change":
            return f"+{self.added} \u2212{self.removed} lines; {facts} in all"
        return facts

    def summary(self) -> str:
        """What it is and its size: "new code cell ... below the %%monad cell (3 lines)"."""
        if self.kind == "remove":
            return f"removal of cell {self.cell_id}, which an undone turn put in ({self.size()})"
        if self.kind == "change":
            if self.by:
                return f"cell {self.cell_id} back as it was before the undone turns ({self.size()})"
            mine = " on top of the user's edit" if self.on_top else ""
            return f"change to cell {self.cell_id}{mine} ({self.size()}){self.origin()}"
        where = "the %%monad cell" if self.anchor_is_running else f"cell {self.cell_id}"
        return f"new {self.cell_type} cell {self.new_id} {self.position} {where} ({self.size()}){self.origin()}"

    def origin(self) -> str:
        """Where the call came from, when the user must know: read from the model's text."""
        return ", a call read from the model's text rather than made through the API" if self.written else ""

    def on_top_of(self, edited: str) -> Proposal | str:
        """This change applied on top of the user's edit of its cell: a change of the edit, or why it cannot be."""
        merged = merge_on_top(self.base, edited, self.source)
        if merged.source is None:
            return merged.overlap
        return replace(self, base=edited, source=merged.source, on_top=True, lines=[])

    def wire(self, mode: str, summary: str) -> dict[str, Any]:
        """The proposal as the notebook extension takes it."""
        return {
            "id": self.id,
            "kind": self.kind,
            "cell_id": self.cell_id,
            "position": self.position,
            "new_id": self.new_id,
            "cell_type": self.cell_type,
            "base": self.base,
            "source": self.source,
            "lines": [list(row) for row in self.lines],
            "mode": mode,
            "summary": summary,
        }


@dataclass(frozen=True)
class Decided:
    proposal: Proposal
    decision: str  # accepted | rejected | outdated | applied | no answer
    via: str  # cell, output, prompt, auto, reload
    detail: str = ""

    def told(self) -> str:
        """The decision as the agent reads it."""
        what = self.proposal.summary()
        if self.decision in (ACCEPTED, APPLIED):
            done = "it is in the notebook now" if not self.detail else self.detail
            landed = f"; the cell's new source:\n{_fenced(self.proposal)}" if self.proposal.on_top else ""
            return f"{self.proposal.id} ({what}): {self.decision}; {done}{landed}"
        if self.decision == OUTDATED:
            return f"{self.proposal.id} ({what}): not applied: {self.detail or 'the notebook changed'}"
        if self.decision == NO_ANSWER:
            return f"{self.proposal.id} ({what}): no answer from the user; nothing changed"
        return f"{self.proposal.id} ({what}): rejected by the user; nothing changed"


def _fenced(proposal: Proposal) -> str:
    """A cell's source in a fence no line of it closes, cut to what the agent needs told."""
    source = proposal.source
    fence = "`" * max(3, max((len(run) for run in re.findall("`+", source)), default=0) + 1)
    cut = ""
    if len(source) > TOLD_SOURCE_CHARS:
        more = len(source) - TOLD_SOURCE_CHARS
        source = source[:TOLD_SOURCE_CHARS]
        cut = f"\n… {more:,} more characters: read_cell({proposal.cell_id!r}) shows the whole cell"
    return f"{fence}\n{source}\n{fence}{cut}"


class ProposalBook:
    """The session's proposals: pending ones, and decisions not yet told to the agent; thread-safe.

    Decisions arrive from the kernel's subshell thread (a click while the turn runs) as well as
    from the turn itself.
    """

    def __init__(self, emit: Emit | None = None) -> None:
        self.emit = emit
        self._lock = threading.Lock()
        self.pending: dict[str, Proposal] = {}
        self.landed: dict[str, Proposal] = {}  # what this kernel put in the notebook, by proposal id (for a rewind)
        self._untold: list[Decided] = []

    def next_id(self) -> str:
        with self._lock:
            return f"p{next(_NUMBERS)}"

    def proposed(self, proposal: Proposal, *, path: str, mode: str) -> None:
        """Record a proposal now waiting (or applied at once: ``mode`` "auto")."""
        with self._lock:
            if mode != "auto":
                self.pending[proposal.id] = proposal
        self._emit(
            NOTEBOOK_PROPOSED,
            proposal=proposal.id,
            change=proposal.kind,
            cell_id=proposal.cell_id,
            new_id=proposal.new_id,
            cell_type=proposal.cell_type,
            position=proposal.position,
            added=proposal.added,
            removed=proposal.removed,
            path=path,
            mode=mode,
        )

    def decide(
        self, proposal_id: str, decision: str, *, via: str, detail: str = "", landed: Proposal | None = None
    ) -> Decided | None:
        """Record what became of a pending proposal; None when it is unknown or already decided.

        ``landed``: what went into the cell instead of the proposal as made (it applied on top of the user's edit).
        """
        with self._lock:
            proposal = self.pending.pop(proposal_id, None)
        if proposal is None:
            return None
        return self.record(landed or proposal, decision, via=via, detail=detail)

    def waiting(self, proposal_id: str) -> Proposal | None:
        """The pending proposal of that id, if it still waits."""
        with self._lock:
            return self.pending.get(proposal_id)

    def record(self, proposal: Proposal, decision: str, *, via: str, detail: str = "", tell: bool = True) -> Decided:
        """Record a decision; ``tell`` False when the agent reads it in the tool result that waited for it."""
        decided = Decided(proposal, decision, via, detail)
        with self._lock:
            self.pending.pop(proposal.id, None)
            if decision in (ACCEPTED, APPLIED):
                self.landed[proposal.id] = proposal
            if tell and not proposal.by:
                self._untold.append(decided)
        on_top = {"on_top": True} if proposal.on_top else {}
        self._emit(NOTEBOOK_DECIDED, proposal=proposal.id, decision=decision, via=via, detail=detail, **on_top)
        return decided

    def untold(self) -> list[Decided]:
        """The decisions the agent has not been told yet, once: the caller tells them."""
        with self._lock:
            told, self._untold = self._untold, []
        return told

    def pending_ids(self) -> list[str]:
        with self._lock:
            return list(self.pending)

    def waiting_on(self, cell_id: str) -> str | None:
        """The pending change to ``cell_id``, if one waits."""
        with self._lock:
            return next((p.id for p in self.pending.values() if p.kind == "change" and p.cell_id == cell_id), None)

    def _emit(self, kind: str, **data: Any) -> None:
        if self.emit is not None:
            self.emit(kind, **data)


def decisions_note(decided: list[Decided]) -> str:
    """The decisions as a block the agent reads before the user's next message ('' when none)."""
    if not decided:
        return ""
    lines = "\n".join(f"- {d.told()}" for d in decided)
    return f"<{DECISIONS_TAG}>\nThe user decided on your notebook proposals:\n{lines}\n</{DECISIONS_TAG}>\n\n"


def without_decisions(text: str) -> str:
    """A user message without the decisions block it may start with (what the user wrote)."""
    closing = f"</{DECISIONS_TAG}>"
    if text.startswith(f"<{DECISIONS_TAG}>") and closing in text:
        return text.split(closing, 1)[1].lstrip("\n")
    return text
