"""The panel's history on a real Session (scripted model, real LanceDB): complete when opened after the
fact and after a restart, placed at the right turn and step, and forgotten by a reset."""

from __future__ import annotations

import pytest

from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel, tool_call
from monad_notebook.widget import text_report
from monad_notebook.widget.panel import MonadPanel

WINDOW = 6000
CONFIG = {
    "models": {"main": {"model": "scripted", "contextWindow": WINDOW}},
    "tools": {"python": {"approval": "auto"}},
    "context": {
        "eviction": {"atFraction": 0.3, "keepRecentRounds": 1, "clearAtLeast": 0, "minResultTokens": 10},
        "summarize": {"enabled": False},
    },
}


@pytest.fixture
def store(tmp_path):
    store = LanceStore(tmp_path / "db")
    yield store
    store.close()


def session_on(store: LanceStore, answers: list, name: str = "history") -> Session:
    return Session(name, config=Config.model_validate(CONFIG), store=store, model=ScriptedModel(answers))


def reads(turns: int) -> list:
    """Each turn: one python call printing a long line, then an answer."""
    answers: list = []
    for i in range(turns):
        answers += [tool_call("python", {"code": f"print('row {i} ' * 300)"}, id=f"c{i}"), f"read {i}"]
    return answers


def ask_all(session: Session, turns: int) -> None:
    for i in range(turns):
        session.ask(f"read part {i}")


def test_a_panel_opened_after_the_fact_shows_each_eviction_at_its_turn_and_step_with_its_amount(store, comms):
    session = session_on(store, reads(4))
    live = MonadPanel(session)
    ask_all(session, 4)

    late = MonadPanel(session)
    evictions = [e for e in store.list_events("history", kind=ev.EVICTED)]
    assert evictions, "the scenario must evict"
    assert [m for m in late.markers if m["kind"] == "evicted"] == [m for m in live.markers if m["kind"] == "evicted"]
    points = {(p["turn"], p["step"]): p for p in late.timeline}
    assert sorted(points) == [(t, s) for t in range(1, 5) for s in (1, 2)]
    for event, marker in zip(evictions, [m for m in late.markers if m["kind"] == "evicted"], strict=True):
        turn, step = event.data["turn"], event.data["step"]
        assert (marker["turn"], marker["step"]) == (turn, step) and turn > 0 and step > 0
        assert marker["tag"] == f"\u2212{event.data['reclaimed']:,}"
        assert marker["i"] == points[(turn, step)]["i"]  # drawn on the step whose prompt it shaped
        assert points[(turn, step)]["before"] > points[(turn, step)]["occ"]  # the window held more before it
    assert sum(e.data["reclaimed"] for e in evictions) == session.usage_snapshot()["reclaimed"]


def test_the_history_is_the_same_after_a_restart(store, comms):
    session = session_on(store, reads(3))
    ask_all(session, 3)
    before = MonadPanel(session)
    session.close()

    restarted = MonadPanel(session_on(store, []))
    assert restarted.timeline == before.timeline
    assert restarted.markers == before.markers and any(m["kind"] == "evicted" for m in restarted.markers)
    assert "E turn" in text_report(session_on(store, []))  # the terminal report lists them too


def test_each_step_stores_what_was_sent_and_what_the_window_held_before_the_cascade(store):
    session = session_on(store, reads(3))
    ask_all(session, 3)
    usage = store.list_events("history", kind=ev.USAGE)
    assert [(e.data["turn"], e.data["step"]) for e in usage] == [(t, s) for t in (1, 2, 3) for s in (1, 2)]
    assert all(e.data["before"] >= e.data["occupancy"] > 0 for e in usage)
    evicted_at = {(e.data["turn"], e.data["step"]) for e in store.list_events("history", kind=ev.EVICTED)}
    shrunk = {(e.data["turn"], e.data["step"]) for e in usage if e.data["before"] > e.data["occupancy"]}
    assert evicted_at and evicted_at <= shrunk


def test_reset_clears_the_open_panel_and_a_new_one_replays_only_what_came_after(store, comms):
    session = session_on(store, [*reads(2), tool_call("python", {"code": "print(1)"}, id="n1"), "one"])
    panel = MonadPanel(session)
    panel.comm.from_frontend({"type": "inspect", "open": True})
    ask_all(session, 2)
    assert len(panel.timeline) == 4

    session.reset()
    assert panel.timeline == [] and panel.markers == [] and panel.records == []
    session.ask("again")

    for view in (panel, MonadPanel(session)):
        assert [(p["turn"], p["step"]) for p in view.timeline] == [(1, 1), (1, 2)]
        assert view.markers == []
    assert [(r["turn"], r["step"]) for r in panel.records] == [(1, 1), (1, 2)]  # no duplicate steps


def test_the_inspector_shows_the_calls_of_an_assistant_message_that_only_called_tools(store, comms):
    session = session_on(store, [tool_call("python", {"code": "df.describe()"}, id="k1"), "done"])
    panel = MonadPanel(session)
    panel.comm.from_frontend({"type": "inspect", "open": True})
    session.ask("describe it")
    (assistant,) = [p for p in panel.inspected["parts"] if p["role"] == "assistant"]
    assert assistant["preview"] == ""
    assert assistant["calls"] == [{"name": "python", "arguments": '{"code": "df.describe()"}'}]
