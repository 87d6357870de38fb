"""Approval clicks must reach a kernel whose main shell is busy running the cell that asked."""

from __future__ import annotations

import threading
import time

import pytest

from monad_notebook.widget.approval import PendingAnswer, route_to_subshell, supports_busy_routing
from monad_notebook.widget.panel import MonadPanel, _busy_safe
from tests.hostile import HIDDEN_CODE, Hidden, invisible_characters


class FakeComm:
    def _reply_subshell_for(self, data, default):
        return "where-the-last-reply-went"


def custom(content):
    return {"method": "custom", "content": content}


def test_only_approval_inspect_and_notice_messages_go_to_the_panel_subshell():
    comm = FakeComm()
    route_to_subshell(comm, _busy_safe, "panel-subshell")
    assert comm._reply_subshell_for(custom({"type": "approval", "id": "a", "run": True}), None) == "panel-subshell"
    assert comm._reply_subshell_for(custom({"type": "inspect", "open": True}), None) == "panel-subshell"
    assert comm._reply_subshell_for(custom({"type": "memory.save", "id": "f"}), None) == "where-the-last-reply-went"
    assert comm._reply_subshell_for({"method": "update", "state": {}}, None) == "where-the-last-reply-went"
    assert comm._reply_subshell_for(None, "x") == "where-the-last-reply-went"


def test_no_kernel_means_no_busy_routing():
    assert supports_busy_routing(None) is False
    assert supports_busy_routing(object()) is False


def test_pending_answer_times_out_to_none_and_keeps_the_first_click():
    pending = PendingAnswer()
    assert pending.wait(0.05) is None
    pending.resolve(False)
    assert pending.wait(1) is False


@pytest.mark.slow
def test_run_click_reaches_a_real_kernel_while_the_asking_cell_is_still_running(isolated_env):
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(isolated_env))
    try:
        setup = kc.execute_interactive(
            "from monad_notebook.config import Config\n"
            "from monad_notebook.session import Session\n"
            "from monad_notebook.widget import MonadPanel\n"
            "session = Session('k', config=Config.model_validate({'models': {'main': {'model': 'scripted-demo'}}}))\n"
            "panel = MonadPanel.for_session(session)\n",
            timeout=60,
        )
        assert setup["content"]["status"] == "ok"
        kc.execute("print('answer:', panel.approver(timeout=20)('print(1)'))")
        comm_id, asked_at, printed = None, None, ""
        deadline = time.monotonic() + 30
        while "answer:" not in printed and time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=25)
            content = msg["content"]
            if msg["msg_type"] == "comm_msg" and content["data"].get("state", {}).get("approval", {}).get("id"):
                comm_id, approval = content["comm_id"], content["data"]["state"]["approval"]
                asked_at = time.monotonic()
                answer = {"method": "custom", "content": {"type": "approval", "id": approval["id"], "run": True}}
                kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": comm_id, "data": answer}))
            elif msg["msg_type"] == "stream":
                printed += content["text"]
        assert comm_id is not None, "the panel never showed the code"
        assert "answer: True" in printed
        assert time.monotonic() - asked_at < 5  # answered by the click, not by the 20 s timeout
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def shown_for_approval(panel: MonadPanel, code: str) -> dict:
    """What the frontend receives while ``code`` waits for approval; answered Skip afterwards."""
    answers = []
    asking = threading.Thread(target=lambda: answers.append(panel.approver(timeout=5)(code)))
    asking.start()
    deadline = time.monotonic() + 10
    sent: list[dict] = []
    while not sent and time.monotonic() < deadline:  # the trait is set a moment before its update is sent
        sent = [u["approval"] for u in panel.comm.updates() if u.get("approval")]
        time.sleep(0.01)
    shown = sent[0]
    panel.comm.from_frontend({"type": "approval", "id": shown["id"], "run": False})
    asking.join(5)
    assert answers == [False]
    return shown


@pytest.mark.parametrize("form", HIDDEN_CODE, ids=lambda form: form.name)
def test_the_panel_receives_every_hidden_line_and_character_as_visible_text(comms, session, form: Hidden):
    shown = shown_for_approval(MonadPanel(session), form.code)
    assert shown["code"] == form.code
    assert invisible_characters("".join(shown["lines"]) + shown["summary"]) == []
    if form.row:
        assert any(line.startswith(form.row) for line in shown["lines"]), shown["lines"]
    if form.marker:
        assert any(form.marker in line for line in shown["lines"]), shown["lines"]
    assert len(shown["lines"]) == len(form.code.splitlines())
    assert shown["summary"].startswith(f"{len(form.code.splitlines())} line")
