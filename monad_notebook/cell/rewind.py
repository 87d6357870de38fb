"""``%monad rewind`` and ``%monad rebuild`` as a cell says them: the kernel's side of undoing turns, and of a restart
(offered in the first cell of a new kernel that lost names); the kept bytes a deleted session leaves, swept.

A rewind puts back the files and names (``Session.rewind_kernel``) and copies the conversation as it was before the
turn into a session of its own, which the notebook then uses; the session it came from keeps every turn, so the
rewind loses nothing, and ``--undo`` goes back to it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

from monad_notebook.errors import MonadError, UsageError
from monad_notebook.events import NOTEBOOK_DECIDED, NOTEBOOK_PROPOSED
from monad_notebook.notebook.proposals import ACCEPTED, APPLIED
from monad_notebook.rewind.kept_bytes import KeptBytes, kept_folder

if TYPE_CHECKING:
    from monad_notebook.config_schema import RewindConfig
    from monad_notebook.session import Session
    from monad_notebook.store.base import Sessions, Store

SHOWN = 5  # lost names the rebuild's offer names
USAGE = "usage: %monad rewind [TURN] (the session as it was before TURN, the last by default) | --undo"
REWOUND = "rewound"  # a rewound copy's record: {"from": the session with every turn, "turn": ..., "epoch": ...}


def rewind_turn(session: Session, rest: list[str]) -> int:
    """The turn ``%monad rewind [TURN]`` names: the last by default; UsageError for anything else."""
    if len(rest) > 1 or (rest and not rest[0].isdigit()):
        raise UsageError(USAGE)
    latest = session.window.turn
    if latest < 1:
        raise UsageError("this session has no turn to rewind yet")
    turn = int(rest[0]) if rest else latest
    if not 1 <= turn <= latest:
        raise UsageError(f"no turn {turn}: this session's turns are 1 to {latest}")
    return turn


def rewound_name(store: Sessions, source: str, turn: int) -> str:
    """``<name>@turnT`` (a copy of a copy drops the earlier mark), with the first free number after it."""
    base = re.sub(r"@turn\d+(-\d+)?$", "", source) or source
    name, number = f"{base}@turn{turn}"[-200:], 2
    while store.get_session(name) is not None:
        name, number = f"{base}@turn{turn}-{number}"[-200:], number + 1
    return name


def rewind_session(session: Session, turn: int) -> tuple[str, list[str]]:
    """Take the session back to just before ``turn``: the kernel's files and names put back, and the conversation
    copied as it was then under a new name (``session`` keeps every turn). The copy's name, and what was done."""
    report = session.rewind_kernel(turn) if session.rewind.enabled else None
    name = rewound_name(session.store, session.name, turn)
    try:
        record = session.branch(name, before_turn=turn)
    except BaseException:
        if report is not None and report.epoch:
            session.undo_rewind(report.epoch)
        raise
    mark = {"from": session.name, "turn": turn, "epoch": report.epoch if report is not None else 0}
    session.store.set_session_meta(name, {**record.meta, REWOUND: mark})
    head = (
        f"rewound to before turn {turn}: the conversation goes on as session {name!r}; {session.name!r} keeps every "
        "turn, and %monad rewind --undo goes back to it"
    )
    cells = cells_back(session, turn)
    if report is None:
        return name, [head, "files and names were not kept (rewind.enabled is off): they stay as they are", *cells]
    whole = "everything put back" if report.complete else "not all of it, as said below"
    return name, [head, f"files and names as they were before turn {turn} ({whole})", *report.lines(), *cells]


def landed_since(store: Store, session: str, turn: int) -> list[tuple[str, str, str]]:
    """The agent's proposals made from turn ``turn`` on (each event names its turn) that the user accepted or that
    were applied, in the order they landed: (proposal id, "insert" or "change", the cell's id)."""
    events = [*store.list_events(session, kind=NOTEBOOK_PROPOSED), *store.list_events(session, kind=NOTEBOOK_DECIDED)]
    proposed: dict[str, dict] = {}
    landed = []
    for event in sorted(events, key=lambda e: e.ts):
        made = proposed.get(str(event.data.get("proposal")))
        if event.kind == NOTEBOOK_PROPOSED:
            if int(event.data.get("turn") or 0) >= turn:
                proposed[str(event.data.get("proposal"))] = event.data
        elif made is not None and event.data.get("decision") in (ACCEPTED, APPLIED):
            insert = made.get("change") == "insert"
            landed.append(
                (
                    str(event.data.get("proposal")),
                    str(made.get("change")),
                    str(made.get("new_id" if insert else "cell_id")),
                )
            )
    return landed


def cells_back(session: Session, turn: int) -> list[str]:
    """The cells the undone turns put in the notebook, proposed back at the cells (a cell they inserted removed, a
    cell they changed given its earlier source) for the user to accept or reject; else named, to look at."""
    landed = landed_since(session.store, session.name, turn)
    if not landed:
        return []
    made, missed = [], ["the notebook is not open in a page"]
    if session.notebook is not None:
        made, missed = session.notebook.undo_landed([proposal for proposal, _, _ in landed])
    lines = (
        [f"proposed back at the cells, each to accept or reject: {'; '.join(p.summary() for p in made)}"]
        if made
        else []
    )
    if missed:
        new = [cell for _, kind, cell in landed if kind == "insert"]
        changed = list(dict.fromkeys(cell for _, kind, cell in landed if kind != "insert"))
        named = [f"new {', '.join(new)}" if new else "", f"changed {', '.join(changed)}" if changed else ""]
        why = "; ".join(missed)
        lines.append(f"cells the undone turns put in the notebook ({'; '.join(n for n in named if n)}): {why}")
    return lines


def rewound_mark(store: Sessions, name: str) -> dict:
    """What the rewound copy ``name`` came from (its record's mark: "from", "turn", "epoch"); {} when ``name`` is no
    rewind's copy, or the session it came from is gone."""
    record = store.get_session(name)
    mark = record.meta.get(REWOUND) if record is not None else None
    if not isinstance(mark, dict) or store.get_session(str(mark.get("from"))) is None:
        return {}
    return mark


def rewound_from(session: Session) -> dict:
    """What a rewound copy came from (its record's mark); UsageError if ``session`` is no rewind's copy."""
    mark = rewound_mark(session.store, session.name)
    if not mark:
        raise UsageError("no rewind to undo: this session is not what a rewind left (%monad rewind TURN rewinds)")
    return mark


def undo_lines(copy: Session, back: Session, mark: dict) -> list[str]:
    """Back in the session with every turn: the kernel's side undone too, unless the copy's own turns moved on."""
    lines = [f"back in session {back.name!r} with every turn; the rewound copy stays as session {copy.name!r}"]
    if copy.window.turn >= int(mark.get("turn", 0)):
        return [*lines, "files and names stay as they are: the copy's turns since the rewind changed them"]
    if not mark.get("epoch"):
        return lines
    report = back.undo_rewind(int(mark["epoch"]))
    return [*lines, "the files and names are back as they were before the rewind", *report.lines()]


def rebuild_lines(session: Session, rest: list[str]) -> list[str]:
    """What ``%monad rebuild`` did: each step's outcome, what came back and what did not."""
    if rest:
        raise UsageError("usage: %monad rebuild")
    session.flush_events()
    return session.rebuild().lines()


def rebuild_offer(session: Session) -> str:
    """The line the first monad command in a new kernel prints when the session's record lists lost names."""
    names = [entry.key for entry in session.workspace.live()[2]]
    if not names:
        return ""
    more = f", +{len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return (
        f"monad: this kernel lost {len(names)} name(s) the session's record lists ({', '.join(names[:SHOWN])}{more}): "
        "%monad rebuild reruns the code that made them, after you approve it"
    )


def sweep_kept(store: Store, config: RewindConfig) -> int:
    """Remove the kept bytes no session's journal names any more (a deleted session's); bytes freed."""
    uri = getattr(store, "uri", "")
    return KeptBytes(kept_folder(uri if isinstance(uri, str) else "", config.kept_dir)).sweep(
        store.rewind.kept_digests()
    )


class Rewinding(Protocol):
    """What the panel's rewinds need of the magic: the store, the session in use, its rewind and its redaction."""

    current: str | None

    @property
    def store(self) -> Store: ...
    def rewind(self, rest: list[str], session: str | None = None) -> list[str]: ...
    def redact(self, text: str) -> str: ...


class PanelRewinds:
    """The panel's timeline rewinds through the magic, so a click does exactly what ``%monad rewind`` does
    (``widget.source.Rewinds``); what it says is redacted like the magic's output, and an error is a line."""

    def __init__(self, magics: Rewinding) -> None:
        self.magics = magics

    def rewind(self, session: str, turn: int) -> tuple[bool, list[str]]:
        return self._done(session, [str(turn)])

    def undo(self, session: str) -> tuple[bool, list[str]]:
        return self._done(session, ["--undo"])

    def rewound_from(self, session: str) -> dict[str, Any]:
        mark = rewound_mark(self.magics.store, session)
        return {"from": str(mark["from"]), "turn": int(mark.get("turn") or 0)} if mark else {}

    def _done(self, session: str, words: list[str]) -> tuple[bool, list[str]]:
        using = self.magics.current
        try:
            ok, lines = True, self.magics.rewind(words, session=session)
        except MonadError as exc:
            ok, lines = False, [str(exc)]
        except Exception as exc:  # a click has no cell to show a traceback in: the panel says it
            ok, lines = False, [f"the rewind failed: {type(exc).__name__}: {exc}"]
        if not ok:
            self.magics.current = using
        return ok, [self.magics.redact(line) for line in lines]
