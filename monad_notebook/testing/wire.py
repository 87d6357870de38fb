"""What the fake server says, in OpenAI's wire format: answers, stream chunks, errors, embeddings."""

from __future__ import annotations

import hashlib
import struct
import time
from collections.abc import Iterator
from typing import Any

from monad_notebook.messages import new_id
from monad_notebook.provider import ChatResponse
from monad_notebook.testing.scripted import stream_words

_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error"}


def no_such_path() -> dict[str, Any]:
    """What llama.cpp's server answers for a path it does not route."""
    return {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}}


def error(message: str, *, status: int = 500, code: str | None = None) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "rate_limit_error" if status == 429 else "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def hash_vector(content: str, dims: int) -> list[float]:
    """The fake server's embedding of ``content``: unit length, stable, unrelated to meaning."""
    raw = b""
    counter = 0
    while len(raw) < dims * 4:
        raw += hashlib.sha256(f"{counter}:{content}".encode()).digest()
        counter += 1
    values = [v / 2**31 - 1.0 for v in struct.unpack(f"<{dims}I", raw[: dims * 4])]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


def completion(body: dict[str, Any], response: ChatResponse, usage: dict[str, Any] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": response.content or None}
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in response.tool_calls
        ]
    return {
        "id": f"chatcmpl-fake{new_id()[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": response.finish_reason}],
        "usage": usage,
    }


def chunks(body: dict[str, Any], response: ChatResponse, usage: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    """The answer as OpenAI streams it: role, text deltas, tool-call deltas by index, finish, usage.

    Argument fragments of parallel tool calls are interleaved, which the wire format allows,
    so a client that assembles calls by arrival order instead of by index gets caught.
    """
    base = {"id": f"chatcmpl-fake{new_id()[:12]}", "object": "chat.completion.chunk", "created": int(time.time())}
    base["model"] = body.get("model")
    if usage is not None:
        base["usage"] = None

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant", "content": ""})
    for word in stream_words(response.content):
        yield chunk({"content": word})
    for index, call in enumerate(response.tool_calls):
        head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        yield chunk({"tool_calls": [head]})
    fragments = [[c.arguments[i : i + 8] for i in range(0, len(c.arguments), 8)] for c in response.tool_calls]
    for step in range(max((len(f) for f in fragments), default=0)):
        for index, parts in enumerate(fragments):
            if step < len(parts):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": parts[step]}}]})
    yield chunk({}, response.finish_reason)
    if usage is not None:
        yield {**base, "choices": [], "usage": usage}
