"""The user's consent before a tool changes anything, and why a call read from the model's text always asks.

A call the model wrote in its text instead of making it through the API (``agent/text_calls.py``)
may be a misreading: an example its answer showed, a call it meant to describe. So a call of a
tool that can change anything (``Tool.effect``: python, the cell tools, MCP tools, memory, a
user's own tool) asks first when it was read from the text, whatever its approval setting ("auto"
included), and the question says where the call came from; where nobody can answer (nbclient,
papermill, a script) it does not run, and its result says why in one line. A tool that only reads
runs as an API call does. A call turned "off" stays off: nothing here turns a tool on.
"""

from __future__ import annotations

import json

from monad_notebook.agent.tools.base import CHANGES, Tool, ToolContext
from monad_notebook.approval.gate import PYTHON, TOOL, written

NOBODY_FOR_WRITTEN = (
    "not run: this call was read from the model's text rather than made through the API, so it is asked about "
    "whatever the approval setting, and nobody can answer here (nbclient, papermill or a script); use a model "
    "that calls tools through the API, or run the notebook interactively"
)
DECLINED_CALL = "not run: the user skipped this call"


def must_ask(ctx: ToolContext, mode: str) -> bool:
    """Whether a call asks first under approval ``mode`` ("ask" or "auto"): always, when read from the text."""
    return mode == "ask" or bool(ctx.written)


def ask(ctx: ToolContext, text: str, subject: str = PYTHON) -> bool | None:
    """The user's answer about ``text`` (True, False), or None when nobody can answer.

    A question about python's code goes to the approver as ``approve(code)``, any other with its
    ``subject``, marked when the call was read from the model's text.
    """
    if ctx.approve is None:
        return None
    if ctx.written:
        return ctx.approve(text, subject=written(subject))
    return ctx.approve(text) if subject == PYTHON else ctx.approve(text, subject=subject)


def refused_unless_asked(ctx: ToolContext, tool: Tool, arguments: str) -> str | None:
    """For a tool that changes things without asking: a call read from the text asks here first.

    None when the call may run (an API call, a tool that only reads or asks itself, or a yes).
    """
    if not ctx.written or tool.effect != CHANGES:
        return None
    answer = ask(ctx, call_text(tool.name, arguments), TOOL + tool.name)
    if answer is None:
        return NOBODY_FOR_WRITTEN
    return None if answer else DECLINED_CALL


def call_text(name: str, arguments: str) -> str:
    """A call as the user approves it: the tool and its exact arguments."""
    try:
        shown = json.dumps(json.loads(arguments or "{}"), ensure_ascii=False, indent=2, sort_keys=True)
    except (json.JSONDecodeError, TypeError):
        shown = arguments
    return f"tool {name}, arguments:\n{shown}"
