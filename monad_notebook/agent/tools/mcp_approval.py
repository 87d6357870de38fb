"""What a call of the user's MCP tool needs before it is made: its approval, and the line when it is off.

Each server's ``approval`` (or one tool's own ``tools.<name>.approval``) says whether a call asks
first, runs, or is off. A tool turned off, or every tool of a server turned off, is never offered;
a call of one anyway (from memory, or written as text) gets one line naming exactly what is off.
"""

from __future__ import annotations

import json
import re
from typing import Any

from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.consent import DECLINED_CALL, NOBODY_FOR_WRITTEN, ask, must_ask
from monad_notebook.config_schema import McpServerConfig

PREFIX = "mcp__"  # no built-in tool starts with it, so a server's tool never takes a built-in name
MAX_NAME = 64  # the longest tool name the Chat Completions API takes


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``mcp__<server>__<tool>``, cut to the API's 64 characters."""
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", f"{PREFIX}{server}__{tool}")
    return clean[:MAX_NAME]


def call_text(server: str, tool: str, arguments: dict[str, Any]) -> str:
    """A call as the user approves it: the server, the tool and its exact arguments."""
    shown = json.dumps(arguments, ensure_ascii=False, indent=2, sort_keys=True, default=str)
    return f"MCP server {server}, tool {tool}, arguments:\n{shown}"


def off_line(server: str, cfg: McpServerConfig, tool: str) -> str:
    """A call of a tool turned off, in one line naming what is off: the tool itself, or its whole server."""
    if tool in cfg.tools and cfg.tools[tool].approval == "off":
        return (
            f"not run: the tool {tool} of the MCP server {server} is turned off "
            f'(mcpServers.{server}.tools.{tool}.approval is "off")'
        )
    return f'not run: the MCP server {server} is turned off (mcpServers.{server}.approval is "off")'


def turned_off(servers: dict[str, McpServerConfig], name: str) -> str | None:
    """The line a call of ``name`` gets when it names a tool that is turned off, or a server's; None otherwise.

    Such a tool is never offered, but a model may still call it (from memory, or written as text).
    """
    if not name.startswith(PREFIX):
        return None
    for server, cfg in sorted(servers.items(), key=lambda item: -len(item[0])):
        if not name.startswith(tool_name(server, "")):
            continue
        tool = next((t for t in cfg.tools if tool_name(server, t) == name), name.removeprefix(tool_name(server, "")))
        return off_line(server, cfg, tool) if cfg.approval_for(tool) == "off" else None
    return None


def refusal(server: str, cfg: McpServerConfig, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> str | None:
    """Why the call may not go ahead (``approval`` off, declined, nobody to ask), or None to make it."""
    mode = cfg.approval_for(tool)
    where = f"mcpServers.{server}"
    if mode == "off":
        return off_line(server, cfg, tool)
    if not must_ask(ctx, mode):
        return None
    answer = ask(ctx, call_text(server, tool, arguments), f"mcp:{server}")
    if answer is None and ctx.written:
        return NOBODY_FOR_WRITTEN
    if answer is None:
        return (
            f"not run: nobody approved this call (nobody can answer here); to allow it, set {where}.approval"
            ' (or its tools.<name>.approval) to "auto" in agents.json'
        )
    return None if answer else DECLINED_CALL
