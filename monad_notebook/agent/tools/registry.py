"""The default tool set, and the one place tool calls are executed for the loop.

``run_tool`` turns every tool problem (unknown name, malformed JSON, bad arguments, a
crash inside the tool) into a one-line ``error: ...`` result the model can act on, so a
bad call never ends the turn. Only an interrupt propagates. Every result then passes
``safe_text``, so what reaches the transcript is always storable, sendable text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from monad_notebook.agent.tools import cells, files, memory, namespace, notebook, python, recall, recovery
from monad_notebook.agent.tools.base import Tool, ToolContext
from monad_notebook.errors import ToolError

_CONTROL_BYTES = bytes([*range(0, 9), *range(11, 32), 127])  # single bytes in UTF-8: safe to delete there
_C1 = re.compile(rb"\xc2[\x80-\x9f]")
_C1_SEQUENCES = [chr(code).encode("utf-8") for code in range(0x80, 0xA0)]
_ERROR_CHARS = 500
_MAX_ANSI_SEQUENCES = 8_000_000  # beyond this, a flood of escapes only loses its ESC bytes, in bounded time


def default_tools(*, python_approval: str) -> list[Tool]:
    """The tools that see the kernel; ``python`` is left out when approval is "off"."""
    tools = [*python.TOOLS, *namespace.TOOLS, *files.TOOLS, *notebook.TOOLS]
    if python_approval == "off":
        tools = [t for t in tools if t.name != "python"]
    return tools


def configured_tools(
    *,
    python_approval: str,
    persist_raw: bool,
    recall_on: bool = False,
    retrieval_on: bool = False,
    sees_images: bool = False,
    notebook_approval: str = "off",
    extra: list[Tool] | None = None,
) -> dict[str, Tool]:
    """The session's tool set by name: kernel tools, memory, view_image (when the model sees images),
    recovery (when raw outputs are kept), recall (when on), read_message (wherever recall's passages are
    shown: the tool or the ``<related_context>`` block), the notebook tools (unless
    ``notebook_approval`` is "off": no notebook is open, or the user turned them off), ``extra``.

    A tool in ``extra`` replaces a built-in one of the same name.
    """
    tools = [*default_tools(python_approval=python_approval), *memory.TOOLS]
    if notebook_approval != "off":
        tools.extend(cells.TOOLS)
    if sees_images:
        tools.extend(recovery.IMAGE_TOOLS)
    if persist_raw:
        tools.extend(recovery.TOOLS)
    if recall_on:
        tools.extend(recall.TOOLS)
    if recall_on or retrieval_on:
        tools.extend(recovery.MESSAGE_TOOLS)
    return {t.name: t for t in [*tools, *(extra or [])]}


def safe_text(value: Any) -> str:
    """Any tool result as clean text: decoded, no control characters, ANSI or lone surrogates.

    Linear in the input and never truncating: a 50 MB result comes back whole, for the
    truncation stage to cut with its raw spill.
    """
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if files.looks_binary(data[: files.SNIFF_BYTES]):
            return f"binary data, {len(data)} bytes, not shown"
        value = data.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        try:
            value = str(value)
        except Exception as exc:
            value = f"<{type(value).__name__} could not be converted to text: {type(exc).__name__}>"
    text = python.strip_ansi(value) if value.count("\x1b") <= _MAX_ANSI_SEQUENCES else value
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates, e.g. from bytes decoded with surrogateescape
        cleaned = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        data = cleaned.replace("\ufffd" * 3, "\ufffd").encode("utf-8")
    data = data.translate(None, _CONTROL_BYTES)
    if _C1.search(data):
        for sequence in _C1_SEQUENCES:
            data = data.replace(sequence, b"")
    return data.decode("utf-8")


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 3] + "..."


def run_tool(tools: dict[str, Tool], ctx: ToolContext, name: str, arguments_json: str) -> str:
    """Run one tool call; never raises for a tool problem, only for KeyboardInterrupt."""
    found = tools.get(name)
    if found is None and name in cells.NAMES:
        return f"error: {name}: {cells.unavailable(ctx)}"
    if found is None:
        available = ", ".join(sorted(tools)) or "none"
        return safe_text(f"error: unknown tool {_one_line(str(name))[:100]!r}; available tools: {available}")
    try:
        arguments = json.loads(arguments_json) if arguments_json and arguments_json.strip() else {}
    except (json.JSONDecodeError, TypeError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not text"
        return f"error: {name}: arguments are not valid JSON ({reason}); send a JSON object"
    if not isinstance(arguments, dict):
        return f"error: {name}: arguments must be a JSON object, got {type(arguments).__name__}"
    try:
        result = found.run(ctx, arguments)
    except ToolError as exc:
        message = str(exc)
        prefix = "" if message.startswith(f"{name}:") else f"{name}: "
        return safe_text(f"error: {prefix}{_one_line(message)}")
    except (Exception, SystemExit) as exc:
        return safe_text(f"error: {name}: {type(exc).__name__}: {_one_line(str(exc))}")
    return safe_text(result)
