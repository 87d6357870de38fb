"""The transcript's unit: one chat message, as stored and as sent.

The store always keeps a message's original ``content``. What the model is sent may
differ: an evicted tool result is sent as its ``placeholder`` instead.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


def new_id() -> str:
    """A client-generated id: concurrent writers never collide, so reads can dedupe."""
    return uuid.uuid4().hex


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text exactly as the model produced it

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises ValueError with a readable reason."""
        if not self.arguments.strip():
            return {}
        try:
            value = json.loads(self.arguments)
        except json.JSONDecodeError as exc:
            raise ValueError(f"arguments are not valid JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise ValueError("arguments must be a JSON object")
        return value

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass
class Message:
    role: Role
    content: str
    session: str = ""
    id: str = field(default_factory=new_id)
    seq: int = 0  # position in the session, assigned by the session when appended
    turn: int = 0
    step: int = 0  # a round: one assistant message and the results of its tool calls
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""
    name: str = ""  # the tool's name, on tool messages
    placeholder: str = ""  # set when evicted: sent instead of content
    redacted: bool = False  # a secret was removed from this tool result: it gets no recovery handle
    created_at: float = field(default_factory=time.time)

    @property
    def evicted(self) -> bool:
        return bool(self.placeholder)

    @property
    def sent_content(self) -> str:
        return self.placeholder or self.content

    def to_openai(self) -> dict[str, Any]:
        """The message in OpenAI chat-completions form, as the model will see it."""
        out: dict[str, Any] = {"role": self.role, "content": self.sent_content}
        if self.role == "assistant" and self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
            if not self.content:
                out["content"] = None
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
        return out
