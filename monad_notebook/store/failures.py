"""LanceDB's errors as one line a user can act on."""

from __future__ import annotations

import re

_ELSEWHERE = "point MONAD_HOME (or store.uri in agents.json) at a writable directory"
_KNOWN_CAUSES = (
    (
        ("no space left", "os error 28", "os error 27", "file too large", "quota exceeded", "os error 122"),
        "out of disk space: free some space (or raise the file size limit) and run the cell again",
    ),
    (
        ("read-only file system", "os error 30", "errno 30"),
        f"read-only file system: remount it writable or {_ELSEWHERE}, then run the cell again",
    ),
    (
        ("permission denied", "os error 13", "errno 13", "operation not permitted"),
        f"permission denied: give this user write access to the database directory or {_ELSEWHERE}, "
        "then run the cell again",
    ),
)

ADVICE = frozenset(advice for _, advice in _KNOWN_CAUSES)


def reason(exc: BaseException) -> str:
    """The first line of a LanceDB error, cut short, without Rust source paths; says what to do when it can."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    text = re.sub(r",? ?/\S*\.cargo/\S*", "", text)
    lowered = text.lower()
    for marks, advice in _KNOWN_CAUSES:
        if any(mark in lowered for mark in marks):
            return advice
    return text if len(text) <= 160 else text[:159] + "…"
