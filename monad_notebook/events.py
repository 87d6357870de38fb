"""Wire events: what the session tells its listeners (the cell, the panel, the store).

Names follow the cascade spec. Transient kinds are notices, not history: they reach
listeners but are never written to the store. Everything the panel draws as history
(usage per step, eviction, compaction, reinjection) is persisted, so a panel opened later,
or after a restart, replays it; ``session.reset`` marks where a forgotten conversation ends.

Every event passes the session's redactor once, in ``EventBus.clean``, before any listener, the
store or the panel sees it: each text in its data is redacted whole, and a field an emitter wants
short is given as an ``Excerpt``, cut only after its whole text was redacted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

TURN_STARTED = "turn.started"
TURN_FINISHED = "turn.finished"
ANSWER_TRUNCATED = "turn.answer_truncated"
TOOL_STARTED = "tool.call.started"
TOOL_FINISHED = "tool.call.finished"
TEXT_CALLS = "tool.text_calls"  # a reply's text held tool calls, run as calls (those that could be)
TEXT_CALLS_UNUSED = "turn.text_calls_unused"  # the model wrote calls as text and none could run: what to change
USAGE = "context.usage"
EVICTED = "context.evicted"
COMPACTION_STARTED = "context.compaction.started"
COMPACTION_FINISHED = "context.compaction.finished"
SUMMARY_REJECTED = "context.compaction.summary_rejected"
COMPACTION_APPLIED = "context.compaction.applied"  # the window now starts from the new summary
REINJECTED = "context.reinjected"
HANDOFF_SUGGESTED = "context.handoff_suggested"
MEMORY_SUGGESTION = "memory.suggestion"
MEMORY_SAVED = "memory.saved"
MEMORY_SUGGESTION_RESOLVED = "memory.suggestion.resolved"
ERROR = "session.error"
APPROVAL = "tool.approval"  # a decision on running code: run, skip, allow for session, no answer
RESET = "session.reset"
NOTEBOOK_PROPOSED = "notebook.proposed"  # the agent proposed a new cell or a change to one
NOTEBOOK_DECIDED = "notebook.decided"  # accepted, rejected, outdated (the cell changed), applied (auto), no answer
WORKSPACE_CHANGED = "workspace.changed"  # a user's cell changed what the kernel holds (the panel lists it again)

TRANSIENT_KINDS = frozenset({HANDOFF_SUGGESTED, WORKSPACE_CHANGED})


@dataclass(frozen=True)
class Event:
    kind: str
    session: str
    data: dict[str, Any] = field(default_factory=dict)
    ts: float = field(default_factory=time.time)
    clean: bool = field(default=False, compare=False, repr=False)  # passed the bus's redaction already

    @property
    def persisted(self) -> bool:
        return self.kind not in TRANSIENT_KINDS


@dataclass(frozen=True)
class Excerpt:
    """The first ``limit`` characters of ``text``, cut after the whole of it was redacted (``EventBus.clean``)."""

    text: str
    limit: int


class Redacts(Protocol):
    """The session's redactor, as the bus uses it (``Redactor.redact_each``)."""

    def redact_each(self, texts: Sequence[str]) -> list[str]: ...


Listener = Callable[[Event], None]
Emit = Callable[..., None]  # emit(kind, **data): how a stage tells its listeners


def _redacted(event: Event, redactor: Redacts | None) -> Event:
    """``event`` with every text in its data redacted whole (in one pass) and each ``Excerpt`` then cut."""
    texts: list[str] = []
    _collect(event.data, texts)
    if not texts:
        return event
    redacted = iter(redactor.redact_each(texts) if redactor is not None else texts)
    return replace(event, data=_rebuild(event.data, redacted))


def _collect(value: Any, texts: list[str]) -> None:
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, Excerpt):
        texts.append(value.text)
    elif isinstance(value, dict):
        for item in value.values():
            _collect(item, texts)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, texts)


def _rebuild(value: Any, redacted: Any) -> Any:
    if isinstance(value, str):
        return next(redacted)
    if isinstance(value, Excerpt):
        return next(redacted)[: value.limit]
    if isinstance(value, dict):
        return {key: _rebuild(item, redacted) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rebuild(item, redacted) for item in value]
    return value


class EventBus:
    """Fan-out of events to listeners; safe to emit from the session's worker thread.

    ``redactor`` is the configuration's (the session pushes it): ``clean`` passes every event
    through it, and whoever writes events to the store writes the cleaned ones. A failing
    listener is dropped from this emit's fan-out only: a broken panel must never fail a turn.
    """

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self.redactor: Redacts | None = None

    def clean(self, event: Event) -> Event:
        """The event as it may be stored and shown: its texts redacted, its excerpts cut (once)."""
        return event if event.clean else replace(_redacted(event, self.redactor), clean=True)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def emit(self, event: Event) -> Event:
        """Tell every listener the cleaned event, and return it."""
        event = self.clean(event)
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event)
            except Exception:  # a listener's bug is not the turn's problem
                continue
        return event


class EventLog:
    """One session's events: every kind told to listeners at once, persisted kinds written in batches.

    The turn writes its pending events with each step (``flush``); an event from a worker
    thread (a background compaction) is written at once. A failed write keeps them pending.
    """

    def __init__(self, session: str, bus: EventBus, write: Callable[[list[Event]], None]) -> None:
        self.session = session
        self.bus = bus
        self.write = write
        self._pending: list[Event] = []
        self._lock = threading.Lock()

    def emit(self, kind: str, **data: Any) -> None:
        event = self.bus.clean(Event(kind=kind, session=self.session, data=data))
        if event.persisted:
            with self._lock:
                self._pending.append(event)
        self.bus.emit(event)
        if event.persisted and threading.current_thread() is not threading.main_thread():
            self.flush()

    def record(self, events: list[Event]) -> None:
        """Events that are stored at once, in one write (a fact saved, a suggestion made), then told, cleaned."""
        events = [self.bus.clean(event) for event in events]
        persisted = [event for event in events if event.persisted]
        if persisted:
            self.write(persisted)
        for event in events:
            self.bus.emit(event)

    def discard(self) -> None:
        """Drop what is pending (the conversation it belongs to was just forgotten)."""
        with self._lock:
            self._pending = []

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending:
            return
        try:
            self.write(pending)
        except Exception:
            with self._lock:
                self._pending[:0] = pending
            raise
