"""Handoff: when a session stays heavy even after compaction, start a fresh one from its summary.

The nudge is a transient event (the cell and the panel show it); the handoff itself creates
a new session whose first summary is this one's, so the new window starts small but informed.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from monad_notebook.errors import UsageError
from monad_notebook.store.base import SessionRecord, Sessions, Summaries, Summary


class HandoffStore(Sessions, Summaries, Protocol):
    """What a handoff writes: the new session, seeded with the old one's summary."""


def handoff_nudge(cfg: Any, fraction: float, reflections: int, compactions: int) -> dict[str, Any] | None:
    """The ``context.handoff_suggested`` payload when the window stays heavy, else None.

    ``cfg`` is the ``context.handoff`` config; ``fraction`` the occupancy after compaction;
    ``reflections`` how often the summary was condensed.
    """
    if not cfg.enabled:
        return None
    if fraction < cfg.at_fraction and reflections < cfg.after_reflections:
        return None
    why = (
        f"{fraction:.0%} of the window after compaction"
        if fraction >= cfg.at_fraction
        else f"the summary was condensed {reflections} times"
    )
    return {
        "message": f"This session stays heavy ({why}). Start fresh from its summary with %monad handoff NEW.",
        "fraction": round(fraction, 3),
        "reflections": reflections,
        "compactions": compactions,
    }


def seed_handoff(store: HandoffStore, source: str, target: str, summary: Summary | None, model: str) -> SessionRecord:
    """Create ``target`` seeded with ``summary`` (the caller compacts first when there is none)."""
    if store.get_session(target) is not None:
        raise UsageError(f"session {target!r} already exists; pick a new name for the handoff")
    record = store.create_session(target, model=model, parent=source)
    if summary is not None and summary.text:
        store.save_summary(Summary(session=target, text=summary.text, boundary_seq=-1, created_at=time.time()))
    return record
