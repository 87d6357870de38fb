"""The user's own tools: the MCP servers agents.json lists under ``mcpServers``, as the agent's tools.

Each server is started when a turn first needs its tool list (never at ``%load_ext``), through
the official ``mcp`` SDK: a ``command`` runs as a local process speaking stdio, a ``url`` is a
streamable HTTP endpoint. The SDK is asynchronous; every server's connection lives on one event
loop in a daemon thread of its own, so the kernel's loop and the turn's thread never run it.

A server is given ``timeoutSeconds`` to start and to answer each call. One that dies or stops
answering is started again once, at the next call that needs it; after that it is down for
this configuration, and says so in one line (``%monad status`` lists each server's state). An
edit of its entry in agents.json starts it afresh. Processes are stopped when the session
closes, and at the latest when the kernel exits.

Results go back as text through the same chokepoints as a built-in tool's: redaction first,
then truncation with its spill, eviction, recall's index and the panel. A result longer than
``MAX_RESULT_CHARS`` is redacted whole, then cut, with a line that says so; images and binary
resources are described, not sent.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import logging
import tempfile
import threading
import weakref
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from monad_notebook.agent.tools.base import ASKS, Tool, ToolContext
from monad_notebook.agent.tools.mcp_approval import refusal, tool_name
from monad_notebook.config_schema import McpServerConfig
from monad_notebook.daemon import Daemon
from monad_notebook.errors import ToolError

log = logging.getLogger(__name__)

MAX_RESULT_CHARS = 2_000_000
MAX_DESCRIPTION = 1024
_STDERR_TAIL = 300
_STOP_WAIT = 5.0
_DEATH_WAIT = 1.0  # how long a failed call's connection gets to show it is gone
INSTALL_HINT = "install the MCP SDK: pip install 'monad-notebook[mcp]'"


@dataclass(frozen=True)
class ServerStatus:
    """What ``%monad status`` says of one server."""

    name: str
    state: str  # off | not started | ready | down
    detail: str
    tools: tuple[str, ...]
    left_out: tuple[str, ...] = ()  # tools with a schema the model cannot be given, or a name already taken
    off: tuple[str, ...] = ()  # tools turned off (approval "off"): never offered


class _Loop:
    """One event loop in a daemon thread, started on first use, for every server's connection."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                Daemon("monad-mcp", loop.run_forever).start()
                self._loop = loop
            return self._loop


_LOOP = _Loop()
_OPEN: weakref.WeakSet[McpServer] = weakref.WeakSet()


def _close_all() -> None:
    """At the kernel's exit: no server process is left behind."""
    for server in list(_OPEN):
        server.close()


atexit.register(_close_all)


class McpServer:
    """One configured server: started on demand, restarted once after a failure, then reported down."""

    def __init__(self, name: str, cfg: McpServerConfig) -> None:
        self.name = name
        self.cfg = cfg
        self.state = "not started"
        self.detail = ""
        self.tools: list[Any] = []  # the SDK's Tool objects, as listed at start
        self.left_out: list[str] = []  # tools not offered: a schema the model cannot be given, or a name taken
        self._restarts = 0
        self._lock = threading.Lock()
        self._session: Any = None
        self._stop: asyncio.Event | None = None
        self._task: concurrent.futures.Future[None] | None = None
        self._errlog: Any = None

    # --- lifecycle ------------------------------------------------------------------

    def ensure_started(self) -> bool:
        """Start the server if it is not running (at most one restart); False, with ``detail``, if it is down."""
        with self._lock:
            if self.state == "ready" and self._task is not None and not self._task.done():
                return True
            if self.state == "down":
                return False
            if self.state == "ready":  # it stopped since: one more start
                self._failed("stopped")
                if self.state == "down":
                    return False
            return self._start()

    def _start(self) -> bool:
        try:
            import mcp  # noqa: F401
        except ImportError:
            self.state, self.detail = "down", f"the mcp package is not installed: {INSTALL_HINT}"
            return False
        loop = _LOOP.get()
        started: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
        if self._errlog is not None:
            self._errlog.close()
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - the server's life
        self._task = asyncio.run_coroutine_threadsafe(self._serve(started), loop)
        _OPEN.add(self)
        seconds = self.cfg.timeout_seconds
        try:
            listed = started.result(timeout=seconds)
        except concurrent.futures.TimeoutError:
            self._end()
            return self._failed(f"did not start within {seconds:g} s")
        except Exception as exc:
            self._end()
            return self._failed(f"did not start ({_reason(exc)}{self._stderr_tail()})")
        except KeyboardInterrupt:
            self._end()
            self.state, self.detail = "not started", "interrupted while starting"
            raise
        self.tools, self.left_out = usable_tools(listed)
        self.state, self.detail = "ready", f"{len(self.tools)} tools"
        return True

    def _failed(self, why: str) -> bool:
        """Count a failure: the first leaves one restart, the second marks the server down."""
        self._restarts += 1
        if self._restarts > 1:
            self.state, self.detail = "down", f"{why}; not restarted again (edit its entry in agents.json to retry)"
        else:
            self.state, self.detail = "not started", f"{why}; started again when next needed"
        return False

    async def _serve(self, started: concurrent.futures.Future[list[Any]]) -> None:
        from mcp import ClientSession

        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                await session.initialize()
                listed: list[Any] = []
                cursor = None
                while True:
                    page = await session.list_tools(cursor) if cursor else await session.list_tools()
                    listed.extend(page.tools)
                    cursor = getattr(page, "next_cursor", None)
                    if not cursor:
                        break
                self._session = session
                started.set_result(listed)
                await self._stop.wait()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._session = None

    def _transport(self) -> Any:
        cfg = self.cfg
        if cfg.command is not None:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(
                command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None, cwd=cfg.cwd
            )
            return stdio_client(params, errlog=self._errlog)
        import httpx2  # the HTTP client the SDK is built on
        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(headers=dict(cfg.headers), timeout=cfg.timeout_seconds)
        return streamable_http_client(cfg.url, http_client=client)

    def _stderr_tail(self) -> str:
        errlog = self._errlog
        if errlog is None:
            return ""
        with contextlib.suppress(Exception):
            errlog.seek(0)
            lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
            if lines:
                return f"; it said: {lines[-1][-_STDERR_TAIL:]}"
        return ""

    def _end(self) -> None:
        """Stop the connection (and the process): a clean exit first, then a cancel.

        A server that never got through its start is not waiting for ``stop``: it is cancelled
        at once, rather than after ``_STOP_WAIT`` more seconds of a turn waiting for nothing.
        """
        task, stop, loop = self._task, self._stop, _LOOP.get()
        self._task = None
        if task is None:
            return
        if stop is not None and self._session is not None:
            loop.call_soon_threadsafe(stop.set)
            try:
                task.result(timeout=_STOP_WAIT)
                return
            except Exception:
                pass
        task.cancel()
        with contextlib.suppress(Exception):
            task.result(timeout=_STOP_WAIT)

    def close(self) -> None:
        with self._lock:
            self._end()
            if self.state == "ready":
                self.state, self.detail = "not started", "stopped"
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None
            _OPEN.discard(self)

    # --- calls ----------------------------------------------------------------------

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """The tool's answer as text; a problem raises ToolError with one line for the model."""
        if not self.ensure_started():
            raise ToolError(f"MCP server {self.name!r} is down: {self.detail}")
        session, seconds = self._session, self.cfg.timeout_seconds
        future = asyncio.run_coroutine_threadsafe(session.call_tool(tool, arguments), _LOOP.get())
        try:
            result = future.result(timeout=seconds)
        except concurrent.futures.TimeoutError:
            future.cancel()
            with self._lock:
                self._end()
                self._failed(f"{tool} gave no answer within {seconds:g} s")
            raise ToolError(f"MCP server {self.name!r}: {tool} gave no answer within {seconds:g} s") from None
        except KeyboardInterrupt:
            future.cancel()
            raise
        except Exception as exc:
            with self._lock:
                alive = self._alive_after(exc)
                if not alive:
                    self._end()
                    self._failed(f"it stopped during a call to {tool}")
            why = _reason(exc) + ("" if alive else self._stderr_tail())
            raise ToolError(f"MCP server {self.name!r}: {tool} failed ({why})") from None
        return result_text(result)

    def _alive_after(self, exc: Exception) -> bool:
        """Whether the connection outlived a failed call: a closed one ends its task within a moment."""
        task = self._task
        if task is None or "connection closed" in str(exc).lower():
            return False
        try:
            task.exception(timeout=_DEATH_WAIT)
        except concurrent.futures.TimeoutError:
            return True
        except BaseException:
            return False
        return False

    def status(self) -> ServerStatus:
        if not self.cfg.turned_on():
            return ServerStatus(self.name, "off", f'mcpServers.{self.name}.approval is "off": not started', ())
        names = tuple(t.name for t in self.tools)
        off = tuple(name for name in names if self.cfg.approval_for(name) == "off")
        return ServerStatus(self.name, self.state, self.detail, names, tuple(self.left_out), off)


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)  # an exception group (anyio's task groups raise them)
    if isinstance(inner, (list, tuple)) and inner:
        return _reason(inner[0])
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


def usable_tools(listed: list[Any]) -> tuple[list[Any], list[str]]:
    """Tools whose input schema is a JSON object schema; the others, by name, to report."""
    good, broken = [], []
    for item in listed:
        schema = getattr(item, "input_schema", None)
        properties = schema.get("properties", {}) if isinstance(schema, dict) else None
        name = getattr(item, "name", "")
        if isinstance(name, str) and name and isinstance(properties, dict) and schema.get("type", "object") == "object":
            good.append(item)
        else:
            broken.append(str(name)[:80] or "(unnamed)")
    return good, broken


def result_text(result: Any) -> str:
    """A call's content as text: text parts whole, resources' text, the rest described in one line each."""
    parts: list[str] = []
    for item in getattr(result, "content", None) or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(str(item.text))
        elif kind in ("image", "audio"):
            size = len(getattr(item, "data", "") or "") * 3 // 4
            parts.append(f"({getattr(item, 'mime_type', kind)} from the server, about {size:,} bytes: not shown)")
        elif kind == "resource":
            resource = item.resource
            text = getattr(resource, "text", None)
            parts.append(str(text) if text is not None else f"(binary resource {resource.uri}: not shown)")
        elif kind == "resource_link":
            parts.append(f"(resource {getattr(item, 'uri', '')})")
        else:
            parts.append(f"({kind or 'unknown'} content: not shown)")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    text = "\n".join(parts)
    if getattr(result, "is_error", False):
        return f"error: {text or 'the tool reported an error'}"
    return text


def bounded(text: str, ctx: ToolContext) -> str:
    """At most ``MAX_RESULT_CHARS`` of a result, redacted whole before it is cut (nothing cut is kept)."""
    if len(text) <= MAX_RESULT_CHARS:
        return text  # redacted by the cascade, like any tool's result
    kept = ctx.redact(text)[:MAX_RESULT_CHARS]
    return f"{kept}\n(the server answered {len(text):,} characters; the first {MAX_RESULT_CHARS:,} are kept)"


class McpServers:
    """The configured servers of one session, kept across config reloads while their entry is unchanged."""

    def __init__(self) -> None:
        self._servers: dict[str, McpServer] = {}

    def follow(self, configured: dict[str, McpServerConfig]) -> None:
        """Take the configured servers: removed or changed ones are stopped, new ones wait to be needed."""
        for name, server in list(self._servers.items()):
            if configured.get(name) != server.cfg:
                server.close()
                del self._servers[name]
        for name, cfg in configured.items():
            self._servers.setdefault(name, McpServer(name, cfg))

    def tools(self, configured: dict[str, McpServerConfig]) -> list[Tool]:
        """Every configured server's tools (starting each server now if it was not), under names of their own."""
        self.follow(configured)
        offered: list[Tool] = []
        taken: set[str] = set()
        for server in self._servers.values():
            if not server.cfg.turned_on() or not server.ensure_started():
                continue
            for listed in server.tools:
                if server.cfg.approval_for(listed.name) == "off":
                    continue
                name = tool_name(server.name, listed.name)
                if name in taken:
                    if listed.name not in server.left_out:
                        server.left_out.append(listed.name)
                    continue
                taken.add(name)
                offered.append(_as_tool(server, listed, name))
        return offered

    def statuses(self) -> list[ServerStatus]:
        return [server.status() for server in self._servers.values()]

    def close(self) -> None:
        for server in self._servers.values():
            server.close()


def _as_tool(server: McpServer, listed: Any, name: str) -> Tool:
    schema = dict(listed.input_schema)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    about = (listed.description or listed.title or listed.name).strip()
    description = f"[MCP server {server.name}] {about}"[:MAX_DESCRIPTION]

    def call(ctx: ToolContext, /, **arguments: Any) -> str:  # an argument may be called ctx
        refused = refusal(server.name, server.cfg, listed.name, arguments, ctx)
        if refused is not None:
            return ctx.refuse(refused)
        return bounded(server.call(listed.name, arguments), ctx)

    return Tool(name=name, description=description, parameters=schema, func=call, effect=ASKS)
