"""The plain-text twin of the panel, and the panel on a real Session (scripted model, real LanceDB)."""

from __future__ import annotations

import pytest

from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.events import Event
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel, tool_call
from monad_notebook.widget import status_line, text_report
from monad_notebook.widget.panel import MonadPanel
from monad_notebook.widget.report import render_text
from monad_notebook.widget.state import PanelState


@pytest.fixture
def store(tmp_path):
    store = LanceStore(tmp_path / "db")
    yield store
    store.close()


def real_session(store, answers, window=4000):
    config = Config.model_validate(
        {"models": {"main": {"model": "scripted", "contextWindow": window}}, "tools": {"python": {"approval": "auto"}}}
    )
    return Session("report", config=config, store=store, model=ScriptedModel(answers))


def test_text_report_of_a_real_session_has_the_window_bar_and_thresholds(store):
    session = real_session(store, [tool_call("python", {"code": "print('x' * 400)"}), "done"])
    session.ask("print a long line")
    report = text_report(session)
    usage = session.usage_snapshot()
    assert f"window {usage['occupancy']:,} / 4,000 tokens" in report
    assert "soft 75%" in report and "hard 90%" in report
    assert "[" in report and "|" in report
    assert "occupancy per step" in report  # stored context.usage events replayed as the timeline
    assert "context: system" in report and "tool_result" in report


def test_render_text_shows_reclaimed_compactions_markers_notices_and_suggestions():
    state = PanelState("eda")
    state.set_thresholds({"soft": 0.75, "hard": 0.9})
    usage = {"occupancy": 2400, "context_window": 3000, "fraction": 0.8, "exact": True, "reclaimed": 900}
    state.apply(Event(ev.USAGE, "eda", usage), turn=1, step=1)
    state.apply(Event(ev.EVICTED, "eda", {"reclaimed": 900, "count": 2}))
    state.apply(Event(ev.COMPACTION_STARTED, "eda", {"reason": "soft", "tokens_before": 2400}))
    state.apply(Event(ev.USAGE, "eda", {**usage, "occupancy": 1500}), turn=1, step=2)
    state.apply(Event(ev.HANDOFF_SUGGESTED, "eda", {"message": "hand off now"}))
    state.apply(Event(ev.MEMORY_SUGGESTION, "eda", {"items": [{"id": "a1", "text": "fiscal year starts in April"}]}))
    text = render_text(state)
    assert "window 1,500 / 3,000 tokens (50%, exact)" in text
    assert "reclaimed 900 tokens" in text
    assert "compaction in progress (soft)" in text
    lines = text.splitlines()
    assert (
        lines[lines.index("occupancy per step (E eviction, C compaction, R reinjection, N notebook):") + 2].strip()
        == "E"
    )
    assert "! hand off now" in text
    assert "remember this 1 thing?" in text and "[a1] fiscal year starts in April" in text
    state.apply(Event(ev.COMPACTION_FINISHED, "eda", {"tokens_before": 2400, "tokens_after": 700, "seconds": 0.5}))
    assert "last compaction: \u22121,700 tokens (messages only: 2,400 -> 700) in 0.5 s" in render_text(state)


def test_panel_follows_a_real_turn_step_by_step(store, comms):
    session = real_session(store, [tool_call("python", {"code": "y = 2"}), "y is 2"])
    panel = MonadPanel(session)
    panel.comm.from_frontend({"type": "inspect", "open": True})
    session.ask("set y")
    assert [(p["turn"], p["step"]) for p in panel.timeline] == [(1, 1), (1, 2)]
    assert panel.usage["occupancy"] == session.usage_snapshot()["occupancy"]
    assert {c["kind"] for c in panel.composition} >= {"system", "tools", "message"}
    assert panel.inspected["turn"] == 1 and panel.inspected["step"] == 2
    assert panel.activity.startswith("idle · last turn 1: 2 step(s)")
    assert any("timeline_tail" in state for state in panel.comm.updates())


def test_panel_opened_mid_session_replays_the_timeline_but_not_old_errors(store, comms):
    session = real_session(store, ["first", "second"])
    session.ask("one")
    session.emit(ev.ERROR, message="an old warning")
    session.ask("two")
    panel = MonadPanel(session)
    assert len(panel.timeline) == 2
    assert panel.notices == []


def test_status_line_is_one_line_with_occupancy_reclaimed_and_pending_suggestions(store):
    session = real_session(store, ["ok"], window=4000)
    session.ask("hi")
    session.cascade.meter.occupancy.reclaim(1234)
    session.memory.suggest(session.name, ["The fiscal year starts in April"])
    line = status_line(session)
    occupancy = session.usage_snapshot()["occupancy"]
    assert "\n" not in line
    assert f"{occupancy:,}/4,000" in line and "reclaimed 1,234" in line and "1 memory suggestion(s)" in line
