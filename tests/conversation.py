"""The conversation a request carried, without the ``<workspace>`` block that ends every request."""

from __future__ import annotations

from typing import Any

from monad_notebook.context.prompt import own_text


def conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` without the blocks that end the request (checked in ``tests/workspace/``): the last
    message's own text, or no last message where the blocks were a message of their own."""
    if not messages or not isinstance(messages[-1].get("content"), str):
        return messages
    last = messages[-1]
    text = own_text(last["content"])
    if not text and last.get("role") == "user":
        return messages[:-1]
    return [*messages[:-1], {**last, "content": text}]
