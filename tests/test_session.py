"""A Session end to end: scripted model, real tools, real LanceDB in a temp dir."""

from __future__ import annotations

import pytest

from monad_notebook import Session
from monad_notebook.agent.loop import INTERRUPTED_RESULT, NOT_RUN_RESULT
from monad_notebook.config import Config
from monad_notebook.errors import ConfigError, EndpointError, UsageError
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel, tool_call, tool_calls
from tests.conversation import conversation


@pytest.fixture
def config() -> Config:
    return Config.model_validate({"tools": {"python": {"approval": "auto"}}})


def roles(messages):
    return [m["role"] for m in messages]


def test_second_turn_receives_the_first_turns_history(config, store):
    model = ScriptedModel(["Hello!", "You said hi."])
    session = Session("chat", config=config, store=store, model=model)
    assert session.ask("hi").text == "Hello!"
    assert session.ask("what did I say?").text == "You said hi."
    sent = model.calls[1].messages
    assert roles(sent) == ["system", "user", "assistant", "user"]
    assert [m["content"] for m in sent[1:]] == ["hi", "Hello!", "what did I say?"]


def test_tool_result_reaches_the_model_and_runs_in_the_namespace(config, store):
    model = ScriptedModel([tool_call("python", {"code": "x = 6 * 7\nx"}), "x is 42"])
    namespace: dict = {}
    session = Session("calc", config=config, store=store, model=model, namespace=namespace)
    reply = session.ask("compute")
    assert namespace["x"] == 42
    tool_message = conversation(model.calls[1].messages)[-1]
    assert tool_message["role"] == "tool" and "42" in tool_message["content"]
    assert tool_message["tool_call_id"] == conversation(model.calls[1].messages)[-2]["tool_calls"][0]["id"]
    assert (reply.steps, reply.tool_calls, reply.tool_names) == (2, 1, ["python"])


def test_parallel_tool_calls_are_stored_before_they_run_and_their_results_in_one_write(config, store, monkeypatch):
    writes: list[int] = []
    original = store.append_messages
    monkeypatch.setattr(store, "append_messages", lambda ms: (writes.append(len(ms)), original(ms)))
    parallel = tool_calls(
        tool_call("python", {"code": "a = 1"}), tool_call("python", {"code": "b = 2"}), tool_call("list_variables", {})
    )
    model = ScriptedModel([parallel, "done"])
    session = Session("par", config=config, store=store, model=model)
    session.ask("go")
    # the user message, the calls before they run, their 3 results in one write, then the answer
    assert writes == [1, 1, 3, 1]
    stored = store.load_messages("par")
    assert roles([m.to_openai() for m in stored]) == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assert len({m.step for m in stored if m.role == "tool"}) == 1


def test_a_new_session_object_on_the_same_store_continues_the_conversation(config, tmp_path):
    first = LanceStore(tmp_path / "db")
    Session("kept", config=config, store=first, model=ScriptedModel(["noted: the key column is order_id"])).ask(
        "remember order_id"
    )
    first.close()
    model = ScriptedModel(["order_id"])
    reopened = LanceStore(tmp_path / "db")
    Session("kept", config=config, store=reopened, model=model).ask("which column?")
    contents = [m["content"] for m in model.calls[0].messages]
    assert "remember order_id" in contents and "noted: the key column is order_id" in contents
    reopened.close()


def test_hostile_session_names_are_just_names(config, store):
    hostile = "x' OR '1'='1"
    Session("plain", config=config, store=store, model=ScriptedModel(["a"])).ask("plain message")
    model = ScriptedModel(["b"])
    Session(hostile, config=config, store=store, model=model).ask("hostile message")
    assert [m["content"] for m in model.calls[0].messages[1:]] == ["hostile message"]
    assert [m.content for m in store.load_messages(hostile)] == ["hostile message", "b"]


def test_interrupt_during_a_tool_leaves_every_call_answered(config, store):
    first = tool_call("python", {"code": "raise KeyboardInterrupt"})
    parallel = tool_calls(first, tool_call("list_variables", {}))
    model = ScriptedModel([parallel, "recovered"])
    session = Session("intr", config=config, store=store, model=model)
    with pytest.raises(KeyboardInterrupt):
        session.ask("run it")
    stored = store.load_messages("intr")
    assert [m.content for m in stored if m.role == "tool"] == [INTERRUPTED_RESULT, NOT_RUN_RESULT]
    assert session.ask("again").text == "recovered"
    sent = model.calls[1].messages
    call_ids = {c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    assert call_ids == {m["tool_call_id"] for m in sent if m["role"] == "tool"}


def test_interrupt_while_streaming_keeps_the_partial_answer(config, store):
    model = ScriptedModel(["one two three four five six", "fine"])
    session = Session("stream", config=config, store=store, model=model)

    def stop_after_first_piece(delta: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        session.ask("talk", on_text=stop_after_first_piece)
    assert session.ask("go on").text == "fine"
    stored = store.load_messages("stream")
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[1].content.endswith("[interrupted by the user]")


def test_partial_text_streamed_before_an_interrupt_is_persisted(config, store):
    model = ScriptedModel(["alpha beta gamma delta epsilon zeta"])
    session = Session("partial", config=config, store=store, model=model)
    seen: list[str] = []

    def stop_on_second_piece(delta: str) -> None:
        seen.append(delta)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        session.ask("talk", on_text=stop_on_second_piece)
    last = store.load_messages("partial")[-1]
    assert last.role == "assistant" and last.content.startswith(seen[0].strip()[:5])
    assert last.content.endswith("[interrupted by the user]")


def test_a_model_error_keeps_the_session_usable_and_the_message_stored(config, store):
    model = ScriptedModel([EndpointError("cannot reach http://127.0.0.1:9/v1"), "back"])
    session = Session("err", config=config, store=store, model=model)
    with pytest.raises(EndpointError):
        session.ask("first")
    assert session.ask("second").text == "back"
    assert [m.content for m in store.load_messages("err")] == ["first", "second", "back"]


def test_max_steps_stops_a_runaway_loop(store):
    config = Config.model_validate({"agent": {"maxSteps": 2}, "tools": {"python": {"approval": "auto"}}})
    model = ScriptedModel([tool_call("list_variables", {}), tool_call("list_variables", {})])
    reply = Session("loop", config=config, store=store, model=model).ask("loop")
    assert reply.stopped_at_max_steps and "agent.maxSteps=2" in reply.text


def test_empty_message_and_bad_names_are_usage_errors(config, store):
    with pytest.raises(UsageError):
        Session("a\nb", config=config, store=store, model=ScriptedModel([]))
    with pytest.raises(UsageError):
        Session("ok", config=config, store=store, model=ScriptedModel([])).ask("   ")


def test_a_files_root_that_does_not_exist_starts_no_session(store, tmp_path):
    missing = tmp_path / "data"
    config = Config.model_validate({"tools": {"files": {"root": str(missing)}}})
    with pytest.raises(ConfigError, match=f"^configuration: tools.files.root names {missing}, which is not a dir"):
        Session("rootless", config=config, store=store, model=ScriptedModel([]))
    assert store.list_sessions() == []
    (tmp_path / "notes.csv").write_text("a,b\n")
    model = ScriptedModel([tool_call("list_files", {}), "listed"])
    Session("given", config=config, store=store, model=model, root=tmp_path).ask("list")  # an explicit root wins
    assert "notes.csv" in model.calls[-1].messages[-1]["content"]


def test_status_reports_model_window_and_counts(config, store):
    session = Session("stat", config=config, store=store, model=ScriptedModel(["hi"]))
    session.ask("hello")
    status = session.status()
    assert status["session"] == "stat" and status["model"] == "scripted"
    assert status["stored_messages"] == 2 and status["context_window"] == 8192
    assert 0 < status["occupancy"] < 8192


def test_the_prompt_is_built_once_per_state_and_never_sent_stale(config, store):
    model = ScriptedModel([tool_call("python", {"code": "'x' * 50"}), "done", "again"])
    session = Session("cache", config=config, store=store, model=model)
    session.ask("first")
    built = session.window.prompt()
    assert session.window.prompt() is built  # nothing changed: the same prompt, counted once

    tool_message = next(m for m in session.window if m.role == "tool")
    tool_message.placeholder = "[cleared: read_tool_output]"  # what eviction does, in place
    cleared = session.window.prompt()
    assert cleared is not built and "[cleared: read_tool_output]" in [m["content"] for m in cleared.messages]
    session.window.set_blocks({"plan": "- finish the report"})
    assert "finish the report" in session.window.prompt().messages[-1]["content"]

    session.ask("second")
    sent = [m["content"] for m in model.calls[-1].messages]
    assert "[cleared: read_tool_output]" in sent and sent[-1] == "second"
