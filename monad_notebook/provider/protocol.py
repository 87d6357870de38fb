"""What every chat model answers with: the ``ChatModel`` protocol, its response and usage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from monad_notebook.messages import ToolCall

TextCallback = Callable[[str], None]

_CACHED_NAMES = ("cache_read_input_tokens", "prompt_cache_hit_tokens")


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
