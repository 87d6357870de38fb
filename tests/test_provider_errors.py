"""Each endpoint failure names its real cause in one line: the URL path, the model, the key, or the network."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from monad_notebook.errors import (
    AuthError,
    EndpointError,
    EndpointNotFoundError,
    ModelError,
    ModelNotFoundError,
    TemplateRefusedError,
)
from monad_notebook.provider import OpenAIChatModel, OpenAIEmbedder
from monad_notebook.testing import FakeOpenAIServer

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(known_models=["llama3.1"]) as fake:
        yield fake


def root(server: FakeOpenAIServer) -> str:
    return server.base_url.removesuffix("/v1")


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def failure(model: str, base_url: str, **options: object) -> ModelError:
    chat = OpenAIChatModel(model, base_url=base_url, max_retries=0, backoff_base=0.001, **options)  # type: ignore[arg-type]
    with pytest.raises(ModelError) as caught:
        chat.complete(MESSAGES, [])
    assert "\n" not in str(caught.value)
    return caught.value


@pytest.mark.parametrize("path", ["/v2", "", "/api"])
def test_a_wrong_url_path_is_reported_as_the_path_not_the_model(server, path):
    error = failure("llama3.1", root(server) + path)
    assert isinstance(error, EndpointNotFoundError)
    assert f"POST {root(server)}{path}/chat/completions is not found" in str(error)
    assert "baseUrl" in str(error) and "/v1" in str(error) and "does not serve model" not in str(error)
    assert len(server.log) == 1


def test_a_wrong_path_is_the_path_even_when_the_model_is_unknown_too(server):
    error = failure("no-such-model", root(server) + "/v2")
    assert isinstance(error, EndpointNotFoundError) and "no-such-model" not in str(error)


def test_an_unknown_model_is_reported_as_the_model(server):
    error = failure("llama9", server.base_url)
    assert isinstance(error, ModelNotFoundError)
    assert "does not serve model 'llama9'" in str(error) and "does not exist" in str(error)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ('model "llama9" not found, try pulling it first', ModelNotFoundError),  # Ollama
        ("The model `llama9` does not exist.", ModelNotFoundError),  # vLLM
        ("Invalid URL (POST /v1/chat/completion)", EndpointNotFoundError),  # OpenAI
        ("404 page not found", EndpointNotFoundError),  # Ollama, wrong path
        ("Not Found", EndpointNotFoundError),  # FastAPI servers, wrong path
    ],
)
def test_a_404_is_read_by_what_the_server_says(message, expected):
    with FakeOpenAIServer() as server:
        server.fail(404, message=message)
        error = failure("llama9", server.base_url)
    assert type(error) is expected and message.rstrip(".") in str(error)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (
            400,
            "Unable to generate parser for this template. Automatic parser generation failed: \n---\nWhile "
            "executing CallExpression at line 15, column 32 in source:\n...raise_exception('After the optional system "
            "message, con...\n ^\nError: Jinja Exception: Conversation roles must alternate "
            "user/assistant/user/assistant/...",
        ),  # llama.cpp
        (
            500,
            "Template error: syntax error: Conversation roles must alternate user/assistant/user/assistant/...",
        ),  # TGI
        (
            400,
            'Error rendering prompt with jinja template: "Conversation roles must alternate user/assistant/user/'
            "assistant/...\".\n\nThis is usually an issue with the model's prompt template.",
        ),  # LM Studio
        (400, "Conversation roles must alternate user/assistant/user/assistant/..."),  # vLLM
    ],
)
def test_a_chat_template_that_raises_is_named_in_one_line_with_its_words_and_not_retried(status, message):
    with FakeOpenAIServer() as server:
        server.fail(status, message=message, times=3)
        chat = OpenAIChatModel("gemma", base_url=server.base_url, max_retries=2, backoff_base=0.001)
        with pytest.raises(TemplateRefusedError) as caught:
            chat.complete(MESSAGES, [])
        assert len(server.log) == 1
    told = str(caught.value)
    assert "\n" not in told and "its chat template raised" in told and "--chat-template-file" in told
    assert caught.value.said.lower().startswith("conversation roles must alternate user/assistant")


@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_is_reported_as_the_key(status, monkeypatch):
    monkeypatch.setenv("LLAMA_KEY", "sk-wrong")
    with FakeOpenAIServer() as server:
        server.fail(status, message="Invalid API Key")
        error = failure("llama3.1", server.base_url, api_key_env="LLAMA_KEY")
    assert isinstance(error, AuthError)
    assert f"rejected the API key (HTTP {status}: Invalid API Key)" in str(error) and "LLAMA_KEY" in str(error)


def test_a_closed_port_is_reported_as_the_network():
    url = closed_port_url()
    error = failure("llama3.1", url, timeout=2)
    assert type(error) is EndpointError
    assert str(error).startswith(f"Cannot reach {url} (connection failed: ") and "baseUrl" in str(error)


def test_a_server_too_slow_to_answer_is_reported_as_a_timeout_not_as_unreachable(server):
    server.delay(1.0)
    error = failure("llama3.1", server.base_url, timeout=0.2)
    assert type(error) is EndpointError
    assert "did not answer in time (timed out after 0.2s" in str(error) and "timeoutSeconds" in str(error)
    assert "Cannot reach" not in str(error)


def test_an_embeddings_endpoint_on_a_wrong_path_is_reported_as_the_path(server):
    embedder = OpenAIEmbedder("text-embedding-3-small", base_url=root(server) + "/v2", max_retries=0)
    with pytest.raises(EndpointNotFoundError, match=r"/v2/embeddings is not found"):
        embedder.embed(["a"])


def test_the_magic_prints_the_path_cause_in_one_line(ip, isolated_env, server, capsys):
    config = {"models": {"main": {"model": "llama3.1", "baseUrl": root(server) + "/v2", "maxRetries": 0}}}
    (isolated_env / "agents.json").write_text(json.dumps(config))
    ip.run_line_magic("reload_ext", "monad_notebook")
    ip.run_cell_magic("monad", "--session wrongpath", "hi")
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"monad: POST {root(server)}/v2/chat/completions is not found (HTTP 404: File Not Found)")
