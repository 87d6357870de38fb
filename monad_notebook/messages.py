"""The transcript's unit: one chat message, as stored and as sent.

The store always keeps a message's original ``content``. What the model is sent may
differ: an evicted tool result is sent as its ``placeholder`` instead. A tool result may
carry images (a chart the code displayed): kept as bytes beside the message, described in
one line inside its text, sent to a model that can see while the result is not evicted.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from monad_notebook.images.image import IMAGES_CLEARED, Image

Role = Literal["system", "user", "assistant", "tool"]


def new_id() -> str:
    """A client-generated id: concurrent writers never collide, so reads can dedupe."""
    return uuid.uuid4().hex


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text exactly as the model produced it
    # how a call the model wrote as text was recognised ("json block", "json", "tool_call tag");
    # empty for a call the endpoint returned as ``tool_calls``
    recovered: str = ""

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
        """The call as stored; ``recovered`` only when set, so rows read the same as before it existed."""
        stored = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.recovered:
            stored["recovered"] = self.recovered
        return stored


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
    images: list[Image] = field(default_factory=list, repr=False)  # on tool messages; stored beside them
    created_at: float = field(default_factory=time.time)

    @property
    def evicted(self) -> bool:
        return bool(self.placeholder)

    def concerns(self, tool_call_id: str) -> bool:
        """This message made the tool call ``tool_call_id`` or is its result."""
        return self.tool_call_id == tool_call_id or any(call.id == tool_call_id for call in self.tool_calls)

    @property
    def images_cleared(self) -> bool:
        """Only its images were evicted: the placeholder is its whole text plus a note with their handles."""
        if not self.images or not self.placeholder.startswith(self.content):
            return False
        return self.placeholder[len(self.content) :].lstrip().startswith(IMAGES_CLEARED)

    @property
    def sends_images(self) -> bool:
        """Its images go to a model that sees while the result is sent whole (not evicted, images not cleared)."""
        return bool(self.images) and not self.placeholder

    @property
    def sent_content(self) -> str:
        return self.placeholder or self.content

    def clear(self, placeholder: str) -> None:
        """Send ``placeholder`` instead of this result; the content is untouched (the store keeps it), and a
        placeholder changes only from images cleared to the whole result cleared."""
        if placeholder and (not self.evicted or self.images_cleared):
            self.placeholder = placeholder

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


def apply_placeholders(messages: list[Message], placeholders: dict[str, str]) -> None:
    """Clear the results ``placeholders`` names (message id -> placeholder), in place."""
    for message in messages:
        if message.id in placeholders:
            message.clear(placeholders[message.id])
