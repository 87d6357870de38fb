"""A recording comm and a fake session: the panel's kernel side, tested without a frontend."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import comm as comm_module
import pytest
from comm.base_comm import BaseComm

from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.events import Event, EventBus
from monad_notebook.store.base import MemoryFact


class RecordingComm(BaseComm):
    """What the frontend would receive, kept in order; thread-safe since events may come from a worker."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any):
        with self._lock:
            self.sent.append({"msg_type": msg_type, "data": data or {}})

    def updates(self) -> list[dict[str, Any]]:
        """Every state update the kernel sent, as dicts of trait -> value."""
        with self._lock:
            return [m["data"]["state"] for m in self.sent if m["data"].get("method") == "update"]

    def custom(self) -> list[dict[str, Any]]:
        with self._lock:
            return [m["data"]["content"] for m in self.sent if m["data"].get("method") == "custom"]

    def from_frontend(self, content: dict[str, Any]) -> None:
        """Deliver a custom message as the browser would (the dispatcher needs a "buffers" key)."""
        self.handle_msg(
            {"content": {"comm_id": self.comm_id, "data": {"method": "custom", "content": content}}, "buffers": []}
        )


@pytest.fixture
def comms(monkeypatch) -> list[RecordingComm]:
    created: list[RecordingComm] = []

    def create_comm(*args: Any, **kwargs: Any) -> RecordingComm:
        created.append(RecordingComm(*args, **kwargs))
        return created[-1]

    monkeypatch.setattr(comm_module, "create_comm", create_comm)
    return created


@dataclass
class FakeMemory:
    """The MemoryService contract the panel relies on, keyed by session name."""

    pending: list[dict[str, str]] = field(default_factory=list)
    saved: list[tuple[str, str | None]] = field(default_factory=list)
    dismissed: list[str] = field(default_factory=list)
    refuse: dict[str, str] = field(default_factory=dict)
    facts: list[MemoryFact] = field(default_factory=list)

    def pending_suggestions(self, session: str) -> list[dict[str, str]]:
        assert isinstance(session, str)
        return [{"scope": "global", **item} for item in self.pending]

    def accept(self, session: str, item_id: str, scope: str | None = None) -> Any:
        item = next(p for p in self.pending if p["id"] == item_id)
        self.pending = [p for p in self.pending if p["id"] != item_id]
        if item_id in self.refuse:
            return SimpleNamespace(ok=False, reason=self.refuse[item_id], text=item["text"], fact_id=None)
        self.saved.append((item_id, scope))
        verdict = self.add(item["text"], scope=scope or "global", source="promotion")
        return verdict

    def dismiss(self, session: str, item_id: str) -> bool:
        self.pending = [p for p in self.pending if p["id"] != item_id]
        self.dismissed.append(item_id)
        return True

    def suggest(self, session: str, facts: Sequence[str], *, scope: str = "global", origin: Any = None) -> list:
        items = [{"id": f"s{len(self.pending) + i + 100}", "text": text} for i, text in enumerate(facts)]
        self.pending += items
        return items

    def list(self, scopes: Sequence[str] | None = None) -> list[MemoryFact]:
        return [f for f in self.facts if scopes is None or f.scope in scopes]

    def add(self, text: str, *, scope: str, source: str = "manual") -> Any:
        fact = MemoryFact(id=f"f{len(self.facts) + 1}", scope=scope, text=text, created_at=time.time(), source=source)
        self.facts.append(fact)
        return SimpleNamespace(ok=True, reason="", text=text, fact_id=fact.id)

    def remove(self, fact_id: str) -> bool:
        kept = [f for f in self.facts if f.id != fact_id]
        removed, self.facts = len(kept) != len(self.facts), kept
        return removed


class FakeSession:
    """Just what the panel reads: name, events, usage, config thresholds, prompt records, memory."""

    def __init__(self, name: str = "eda", window: int = 3000) -> None:
        self.name = name
        self.events = EventBus()
        self.config = Config.model_validate({"context": {"summarize": {"softFraction": 0.6, "hardFraction": 0.8}}})
        self.context_window = window
        self.turn = 0
        self.step = 0
        self.occupancy = 0
        self.reclaimed = 0
        self.prompt_records: list[dict[str, Any]] = []
        self.memory: FakeMemory | None = FakeMemory()
        self.store = None
        self.workspace = None

    def usage_snapshot(self) -> dict[str, Any]:
        return {
            "occupancy": self.occupancy,
            "context_window": self.context_window,
            "fraction": round(self.occupancy / self.context_window, 4),
            "exact": True,
            "reclaimed": self.reclaimed,
            "messages": 0,
        }

    def emit(self, kind: str, **data: Any) -> None:
        self.events.emit(Event(kind, self.name, data))

    def run_step(self, occupancy: int, parts: list[dict[str, Any]] | None = None) -> None:
        """One step as the loop reports it: a prompt record, then context.usage."""
        self.step += 1
        self.occupancy = occupancy
        parts = parts or [
            {"kind": "system", "role": "system", "tokens": 100, "text": "You are monad"},
            {"kind": "message", "role": "user", "tokens": occupancy - 100, "text": "hello " * 50},
        ]
        self.prompt_records.append({"turn": self.turn, "step": self.step, "total_tokens": occupancy, "parts": parts})
        self.emit(ev.USAGE, **self.usage_snapshot())


@pytest.fixture
def session() -> FakeSession:
    return FakeSession()
