"""The turn loop over real HTTP: the real openai client against the fake OpenAI-compatible server."""

from __future__ import annotations

import socket

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.errors import AuthError, EndpointError, ModelNotFoundError
from monad_notebook.testing import FakeOpenAIServer, tool_call, tool_calls


@pytest.fixture
def server():
    with FakeOpenAIServer() as server:
        yield server


def make_session(base_url: str, store, name: str = "http", **main) -> Session:
    config = Config.model_validate(
        {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": base_url, "maxRetries": 3, **main}},
            "tools": {"python": {"approval": "auto"}},
        }
    )
    return Session(name, config=config, store=store, namespace={})


def test_streamed_answer_arrives_in_pieces_and_whole(server, store):
    server.queue("The answer is forty-two, computed carefully.")
    pieces: list[str] = []
    reply = make_session(server.base_url, store).ask("question", on_text=pieces.append)
    assert len(pieces) > 1 and "".join(pieces) == reply.text == "The answer is forty-two, computed carefully."
    assert server.chat_requests[0]["stream"] is True


def test_parallel_tool_calls_over_http_are_answered_in_one_round(server, store):
    server.queue(
        tool_calls(tool_call("python", {"code": "1 + 1"}), tool_call("python", {"code": "2 + 3"})),
        "2 and 5",
    )
    reply = make_session(server.base_url, store).ask("add")
    second = server.chat_requests[1]["messages"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "tool"]
    assert "2" in second[-2]["content"] and "5" in second[-1]["content"]
    assert reply.prompt_tokens == sum(server.count_tokens(r["messages"]) for r in server.chat_requests)
    assert not reply.estimated


def test_tool_schemas_are_sent_with_every_request(server, store):
    server.queue("ok")
    make_session(server.base_url, store).ask("hi")
    names = {t["function"]["name"] for t in server.chat_requests[0]["tools"]}
    assert {"python", "list_variables", "describe", "read_file", "read_tool_output"} <= names


def test_rate_limits_are_retried_then_succeed(server, store):
    server.fail(status=429, times=2, retry_after=0)
    server.queue("after the storm")
    assert make_session(server.base_url, store).ask("hi").text == "after the storm"
    assert len(server.chat_requests) == 3


def test_persistent_server_errors_end_in_one_line_and_keep_the_session(server, store):
    server.fail(status=500, times=10)
    session = make_session(server.base_url, store, maxRetries=1)
    with pytest.raises(EndpointError) as err:
        session.ask("hi")
    assert "\n" not in str(err.value)
    server.queue("fine now")
    server.recover()
    assert session.ask("again").text == "fine now"
    assert [m.content for m in store.load_messages("http")] == ["again", "fine now"]  # the failed turn left nothing


def test_bad_key_and_unknown_model_say_what_to_set(store):
    with FakeOpenAIServer(require_key="right") as server, pytest.raises(AuthError, match="OPENAI_API_KEY"):
        make_session(server.base_url, store, name="a").ask("hi")
    with FakeOpenAIServer(known_models=["gpt-4.1-mini"]) as server, pytest.raises(ModelNotFoundError, match="nope"):
        make_session(server.base_url, store, name="b", model="nope").ask("hi")


def test_unreachable_endpoint_names_the_url(store):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(EndpointError, match=str(port)):
        make_session(url, store, maxRetries=0, timeoutSeconds=2).ask("hi")


def test_context_length_error_compacts_and_retries_once(server, store):
    config = Config.model_validate(
        {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "contextWindow": 8000}},
            "tools": {"python": {"approval": "auto"}},
            "context": {"summarize": {"softFraction": 0.99, "hardFraction": 1.0, "keepRecent": 2}},
        }
    )
    session = Session("overflow", config=config, store=store, namespace={})
    server.queue(tool_call("python", {"code": "print('row,' * 4000)"}), "first done")
    session.ask("make output")
    briefing = (
        "## Objective\nmake output\n## Decisions & Facts\n- printed rows\n"
        "## Files & State\n## Open Tasks\n## Next Step\n"
    )
    server.fail_context_length(limit=4000)
    server.queue(briefing, "after compaction")
    assert session.ask("next").text == "after compaction"
    summary_request, retried = server.chat_requests[-2], server.chat_requests[-1]
    assert "make output" in summary_request["messages"][-1]["content"]  # the fast tier was asked to summarize
    first_user = next(m for m in retried["messages"] if m["role"] == "user")
    assert first_user["content"].startswith("<summary>\n## Objective\nmake output")
    assert not [m for m in retried["messages"] if m["role"] == "tool"]  # the round was folded
    assert store.load_summary("overflow").boundary_seq == 2  # user, tool call and result folded
