"""Where the question "run this code?" goes, in a real kernel, driven the way each kind of frontend drives it.

- a client that answers input requests but draws no widgets (jupyter console, qtconsole, editors):
  the in-cell question is taken back and the input prompt is asked within about two seconds;
- a client that draws widgets (its view reports the question on screen): the answer comes from the cell;
- while the cell waits for an answer there, the kernel's last word to every page is "busy"; a page that
  drew questions and went away (reloaded, closed) gets no input prompt it cannot answer: its question
  ends in seconds, and the next ones of that cell run at once;
- an interrupt during either question ends it at once as a recorded skip, and the next cell goes on.

JupyterLab and Notebook 7 in a real browser are in ``test_cell_browser.py``; nbclient, which allows
no input, in ``test_export_notebook.py``.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from monad_notebook import events as ev
from monad_notebook.agent.tools.python import DECLINED
from monad_notebook.approval.gate import INTERRUPTED_QUESTION
from monad_notebook.approval.in_cell import BOUNDS
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.kernel_frontend import Frontend, Views, is_input, is_widget

pytestmark = pytest.mark.slow

HIDDEN = "print('RAN-' + 'NO')\u202e  # looks harmless"


def configure(workdir, server: FakeOpenAIServer, **python) -> None:
    agents = {
        "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 0}},
        "tools": {"python": {"approval": "ask", **python}},
    }
    (workdir / "agents.json").write_text(json.dumps(agents))


def approvals(workdir, session: str) -> list[dict]:
    from monad_notebook.store.lance import LanceStore

    store = LanceStore(workdir.parent / "monad-home" / "db")
    try:
        return [e.data for e in store.list_events(session, kind=ev.APPROVAL)]
    finally:
        store.close()


def decisions(workdir, session: str) -> list[tuple[str, str]]:
    return [(data["decision"], data["via"]) for data in approvals(workdir, session)]


class Statuses:
    """What another page of the same kernel hears of its status: every status message, in order."""

    def __init__(self, frontend: Frontend) -> None:
        self.client = frontend.km.client()
        self.client.start_channels(shell=False, stdin=False, hb=False, control=False)
        self.heard: list[tuple[str, str]] = []  # (state, the type of the request it is about)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.client.get_iopub_msg(timeout=0.2)
            except Exception:  # the queue was empty
                continue
            if msg["msg_type"] == "status":
                self.heard.append((msg["content"]["execution_state"], msg["parent_header"].get("msg_type", "")))

    def last(self) -> str:
        return self.heard[-1][0] if self.heard else ""

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.client.stop_channels()


def tool_results(server: FakeOpenAIServer) -> list[str]:
    last = server.chat_requests[-1]["messages"]
    return [m["content"] for m in last if m["role"] == "tool"]


def test_a_client_that_answers_input_but_draws_no_widgets_is_asked_at_the_prompt_within_two_seconds(isolated_env):
    replies = iter(["y", "n", "a"])
    with FakeOpenAIServer() as server:
        configure(isolated_env, server)
        server.queue(
            tool_call("python", {"code": "print('RAN-' + 'YES')"}),
            tool_call("python", {"code": HIDDEN}),
            tool_call("python", {"code": "print('RAN-' + 'ALWAYS')"}),
            tool_call("python", {"code": "print('RAN-' + 'AGAIN')"}),
            "All done.",
        )
        frontend = Frontend(isolated_env)
        try:
            frontend.run("%load_ext monad_notebook")
            prompts: list[str] = []

            def type_reply(msg: dict) -> None:
                prompts.append(msg["content"]["prompt"])
                frontend.kc.input(next(replies))

            started = time.monotonic()
            reply = frontend.run("%%monad --session console\nRun these.", stdin=type_reply)
            took = time.monotonic() - started
            waited = frontend.first(is_input) - frontend.first(is_widget)
            shown = frontend.text()
        finally:
            frontend.close()
        results = tool_results(server)
    assert reply["status"] == "ok" and took < 45, (reply, took)
    assert waited < 4, f"the input prompt came {waited:.1f} s after the in-cell question"
    assert len(prompts) == 3 and all("[y/N, a = allow python for this session]" in p for p in prompts)
    assert "RAN-YES" in shown and "RAN-ALWAYS" in shown and "RAN-AGAIN" in shown and "RAN-NO" not in shown
    assert "<U+202E>" in shown and "no answer in 10 min: not run" in shown  # shown before the prompt asks
    assert "it is asked at the input prompt" in shown
    assert "All done." in shown and "Markdown object" not in shown  # the answer is readable as plain text too
    assert results[1] == DECLINED
    assert decisions(isolated_env, "console") == [
        ("run", "prompt"),
        ("skip", "prompt"),
        ("allow for session", "prompt"),
        ("run", "session"),
    ]


def test_a_page_that_draws_widgets_answers_in_the_cell_hears_busy_meanwhile_and_once_gone_holds_nothing(isolated_env):
    """The page answers the first question; it is reloaded during the second, and the reloaded page never draws the
    third (it has not the running cell's outputs): no input prompt goes to the page that is gone, nothing waits."""
    with FakeOpenAIServer() as server:
        configure(isolated_env, server, approvalTimeoutSeconds=30)
        server.queue(
            tool_call("python", {"code": "print('RAN-' + 'CELL')"}),
            tool_call("python", {"code": "print('RAN-' + 'RELOADED')"}),
            tool_call("python", {"code": "print('RAN-' + 'NEVER')"}),
            "Done.",
        )
        frontend = Frontend(isolated_env)
        statuses = Statuses(frontend)
        try:
            frontend.run("%load_ext monad_notebook")
            prompts: list[dict] = []
            views, drawn, while_waiting = Views(), [], []

            def draw_answer_then_reload(msg: dict) -> None:
                opened = views.drawn(msg)
                if not opened or len(drawn) == 2:
                    return
                drawn.append(opened)
                comm_id, request_id = opened
                frontend.custom(comm_id, {"type": "shown", "id": request_id, "view": "v"})
                if len(drawn) == 2:
                    frontend.custom(comm_id, {"type": "gone", "id": request_id, "view": "v"})  # the page's pagehide
                    return
                time.sleep(2.5)  # longer than the wait for "shown": the question must still stand
                while_waiting.append((statuses.last(), list(statuses.heard)))
                frontend.custom(comm_id, {"type": "approval", "id": request_id, "run": True, "view": "v"})

            started = time.monotonic()
            reply = frontend.run(
                "%%monad --session drawn\nRun three.", stdin=prompts.append, on_iopub=draw_answer_then_reload
            )
            took = time.monotonic() - started
            time.sleep(0.5)
            after = statuses.last()
            shown = frontend.text()
        finally:
            statuses.close()
            frontend.close()
        results = tool_results(server)
    assert reply["status"] == "ok" and prompts == []  # an input prompt would go to the page that is gone
    assert "RAN-CELL" in shown and "approved: the code ran" in shown
    ((last, heard),) = while_waiting
    assert ("idle", "comm_msg") in heard  # the subshell's own idle, for the view's message...
    assert last == "busy", heard[-6:]  # ...then busy again: the cell still runs
    assert after == "idle"  # and idle once the cell ended
    assert "RAN-RELOADED" not in shown and "RAN-NEVER" not in shown
    assert took < 45, took  # not the 30 s limit of each of the two questions
    assert shown.count("the page showing this question went away") == 2
    stored = approvals(isolated_env, "drawn")
    assert [(a["decision"], a["via"], a.get("why", "")) for a in stored] == [
        ("run", "cell", ""),
        ("no answer", "cell", "page gone"),
        ("no answer", "cell", "page gone"),
    ]
    assert stored[1]["waited"] < BOUNDS.gone_grace + 2 and stored[2]["waited"] < 1  # the third is not even put
    assert results[1] == results[2] and results[1].startswith("not run")


@pytest.mark.parametrize("where", ["prompt", "cell"])
def test_an_interrupt_during_the_question_ends_it_as_a_skip_and_the_next_cell_goes_on(isolated_env, where):
    with FakeOpenAIServer() as server:
        configure(isolated_env, server)
        server.queue(tool_call("python", {"code": "print('RAN-' + 'NEVER')"}))
        server.queue("Still here.")
        frontend = Frontend(isolated_env)
        try:
            frontend.run("%load_ext monad_notebook")
            views = Views()

            def interrupt_at_prompt(msg: dict) -> None:
                frontend.km.interrupt_kernel()

            def interrupt_in_cell(msg: dict) -> None:
                opened = views.drawn(msg)
                if opened:
                    frontend.custom(opened[0], {"type": "shown", "id": opened[1]})
                    time.sleep(0.5)
                    frontend.km.interrupt_kernel()

            started = time.monotonic()
            if where == "prompt":
                frontend.run("%%monad --session stop\nRun it.", stdin=interrupt_at_prompt)
            else:
                frontend.run("%%monad --session stop\nRun it.", stdin=lambda msg: None, on_iopub=interrupt_in_cell)
            took = time.monotonic() - started
            interrupted = frontend.text()
            frontend.seen.clear()
            after = frontend.run("%%monad\nAre you there?")
            next_cell = frontend.text()
        finally:
            frontend.close()
        results = tool_results(server)
    assert took < 30 and "RAN-NEVER" not in interrupted
    assert "interrupted. The session is consistent" in interrupted
    if where == "cell":
        assert "interrupted: the code did not run" in interrupted
    assert after["status"] == "ok" and "Still here." in next_cell
    assert results == [INTERRUPTED_QUESTION]  # the call is answered: the model learns the code did not run
    assert decisions(isolated_env, "stop") == [("skip", "interrupt")]
