"""Reading the panel's inputs off a session, and the plain-text report for terminal IPython."""

from __future__ import annotations

from typing import Any

from monad_notebook import events as ev
from monad_notebook.events import Event
from monad_notebook.memory.service import GLOBAL_SCOPE, visible_scopes
from monad_notebook.widget.parts import scaled
from monad_notebook.widget.source import PanelSource
from monad_notebook.widget.state import PanelState, minus
from monad_notebook.workspace.block import about, origin

BAR_WIDTH = 40
SPARK = "▁▂▃▄▅▆▇█"
# Replayed from the store when a panel opens mid-session; old errors and turn activity are not news.
HISTORY_KINDS = frozenset(
    {
        ev.USAGE,
        ev.EVICTED,
        ev.COMPACTION_STARTED,
        ev.COMPACTION_FINISHED,
        ev.REINJECTED,
        ev.RESET,
        ev.NOTEBOOK_PROPOSED,
        ev.NOTEBOOK_DECIDED,
    }
)
MARKER_LETTERS = {"evicted": "E", "compaction": "C", "reinjected": "R", "handoff": "H", "notebook": "N"}
FACT_SOURCES = {"manual": "saved by you", "tool": "saved by the agent", "promotion": "from compaction"}


def thresholds_of(session: PanelSource) -> dict[str, float]:
    """The fractions the bar marks: eviction, soft and hard summarize thresholds (as configured now)."""
    context = session.config.context
    marks: dict[str, float] = {}
    if context.eviction.enabled:
        marks["evict"] = float(context.eviction.at_fraction)
    marks["soft"] = float(context.summarize.soft_fraction)
    marks["hard"] = float(context.summarize.hard_fraction)
    return marks


def records_of(session: PanelSource) -> list[dict[str, Any]]:
    return list(session.prompt_records)


def _stored(session: PanelSource, kind: str) -> list[Event]:
    return session.store.list_events(session.name, kind=kind) if session.store is not None else []


def _origin(session: str, data: dict[str, Any]) -> str:
    origin = data.get("origin") or {}
    if origin.get("source") == "compaction":
        turns = [t for t in origin.get("turns") or [] if isinstance(t, int)]
        span = ""
        if turns:
            span = f" of turn {turns[0]}" if min(turns) == max(turns) else f" of turns {min(turns)}–{max(turns)}"
        return f"from compaction{span} · session {session}"
    return f"suggested in session {session}"


def suggestions_of(session: PanelSource) -> list[dict[str, Any]] | None:
    """Pending memory suggestions with where each came from, or None without a memory service."""
    if session.memory is None:
        return None
    pending = session.memory.pending_suggestions(session.name)
    origins = {
        str(item.get("id")): _origin(session.name, event.data)
        for event in _stored(session, ev.MEMORY_SUGGESTION)
        for item in event.data.get("items", [])
    }
    return [
        {
            "id": str(item["id"]),
            "text": str(item.get("text", "")),
            "scope": str(item.get("scope", GLOBAL_SCOPE)),
            "origin": origins.get(str(item["id"]), f"suggested in session {session.name}"),
        }
        for item in pending
    ]


def facts_of(session: PanelSource) -> list[dict[str, Any]] | None:
    """The facts in force for this session (its agent's scope and global), newest first, with their origin."""
    if session.memory is None:
        return None
    here = {
        str(fact.get("id"))
        for event in _stored(session, ev.MEMORY_SAVED)
        for fact in event.data.get("facts", [])
        if isinstance(fact, dict)
    }
    facts = sorted(session.memory.list(visible_scopes(session.config.agent.name)), key=lambda f: -f.created_at)
    return [
        {
            "id": fact.id,
            "text": fact.text,
            "scope": fact.scope,
            "source": fact.source,
            "origin": " · ".join(
                [FACT_SOURCES.get(fact.source, fact.source), fact.scope]
                + ([f"session {session.name}"] if fact.id in here else [])
            ),
        }
        for fact in facts
    ]


def workspace_of(session: PanelSource) -> list[dict[str, Any]]:
    """The workspace as the panel lists it: each name, file or lost name with what made it and when."""
    if session.workspace is None:
        return []
    names, files, lost = session.workspace.live()
    return [
        {"kind": e.kind, "key": e.key, "about": about(e), "origin": origin(e), "state": state}
        for group, state in ((lost, "lost"), (names, "live"), (files, "live"))
        for e in group
    ]


def history_of(session: PanelSource) -> list[Event]:
    """The stored events the panel replays: those after the last reset, of the kinds it draws."""
    stored = session.store.list_events(session.name) if session.store is not None else []
    last_reset = max((i for i, e in enumerate(stored) if e.kind == ev.RESET), default=-1)
    return [e for e in stored[last_reset + 1 :] if e.kind in HISTORY_KINDS]


def state_from_session(session: PanelSource, *, history: bool = True) -> PanelState:
    """A PanelState as if it had listened from the start: stored events replayed, then the live snapshot."""
    state = PanelState(session.name)
    if history:
        for event in history_of(session):
            state.apply(event)
    state.set_thresholds(thresholds_of(session))
    state.set_records(records_of(session))
    state.usage = {**state.usage, **session.usage_snapshot()}
    suggestions = suggestions_of(session)
    if suggestions is not None:
        state.set_suggestions(suggestions)
    facts = facts_of(session)
    if facts is not None:
        state.set_facts(facts)
    state.set_workspace(workspace_of(session))
    return state


def _bar(fraction: float, thresholds: dict[str, float]) -> str:
    filled = min(BAR_WIDTH, round(fraction * BAR_WIDTH))
    cells = ["█"] * filled + ["·"] * (BAR_WIDTH - filled)
    for name in ("evict", "soft", "hard"):
        if name in thresholds:
            at = min(BAR_WIDTH - 1, round(thresholds[name] * BAR_WIDTH))
            cells[at] = "|"
    return "[" + "".join(cells) + "]"


def _sparkline(state: PanelState, width: int = 40) -> str:
    points = state.timeline[-width:]
    if not points:
        return ""
    top = max(max(p["win"] for p in points), 1)
    marks = {m["i"]: MARKER_LETTERS.get(m["kind"], "*") for m in state.markers}
    line = "".join(SPARK[min(len(SPARK) - 1, int(p["occ"] / top * len(SPARK)))] for p in points)
    under = "".join(marks.get(p["i"], " ") for p in points)
    return f"  {line}\n  {under.rstrip()}" if under.strip() else f"  {line}"


def render_text(state: PanelState) -> str:
    """The panel as lines of text: same numbers, same order, no browser needed."""
    usage, marks = state.usage, state.thresholds
    window = usage.get("context_window") or 0
    occupancy = usage.get("occupancy") or 0
    fraction = occupancy / window if window else 0.0
    exact = "exact" if usage.get("exact") else "estimated"
    lines = [
        f"monad · session {state.session_name} · {state.activity}",
        f"window {occupancy:,} / {window:,} tokens ({fraction:.0%}, {exact})",
        f"{_bar(fraction, marks)}  " + " · ".join(f"{k} {v:.0%}" for k, v in marks.items()),
    ]
    if state.composition:
        parts = scaled(state.composition, occupancy)
        lines.append("context: " + " · ".join(f"{c['kind']} {c['tokens']:,}" for c in parts))
    if usage.get("reclaimed"):
        lines.append(f"reclaimed {usage['reclaimed']:,} tokens by clearing old tool results (recoverable)")
    if usage.get("tokens_sent"):
        lines.append(cost_line(usage))
    compaction = state.compaction
    if compaction.get("running"):
        lines.append(f"compaction in progress ({compaction.get('reason') or 'background'})…")
    if compaction.get("last"):
        last = compaction["last"]
        how = " (extractive fallback)" if last["fallback"] else ""
        if last.get("replaced"):
            how = f" (extractive fallback, the fast model's was not kept: {last['replaced']})"
        lines.append(
            f"last compaction: {minus(max(0, last['before'] - last['after']))} tokens "
            f"(messages only: {last['before']:,} -> {last['after']:,}) in {last['seconds']} s{how}"
        )
    spark = _sparkline(state)
    if spark:
        lines += ["occupancy per step (E eviction, C compaction, R reinjection, N notebook):", spark]
        lines += [f"  {MARKER_LETTERS.get(m['kind'], '*')} {m['label']}" for m in state.markers[-5:]]
    lines += [f"! {n['text']}" for n in state.notices]
    lines += [f"approval: {d['answer']} · {d['code']} · {d['at']}" for d in state.decisions]
    if state.suggestions:
        count = len(state.suggestions)
        lines.append("remember this 1 thing?" if count == 1 else f"remember these {count} things?")
        lines += [
            f"  [{s['id']}] {s['text']}" + (f" ({s['origin']})" if s.get("origin") else "") for s in state.suggestions
        ]
    if state.facts:
        lines.append(f"facts in force ({len(state.facts)}):")
        lines += [f"  - {f['text']} ({f['origin']})" for f in state.facts]
    return "\n".join(lines)


def text_report(session: PanelSource) -> str:
    return render_text(state_from_session(session))


def cost_line(usage: dict[str, Any]) -> str:
    """Input tokens sent this session, the part the provider's cache served, and what they bill as."""
    sent, cached = usage.get("tokens_sent") or 0, usage.get("tokens_cached") or 0
    return f"input sent {sent:,} · cached {cached:,} ({cached / sent:.0%}) · billed as {usage.get('billed_input', 0):,}"


def status_line(session: PanelSource) -> str:
    """One line for a cell footer or a terminal prompt: occupancy, what was reclaimed, what is pending."""
    usage = session.usage_snapshot()
    window = usage.get("context_window") or 0
    fraction = usage["occupancy"] / window if window else 0.0
    filled = min(10, round(fraction * 10))
    parts = [f"{'▰' * filled}{'▱' * (10 - filled)} {usage['occupancy']:,}/{window:,} ({fraction:.0%})"]
    if usage.get("reclaimed"):
        parts.append(f"reclaimed {usage['reclaimed']:,}")
    suggestions = suggestions_of(session)
    if suggestions:
        parts.append(f"{len(suggestions)} memory suggestion(s): %monad panel")
    return " · ".join(parts)
