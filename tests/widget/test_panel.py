"""The panel's kernel side: events become trait updates on the comm; frontend clicks are handled here."""

from __future__ import annotations

import threading
import time

from monad_notebook import events as ev
from monad_notebook.widget.panel import HERE, MonadPanel


def last_value(comm, name):
    values = [state[name] for state in comm.updates() if name in state]
    assert values, f"no update of {name!r} was sent"
    return values[-1]


def test_opens_with_the_sessions_numbers_and_ships_its_own_js_and_css(comms, session):
    session.occupancy = 1200
    panel = MonadPanel(session)
    (opened,) = [m for m in panel.comm.sent if m["msg_type"] == "comm_open"]
    state = opened["data"]["state"]
    assert state["usage"]["occupancy"] == 1200 and state["usage"]["context_window"] == 3000
    assert state["thresholds"] == {"soft": 0.6, "hard": 0.8, "evict": 0.5}
    assert state["_esm"] == (HERE / "panel.js").read_text(encoding="utf-8")  # the module built from js/panel/
    assert "function render(" in state["_esm"] and "as default };" in state["_esm"]
    assert ".monad-panel" in state["_css"]


def test_each_step_sends_usage_an_incremental_point_and_the_composition(comms, session):
    panel = MonadPanel(session)
    session.turn = 1
    session.run_step(900)
    session.run_step(1500)
    assert last_value(panel.comm, "usage")["occupancy"] == 1500
    tail = last_value(panel.comm, "timeline_tail")
    assert [(p["turn"], p["step"], p["occ"]) for p in tail] == [(1, 1, 900), (1, 2, 1500)]
    assert last_value(panel.comm, "composition") == [
        {"kind": "system", "tokens": 100},
        {"kind": "message", "tokens": 1400},
    ]
    assert not any("inspected" in state or "records" in state for state in panel.comm.updates())


def test_opening_the_inspector_sends_the_step_list_and_then_follows_each_step(comms, session):
    panel = MonadPanel(session)
    session.run_step(900)
    panel.comm.from_frontend({"type": "inspect", "open": True, "turn": None, "step": None})
    assert [r["step"] for r in last_value(panel.comm, "records")] == [1]
    assert last_value(panel.comm, "inspected")["step"] == 1
    session.run_step(1000)
    assert last_value(panel.comm, "inspected")["step"] == 2
    panel.comm.from_frontend({"type": "inspect", "open": False})
    session.run_step(1100)
    assert last_value(panel.comm, "inspected")["step"] == 2


def test_timeline_payload_stays_capped_in_a_long_session(comms, session):
    panel = MonadPanel(session)
    panel.comm.from_frontend({"type": "inspect", "open": True})
    for step in range(400):
        session.run_step(200 + step)
    assert len(panel.timeline) <= 120 and panel.timeline[-1]["occ"] == 599
    assert [p["occ"] for p in panel.timeline] == list(range(599 - len(panel.timeline) + 1, 600))
    assert len(last_value(panel.comm, "records")) == 50
    step_updates = [state for state in panel.comm.updates() if "usage" in state][-20:]
    assert all(len(state.get("timeline_tail", [])) <= 20 for state in step_updates)
    assert sum("timeline_base" in state for state in step_updates) == 1  # the whole history: once per 20 steps


def test_eviction_is_a_marker_on_the_next_step_and_never_a_toast(comms, session):
    panel = MonadPanel(session)
    session.run_step(2000)
    session.emit(ev.EVICTED, reclaimed=700, count=2, tool_call_ids=["a", "b"])
    session.reclaimed = 700
    session.run_step(1300)
    (marker,) = last_value(panel.comm, "markers")
    assert marker["kind"] == "evicted" and marker["i"] == panel.timeline[-1]["i"]
    assert "700" in marker["label"]
    assert last_value(panel.comm, "usage")["reclaimed"] == 700
    assert panel.notices == []


def test_handoff_nudge_is_a_notice_the_user_can_dismiss(comms, session):
    panel = MonadPanel(session)
    session.emit(ev.HANDOFF_SUGGESTED, message="Start a fresh session and carry the summary over.")
    (notice,) = last_value(panel.comm, "notices")
    assert notice["kind"] == "handoff" and "fresh session" in notice["text"]
    panel.comm.from_frontend({"type": "notice.dismiss", "id": notice["id"]})
    assert panel.notices == [] and last_value(panel.comm, "notices") == []


def test_background_compaction_shows_progress_then_before_and_after(comms, session):
    panel = MonadPanel(session)
    worker = threading.Thread(
        target=lambda: session.emit(ev.COMPACTION_STARTED, reason="soft", messages=30, tokens_before=2400)
    )
    worker.start()
    worker.join()
    assert last_value(panel.comm, "compaction")["running"] is True
    worker = threading.Thread(
        target=lambda: session.emit(
            ev.COMPACTION_FINISHED,
            tokens_before=2400,
            tokens_after=800,
            used_fallback=True,
            reflected=False,
            replaced="it copies the transcript instead of summarizing it",
            seconds=1.5,
        )
    )
    worker.start()
    worker.join()
    compaction = last_value(panel.comm, "compaction")
    assert compaction["running"] is False
    assert compaction["last"] == {
        "before": 2400,
        "after": 800,
        "seconds": 1.5,
        "fallback": True,
        "replaced": "it copies the transcript instead of summarizing it",
        "reflected": False,
        "turn": 0,
        "step": 0,
    }
    (marker,) = panel.markers
    assert marker["tag"] == "\u22121,600" and "messages only: 2,400 → 800" in marker["label"]


def test_events_from_many_threads_all_land(comms, session):
    panel = MonadPanel(session)

    def burst():
        for _ in range(50):
            session.emit(ev.REINJECTED, hits=[{"id": "x"}])

    workers = [threading.Thread(target=burst) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(panel.markers) == 60  # capped, and no update was lost to a race
    assert last_value(panel.comm, "markers") == panel.markers


def test_save_and_dismiss_clicks_reach_the_memory_service(comms, session):
    session.memory.pending = [{"id": "f1", "text": "fiscal year starts in April"}, {"id": "f2", "text": "use EUR"}]
    panel = MonadPanel(session)
    assert [s["id"] for s in panel.suggestions] == ["f1", "f2"]
    panel.comm.from_frontend({"type": "memory.save", "id": "f1"})
    assert session.memory.saved == [("f1", None)]
    assert [s["id"] for s in last_value(panel.comm, "suggestions")] == ["f2"]
    assert panel.receipt["action"] == "saved" and panel.receipt["text"] == "fiscal year starts in April"
    assert panel.notices == []  # a receipt in place, never a toast that pushes the panel down
    panel.comm.from_frontend({"type": "memory.dismiss", "id": "f2"})
    assert session.memory.dismissed == ["f2"] and last_value(panel.comm, "suggestions") == []


def test_save_all_saves_every_suggestion_and_reports_refusals(comms, session):
    session.memory.refuse = {"s2": "looks like a secret"}
    panel = MonadPanel(session, memory_scope="agent:eda")
    items = [{"id": "s1", "text": "a"}, {"id": "s2", "text": "b"}]
    session.memory.pending = list(items)  # the service persists them, then tells its listeners
    session.emit(ev.MEMORY_SUGGESTION, items=items)
    assert len(last_value(panel.comm, "suggestions")) == 2
    panel.comm.from_frontend({"type": "memory.save", "all": True})
    assert session.memory.saved == [("s1", "agent:eda")]
    assert panel.suggestions == []
    assert [n["text"] for n in panel.notices] == ["not saved “b”: looks like a secret"]


def test_save_without_a_memory_service_says_so(comms, session):
    session.memory = None
    panel = MonadPanel(session)
    session.emit(ev.MEMORY_SUGGESTION, items=[{"id": "s1", "text": "a"}])
    panel.comm.from_frontend({"type": "memory.save", "id": "s1"})
    assert "no memory service" in panel.notices[-1]["text"]


def test_inspect_pins_an_older_step_and_latest_follows_again(comms, session):
    panel = MonadPanel(session)
    session.turn = 1
    placeholder = {"kind": "placeholder", "role": "tool", "tokens": 12, "text": "[cleared: read_tool_output('c1')]"}
    session.run_step(500, [{"kind": "summary", "role": "user", "tokens": 500, "text": "x" * 1000}])
    session.run_step(600, [placeholder])
    panel.comm.from_frontend({"type": "inspect", "open": True, "turn": 1, "step": 1})
    inspected = last_value(panel.comm, "inspected")
    assert inspected["pinned"] and inspected["step"] == 1
    (part,) = inspected["parts"]
    assert part["injected"] and len(part["preview"]) == 240 and part["chars"] == 1000
    session.run_step(700)
    assert panel.inspected["step"] == 1  # pinned: a new step does not steal the inspector
    panel.comm.from_frontend({"type": "inspect", "open": True, "turn": None, "step": None})
    assert panel.inspected["step"] == 3 and not panel.inspected["pinned"]


def test_run_click_approves_the_code_the_panel_shows(comms, session):
    panel = MonadPanel(session)
    approve = panel.approver(timeout=5)
    answers = []
    asking = threading.Thread(target=lambda: answers.append(approve("df.describe()")))
    asking.start()
    deadline = time.monotonic() + 5
    while not panel.approval and time.monotonic() < deadline:
        time.sleep(0.01)
    assert panel.approval["code"] == "df.describe()"
    panel.comm.from_frontend({"type": "approval", "id": "not-this-one", "run": True})
    panel.comm.from_frontend({"type": "approval", "id": panel.approval["id"], "run": True})
    asking.join(5)
    assert answers == [True]
    assert last_value(panel.comm, "approval") == {}


def test_skip_click_declines(comms, session):
    panel = MonadPanel(session)
    answers = []
    asking = threading.Thread(target=lambda: answers.append(panel.approver(timeout=5)("rm -rf data")))
    asking.start()
    while not panel.approval:
        time.sleep(0.01)
    panel.comm.from_frontend({"type": "approval", "id": panel.approval["id"], "run": False})
    asking.join(5)
    assert answers == [False]


def test_nobody_answering_times_out_with_none(comms, session):
    panel = MonadPanel(session)
    started = time.monotonic()
    assert panel.approver(timeout=0.3)("print(1)") is None
    assert 0.25 < time.monotonic() - started < 2
    assert panel.approval == {}


def test_kernel_that_cannot_deliver_clicks_mid_cell_uses_the_fallback(comms, session):
    panel = MonadPanel(session)
    panel.answers_while_busy = False
    asked = []
    approve = panel.approver(timeout=5, fallback=lambda code: asked.append(code) or True)
    assert approve("x = 1") is True and asked == ["x = 1"]
    assert panel.approver(timeout=5)("x = 1") is None


def test_for_session_reuses_one_panel_and_close_stops_listening(comms, session):
    panel = MonadPanel.for_session(session)
    assert MonadPanel.for_session(session) is panel
    panel.close()
    session.run_step(1000)
    assert panel.usage.get("occupancy", 0) == 0
    assert MonadPanel.for_session(session) is not panel


def test_unknown_or_malformed_frontend_messages_are_ignored(comms, session):
    panel = MonadPanel(session)
    panel.comm.from_frontend({"type": "no.such.thing"})
    panel.comm.from_frontend({"id": "x"})
    panel.comm.handle_msg({"content": {"data": {"method": "custom", "content": "text"}}, "buffers": []})
    assert panel.notices == []
