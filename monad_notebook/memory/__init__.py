"""Durable memory: facts across sessions, one sanitizing chokepoint, promotion before compaction."""

from __future__ import annotations

from monad_notebook.memory.service import (
    MEMORY_SUGGESTION_RESOLVED,
    MemoryPromotion,
    MemoryService,
    Verdict,
    promote_facts,
    resolve_scope,
    sanitize_fact,
    visible_scopes,
)

__all__ = [
    "MEMORY_SUGGESTION_RESOLVED",
    "MemoryPromotion",
    "MemoryService",
    "Verdict",
    "promote_facts",
    "resolve_scope",
    "sanitize_fact",
    "visible_scopes",
]
