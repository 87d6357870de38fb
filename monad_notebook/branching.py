"""Branching: copy a session (messages, summary, spilled tool outputs, images, recall's index, the workspace record,
the rewind journal) under a new name, whole or as it was before one of its turns (a conversation's rewind).

The copy is made once, for every store, from the roles each answers: under the store's lock, a
write per table (LanceDB keeps a version per write), fresh message ids. A branch is taken from
what is durable, so a compaction in flight is let land first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from monad_notebook.errors import StoreError, UsageError
from monad_notebook.events import MEMORY_SUGGESTION, MEMORY_SUGGESTION_RESOLVED
from monad_notebook.messages import Message, new_id
from monad_notebook.store.base import LedgerEntry, SessionRecord, Store, Summary
from monad_notebook.store.rows import is_text

Fold = Callable[[list[Message], dict[str, str]], list[LedgerEntry]]  # a span's ledger, as compaction grows it


def check_session_name(name: str) -> None:
    """A session name is 1-200 characters of text, without NUL, newlines or lone surrogates; else UsageError."""
    if not name or len(name) > 200 or any(c in name for c in "\x00\n\r") or not is_text(name):
        raise UsageError("a session name must be 1-200 characters of text, without newlines")


def branch_session(
    store: Store,
    source: str,
    target: str,
    *,
    settle: Callable[[], None],
    before_turn: int | None = None,
    fold: Fold | None = None,
) -> SessionRecord:
    """``target`` as a copy of ``source``; ``settle`` lets background work on ``source`` land first."""
    check_session_name(target)
    settle()
    return clone_session(store, source, target, before_turn=before_turn, fold=fold)


def clone_session(
    store: Store, source: str, target: str, *, before_turn: int | None = None, fold: Fold | None = None
) -> SessionRecord:
    """``target`` as an independent copy of ``source``: what either does next leaves the other as it was.

    With ``before_turn``, the copy is ``source`` as it was just before that turn began (a conversation's
    rewind): the messages of earlier turns and the spilled outputs and images of their calls; the summary
    in force then, with the identifier ledger of what it folded (``fold``: without it, the summary's own
    list seeds the ledger); the workspace record of earlier turns; the memory suggestions made before it.
    ``source`` keeps every turn.

    What an interrupted clone left under ``target`` is dropped first; the record is written last,
    so a session of that name exists only once its copy is whole.
    """
    with store.lock:
        origin = store.get_session(source)
        if origin is None:
            raise StoreError(f"there is no session named {source!r} to branch from; check the name")
        if store.get_session(target) is not None:
            raise StoreError(f"a session named {target!r} already exists; pick another name or delete it first")
        originals = store.load_messages(source)
        since = _turn_began(originals, before_turn) if before_turn is not None else None
        originals = [m for m in originals if before_turn is None or m.turn < before_turn]
        store.reset_session(target)
        copies = [replace(m, id=new_id(), session=target) for m in originals]
        store.append_messages(copies)
        store.search.copy(source, target, {o.id: c.id for o, c in zip(originals, copies, strict=True)})
        summary = store.load_summary(source, before=since)
        if since is None:
            store.copy_raw_outputs(source, target)
            store.save_images(target, store.load_images(source))
            store.save_ledger(target, store.load_ledger(source))
        else:
            _copy_earlier(store, source, target, originals, summary, since, fold)
        store.workspace.save_workspace(target, store.workspace.load_workspace(source, before_turn=before_turn))
        store.rewind.save_rewind(target, store.rewind.load_rewind(source))  # rows: the kept bytes are shared
        if summary is not None:
            store.save_summary(replace(summary, session=target))
        return store.create_session(target, model=origin.model, parent=source, meta=origin.meta)


def _turn_began(messages: list[Message], turn: int) -> float:
    """When turn ``turn`` began: its first message's time; UsageError if the session has no such turn."""
    undone = [m.created_at for m in messages if m.turn >= turn]
    if turn < 1 or not undone:
        last = max((m.turn for m in messages), default=0)
        raise UsageError(f"no turn {turn} to rewind: this session's turns are 1 to {last}")
    return min(undone)


def _copy_earlier(
    store: Store,
    source: str,
    target: str,
    kept: list[Message],
    summary: Summary | None,
    since: float,
    fold: Fold | None,
) -> None:
    """What a rewound copy keeps of the earlier turns besides their messages: their calls' spilled outputs and
    images, the ledger of what the summary in force then folded (rebuilt, as its compactions grew it), and
    the memory suggestions made before the undone turns, with what became of them."""
    calls = sorted({m.tool_call_id for m in kept if m.role == "tool" and m.tool_call_id})
    raw = store.get_raw_outputs(source, calls)
    store.save_raw_outputs(target, raw)
    store.save_images(target, store.load_images(source, calls))
    if summary is not None and fold is not None:
        store.save_ledger(target, fold([m for m in kept if m.seq <= summary.boundary_seq], raw))
    said = [
        replace(event, session=target)
        for kind in (MEMORY_SUGGESTION, MEMORY_SUGGESTION_RESOLVED)
        for event in store.list_events(source, kind=kind)
        if event.ts < since
    ]
    if said:
        store.append_events(said)
