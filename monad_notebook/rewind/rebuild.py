"""The rebuild's plan: the code that made what a kernel restart lost, in the order it first ran.

The workspace record says which names the kernel lost and what made each (an agent's call by its id,
the user's "cell 14"). The session's code is read from the stored transcript, the calls that ran
without an error (``export.code_runs``, what ``%monad export`` writes); the user's cells from the
earlier kernel's IPython history (``history.py``), found and ordered as the export finds them
(``export.user_cells.needs_of``). Of the calls, only those the lost names need are taken, walking
back from the last: a call that binds or changes a name still needed is taken, and what it reads
that the kernel does not hold now becomes needed in turn (an import included). What no code in reach
makes is said, by name.

A user's cell that holds what looks like a secret is neither shown nor run (the question that asks
for approval is a cell's output): the report names it for the user to run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monad_notebook.export.code_names import is_given, names_of
from monad_notebook.export.notebook import CodeRun, ExportStore, code_runs
from monad_notebook.export.user_cells import Run, UserCell, needs_of
from monad_notebook.rewind.in_place import changed_in_place
from monad_notebook.rewind.outside import outside
from monad_notebook.store.base import WorkspaceEntry

REBUILD_RUN = "rebuild"  # the plan's last, made-up run: it reads the lost names no call makes


@dataclass(frozen=True)
class Step:
    """One piece of code to rerun: what made it (a call's id, "cell 14"), the code, what it reads and binds."""

    made_by: str
    code: str
    reads: frozenset[str]
    binds: frozenset[str]
    turn: int = 0
    outside: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if self.made_by.startswith("cell "):
            return f"your cell In [{self.made_by.removeprefix('cell ')}]"
        return f"{self.made_by} (turn {self.turn})" if self.turn else self.made_by


@dataclass
class Plan:
    """What the rebuild would rerun, and what it cannot bring back."""

    lost: list[str]
    steps: list[Step] = field(default_factory=list)
    unmade: list[tuple[str, str]] = field(default_factory=list)  # (name, why no code here makes it)
    withheld: list[str] = field(default_factory=list)  # your cells that look like they hold a secret
    notes: list[str] = field(default_factory=list)

    def script(self) -> str:
        """The steps as one script, each headed by a comment naming it: what the approval shows, and runs."""
        head = f"# rebuild: {len(self.steps)} step(s) rerun the code that made what the restart lost"
        parts = [head]
        for number, step in enumerate(self.steps, 1):
            depends = f"  (depends on {'; '.join(step.outside)})" if step.outside else ""
            parts.append(f"# --- step {number} of {len(self.steps)}: {step.label}{depends}\n{step.code.strip()}")
        return "\n\n".join(parts) + "\n"


def plan_rebuild(
    store: ExportStore,
    session: str,
    lost: Sequence[WorkspaceEntry],
    namespace: Mapping[str, Any],
    history: Sequence[str] | None,
    *,
    root: Path | None = None,
    redact: Callable[[str], str] = lambda text: text,
) -> Plan:
    """The plan to bring back ``lost`` (the record's lost names) from the session's code and ``history`` (the
    earlier kernel's inputs by execution count; None: not known), skipping what ``namespace`` holds now."""
    plan = Plan([entry.key for entry in lost])
    if not lost:
        return plan
    messages = store.load_messages(session)
    ran_at = {c.id: m.created_at for m in messages if m.role == "assistant" for c in m.tool_calls}
    runs = code_runs(store, session, messages)
    needed = {name for name in plan.lost if name not in namespace}
    taken: list[CodeRun] = []
    for run in reversed(runs):
        names = names_of(run.code)
        if names is None or not (names.binds | changed_in_place(run.code)) & needed:
            continue
        taken.append(run)
        reads = {n for n in [*names.reads, *names.later] if not is_given(n) and n not in namespace}
        needed = (needed - names.binds) | reads
    taken.reverse()
    present = sorted(n for n in {r for run in taken for r in _reads(run.code)} if n in namespace)
    runs_in = [
        Run("", " = ".join([*present, "None"])) if present else Run("", ""),
        *(Run(r.tool_call_id, r.code) for r in taken),
    ]
    runs_in.append(Run(REBUILD_RUN, "\n".join(sorted(needed))))
    entries = store.workspace.load_workspace(session)
    needs = needs_of(runs_in, entries, history, lambda text: text)
    plan.steps = _chronological(_ordered(plan, needs.first, needs.before_call, taken, root, ran_at, redact), entries)
    made = {name for step in plan.steps for name in step.binds}
    plan.unmade = [(name, _why(entry, history)) for name, entry in needs.missing if name not in made]
    return plan


def _reads(code: str) -> list[str]:
    names = names_of(code)
    return [*names.reads, *names.later] if names is not None else []


def _ordered(
    plan: Plan,
    first: list[UserCell],
    before_call: dict[str, list[UserCell]],
    taken: list[CodeRun],
    root: Path | None,
    ran_at: dict[str, float],
    redact: Callable[[str], str],
) -> list[Step]:
    """The user's cells run before the session first, then each taken call after the cells it needs."""
    steps = [s for cell in first if (s := _cell_step(plan, cell, redact)) is not None]
    for run in taken:
        steps += [s for cell in before_call.get(run.tool_call_id, []) if (s := _cell_step(plan, cell, redact))]
        names = names_of(run.code)
        assert names is not None
        found = tuple(outside(run.code, root, ran_at.get(run.tool_call_id, 0.0)))
        steps.append(Step(run.tool_call_id, run.code, frozenset(_reads(run.code)), names.binds, run.turn, found))
    steps += [s for cell in before_call.get(REBUILD_RUN, []) if (s := _cell_step(plan, cell, redact)) is not None]
    return steps


def _chronological(steps: list[Step], entries: Sequence[WorkspaceEntry]) -> list[Step]:
    """The steps in the order they first ran: a call in its turn, a cell the record saw after that turn's calls
    (its ``turn`` is the last turn before it); a cell the record has no entry of stays before the step after it."""
    turns: dict[str, int] = {}
    for entry in entries:
        if entry.made_by.startswith("cell "):
            turns[entry.made_by] = max(turns.get(entry.made_by, 0), entry.turn)
    keys: list[tuple[int, int]] = []
    for step in reversed(steps):
        if not step.made_by.startswith("cell "):
            keys.append((step.turn, 0))
        elif step.made_by in turns:
            keys.append((turns[step.made_by], 1))
        else:
            keys.append(keys[-1] if keys else (1 << 30, 1))
    keys.reverse()
    return [step for _, step in sorted(zip(keys, steps, strict=True), key=lambda pair: pair[0])]


def _cell_step(plan: Plan, cell: UserCell, redact: Callable[[str], str]) -> Step | None:
    if redact(cell.source) != cell.source:
        plan.withheld.append(f"In [{cell.number}]")
        return None
    names = names_of(cell.source)
    reads, binds = (frozenset(), frozenset()) if names is None else (frozenset(names.reads), names.binds)
    return Step(f"cell {cell.number}", cell.source, reads, binds, 0, tuple(outside(cell.source, None)))


def _why(entry: WorkspaceEntry | None, history: Sequence[str] | None) -> str:
    made_by = entry.made_by if entry is not None else ""
    if not made_by:
        return "it was there before the session: no code here made it"
    if made_by.startswith("cell "):
        where = "is not in" if history else "cannot be read from"
        return f"made by your {made_by}, which {where} the earlier kernel's history"
    return f"made by {made_by}, whose code did not run without an error or is not in the transcript"
