"""An answer cut off by the output token limit (finish_reason "length") says so: cell, reply and store."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.agent.loop import EMPTY_NOTE, SERVER_CUT_NOTE, TRUNCATED_NOTE
from monad_notebook.config import Config
from monad_notebook.provider import OpenAIChatModel
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, text, tool_call
from tests.conversation import conversation

CUT = "The three regions that grew fastest were North, with 12%, and"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def on(url: str) -> Config:
    return Config.model_validate(
        {
            "models": {"main": {"model": "m", "baseUrl": url, "maxRetries": 0, "maxOutputTokens": 16}},
            "tools": {"python": {"approval": "auto"}},
        }
    )


def test_the_provider_reports_a_streamed_answer_cut_off_by_the_limit(server):
    server.queue(text(CUT, finish_reason="length"), "complete")
    model = OpenAIChatModel("m", base_url=server.base_url)
    cut = model.complete([{"role": "user", "content": "hi"}], [])
    whole = model.complete([{"role": "user", "content": "hi"}], [])
    assert (cut.content, cut.finish_reason) == (CUT, "length")
    assert whole.finish_reason == "stop"


def test_a_cut_off_answer_says_so_in_the_reply_the_store_and_the_next_request(server, store):
    server.queue(text(CUT, finish_reason="length"), "Then South, with 9%.")
    session = Session("cut", config=on(server.base_url), store=store)
    reply = session.ask("Which regions grew fastest?")
    assert reply.truncated and reply.text == f"{CUT}\n\n{TRUNCATED_NOTE}"
    stored = [m.content for m in store.load_messages("cut") if m.role == "assistant"]
    assert stored == [f"{CUT}\n\n{TRUNCATED_NOTE}"]
    (event,) = store.list_events("cut", kind=ev.ANSWER_TRUNCATED)
    assert event.data["turn"] == 1 and event.data["tool_calls"] == 0
    follow_up = session.ask("go on")
    assert not follow_up.truncated and follow_up.text == "Then South, with 9%."
    assert server.chat_requests[1]["messages"][-2] == {"role": "assistant", "content": reply.text}


def test_a_complete_answer_carries_no_note(server, store):
    server.queue("All done.")
    reply = Session("whole", config=on(server.base_url), store=store).ask("hi")
    assert not reply.truncated and reply.text == "All done."
    assert store.list_events("whole", kind=ev.ANSWER_TRUNCATED) == []


def test_a_step_cut_off_before_its_tool_call_is_noted_for_the_model(store):
    cut_step = tool_call("python", {"code": "x = 1"})
    cut_step.content, cut_step.finish_reason = "Let me compute", "length"
    model = ScriptedModel([cut_step, "x is 1"])
    session = Session("step", config=on("http://127.0.0.1:9/v1"), store=store, model=model, namespace={})
    reply = session.ask("compute")
    assert not reply.truncated
    assert (
        conversation(model.calls[1].messages)[-2]["content"] == f"Let me compute\n\n{SERVER_CUT_NOTE}"
    )  # no limit of ours set
    (event,) = store.list_events("step", kind=ev.ANSWER_TRUNCATED)
    assert event.data["tool_calls"] == 1


def test_the_cell_shows_the_note_and_the_footer_says_cut_off(ip, isolated_env, server, capsys):
    config = {"models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}}}
    (isolated_env / "agents.json").write_text(json.dumps(config))
    ip.run_line_magic("reload_ext", "monad_notebook")
    server.queue(text(CUT, finish_reason="length"))
    ip.run_cell_magic("monad", "--session cellcut", "Which regions grew fastest?")
    out = capsys.readouterr().out
    assert CUT in out and SERVER_CUT_NOTE in out  # no models.main.maxOutputTokens: the server stopped it
    assert TRUNCATED_NOTE not in out
    (footer,) = [line for line in out.splitlines() if line.startswith("answer cut off (see its last line) · ")]
    assert "session cellcut" in footer


def test_an_empty_answer_says_so_in_the_cell_and_the_reply(ip, isolated_env, server, capsys):
    config = {"models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}}}
    (isolated_env / "agents.json").write_text(json.dumps(config))
    ip.run_line_magic("reload_ext", "monad_notebook")
    server.queue("", "Here it is.")
    ip.run_cell_magic("monad", "--session empty", "Which regions grew fastest?")
    out = capsys.readouterr().out
    assert EMPTY_NOTE in out
    ip.run_cell_magic("monad", "--session empty", "again")
    assert EMPTY_NOTE not in capsys.readouterr().out
