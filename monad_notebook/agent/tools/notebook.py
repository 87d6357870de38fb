"""The ``notebook_history`` tool: what the user ran in earlier cells, and what came out.

IPython keeps every cell's input and the value it displayed (``Out``); printed text
is not kept by the kernel, so only values can be shown. Each input and value is redacted
whole before it is clipped: a clip that cut a token or a URL's password in two would leave
pieces the redactor no longer recognises.
"""

from __future__ import annotations

from typing import Any

from monad_notebook.agent.tools.base import Tool, ToolContext, reads, tool

_MAX_CELLS = 50
_INPUT_CHARS = 3000
_OUTPUT_CHARS = 1500
_PLACEHOLDER = "[REDACTED:"
_PLACEHOLDER_CHARS = 220


def _clip(text: str, limit: int) -> str:
    """Head and tail of ``text``, cut outside the ``[REDACTED:kind]`` placeholders."""
    if len(text) <= limit:
        return text
    half = limit // 2
    head_end, tail_start = _outside_placeholder(text, half, False), _outside_placeholder(text, len(text) - half, True)
    return f"{text[:head_end]}\n[... {tail_start - head_end} characters not shown ...]\n{text[tail_start:]}"


def _outside_placeholder(text: str, at: int, forward: bool) -> int:
    opening = text.rfind(_PLACEHOLDER, max(0, at - _PLACEHOLDER_CHARS), at + len(_PLACEHOLDER) - 1)
    closing = text.find("]", opening) if opening >= 0 else -1
    if closing < at:
        return at
    return closing + 1 if forward else opening


def _plain(shell: Any, value: Any) -> str:
    try:
        data, _ = shell.display_formatter.format(value, include=["text/plain"])
        return str(data.get("text/plain", ""))
    except Exception:
        try:
            return repr(value)
        except Exception as exc:
            return f"<repr failed: {type(exc).__name__}>"


@reads
@tool
def notebook_history(ctx: ToolContext, n: int = 5) -> str:
    """Show the user's most recent notebook cells: their code and the value each displayed.

    Args:
        n: How many recent cells to show.
    """
    shell = ctx.shell
    history = getattr(shell, "history_manager", None)
    if history is None:
        return "no notebook history: this session is not running inside an IPython kernel"
    n = max(1, min(n, _MAX_CELLS))
    inputs: list[str] = list(history.input_hist_raw)
    outputs: dict[int, Any] = dict(history.output_hist)
    current = getattr(shell, "execution_count", len(inputs))
    numbers = [i for i in range(1, min(len(inputs), current)) if inputs[i].strip()][-n:]
    if not numbers:
        return "no earlier cells in this notebook session"
    cells = []
    for number in numbers:
        text = f"In [{number}]:\n{_clip(ctx.redact(inputs[number].rstrip()), _INPUT_CHARS)}"
        if number in outputs:
            value = ctx.redact(_plain(shell, outputs[number]).rstrip())
            text += f"\nOut[{number}]:\n{_clip(value, _OUTPUT_CHARS)}"
        cells.append(text)
    return "\n\n".join(cells) + "\n\n(printed output is not kept by the kernel; only displayed values appear)"


TOOLS: list[Tool] = [notebook_history]
