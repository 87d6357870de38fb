"""Branching: copy a session (messages, summary, spilled tool outputs, embeddings) under a new name.

The copy is the store's work (one locked operation, fresh message ids); a branch is taken from
what is durable, so a compaction in flight is let land first.
"""

from __future__ import annotations

from collections.abc import Callable

from monad_notebook.errors import UsageError
from monad_notebook.store.base import SessionRecord, Sessions
from monad_notebook.store.rows import is_text


def check_session_name(name: str) -> None:
    """A session name is 1-200 characters of text, without NUL, newlines or lone surrogates; else UsageError."""
    if not name or len(name) > 200 or any(c in name for c in "\x00\n\r") or not is_text(name):
        raise UsageError("a session name must be 1-200 characters of text, without newlines")


def branch_session(store: Sessions, source: str, target: str, *, settle: Callable[[], None]) -> SessionRecord:
    """``target`` as a copy of ``source``; ``settle`` lets background work on ``source`` land first."""
    check_session_name(target)
    settle()
    return store.clone_session(source, target)
