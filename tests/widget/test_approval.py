"""Approval clicks must reach a kernel whose main shell is busy running the cell that asked."""

from __future__ import annotations

import html
import re
import threading
import time

import pytest

from monad_notebook.approval.busy import PendingAnswer, route_to_subshell, supports_busy_routing
from monad_notebook.approval.gate import Answer
from monad_notebook.approval.in_cell import BOUNDS, Bounds, CellApproval, ask_in_cell, can_ask_in_cell
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
    asking = threading.Thread(target=lambda: answers.append(panel.approver(timeout=30)(code)))
    asking.start()
    deadline = time.monotonic() + 30
    while not any(u.get("approval") for u in panel.comm.updates()) and time.monotonic() < deadline:  # sent, not set
        time.sleep(0.01)
    shown = next(u["approval"] for u in panel.comm.updates() if u.get("approval"))
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


# --- the question in the running cell --------------------------------------------------------------------------------


class CellOutput:
    """The running cell's output area: the widget shown, then whatever replaced it.

    ``draws``: the frontend draws widgets, so its view reports the question on screen, as a browser's does.
    """

    def __init__(self, draws: bool = True) -> None:
        self.shown: list = []
        self.draws = draws

    def display(self, obj, display_id=False):
        self.shown.append(obj)
        outer = self

        class Handle:
            def update(self, replacement, raw=False):
                outer.shown[outer.shown.index(obj)] = replacement

        return Handle()

    def widget(self, timeout: float = 5) -> CellApproval:
        deadline = time.monotonic() + timeout
        while not any(isinstance(o, CellApproval) for o in self.shown) and time.monotonic() < deadline:
            time.sleep(0.01)
        widget = next(o for o in self.shown if isinstance(o, CellApproval))
        if self.draws:
            widget.comm.from_frontend({"type": "shown", "id": widget.request["id"]})
        return widget


def asking(
    code: str, output: CellOutput, *, mirrors=(), timeout: float = 5, bounds: Bounds = BOUNDS
) -> tuple[threading.Thread, list]:
    answers: list = []
    thread = threading.Thread(
        target=lambda: answers.append(
            ask_in_cell(code, display=output.display, mirrors=mirrors, timeout=timeout, bounds=bounds)
        )
    )
    thread.start()
    return thread, answers


def visible_text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


@pytest.mark.parametrize("form", HIDDEN_CODE, ids=lambda form: form.name)
def test_the_cell_question_shows_every_hidden_line_and_character_as_visible_text(comms, form: Hidden):
    output = CellOutput()
    thread, _ = asking(form.code, output)
    widget = output.widget()
    rows = re.findall(r'<div class="monad-line" data-n="\d+">(.*?)</div>', widget.request["html"])
    shown = [visible_text(row) for row in rows]
    widget.comm.from_frontend({"type": "approval", "id": widget.request["id"], "run": False})
    thread.join(5)
    assert invisible_characters("".join(shown) + widget.request["summary"]) == []
    assert len(shown) == len(form.code.splitlines())
    if form.row:
        assert any(row.startswith(form.row) for row in shown), shown
    if form.marker:
        assert any(form.marker in row for row in shown), shown
        assert f'<span class="h">{html.escape(form.marker)}</span>' in widget.request["html"]


@pytest.mark.parametrize(
    ("run", "always", "decision", "record"),
    [
        (True, False, "run", "approved: the code ran (answered in this cell)"),
        (False, False, "skip", "skipped: the code did not run (answered in this cell)"),
        (True, True, "allow for session", "python is allowed for the rest of this session"),
    ],
)
def test_an_answer_in_the_cell_is_returned_and_leaves_a_one_line_record(comms, run, always, decision, record):
    output = CellOutput()
    thread, answers = asking("df.describe()", output)
    widget = output.widget()
    assert widget.status == "waiting"
    widget.comm.from_frontend({"type": "approval", "id": widget.request["id"], "run": run, "always": always})
    thread.join(5)
    assert answers == [Answer(run, always=always, via="cell")] and answers[0].decision == decision
    assert widget.status == decision and widget.comm is None  # closed: the saved notebook keeps the record only
    (replacement,) = output.shown
    assert record in replacement["text/html"] and record.split(" (")[0] in replacement["text/plain"]


def test_a_new_question_waits_and_ignores_an_answer_meant_for_the_last_one(comms):
    first_output = CellOutput()
    thread, _ = asking("first()", first_output)
    first = first_output.widget()
    first.comm.from_frontend({"type": "approval", "id": first.request["id"], "run": True})
    thread.join(5)
    output = CellOutput()
    thread, answers = asking("second()", output, timeout=0.5)
    second = output.widget()
    assert second.status == "waiting" and second.request["id"] != first.request["id"]
    second.comm.from_frontend({"type": "approval", "id": first.request["id"], "run": True})
    thread.join(5)
    assert answers == [Answer(None, via="cell")]
    assert "no answer: the code did not run" in output.shown[0]["text/html"]


def test_an_open_panel_shows_the_cells_question_and_its_click_answers_it(comms, session):
    panel = MonadPanel(session)
    output = CellOutput()
    mirror = lambda pending, code: panel.show_approval(pending, code, timeout=5)  # noqa: E731
    thread, answers = asking("import os", output, mirrors=[mirror])
    widget = output.widget()
    deadline = time.monotonic() + 5
    while panel.approval.get("id") != widget.request["id"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert panel.approval["lines"] == ["import os"]
    panel.comm.from_frontend({"type": "approval", "id": widget.request["id"], "run": True, "always": True})
    thread.join(5)
    assert answers == [Answer(True, always=True, via="panel")]
    assert panel.approval == {} and "(answered in the panel)" in output.shown[0]["text/html"]


def test_the_cell_asks_only_where_someone_can_click_mid_cell():
    class Kernel:
        shell_channel_thread = object()
        _allow_stdin = True

    assert can_ask_in_cell(Kernel())
    Kernel._allow_stdin = False  # nbclient, papermill: nobody is there to answer
    assert not can_ask_in_cell(Kernel())
    assert not can_ask_in_cell(None)


def test_a_question_no_frontend_draws_is_taken_back_for_the_input_prompt(comms):
    output = CellOutput(draws=False)
    started = time.monotonic()
    thread, answers = asking("df.describe()", output, timeout=30, bounds=Bounds(shown_wait=0.3))
    widget = output.widget()
    thread.join(5)
    assert answers == [None] and time.monotonic() - started < 3  # the caller asks at the input prompt
    assert widget.comm is None  # the widget is gone, and the cell says where the question went
    assert "asked at the input prompt" in output.shown[0]["text/plain"]


def test_a_question_says_how_long_it_waits_and_what_no_answer_means(comms):
    output = CellOutput()
    thread, answers = asking("df.describe()", output, timeout=0.4)
    output.widget()
    thread.join(5)
    assert answers == [Answer(None, via="cell")]
    assert "no answer: the code did not run" in output.shown[0]["text/plain"]
    assert "waiting for an answer" in repr(CellApproval("x = 1", PendingAnswer(), timeout=600))
    assert CellApproval("x = 1", PendingAnswer(), timeout=600).request["limit"] == "10 min"


# --- a question is relied on only while a page has it -----------------------------------------------------------------

QUICK = Bounds(shown_wait=2, ping_every=0.2, lost_after=0.8, gone_grace=0.4)


def report(widget: CellApproval, kind: str, view: str, **more) -> None:
    widget.comm.from_frontend({"type": kind, "id": widget.request["id"], "view": view, **more})


def test_a_question_whose_page_went_away_ends_within_seconds_and_says_so(comms):
    output = CellOutput(draws=False)
    started = time.monotonic()
    thread, answers = asking("df.describe()", output, timeout=60, bounds=QUICK)
    widget = output.widget()
    report(widget, "shown", "tab-1")
    report(widget, "gone", "tab-1")  # the tab was closed, or reloaded
    thread.join(10)
    assert answers == [Answer(None, via="cell", why="page gone")] and time.monotonic() - started < 5
    assert "the page showing this question went away" in output.shown[0]["text/plain"]
    assert 'data-status="gone"' in output.shown[0]["text/html"]


def test_a_question_no_view_answers_any_more_ends_after_lost_after_and_one_a_view_answers_stands(comms):
    silent = CellOutput(draws=False)
    started = time.monotonic()
    thread, answers = asking("df.describe()", silent, timeout=60, bounds=QUICK)
    report(silent.widget(), "shown", "frozen")  # then never answers a ping: a frozen or vanished page
    thread.join(10)
    assert answers == [Answer(None, via="cell", why="page gone")] and time.monotonic() - started < 5

    alive = CellOutput(draws=False)
    thread, answers = asking("df.describe()", alive, timeout=60, bounds=QUICK)
    widget = alive.widget()
    report(widget, "shown", "tab")
    until = time.monotonic() + 3 * QUICK.lost_after
    while time.monotonic() < until:  # the view answers every ping, as an open page does
        pings = [m for m in widget.comm.custom() if m.get("type") == "ping"] if widget.comm else []
        if pings:
            report(widget, "here", "tab")
        time.sleep(0.05)
    assert thread.is_alive() and widget.status == "waiting"
    report(widget, "approval", "tab", run=True)
    thread.join(5)
    assert answers == [Answer(True, via="cell")]


def test_a_view_redrawn_on_its_page_keeps_the_question(comms):
    output = CellOutput(draws=False)
    thread, answers = asking("df.describe()", output, timeout=60, bounds=QUICK)
    widget = output.widget()
    report(widget, "shown", "old")
    report(widget, "gone", "old")  # the output was drawn again: the old view goes, a new one comes
    report(widget, "shown", "new")
    time.sleep(2 * QUICK.gone_grace)
    report(widget, "here", "new")
    assert thread.is_alive()
    report(widget, "approval", "new", run=False)
    thread.join(5)
    assert answers == [Answer(False, via="cell")]


def test_each_ending_of_a_question_has_its_own_look(comms):
    looks = {}
    for run in (True, False, None):
        output = CellOutput()
        thread, _ = asking("x = 1", output, timeout=0.5)
        widget = output.widget()
        if run is not None:
            widget.comm.from_frontend({"type": "approval", "id": widget.request["id"], "run": run})
        thread.join(5)
        looks[run] = re.search(r'class="monad-decided (monad-decided-\w+)"', output.shown[0]["text/html"]).group(1)
    assert len(set(looks.values())) == 3, looks
