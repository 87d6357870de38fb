"""The panel lists the workspace record: each name and file with what made it, and what a restart lost."""

from __future__ import annotations

from monad_notebook.events import EventLog
from monad_notebook.redaction.redactor import Redactor
from monad_notebook.testing import MemoryStore
from monad_notebook.widget.panel import MonadPanel
from monad_notebook.workspace.record import WorkspaceRecord


def last_value(comm, name):
    values = [state[name] for state in comm.updates() if name in state]
    assert values, f"no update of {name!r} was sent"
    return values[-1]


def test_the_panel_lists_names_files_and_lost_names_with_what_made_each(comms, session, tmp_path):
    store = MemoryStore()
    store.create_session("eda")
    before = WorkspaceRecord(store.workspace, "eda", {"__name__": "__main__"}, root=tmp_path)
    before.reconfigure(True, Redactor())
    before.namespace["model"] = object()
    before.turn = 1
    before.take("call_fit")
    before.save()

    namespace = {"__name__": "__main__"}  # a new kernel: the model is gone
    session.workspace = WorkspaceRecord(store.workspace, "eda", namespace, root=tmp_path)
    session.workspace.reconfigure(True, Redactor())
    panel = MonadPanel(session)
    (opened,) = [m for m in panel.comm.sent if m["msg_type"] == "comm_open"]
    assert opened["data"]["state"]["workspace"] == [
        {"kind": "name", "key": "model", "about": "object", "origin": "made by call_fit, turn 1", "state": "lost"}
    ]

    namespace["totals"] = [1, 2, 3]
    (tmp_path / "report.csv").write_text("a,b\n")
    session.workspace.turn = 2
    session.workspace.take("call_sum")
    session.run_step(1000)
    rows = {row["key"]: row for row in last_value(panel.comm, "workspace")}
    assert rows["totals"] == {
        "kind": "name", "key": "totals", "about": "list len 3", "origin": "made by call_sum, turn 2", "state": "live"
    }  # fmt: skip
    assert rows["report.csv"]["origin"] == "made by call_sum, turn 2"
    assert rows["model"]["state"] == "lost"


def test_a_users_cell_is_listed_at_once_not_at_the_next_step(comms, session, ip, tmp_path):
    store = MemoryStore()
    store.create_session("eda")
    session.workspace = WorkspaceRecord(
        store.workspace,
        "eda",
        ip.user_ns,
        ip,
        root=tmp_path,
        notify=EventLog("eda", session.events, store.append_events).emit,
    )
    session.workspace.reconfigure(True, Redactor())
    panel = MonadPanel(session)
    ip.events.register("post_run_cell", session.workspace.after_cell)
    try:
        ip.run_cell("cell_made_totals = [1, 2, 3]", store_history=True)
        count = ip.execution_count - 1
        rows = {row["key"]: row for row in last_value(panel.comm, "workspace")}
        assert rows["cell_made_totals"]["origin"] == f"made by cell {count}, turn 0"
        sent = len(panel.comm.updates())
        ip.run_cell("print('nothing new')", store_history=True)
        assert len(panel.comm.updates()) == sent  # a cell that changed nothing sends nothing
        assert store.list_events("eda") == []  # told to the panel, never stored
    finally:
        ip.events.unregister("post_run_cell", session.workspace.after_cell)
        ip.user_ns.pop("cell_made_totals", None)
