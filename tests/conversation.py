"""The conversation a request carried, without the ``<workspace>`` block that ends every request."""

from __future__ import annotations

from typing import Any


def conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` without a trailing ``<workspace>`` message (it is checked in ``tests/workspace/``)."""
    last = messages[-1] if messages else {}
    if last.get("role") == "user" and str(last.get("content", "")).startswith("<workspace>"):
        return messages[:-1]
    return messages
