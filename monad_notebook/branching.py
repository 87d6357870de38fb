"""Branching: copy a session (messages, summary, spilled tool outputs, images, recall's index, the workspace record,
the rewind journal) under a new name.

The copy is made once, for every store, from the roles each answers: under the store's lock, a
write per table (LanceDB keeps a version per write), fresh message ids. A branch is taken from
what is durable, so a compaction in flight is let land first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from monad_notebook.errors import StoreError, UsageError
from monad_notebook.messages import new_id
from monad_notebook.store.base import SessionRecord, Store
from monad_notebook.store.rows import is_text


def check_session_name(name: str) -> None:
    """A session name is 1-200 characters of text, without NUL, newlines or lone surrogates; else UsageError."""
    if not name or len(name) > 200 or any(c in name for c in "\x00\n\r") or not is_text(name):
        raise UsageError("a session name must be 1-200 characters of text, without newlines")


def branch_session(store: Store, source: str, target: str, *, settle: Callable[[], None]) -> SessionRecord:
    """``target`` as a copy of ``source``; ``settle`` lets background work on ``source`` land first."""
    check_session_name(target)
    settle()
    return clone_session(store, source, target)


def clone_session(store: Store, source: str, target: str) -> SessionRecord:
    """``target`` as an independent copy of ``source``: what either does next leaves the other as it was.

    What an interrupted clone left under ``target`` is dropped first; the record is written last,
    so a session of that name exists only once its copy is whole.
    """
    with store.lock:
        origin = store.get_session(source)
        if origin is None:
            raise StoreError(f"there is no session named {source!r} to branch from; check the name")
        if store.get_session(target) is not None:
            raise StoreError(f"a session named {target!r} already exists; pick another name or delete it first")
        store.reset_session(target)
        originals = store.load_messages(source)
        copies = [replace(m, id=new_id(), session=target) for m in originals]
        store.append_messages(copies)
        store.search.copy(source, target, {o.id: c.id for o, c in zip(originals, copies, strict=True)})
        store.copy_raw_outputs(source, target)
        store.save_images(target, store.load_images(source))
        store.save_ledger(target, store.load_ledger(source))
        store.workspace.save_workspace(target, store.workspace.load_workspace(source))
        store.rewind.save_rewind(target, store.rewind.load_rewind(source))  # rows: the kept bytes are shared
        summary = store.load_summary(source)
        if summary is not None:
            store.save_summary(replace(summary, session=target))
        return store.create_session(target, model=origin.model, parent=source, meta=origin.meta)
