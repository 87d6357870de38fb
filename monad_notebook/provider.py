"""The OpenAI-compatible provider: the chat-model protocol, the endpoint with its retries,
stream assembly, and the chat and embedding clients behind it.

It sits below both the agent (chat) and the store (remote embeddings), and it is the only
module that imports ``openai``.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

import openai

from monad_notebook.errors import (
    AuthError,
    ContextLengthError,
    EndpointError,
    EndpointNotFoundError,
    ModelError,
    ModelNotFoundError,
)
from monad_notebook.messages import ToolCall, new_id

TextCallback = Callable[[str], None]


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's prefix cache


def cached_prompt_tokens(reported: Any) -> int:
    """The cached part of a usage report, under the names OpenAI-compatible servers give it.

    OpenAI: ``prompt_tokens_details.cached_tokens``; Anthropic-style: ``cache_read_input_tokens``;
    DeepSeek: ``prompt_cache_hit_tokens``. Missing or malformed counts read as 0.
    """
    details = getattr(reported, "prompt_tokens_details", None)
    if isinstance(details, dict):
        candidates = [details.get("cached_tokens")]
    else:
        candidates = [getattr(details, "cached_tokens", None)]
    extra = getattr(reported, "model_extra", None) or {}
    candidates += [getattr(reported, name, None) or extra.get(name) for name in _CACHED_NAMES]
    for value in candidates:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


_CACHED_NAMES = ("cache_read_input_tokens", "prompt_cache_hit_tokens")


@dataclass
class ChatResponse:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None  # None when the provider reported none
    finish_reason: str = "stop"


class ChatModel(Protocol):
    """Anything that can answer a chat request. ``name`` is what status shows."""

    name: str

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: TextCallback | None = None,
    ) -> ChatResponse:
        """Answer ``messages`` (OpenAI chat format), streaming text through ``on_text``.

        Raises a ModelError subclass for failures retrying cannot fix.
        """


KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-oss": 131_072,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2": 1_048_576,
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "mistral-nemo": 131_072,
    "gemma2": 8_192,
    "gemma3": 131_072,
    "deepseek-r1": 131_072,
    "deepseek-chat": 65_536,
}
DEFAULT_CONTEXT_WINDOW = 128_000


def context_window_for(model: str, override: int | None = None) -> int:
    """The window to plan against: the configured override, else the longest known prefix, else 128k.

    Provider prefixes (``openai/gpt-4o`` on OpenRouter) and Ollama tags (``llama3.1:8b``) are
    matched by their model part, so dated snapshots like ``gpt-4o-2024-08-06`` resolve too.
    """
    if override is not None and override > 0:
        return override
    name = model.strip().lower().rsplit("/", 1)[-1]
    matches = [known for known in KNOWN_CONTEXT_WINDOWS if name.startswith(known)]
    if not matches:
        return DEFAULT_CONTEXT_WINDOW
    return KNOWN_CONTEXT_WINDOWS[max(matches, key=len)]


_T = TypeVar("_T")
_OPENAI_URL = "https://api.openai.com/v1"
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_NO_SUCH_PATH = re.compile(
    r"invalid url|page not found|file not found|unknown (?:path|route|url|endpoint)|no route|cannot (?:post|get)|"
    r"^not found$",
    re.I,
)
_MODEL_WORD = re.compile(r"\bmodels?\b", re.I)
_CONTEXT_LENGTH = re.compile(
    r"context[_ ]length|maximum context|context window|context size|prompt is too long|too many tokens", re.I
)


class _Retryable(Exception):
    """A failure worth another attempt; ``reason`` ends up in the final message if none succeeds."""

    def __init__(self, reason: str, *, retry_after: float | None = None, cause: str = "server") -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.cause = cause  # "network" (no connection), "timeout" (no answer in time) or "server"


def _is_local(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.") or host.endswith(".localhost")


def _provider_message(exc: openai.APIError) -> str:
    body = exc.body
    message = body.get("message") if isinstance(body, dict) else None
    text = message if isinstance(message, str) and message else exc.message
    return " ".join(text.split())[:300].rstrip(".")


def _one_line(text: object) -> str:
    return " ".join(str(text).split())[:300]


def _names_a_model(exc: openai.APIError, message: str, model: str) -> bool:
    """A 404 about the model (OpenAI, vLLM, Ollama say so), rather than about the URL path."""
    if exc.code == "model_not_found":
        return True
    if _NO_SUCH_PATH.search(message):
        return False
    named = re.search(rf"(?<![\w.:/-]){re.escape(model)}(?![\w.:/-])", message) if model else None
    return bool(_MODEL_WORD.search(message) or named)


def _requested(exc: openai.APIError) -> str:
    """The method and URL that got the answer, without a query string."""
    request = getattr(exc, "request", None)
    if request is None:
        return "the request"
    return f"{request.method} {str(request.url).split('?', 1)[0]}"


def _retry_after(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers
    for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(headers.get(header, ""))
        except ValueError:
            continue
        if value >= 0:
            return value * scale
    return None


class _Endpoint:
    """One OpenAI-compatible endpoint: the key, the client, error mapping and bounded retries.

    Retries live here rather than in the ``openai`` client so that a retry never replays text
    the user has already seen, and so every failure ends as one actionable MonadError.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key_env: str,
        timeout: float,
        max_retries: int,
        backoff_base: float,
        backoff_max: float,
    ) -> None:
        self.model = model
        self.url = (base_url or os.environ.get("OPENAI_BASE_URL") or _OPENAI_URL).rstrip("/")
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._client: openai.OpenAI | None = None
        self._key = ""

    def client(self) -> openai.OpenAI:
        """The client, made once; remade only if the key changed (a user fixing it mid-session)."""
        key = os.environ.get(self.api_key_env, "")
        if not key:
            if not _is_local(self.url):
                raise AuthError(
                    f"No API key for {self.url}: set {self.api_key_env}, "
                    "or point apiKeyEnv in agents.json at the variable that holds it"
                )
            key = "not-needed"
        if self._client is None or key != self._key:
            self._client = openai.OpenAI(base_url=self.url, api_key=key, max_retries=0, timeout=self.timeout)
            self._key = key
        return self._client

    def call(self, attempt: Callable[[openai.OpenAI], _T], *, may_retry: Callable[[], bool] = lambda: True) -> _T:
        """Run ``attempt`` until it succeeds, a failure is not retryable, or retries run out."""
        client = self.client()
        retries = 0
        while True:
            try:
                try:
                    return attempt(client)
                except openai.APIError as exc:
                    raise self._classify(exc) from exc
            except _Retryable as failure:
                if not may_retry():
                    raise EndpointError(
                        f"The stream from {self.url} broke after text was shown ({failure.reason}); run the cell again"
                    ) from failure
                if retries >= self.max_retries:
                    raise self._exhausted(failure, retries) from failure
                time.sleep(self._delay(retries, failure.retry_after))
                retries += 1

    def _delay(self, retries: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        return min(self.backoff_max, self.backoff_base * 2**retries) * random.uniform(0.5, 1.0)

    def _classify(self, exc: openai.APIError) -> Exception:
        """Map an ``openai`` error to a MonadError, or to _Retryable when another attempt may help."""
        if isinstance(exc, openai.APITimeoutError):
            return _Retryable(f"timed out after {self.timeout:g}s", cause="timeout")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            return _Retryable(f"connection failed: {_one_line(cause or exc.message)}", cause="network")
        message = _provider_message(exc)
        status = getattr(exc, "status_code", None)
        if status in (401, 403):
            return AuthError(
                f"{self.url} rejected the API key (HTTP {status}: {message}); check {self.api_key_env} "
                "or apiKeyEnv in agents.json"
            )
        if status == 404 and _names_a_model(exc, message, self.model):
            return ModelNotFoundError(
                f"{self.url} does not serve model {self.model!r} ({message}); check the model name in agents.json"
            )
        if status == 404:
            return EndpointNotFoundError(
                f"{_requested(exc)} is not found (HTTP 404: {message}): the server has no such path, so baseUrl "
                f"{self.url} is wrong; check it in agents.json (OpenAI-compatible servers usually end in /v1)"
            )
        if exc.code == "context_length_exceeded" or (
            status in (None, 400, 413, 422) and _CONTEXT_LENGTH.search(message)
        ):
            return ContextLengthError(
                f"The prompt does not fit {self.model}'s context window ({message}); "
                "lower contextWindow for this model in agents.json so compaction starts earlier"
            )
        if status is None or status in _RETRYABLE_STATUS or status >= 500:
            retry_after = _retry_after(exc) if isinstance(exc, openai.APIStatusError) else None
            label = f"HTTP {status}: {message}" if status else message
            return _Retryable(label, retry_after=retry_after)
        return ModelError(f"{self.url} refused the request for {self.model} (HTTP {status}: {message})")

    def _exhausted(self, failure: _Retryable, retries: int) -> EndpointError:
        tries = f"{retries + 1} attempt{'s' if retries else ''}"
        if failure.cause == "network":
            return EndpointError(
                f"Cannot reach {self.url} ({failure.reason}; {tries}): check baseUrl in agents.json "
                "and that the server is running"
            )
        if failure.cause == "timeout":
            return EndpointError(
                f"{self.url} did not answer in time ({failure.reason}; {tries}): raise timeoutSeconds in "
                "agents.json if the model is slow, or check the server"
            )
        return EndpointError(f"{self.url} kept failing ({failure.reason}; {tries}): try again later")


class _ToolCallAssembler:
    """Tool-call deltas arrive in fragments keyed by index; parallel calls may interleave."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}

    def add(self, deltas: list[Any]) -> None:
        for delta in deltas:
            index = delta.index if getattr(delta, "index", None) is not None else len(self._calls)
            call = self._calls.setdefault(index, {"id": "", "name": "", "arguments": []})
            if getattr(delta, "id", None):
                call["id"] = delta.id
            function = getattr(delta, "function", None)
            if function is not None:
                if function.name and not call["name"]:
                    call["name"] = function.name
                if function.arguments:
                    call["arguments"].append(function.arguments)

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=c["id"] or f"call_{new_id()[:24]}", name=c["name"], arguments="".join(c["arguments"]))
            for _, c in sorted(self._calls.items())
        ]


class OpenAIChatModel:
    """A ChatModel for any OpenAI-compatible chat-completions endpoint (OpenAI, Azure, Ollama, vLLM, ...)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        context_window: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        temperature: float | None = None,
        max_output_tokens: int | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
    ) -> None:
        self.name = model
        self.context_window = context_window_for(model, context_window)
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self._endpoint = _Endpoint(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
        )

    @property
    def base_url(self) -> str:
        return self._endpoint.url

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: TextCallback | None = None,
    ) -> ChatResponse:
        params = self._params(messages, tools)
        shown = False

        def emit(delta: str) -> None:
            nonlocal shown
            shown = True
            if on_text is not None:
                on_text(delta)

        def attempt(client: openai.OpenAI) -> ChatResponse:
            return self._stream_once(client, params, emit)

        return self._endpoint.call(attempt, may_retry=lambda: not shown)

    def _params(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            params["tools"] = tools
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_output_tokens is not None:
            # OpenAI's reasoning models reject max_tokens; many compatible servers only know it.
            key = "max_completion_tokens" if self.base_url == _OPENAI_URL else "max_tokens"
            params[key] = self.max_output_tokens
        return params

    def _stream_once(self, client: openai.OpenAI, params: dict[str, Any], emit: TextCallback) -> ChatResponse:
        text: list[str] = []
        tool_calls = _ToolCallAssembler()
        usage: Usage | None = None
        finish_reason = ""
        try:
            with client.chat.completions.create(**params) as stream:
                for chunk in stream:
                    reported = getattr(chunk, "usage", None)
                    if reported is not None:
                        usage = Usage(
                            reported.prompt_tokens or 0, reported.completion_tokens or 0, cached_prompt_tokens(reported)
                        )
                    for choice in getattr(chunk, "choices", None) or []:
                        delta = choice.delta
                        if delta is not None and delta.content:
                            text.append(delta.content)
                            emit(delta.content)
                        if delta is not None and delta.tool_calls:
                            tool_calls.add(delta.tool_calls)
                        if choice.finish_reason:
                            finish_reason = choice.finish_reason
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            raise _Retryable(f"malformed stream: {exc}") from exc
        if not finish_reason:
            raise _Retryable("the stream ended before the answer was complete")
        return ChatResponse("".join(text), tool_calls.calls(), usage, finish_reason)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint, in batches the APIs accept."""

    batch_size = 256

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        dimensions: int | None = None,
        timeout: float = 30,
        max_retries: int = 4,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
    ) -> None:
        self.name = model
        self.dimensions = dimensions
        self._endpoint = _Endpoint(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
        )

    @property
    def base_url(self) -> str:
        return self._endpoint.url

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order. Empty texts are sent as a space: OpenAI rejects empty input."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [text or " " for text in texts[start : start + self.batch_size]]
            vectors.extend(self._endpoint.call(lambda client, batch=batch: self._embed_batch(client, batch)))
        return vectors

    def _embed_batch(self, client: openai.OpenAI, batch: list[str]) -> list[list[float]]:
        extra: dict[str, Any] = {} if self.dimensions is None else {"dimensions": self.dimensions}
        response = client.embeddings.create(model=self.name, input=batch, encoding_format="float", **extra)
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise EndpointError(f"{self.base_url} returned {len(data)} embeddings for {len(batch)} texts")
        return [list(item.embedding) for item in data]
