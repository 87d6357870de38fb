"""A cascade built from its real parts around a given window, for tests of what it keeps and applies."""

from __future__ import annotations

from typing import Any

from monad_notebook.config import Config
from monad_notebook.context.cascade import Cascade
from monad_notebook.context.compaction.summarize import Summarizer
from monad_notebook.context.lossless.stage import LosslessStage
from monad_notebook.context.occupancy.cost import pricing_for
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.recall.service import RecallService
from monad_notebook.context.settings import CascadeSettings
from monad_notebook.context.window import Frame, Window
from monad_notebook.events import EventBus, EventLog
from monad_notebook.memory import MemoryPromotion, MemoryService
from monad_notebook.messages import Message
from monad_notebook.store.base import Summary, ensure_session
from monad_notebook.store.lease import TurnLease


class Events:
    """What a cascade told its listeners, by kind (without the turn and step every event carries)."""

    def __init__(self, bus: EventBus) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        bus.subscribe(lambda event: self.seen.append((event.kind, event.data)))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in data.items() if k not in ("turn", "step")} for k2, data in self.seen if k2 == kind]


def make_cascade(
    store: Any,
    session: str,
    messages: list[Message],
    *,
    summarizer: Summarizer | None = None,
    summary: Summary | None = None,
    context: dict[str, Any] | None = None,
    context_window: int = 100_000,
    promotion: MemoryPromotion | None = None,
) -> tuple[Cascade, Events]:
    """A cascade over a window holding ``messages`` (after ``summary``), with the context settings given."""
    ensure_session(store, session, "gpt-4o")
    window = Window(session)
    window.messages, window.summary = list(messages), summary
    window.next_seq = (messages[-1].seq + 1) if messages else 0
    bus = EventBus()
    events = Events(bus)
    memory = MemoryService(store)
    recall = RecallService(window, store, lambda _: None)
    counter = TokenCounter("gpt-4o")
    cascade = Cascade(
        window=window,
        store=store,
        events=EventLog(session, bus, store.append_events),
        lease=TurnLease(store, session),
        counter=counter,
        memory=memory,
        promotion=promotion or MemoryPromotion(memory),
        recall=recall,
    )
    config = Config.model_validate({"context": {"recall": {"enabled": False}, **(context or {})}})
    recall.reconfigure(config)
    settings = CascadeSettings(
        context=config.context,
        agent=None,
        lossless=LosslessStage(config.context, counter),
        counter=counter,
        frame=Frame(),
        pricing=pricing_for(config.models.main),
        context_window=context_window,
        summarizer_model=None,
    )
    cascade.reconfigure(settings)
    cascade.compaction.summarizer = summarizer  # the summaries these tests write, whatever model would
    return cascade, events
