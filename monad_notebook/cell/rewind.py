"""``%monad rewind`` and ``%monad rebuild`` as a cell says them: the kernel's side of undoing turns, and of a restart
(offered in the first cell of a new kernel that lost names); the kept bytes a deleted session leaves, swept.

A rewind here puts back the files and names (``Session.rewind_kernel``); the conversation goes on from where it
is, and the first line says so, so nobody reads it as more than it did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monad_notebook.errors import UsageError
from monad_notebook.rewind.kept_bytes import KeptBytes, kept_folder

if TYPE_CHECKING:
    from monad_notebook.config_schema import RewindConfig
    from monad_notebook.session import Session
    from monad_notebook.store.base import Store

SHOWN = 5  # lost names the rebuild's offer names
USAGE = "usage: %monad rewind [TURN] (files and names as they were before TURN, the last by default) | --undo"


def rewind_lines(session: Session, rest: list[str]) -> list[str]:
    """What ``%monad rewind [TURN]`` or ``%monad rewind --undo`` did, one sentence a line."""
    if not session.rewind.enabled:
        raise UsageError("rewind is off (rewind.enabled in agents.json): nothing the session changed was kept")
    if rest == ["--undo"]:
        last = session.rewind.last
        if last is None or not last.epoch:
            raise UsageError("no rewind to undo in this kernel; %monad rewind TURN rewinds")
        report = session.undo_rewind(last)
        return ["the files and names are back as they were before that rewind", *report.lines()]
    if len(rest) > 1 or (rest and not rest[0].isdigit()):
        raise UsageError(USAGE)
    latest = session.window.turn
    if latest < 1:
        raise UsageError("this session has no turn to rewind yet")
    turn = int(rest[0]) if rest else latest
    if not 1 <= turn <= latest:
        raise UsageError(f"no turn {turn}: this session's turns are 1 to {latest}")
    report = session.rewind_kernel(turn)
    whole = "everything put back" if report.complete else "not all of it, as said below"
    head = (
        f"files and names as they were before turn {turn} ({whole}); the conversation goes on from where it is; "
        "%monad rewind --undo puts them back"
    )
    return [head, *report.lines()]


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
