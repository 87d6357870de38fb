"""Where the question "run this code?" goes, in a real kernel, driven the way each kind of frontend drives it.

- a client that answers input requests but draws no widgets (jupyter console, qtconsole, editors):
  the in-cell question is taken back and the input prompt is asked within about two seconds;
- a client that draws widgets (its view reports the question on screen): the answer comes from the cell;
- an interrupt during either question ends it at once as a recorded skip, and the next cell goes on.

JupyterLab and Notebook 7 in a real browser are in ``test_cell_browser.py``; nbclient, which allows
no input, in ``test_export_notebook.py``.
"""

from __future__ import annotations

import json
import time

import pytest

from monad_notebook import events as ev
from monad_notebook.agent.tools.python import DECLINED
from monad_notebook.approval.gate import INTERRUPTED_QUESTION
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.kernel_frontend import Frontend, Views, is_input, is_widget

pytestmark = pytest.mark.slow

HIDDEN = "print('RAN-' + 'NO')\u202e  # looks harmless"


def configure(workdir, server: FakeOpenAIServer) -> None:
    agents = {
        "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 0}},
        "tools": {"python": {"approval": "ask"}},
    }
    (workdir / "agents.json").write_text(json.dumps(agents))


def decisions(workdir, session: str) -> list[tuple[str, str]]:
    from monad_notebook.store.lance import LanceStore

    store = LanceStore(workdir.parent / "monad-home" / "db")
    try:
        return [(e.data["decision"], e.data["via"]) for e in store.list_events(session, kind=ev.APPROVAL)]
    finally:
        store.close()


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


def test_a_client_that_draws_widgets_is_answered_in_the_cell_and_never_asked_at_the_prompt(isolated_env):
    with FakeOpenAIServer() as server:
        configure(isolated_env, server)
        server.queue(tool_call("python", {"code": "print('RAN-' + 'CELL')"}), "Done.")
        frontend = Frontend(isolated_env)
        try:
            frontend.run("%load_ext monad_notebook")
            prompts: list[dict] = []
            views = Views()

            def draw_and_click(msg: dict) -> None:
                opened = views.drawn(msg)
                if opened:
                    comm_id, request_id = opened
                    frontend.custom(comm_id, {"type": "shown", "id": request_id})
                    time.sleep(2.5)  # longer than the wait for "shown": the question must still stand
                    frontend.custom(comm_id, {"type": "approval", "id": request_id, "run": True})

            reply = frontend.run("%%monad --session drawn\nRun it.", stdin=prompts.append, on_iopub=draw_and_click)
            shown = frontend.text()
        finally:
            frontend.close()
    assert reply["status"] == "ok" and prompts == []
    assert "RAN-CELL" in shown and "approved: the code ran" in shown
    assert decisions(isolated_env, "drawn") == [("run", "cell")]


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
