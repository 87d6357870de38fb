"""What the panel shows, as plain data: events in, small JSON-ready fields out.

Kept apart from the widget so the terminal report and the browser panel tell the same story,
and so it can be tested without anywidget or a frontend. Every amount is in whole-prompt
tokens except a compaction's, which counts the conversation it folded ("messages only").
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterable
from typing import Any

from monad_notebook import events as ev
from monad_notebook.events import Event
from monad_notebook.widget.parts import as_int as _int
from monad_notebook.widget.parts import composition_of, cut, inspect_record

MAX_POINTS = 120
TAIL_POINTS = 20
MAX_MARKERS = 60
MAX_NOTICES = 4
MAX_RECORDS = 50
MAX_DECISIONS = 6

FIELDS = (
    "usage",
    "thresholds",
    "composition",
    "timeline_base",
    "timeline_tail",
    "markers",
    "compaction",
    "notices",
    "suggestions",
    "facts",
    "receipt",
    "decisions",
    "workspace",
    "records",
    "inspected",
    "activity",
)


COST_KEYS = ("step_prompt_tokens", "step_cached_tokens", "tokens_sent", "tokens_cached", "billed_input")


HISTORY_FIELDS = (
    "usage",
    "composition",
    "timeline_base",
    "timeline_tail",
    "markers",
    "compaction",
    "records",
    "inspected",
)


def minus(tokens: int) -> str:
    """A reduction as the markers show it: "−1,622" (a real minus sign)."""
    return f"\u2212{tokens:,}"


def at(turn: int, step: int) -> str:
    return f"turn {turn} · step {step}" if step else f"turn {turn}"


class PanelState:
    """Reduces session events to the panel's fields; safe to feed from the session's worker thread."""

    def __init__(self, session_name: str = "") -> None:
        self.session_name = session_name
        self.lock = threading.RLock()
        self._ids = itertools.count(1)
        self.inspector_open = False
        self.activity = "idle"
        self.thresholds: dict[str, float] = {}
        self.notices: list[dict[str, Any]] = []
        self.suggestions: list[dict[str, Any]] = []
        self.facts: list[dict[str, Any]] = []
        self.receipt: dict[str, Any] = {}
        self.decisions: list[dict[str, Any]] = []
        self.workspace: list[dict[str, Any]] = []  # what the kernel holds, with what made each
        self._clear_history()

    def _clear_history(self) -> None:
        """Everything that belongs to the conversation (a reset forgets it)."""
        self._next_point = 0
        self.usage: dict[str, Any] = {}
        self.composition: list[dict[str, Any]] = []
        self.timeline_base: list[dict[str, Any]] = []
        self.timeline_tail: list[dict[str, Any]] = []
        self.markers: list[dict[str, Any]] = []
        self.compaction: dict[str, Any] = {"running": False, "last": None}
        self.records: list[dict[str, Any]] = []
        self.inspected: dict[str, Any] = {}

    @property
    def timeline(self) -> list[dict[str, Any]]:
        return [*self.timeline_base, *self.timeline_tail]

    def snapshot(self, names: Iterable[str] = FIELDS) -> dict[str, Any]:
        with self.lock:
            return {name: getattr(self, name) for name in names}

    # --- events --------------------------------------------------------------------

    def apply(self, event: Event, *, turn: int | None = None, step: int | None = None) -> set[str]:
        """Fold one event in; returns the names of the fields that changed.

        ``turn``/``step`` are the live session's, for events that do not carry their own.
        """
        handler = _HANDLERS.get(event.kind)
        if handler is None:
            return set()
        data = dict(event.data)
        data.setdefault("turn", turn)
        data.setdefault("step", step)
        with self.lock:
            return handler(self, data)

    def _on_usage(self, data: dict[str, Any]) -> set[str]:
        self.usage = {
            "occupancy": _int(data.get("occupancy")),
            "context_window": _int(data.get("context_window")),
            "fraction": float(data.get("fraction") or 0.0),
            "exact": bool(data.get("exact")),
            "reclaimed": _int(data.get("reclaimed")),
            "messages": _int(data.get("messages")),
            **{key: _int(data.get(key)) for key in COST_KEYS},
            "cache_discount": float(data.get("cache_discount", 1.0)),
        }
        occupancy = self.usage["occupancy"]
        point = {
            "i": self._next_point,
            "turn": _int(data.get("turn")),
            "step": _int(data.get("step")),
            "occ": occupancy,
            "before": max(occupancy, _int(data.get("before"))) if data.get("before") is not None else occupancy,
            "win": self.usage["context_window"],
        }
        self._next_point += 1
        return {"usage", *self._add_point(point)}

    def _add_point(self, point: dict[str, Any]) -> set[str]:
        """Steps go to a short tail, folded into the base every TAIL_POINTS steps: a step sends the tail only."""
        self.timeline_tail = [*self.timeline_tail, point]
        if len(self.timeline_tail) < TAIL_POINTS:
            return {"timeline_tail"}
        self.timeline_base = [*self.timeline_base, *self.timeline_tail][-(MAX_POINTS - TAIL_POINTS) :]
        self.timeline_tail = []
        return {"timeline_base", "timeline_tail"}

    def _mark(self, kind: str, data: dict[str, Any], tag: str, label: str) -> set[str]:
        """A marker sits at the next timeline point: the step whose prompt it shaped."""
        turn, step = _int(data.get("turn")), _int(data.get("step"))
        marker = {"i": self._next_point, "kind": kind, "tag": tag, "turn": turn, "step": step}
        marker["label"] = f"{at(turn, step)}: {label}" if turn else label
        self.markers = [*self.markers, marker][-MAX_MARKERS:]
        return {"markers"}

    def _on_evicted(self, data: dict[str, Any]) -> set[str]:
        count, reclaimed = _int(data.get("count")), _int(data.get("reclaimed"))
        label = f"cleared {count} old tool result(s), {minus(reclaimed)} tokens (recoverable by handle)"
        return self._mark("evicted", data, minus(reclaimed), label)

    def _on_compaction_started(self, data: dict[str, Any]) -> set[str]:
        self.compaction = {
            **self.compaction,
            "running": True,
            "reason": str(data.get("reason", "")),
            "tokens_before": _int(data.get("tokens_before")),
            "since": time.time(),
        }
        return {"compaction"}

    def _on_compaction_finished(self, data: dict[str, Any]) -> set[str]:
        last = {
            "before": _int(data.get("tokens_before")),
            "after": _int(data.get("tokens_after")),
            "seconds": round(float(data.get("seconds") or 0.0), 2),
            "fallback": bool(data.get("used_fallback")),
            "replaced": str(data.get("replaced") or ""),  # why the fast model's briefing was not kept
            "reflected": bool(data.get("reflected")),
            "turn": _int(data.get("turn")),
            "step": _int(data.get("step")),
        }
        self.compaction = {"running": False, "last": last}
        saved = max(0, last["before"] - last["after"])
        label = (
            f"summarized older messages, {minus(saved)} tokens (messages only: {last['before']:,} → {last['after']:,})"
        )
        return {"compaction"} | self._mark("compaction", data, minus(saved), label)

    def _on_reinjected(self, data: dict[str, Any]) -> set[str]:
        hits = data.get("hits")
        count = len(hits) if isinstance(hits, list) else _int(hits)
        return self._mark("reinjected", data, f"+{count}", f"reinjected {count} related snippet(s)")

    def _on_notebook_proposed(self, data: dict[str, Any]) -> set[str]:
        cell = data.get("cell_id", "")
        new = f"new {data.get('cell_type', 'code')} cell {data.get('position', 'below')} cell {cell}"
        what = f"change to cell {cell}" if data.get("change") == "change" else new
        lines = f"+{_int(data.get('added'))} \u2212{_int(data.get('removed'))} lines"
        applied = " (applied: approval auto)" if data.get("mode") == "auto" else ""
        label = f"proposed {data.get('proposal', '')}: {what}, {lines}{applied}"
        return self._mark("notebook", data, str(data.get("proposal", "")), label)

    def _on_notebook_decided(self, data: dict[str, Any]) -> set[str]:
        proposal, decision = str(data.get("proposal", "")), str(data.get("decision", ""))
        how = " on top of your edit" if data.get("on_top") else ""
        detail = f": {data['detail']}" if data.get("detail") else ""
        return self._mark("notebook", data, f"{proposal} {decision}", f"{proposal} {decision}{how}{detail}")

    def _on_reset(self, _data: dict[str, Any]) -> set[str]:
        self._clear_history()
        return set(HISTORY_FIELDS)

    def _on_handoff(self, data: dict[str, Any]) -> set[str]:
        text = str(data.get("message") or "This session is getting long: consider handing off to a new one.")
        return self.add_notice("handoff", text)

    def _on_error(self, data: dict[str, Any]) -> set[str]:
        return self.add_notice("error", str(data.get("message", "")))

    def _on_suggestion(self, data: dict[str, Any]) -> set[str]:
        items = [{"id": str(i.get("id")), "text": str(i.get("text", ""))} for i in data.get("items", []) if i]
        return self.set_suggestions([*self.suggestions, *items])

    def _on_turn_started(self, data: dict[str, Any]) -> set[str]:
        self.activity = f"turn {_int(data.get('turn'))} running"
        return {"activity"}

    def _on_turn_finished(self, data: dict[str, Any]) -> set[str]:
        self.activity = f"idle · last turn {_int(data.get('turn'))}: {_int(data.get('steps'))} step(s)"
        return {"activity"}

    def _on_tool_started(self, data: dict[str, Any]) -> set[str]:
        turn, step = data.get("turn") or "?", data.get("step") or "?"
        self.activity = f"turn {turn} · step {step} · running {data.get('name', 'a tool')}"
        return {"activity"}

    # --- direct updates ------------------------------------------------------------

    def add_notice(self, kind: str, text: str) -> set[str]:
        with self.lock:
            notice = {"id": f"n{next(self._ids)}", "kind": kind, "text": text}
            self.notices = [*self.notices, notice][-MAX_NOTICES:]
            return {"notices"}

    def dismiss_notice(self, notice_id: str) -> set[str]:
        with self.lock:
            kept = [n for n in self.notices if n["id"] != notice_id]
            changed = len(kept) != len(self.notices)
            self.notices = kept
            return {"notices"} if changed else set()

    def set_suggestions(self, items: list[dict[str, Any]]) -> set[str]:
        with self.lock:
            unique = list({str(item["id"]): item for item in items}.values())
            if unique == self.suggestions:
                return set()
            self.suggestions = unique
            return {"suggestions"}

    def drop_suggestions(self, ids: set[str]) -> set[str]:
        with self.lock:
            return self.set_suggestions([s for s in self.suggestions if s["id"] not in ids])

    def set_facts(self, facts: list[dict[str, Any]]) -> set[str]:
        with self.lock:
            if facts == self.facts:
                return set()
            self.facts = facts
            return {"facts"}

    def set_workspace(self, rows: list[dict[str, Any]]) -> set[str]:
        with self.lock:
            if rows == self.workspace:
                return set()
            self.workspace = rows
            return {"workspace"}

    def set_receipt(self, action: str, text: str, **extra: Any) -> set[str]:
        """What the last memory click did, shown in place of the row it acted on (never a toast that moves things)."""
        with self.lock:
            self.receipt = {"id": f"r{next(self._ids)}", "action": action, "text": text, **extra}
            return {"receipt"}

    def clear_receipt(self) -> set[str]:
        with self.lock:
            if not self.receipt:
                return set()
            self.receipt = {}
            return {"receipt"}

    def add_decision(self, view: dict[str, Any], answer: bool | None) -> set[str]:
        """Record what became of an approval request (ran, skipped, or nobody answered)."""
        with self.lock:
            lines = [str(line) for line in view.get("lines", [])]
            first = next((line for line in lines if line.strip()), "")
            decision = {
                "id": f"d{next(self._ids)}",
                "answer": {True: "ran", False: "skipped"}.get(answer, "no answer"),  # type: ignore[arg-type]
                "code": cut(first.strip(), 80),
                "lines": len(lines),
                "at": time.strftime("%H:%M:%S"),
            }
            self.decisions = [*self.decisions, decision][-MAX_DECISIONS:]
            return {"decisions"}

    def set_thresholds(self, thresholds: dict[str, float]) -> set[str]:
        with self.lock:
            if thresholds == self.thresholds:
                return set()
            self.thresholds = thresholds
            return {"thresholds"}

    def set_records(self, records: list[dict[str, Any]]) -> set[str]:
        """Take the session's prompt records: the composition always; the step list and the
        inspected step only while an inspector is open (they are the bulk of a step's payload)."""
        with self.lock:
            recent = records[-MAX_RECORDS:]
            changed: set[str] = set()
            composition = composition_of(recent[-1] if recent else None)
            if composition != self.composition:
                self.composition = composition
                changed.add("composition")
            if not self.inspector_open:
                return changed
            index = [
                {"turn": _int(r.get("turn")), "step": _int(r.get("step")), "total_tokens": _int(r.get("total_tokens"))}
                for r in recent
            ]
            if index != self.records:
                self.records = index
                changed.add("records")
            if not recent and self.inspected:
                self.inspected = {}
                changed.add("inspected")
            if recent and not self.inspected.get("pinned"):
                self.inspected = inspect_record(recent[-1])
                changed.add("inspected")
            return changed

    def inspect(self, records: list[dict[str, Any]], turn: int | None, step: int | None) -> set[str]:
        """Show one step in the inspector (pinned), or follow the latest when turn/step are None."""
        with self.lock:
            if turn is None or step is None:
                self.inspected = inspect_record(records[-1]) if records else {}
                return {"inspected"}
            for record in reversed(records):
                if _int(record.get("turn")) == turn and _int(record.get("step")) == step:
                    self.inspected = inspect_record(record, pinned=True)
                    return {"inspected"}
            return set()


_HANDLERS = {
    ev.USAGE: PanelState._on_usage,
    ev.EVICTED: PanelState._on_evicted,
    ev.COMPACTION_STARTED: PanelState._on_compaction_started,
    ev.COMPACTION_FINISHED: PanelState._on_compaction_finished,
    ev.REINJECTED: PanelState._on_reinjected,
    ev.RESET: PanelState._on_reset,
    ev.HANDOFF_SUGGESTED: PanelState._on_handoff,
    ev.ERROR: PanelState._on_error,
    ev.MEMORY_SUGGESTION: PanelState._on_suggestion,
    ev.TURN_STARTED: PanelState._on_turn_started,
    ev.TURN_FINISHED: PanelState._on_turn_finished,
    ev.TOOL_STARTED: PanelState._on_tool_started,
    ev.NOTEBOOK_PROPOSED: PanelState._on_notebook_proposed,
    ev.NOTEBOOK_DECIDED: PanelState._on_notebook_decided,
}
