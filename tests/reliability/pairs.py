"""Every tool call answered once, right after it: checked on what the model was sent and on what was stored."""

from __future__ import annotations

from typing import Any

from monad_notebook.messages import Message


def assert_paired(sent: list[dict[str, Any]]) -> None:
    """Every tool call the model was sent has exactly one result, right after its assistant message."""
    expected: list[str] = []
    for message in sent:
        if message["role"] == "tool":
            assert expected and message["tool_call_id"] == expected.pop(0), "a tool result without its call"
        else:
            assert not expected, f"tool calls {expected} have no result"
            expected = [c["id"] for c in message.get("tool_calls") or []]
    assert not expected


def assert_stored_paired(messages: list[Message]) -> None:
    assert_paired([m.to_openai() for m in messages])
