"""The OpenAI-compatible adapter, over real HTTP, through the real ``openai`` client, against the fake server."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from monad_notebook.errors import AuthError, ContextLengthError, EndpointError, ModelError, ModelNotFoundError
from monad_notebook.provider import (
    DEFAULT_CONTEXT_WINDOW,
    KNOWN_CONTEXT_WINDOWS,
    OpenAIChatModel,
    OpenAIEmbedder,
    context_window_for,
)
from monad_notebook.testing import FakeOpenAIServer, approximate_prompt_tokens, tool_call, tool_calls

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Which region grew fastest?"}]
TOOLS = [{"type": "function", "function": {"name": "run_python", "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def make_model(server: FakeOpenAIServer) -> Callable[..., OpenAIChatModel]:
    def make(**options: Any) -> OpenAIChatModel:
        settings: dict[str, Any] = {"base_url": server.base_url, "backoff_base": 0.001, "backoff_max": 0.05}
        return OpenAIChatModel("gpt-4o-mini", **{**settings, **options})

    return make


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# streaming


def test_streams_text_deltas_in_order_and_returns_the_whole_answer(server, make_model):
    server.queue("The West grew fastest, by 14 percent.")
    seen: list[str] = []

    reply = make_model().complete(MESSAGES, [], seen.append)

    assert len(seen) > 3
    assert "".join(seen) == reply.content == "The West grew fastest, by 14 percent."
    assert reply.finish_reason == "stop"
    assert reply.tool_calls == []


def test_sends_the_messages_and_tools_as_given_and_asks_for_usage(server, make_model):
    server.queue("ok")

    make_model().complete(MESSAGES, TOOLS)

    sent = server.chat_requests[0]
    assert sent["model"] == "gpt-4o-mini"
    assert sent["messages"] == MESSAGES
    assert sent["tools"] == TOOLS
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}


def test_omits_tools_when_there_are_none(server, make_model):
    server.queue("ok")

    make_model().complete(MESSAGES, [])

    assert "tools" not in server.chat_requests[0]


def test_sends_temperature_and_output_cap_only_when_configured(server, make_model):
    server.queue("ok", "ok")

    make_model().complete(MESSAGES, [])
    make_model(temperature=0.2, max_output_tokens=300).complete(MESSAGES, [])

    plain, tuned = server.chat_requests
    assert "temperature" not in plain and "max_tokens" not in plain
    assert tuned["temperature"] == 0.2
    assert tuned["max_tokens"] == 300


def test_assembles_parallel_tool_calls_by_index_even_when_their_fragments_interleave(server, make_model):
    long_code = "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\ndf.groupby('region').sum()"
    server.queue(
        tool_calls(
            tool_call("run_python", {"code": long_code}, id="call_a"),
            tool_call("read_file", {"path": "data/notes.md", "limit": 40}, id="call_b"),
        )
    )

    reply = make_model().complete(MESSAGES, TOOLS)

    assert reply.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in reply.tool_calls] == [("call_a", "run_python"), ("call_b", "read_file")]
    assert reply.tool_calls[0].parsed_arguments() == {"code": long_code}
    assert reply.tool_calls[1].parsed_arguments() == {"path": "data/notes.md", "limit": 40}


def test_reports_the_provider_usage_from_the_final_chunk(server, make_model):
    server.queue("A short answer.")

    reply = make_model().complete(MESSAGES, [])

    assert reply.usage is not None
    assert reply.usage.prompt_tokens == approximate_prompt_tokens(MESSAGES)
    assert reply.usage.completion_tokens > 0


def test_usage_is_none_when_the_provider_reports_none(server, make_model):
    server.report_usage = False
    server.queue("A short answer.")

    reply = make_model().complete(MESSAGES, [])

    assert reply.content == "A short answer."
    assert reply.usage is None


# retries


def test_retries_rate_limits_then_returns_the_answer(server, make_model):
    server.fail(429, times=2)
    server.queue("finally")

    reply = make_model().complete(MESSAGES, [])

    assert reply.content == "finally"
    assert len(server.chat_requests) == 3


def test_waits_as_long_as_retry_after_says(server, make_model):
    model = make_model(backoff_max=5)
    server.queue("warm-up", "ok")
    model.complete(MESSAGES, [])
    server.fail(429, retry_after=0.5)

    started = time.monotonic()
    model.complete(MESSAGES, [])

    assert time.monotonic() - started >= 0.5


def test_caps_retry_after_at_backoff_max(server, make_model):
    server.fail(429, retry_after=30)
    server.queue("ok")

    started = time.monotonic()
    make_model(backoff_max=0.1).complete(MESSAGES, [])

    assert time.monotonic() - started < 2


def test_server_errors_that_outlast_the_retries_raise_endpoint_error_naming_the_url(server, make_model):
    server.fail(500, times=10)

    with pytest.raises(EndpointError, match="kept failing") as caught:
        make_model(max_retries=2).complete(MESSAGES, [])

    assert server.base_url in str(caught.value)
    assert "HTTP 500" in str(caught.value)
    assert len(server.chat_requests) == 3


def test_a_timeout_is_retried_then_reported(server, make_model):
    server.delay(1.0, times=2)
    server.queue("too late", "too late")

    with pytest.raises(EndpointError, match="timed out"):
        make_model(timeout=0.2, max_retries=1).complete(MESSAGES, [])

    assert len(server.chat_requests) == 2


def test_a_stream_broken_before_any_text_is_retried(server, make_model):
    server.break_stream_after(1)
    server.queue("lost answer", "second try")
    seen: list[str] = []

    reply = make_model().complete(MESSAGES, [], seen.append)

    assert reply.content == "second try"
    assert "".join(seen) == "second try"
    assert len(server.chat_requests) == 2


def test_a_stream_broken_after_text_was_shown_raises_instead_of_repeating_it(server, make_model):
    server.break_stream_after(3)
    server.queue("one two three four five six", "must not be asked for")
    seen: list[str] = []

    with pytest.raises(EndpointError, match="broke after text was shown"):
        make_model().complete(MESSAGES, [], seen.append)

    assert "".join(seen) == "one two "
    assert len(server.chat_requests) == 1


def test_keyboard_interrupt_propagates_unchanged_and_closes_the_stream(server, make_model):
    server.chunk_delay = 0.02
    server.queue(" ".join(f"word{i}" for i in range(100)))

    def interrupt(_: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        make_model().complete(MESSAGES, [], interrupt)

    deadline = time.monotonic() + 3
    while server.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.disconnects == 1
    assert len(server.chat_requests) == 1


# errors a user can fix


def test_a_rejected_key_is_an_auth_error_and_is_not_retried(server, make_model, monkeypatch):
    server.require_key = "sk-right"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")

    with pytest.raises(AuthError, match="OPENAI_API_KEY"):
        make_model().complete(MESSAGES, [])

    assert len(server.chat_requests) == 1


def test_sends_the_key_from_the_configured_variable(server, make_model, monkeypatch):
    server.require_key = "sk-team"
    monkeypatch.setenv("TEAM_KEY", "sk-team")
    server.queue("ok")

    assert make_model(api_key_env="TEAM_KEY").complete(MESSAGES, []).content == "ok"


def test_a_local_endpoint_needs_no_key(server, make_model):
    server.queue("ok")

    make_model().complete(MESSAGES, [])

    assert server.log[0].headers["authorization"] == "Bearer not-needed"


def test_a_missing_key_for_a_remote_endpoint_is_an_auth_error_before_any_request():
    model = OpenAIChatModel("gpt-4o", base_url="https://api.example.com/v1", api_key_env="EXAMPLE_KEY")

    with pytest.raises(AuthError, match="set EXAMPLE_KEY") as caught:
        model.complete(MESSAGES, [])

    assert "https://api.example.com/v1" in str(caught.value)


def test_the_default_endpoint_without_a_key_is_an_auth_error():
    with pytest.raises(AuthError, match="set OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4o").complete(MESSAGES, [])


def test_an_unknown_model_is_model_not_found_naming_model_and_url():
    with FakeOpenAIServer(known_models=["llama3.1"]) as server:
        model = OpenAIChatModel("llama3.2", base_url=server.base_url, backoff_base=0.001)
        with pytest.raises(ModelNotFoundError) as caught:
            model.complete(MESSAGES, [])

        assert "'llama3.2'" in str(caught.value)
        assert server.base_url in str(caught.value)


def test_a_context_length_error_is_reported_as_such_and_not_retried(server, make_model):
    server.fail_context_length()

    with pytest.raises(ContextLengthError, match="maximum context length"):
        make_model().complete(MESSAGES, [])

    assert len(server.chat_requests) == 1


def test_a_context_length_error_without_a_code_is_recognised_by_its_message(server, make_model):
    server.fail(400, message="This model's maximum context length is 4096 tokens. However, you requested 5000.")

    with pytest.raises(ContextLengthError):
        make_model().complete(MESSAGES, [])


def test_other_bad_requests_are_model_errors_and_not_retried(server, make_model):
    server.fail(400, message="Invalid value for 'messages[1].role'.")

    with pytest.raises(ModelError, match="HTTP 400") as caught:
        make_model().complete(MESSAGES, [])

    assert not isinstance(caught.value, ContextLengthError)
    assert len(server.chat_requests) == 1


def test_an_unreachable_endpoint_fails_fast_with_endpoint_error_naming_the_url():
    url = closed_port_url()
    model = OpenAIChatModel("llama3.1", base_url=url, timeout=1, max_retries=2, backoff_base=0.001)

    started = time.monotonic()
    with pytest.raises(EndpointError, match="Cannot reach") as caught:
        model.complete(MESSAGES, [])

    assert url in str(caught.value)
    assert time.monotonic() - started < 3


def test_every_error_message_is_one_line(server, make_model):
    server.fail(400, message="Bad\nrequest\nover several lines")

    with pytest.raises(ModelError) as caught:
        make_model().complete(MESSAGES, [])

    assert "\n" not in str(caught.value)


# embeddings


def test_embeds_in_order_in_batches_of_256(server):
    texts = [f"fact number {i}" for i in range(300)]
    embedder = OpenAIEmbedder("text-embedding-3-small", base_url=server.base_url)

    vectors = embedder.embed(texts)

    assert [len(request["input"]) for request in server.embedding_requests] == [256, 44]
    assert len(vectors) == 300
    assert vectors[7] == embedder.embed(["fact number 7"])[0]
    assert vectors[7] != vectors[8]


def test_asks_for_the_configured_dimensions(server):
    vectors = OpenAIEmbedder("text-embedding-3-small", base_url=server.base_url, dimensions=8).embed(["a", "b"])

    assert [len(v) for v in vectors] == [8, 8]
    assert server.embedding_requests[0]["dimensions"] == 8


def test_embedding_an_empty_list_makes_no_request(server):
    assert OpenAIEmbedder("text-embedding-3-small", base_url=server.base_url).embed([]) == []
    assert server.embedding_requests == []


def test_embedding_errors_map_like_chat_errors(server, monkeypatch):
    server.require_key = "sk-right"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")

    with pytest.raises(AuthError):
        OpenAIEmbedder("text-embedding-3-small", base_url=server.base_url).embed(["a"])


def test_embedding_rate_limits_are_retried(server):
    server.fail(429)
    embedder = OpenAIEmbedder("text-embedding-3-small", base_url=server.base_url, backoff_base=0.001)

    assert len(embedder.embed(["a"])) == 1
    assert len(server.embedding_requests) == 2


# context windows


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4", 8_192),
        ("gpt-5-nano", 400_000),
        ("o4-mini", 200_000),
        ("openai/gpt-4.1", 1_047_576),
        ("llama3.1:8b", 131_072),
        ("Qwen2.5-7B-Instruct", 32_768),
        ("my-azure-deployment", DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_context_window_comes_from_the_longest_known_prefix(model, window):
    assert context_window_for(model, None) == window


def test_a_configured_context_window_wins():
    assert context_window_for("gpt-4.1", 50_000) == 50_000
    assert OpenAIChatModel("gpt-4.1", context_window=50_000).context_window == 50_000
    assert OpenAIChatModel("gpt-4.1").context_window == KNOWN_CONTEXT_WINDOWS["gpt-4.1"]


def test_unknown_models_default_to_128k():
    assert context_window_for("mystery-model", None) == 128_000
