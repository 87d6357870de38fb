"""``OpenAIChatModel``: streamed chat completions from any OpenAI-compatible endpoint, assembled."""

from __future__ import annotations

import json
from typing import Any

import openai

from monad_notebook.errors import ImagesRefusedError, TemplateRefusedError
from monad_notebook.messages import ToolCall, new_id
from monad_notebook.provider.endpoint import OPENAI_URL, Connection, EndpointClient
from monad_notebook.provider.failures import Retryable
from monad_notebook.provider.protocol import ChatResponse, TextCallback, Usage, cached_prompt_tokens
from monad_notebook.provider.windows import context_window_for


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


class OpenAIChatModel(EndpointClient):
    """A ChatModel for any OpenAI-compatible chat-completions endpoint (OpenAI, Azure, Ollama, vLLM, ...).

    ``connection`` takes the ``Connection`` settings as keywords: ``base_url``, ``api_key_env``,
    ``timeout``, ``max_retries``, ``backoff_base``, ``backoff_max``.
    """

    def __init__(
        self,
        model: str,
        *,
        context_window: int | None = None,
        temperature: float | None = None,
        max_output_tokens: int | None = None,
        **connection: Any,
    ) -> None:
        super().__init__(model, Connection(**connection))
        self.context_window = context_window_for(model, context_window)
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens

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

        try:
            return self._endpoint.call(attempt, may_retry=lambda: not shown)
        except TemplateRefusedError as refused:
            if not _carries_images(messages):
                raise
            raise ImagesRefusedError(
                f"{self.name} at {self.base_url} does not take images after tool results: its chat template raised "
                f'"{refused.said}" on the user message that holds them; set models.main.vision to false in agents.json'
            ) from None

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
            key = "max_completion_tokens" if self.base_url == OPENAI_URL else "max_tokens"
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
            raise Retryable(f"malformed stream: {exc}") from exc
        if not finish_reason:
            raise Retryable("the stream ended before the answer was complete")
        return ChatResponse("".join(text), tool_calls.calls(), usage, finish_reason)


def _carries_images(messages: list[dict[str, Any]]) -> bool:
    """Whether a request sends image parts: the only user message a strict template refuses after tool results.

    Images can only follow tool results as a user message (a tool message carries text), and a template
    that insists on alternating roles refuses one there; described in text instead, they ride on the results.
    """
    return any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )
