"""The scripted model: a ChatModel that replays queued answers, and helpers that build those answers.

No answer comes from a language model, so a test can say exactly what the model "said" and then
check what it was asked.
"""

from __future__ import annotations

import copy
import json
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from monad_notebook.messages import ToolCall, new_id
from monad_notebook.provider import ChatResponse, TextCallback, Usage

Scripted = ChatResponse | str | Exception


def stream_words(content: str) -> list[str]:
    """``content`` in the pieces a fake stream sends it: each word with the spaces around it."""
    return re.findall(r"\s*\S+\s*|\s+", content)


def estimate_tokens(content: str) -> int:
    """The fakes' token count of a text: about four characters a token, at least one."""
    return max(1, len(content) // 4)


def approximate_prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """The fake server's default prompt-token count: deterministic, so tests can assert it."""
    return len(json.dumps(messages)) // 4


def text(content: str, prompt_tokens: int | None = None, *, finish_reason: str = "stop") -> ChatResponse:
    """A scripted plain-text answer; with ``prompt_tokens`` it also carries a provider usage report.

    ``finish_reason="length"`` is an answer cut off by the output token limit.
    """
    usage = None if prompt_tokens is None else Usage(prompt_tokens, estimate_tokens(content))
    return ChatResponse(content=content, usage=usage, finish_reason=finish_reason)


def tool_call(name: str, arguments: dict[str, Any], id: str | None = None) -> ChatResponse:
    """A scripted answer that calls one tool."""
    call = ToolCall(id=id or f"call_{new_id()[:12]}", name=name, arguments=json.dumps(arguments))
    return ChatResponse(content="", tool_calls=[call], finish_reason="tool_calls")


def tool_calls(*calls: ChatResponse | ToolCall) -> ChatResponse:
    """A scripted answer with parallel tool calls, from ``tool_call(...)`` answers or ToolCalls."""
    merged: list[ToolCall] = []
    for call in calls:
        merged.extend(call.tool_calls if isinstance(call, ChatResponse) else [call])
    return ChatResponse(content="", tool_calls=merged, finish_reason="tool_calls")


@dataclass
class RecordedCall:
    """What a ScriptedModel was asked: deep copies, so later mutation by the caller cannot hide a bug."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]

    @property
    def last_message(self) -> dict[str, Any]:
        return self.messages[-1] if self.messages else {}


class ScriptedModel:
    """A scripted ChatModel: answers are replayed in order; an extra call raises AssertionError.

    A queued ``str`` is a plain text answer and a queued Exception instance is raised. Usage is
    None (callers fall back to their own estimate) unless the answer carries one or ``usage``
    computes one from the messages. It sees no images unless ``vision=True`` (the
    ``models.main.vision`` setting, when not "auto", decides instead).
    """

    text = staticmethod(text)
    tool_call = staticmethod(tool_call)
    tool_calls = staticmethod(tool_calls)

    def __init__(
        self,
        responses: Iterable[Scripted],
        *,
        name: str = "scripted",
        context_window: int = 8192,
        usage: Callable[[list[dict[str, Any]]], Usage] | None = None,
        vision: bool = False,
    ) -> None:
        self.name = name
        self.context_window = context_window
        self.vision = vision
        self.calls: list[RecordedCall] = []
        self._responses: deque[Scripted] = deque(responses)
        self._usage = usage

    @property
    def remaining(self) -> int:
        return len(self._responses)

    def queue(self, *responses: Scripted) -> None:
        self._responses.extend(responses)

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: TextCallback | None = None,
    ) -> ChatResponse:
        self.calls.append(RecordedCall(copy.deepcopy(messages), copy.deepcopy(tools)))
        if not self._responses:
            last = str(messages[-1].get("content", "")) if messages else ""
            raise AssertionError(
                f"ScriptedModel: unexpected call #{len(self.calls)}; queued responses are exhausted; "
                f"last message: {last[:200]!r}"
            )
        scripted = self._responses.popleft()
        if isinstance(scripted, Exception):
            raise scripted
        response = copy.deepcopy(text(scripted) if isinstance(scripted, str) else scripted)
        if response.usage is None and self._usage is not None:
            response.usage = self._usage(messages)
        if on_text is not None:
            for piece in _pieces(response.content, 3):
                on_text(piece)
        return response


def _pieces(content: str, count: int) -> list[str]:
    words = stream_words(content)
    size = max(1, -(-len(words) // count))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]
