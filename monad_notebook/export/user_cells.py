"""What the session's code needs that it did not make: the user's own cells, or names nobody can say how to make.

The agent's code often reads what the user's cells made (a DataFrame loaded before the first question).
The workspace record names the cell that made each name ("cell 14", or nobody: there before the session),
and IPython's history holds each cell's input by its number, so that cell, and the cells it needs in turn,
can be carried into the export, marked as the user's. A cell is taken only when its code does make the
name (a number from another kernel, or a history that was cleared, names another cell). What no cell in
reach makes is named at the top, where a check stops the notebook in one line before anything fails later.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from monad_notebook.export.code_names import Names, names_of
from monad_notebook.store.base import WorkspaceEntry

_MAGIC_CELL = re.compile(r"\s*%%?monad\b")  # the session's own cells: %%monad questions, %monad commands
_CELL = re.compile(r"cell (\d+)")


@dataclass(frozen=True)
class UserCell:
    """One of the user's cells, as typed (``number`` is its execution count in the kernel that ran it)."""

    number: int
    source: str
    before_session: bool


@dataclass
class Needs:
    """The user's cells to carry (those run before the session go first; the others before the code that needs
    them, by the needing call's id), and the names no cell in reach makes (with the record's entry when it has
    one, so the notebook can say what each was)."""

    first: list[UserCell] = field(default_factory=list)
    before_call: dict[str, list[UserCell]] = field(default_factory=dict)
    missing: list[tuple[str, WorkspaceEntry | None]] = field(default_factory=list)

    @property
    def cells(self) -> list[UserCell]:
        return [*self.first, *(cell for cells in self.before_call.values() for cell in cells)]


@dataclass(frozen=True)
class Run:
    """A piece of the session's code, in the order it ran: its call's id and its source."""

    call_id: str
    code: str


class _Finder:
    """One export's search: what is bound so far as the session's code is read in order, and what is carried."""

    def __init__(self, entries: list[WorkspaceEntry], history: Sequence[str] | None, redact: Callable[[str], str]):
        self.entries = {e.key: e for e in entries if e.kind == "name"}
        self.history = list(history or [])
        self.redact = redact
        monad = [k for k, text in enumerate(self.history) if k and _MAGIC_CELL.match(text or "")]
        self.session_start = monad[0] if monad else len(self.history)
        self.needs = Needs()
        self.bound: set[str] = set()
        self.carried: set[int] = set()
        self._names: dict[int, Names | None] = {}

    def names(self, number: int) -> Names | None:
        if number not in self._names:
            self._names[number] = names_of(self.history[number]) if 0 < number < len(self.history) else None
        return self._names[number]

    def maker(self, name: str, before: int) -> int | None:
        """The number of the user's cell that made ``name``: the one the record names, else the last one
        before ``before`` whose code binds it (before the session when the record says it was there first)."""
        entry = self.entries.get(name)
        made_by = entry.made_by if entry is not None else ""
        named = _CELL.fullmatch(made_by)
        if named and int(named.group(1)) < before and self._binds(int(named.group(1)), name):
            return int(named.group(1))
        if made_by and not named:  # the agent's own call made it: only its code could, and it is not in the export
            return None
        limit = min(before, self.session_start) if entry is not None else before
        return next((k for k in range(limit - 1, 0, -1) if self._user_cell(k) and self._binds(k, name)), None)

    def _user_cell(self, number: int) -> bool:
        return not _MAGIC_CELL.match(self.history[number] or "")

    def _binds(self, number: int, name: str) -> bool:
        names = self.names(number)
        return names is not None and name in names.binds

    def need(self, name: str, call_id: str, before: int) -> None:
        number = self.maker(name, before)
        if number is None:
            self.needs.missing.append((name, self.entries.get(name)))
            self.bound.add(name)  # said once
            return
        self.carry(number, call_id)

    def carry(self, number: int, call_id: str) -> None:
        """Carry cell ``number`` and, first, the cells before it that make what it reads."""
        if number in self.carried:
            return
        self.carried.add(number)
        names = self.names(number)
        assert names is not None  # only cells whose code binds a name are carried
        for name in [*names.reads, *sorted(names.later)]:
            if name not in self.bound:
                self.need(name, call_id, number)
        cell = UserCell(number, self.redact(self.history[number]), number < self.session_start)
        if cell.before_session:
            self.needs.first.append(cell)
        else:
            self.needs.before_call.setdefault(call_id, []).append(cell)
        self.bound |= names.binds


def needs_of(
    runs: list[Run],
    entries: list[WorkspaceEntry],
    history: Sequence[str] | None,
    redact: Callable[[str], str] = lambda text: text,
) -> Needs:
    """What ``runs`` (the session's code, in order) read that none of them made before: the user's cells that
    made it (from ``history``, the kernel's inputs by execution count; redacted with ``redact``), or names."""
    finder = _Finder(entries, history, redact)
    parsed = [(run, names_of(run.code)) for run in runs]
    made = {name for _, names in parsed if names is not None for name in names.binds}
    for run, names in parsed:
        if names is None:
            continue
        for name in names.reads:
            if name not in finder.bound:
                finder.need(name, run.call_id, len(finder.history))
        for name in sorted(names.later - made):
            if name not in finder.bound:
                finder.need(name, run.call_id, len(finder.history))
        finder.bound |= names.binds
    finder.needs.first.sort(key=lambda cell: cell.number)
    for cells in finder.needs.before_call.values():
        cells.sort(key=lambda cell: cell.number)
    return finder.needs
