"""Durable memory: facts across sessions, one sanitizing chokepoint, promotion before compaction."""

from __future__ import annotations

from monad_notebook.memory.service import (
    MemoryPromotion,
    MemoryService,
    Verdict,
    promote_facts,
    resolve_scope,
    sanitize_fact,
    visible_scopes,
)

__all__ = [
    "MemoryPromotion",
    "MemoryService",
    "Verdict",
    "promote_facts",
    "resolve_scope",
    "sanitize_fact",
    "visible_scopes",
]
