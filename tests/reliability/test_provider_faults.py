"""Provider faults end to end, through a Session and the real openai client against the fake server."""

from __future__ import annotations

from typing import Any

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.errors import ContextLengthError, ModelError
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.reliability.pairs import assert_paired, assert_stored_paired


@pytest.fixture
def server():
    with FakeOpenAIServer() as server:
        yield server


def make_session(server: FakeOpenAIServer, store: LanceStore, **main: Any) -> Session:
    main = {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 2, "timeoutSeconds": 5, **main}
    config = Config.model_validate({"models": {"main": main}, "tools": {"python": {"approval": "auto"}}})
    return Session("faults", config=config, store=store, namespace={})


def one_line_model_error(session: Session, text: str) -> ModelError:
    with pytest.raises(ModelError) as caught:
        session.ask(text)
    message = str(caught.value)
    assert message and "\n" not in message and "Traceback" not in message and len(message) < 400
    return caught.value


def test_a_rate_limit_storm_longer_than_the_retries_is_one_line_and_the_next_turn_works(server, store):
    server.queue("before")
    session = make_session(server, store)
    session.ask("hello")
    server.fail(429, times=3, retry_after=0)
    one_line_model_error(session, "during the storm")
    assert len(server.chat_requests) == 1 + 3
    server.queue("after the storm")
    assert session.ask("after").text == "after the storm"
    contents = [m.content for m in store.load_messages("faults")]
    assert contents == ["hello", "before", "after", "after the storm"]  # the unanswered question left nothing


def test_a_model_that_answers_later_than_the_timeout_is_one_line_and_the_next_turn_works(server, store):
    session = make_session(server, store, timeoutSeconds=0.5, maxRetries=0)
    server.delay(2.0)
    server.queue("too late")
    one_line_model_error(session, "slow")
    server.queue("in time")
    # the server still serves the late request once its delay ends, so either answer may come next
    assert session.ask("again").text in {"too late", "in time"}
    assert [m.content for m in store.load_messages("faults")][:1] == ["again"]  # the timed-out question left nothing


def test_a_stream_cut_off_mid_answer_is_one_line_and_the_next_turn_works(server, store):
    session = make_session(server, store, maxRetries=0)
    server.queue("one two three four five six seven eight nine ten")
    server.break_stream_after(2)
    one_line_model_error(session, "talk")
    server.queue("whole answer")
    assert session.ask("again").text == "whole answer"
    assert_stored_paired(store.load_messages("faults"))


def test_a_stream_cut_off_in_a_tool_round_leaves_no_orphaned_call(server, store):
    session = make_session(server, store, maxRetries=0)
    server.queue(tool_call("python", {"code": "x = 1"}))
    server.break_stream_after(2)
    one_line_model_error(session, "compute")
    assert store.load_messages("faults") == []  # the model never finished an answer: the turn left nothing
    server.queue("recovered")
    assert session.ask("again").text == "recovered"
    assert_paired(server.chat_requests[-1]["messages"])


def test_server_errors_between_steps_keep_the_finished_round(server, store):
    session = make_session(server, store, maxRetries=0)
    server.queue(tool_call("python", {"code": "41 + 1"}))  # nothing queued after it: the second step gets a 500
    one_line_model_error(session, "first")
    stored = store.load_messages("faults")
    assert [m.role for m in stored] == ["user", "assistant", "tool"] and "42" in stored[-1].content
    server.queue("the answer was 42")
    assert session.ask("and?").text == "the answer was 42"
    assert_paired(server.chat_requests[-1]["messages"])


def test_context_length_errors_that_compaction_cannot_fix_end_in_one_line(server, store):
    session = make_session(server, store, maxRetries=0)
    server.queue("short")
    session.ask("hi")
    for _ in range(3):  # the first call, the summarizer (which falls back to the extractive summary), the retry
        server.fail_context_length(limit=10)
    error = one_line_model_error(session, "too long")
    assert isinstance(error, ContextLengthError)
    server.queue("fits now")
    assert session.ask("again").text == "fits now"
    contents = [m.content for m in LanceStore(store.uri).load_messages("faults")]
    assert {"hi", "short", "again", "fits now"} <= set(contents) and "too long" not in contents  # refused: not kept


def test_garbage_instead_of_json_is_one_line_and_the_next_turn_works(server, store):
    session = make_session(server, store, maxRetries=0)
    server.fail(200, message="not json at all")  # a 200 whose body is an error object, not a completion
    try:
        reply = session.ask("hello")
    except ModelError as error:
        assert "\n" not in str(error)
    else:
        assert isinstance(reply.text, str)
    server.queue("fine")
    assert session.ask("again").text == "fine"
