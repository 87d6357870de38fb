"""The tool runner: the tools a configuration offers, and the one way the turn runs a call.

The session lends its tools what they may see of the world (``ToolServices``: the kernel, the
store, memory, recall, the approval gate, the open notebook, the workspace record that notes
what each call changed in the kernel); each configuration in force makes
one runner from them and its settings, and each call gets a fresh :class:`ToolContext`, so what
one call reports (redacted, its outcome, its images) never leaks into the next.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from monad_notebook.agent.tools.base import READS, Tool, ToolContext, ToolOutput, ToolStore, Waited
from monad_notebook.agent.tools.consent import refused_unless_asked
from monad_notebook.agent.tools.mcp_approval import turned_off
from monad_notebook.agent.tools.registry import run_tool
from monad_notebook.config import Config
from monad_notebook.memory import resolve_scope
from monad_notebook.messages import ToolCall

if TYPE_CHECKING:
    from collections.abc import Callable

    from monad_notebook.context.recall.service import RecallService
    from monad_notebook.memory.service import MemoryService
    from monad_notebook.notebook.frontend import NotebookFrontend
    from monad_notebook.redaction.redactor import Redactor
    from monad_notebook.workspace.record import WorkspaceRecord


class KeptChange(Protocol):
    """One call's change, kept while it runs (``rewind.Change``)."""

    notes: list[str]  # lines the user and the model should read (a file too large to keep)

    def finish(self) -> None: ...


class Keeping(Protocol):
    """What the session's rewind lends the tools (``rewind.KernelRewind``): what each call changes, kept."""

    def change(self, made_by: str, code: str = "") -> KeptChange | None: ...
    def cell_keeper(self) -> Callable[[str], Callable[[], None] | None]: ...


@dataclass
class ToolServices:
    """What the session lends its tools whatever the configuration; the magic sets ``approve`` once the session
    exists, and a user may hand the session another ``namespace``."""

    session: str
    namespace: dict[str, Any]
    shell: Any
    store: ToolStore
    memory: MemoryService
    recall: RecallService
    approve: Callable[..., bool | None] | None = None
    notebook: NotebookFrontend | None = None
    root: str | Path | None = None  # where the file tools may read (``Session(root=...)``); None: configured
    workspace: WorkspaceRecord | None = None  # the record each call's changes to the kernel are noted in
    rewind: Keeping | None = None  # keeps what each call changes, so its turn can be undone


class ToolRunner:
    def __init__(self, tools: dict[str, Tool], config: Config, services: ToolServices, redactor: Redactor) -> None:
        """The tools ``config`` offers, run with ``services`` and the configuration's ``redactor``.

        The file tools read under the session's own root, else ``tools.files.root``, else the
        working directory at each call (a notebook's ``%cd`` moves it).
        """
        self.tools = tools
        self.config = config
        self.services = services
        self.root = services.root or config.tools.files.root
        self.redactor = redactor
        self.memory_scope = resolve_scope(config.agent.name)

    def context(self, *, sees_images: bool = False, written: str = "") -> ToolContext:
        """What one call may see of the world, fresh (what it reports back starts empty).

        ``written``: the call was read from the model's text, in that form; it then asks before it changes anything.
        """
        services, cfg = self.services, self.config
        return ToolContext(
            session=services.session,
            namespace=services.namespace,
            root=Path(self.root or os.getcwd()).expanduser().resolve(),
            shell=services.shell,
            store=services.store,
            python_approval=cfg.tools.python.approval,
            python_timeout=cfg.tools.python.timeout_seconds,
            namespace_timeout=cfg.tools.namespace.timeout_seconds,
            approve=services.approve,
            redactor=self.redactor,
            output_max_chars=cfg.context.tool_output.max_chars,
            memory=services.memory,
            memory_scope=self.memory_scope,
            recall=services.recall if cfg.context.recall.enabled else None,
            images_config=cfg.context.images,
            sees_images=sees_images,
            notebook=services.notebook,
            workspace=services.workspace,
            written=written,
            cell_keeper=services.rewind.cell_keeper() if services.rewind is not None else None,
        )

    def run(self, call: ToolCall, *, sees_images: bool = False, waited: Waited | None = None) -> ToolOutput:
        """Run one call (a tool problem becomes a one-line ``error: ...`` result; only an interrupt raises).

        ``sees_images``: the model is sent images now (an endpoint that refused them stops that mid-session).
        ``waited``: where the time the call's questions waited for the user is added, read even after an interrupt.
        """
        ctx = self.context(sees_images=sees_images, written=call.recovered)
        if waited is not None:
            ctx.waited = waited
        found = self.tools.get(call.name)
        refused = (
            refused_unless_asked(ctx, found, call.arguments)
            if found is not None
            else turned_off(self.config.mcp_servers, call.name)
        )
        if refused is not None:
            return ToolOutput(refused, outcome=ctx.outcome or "refused")
        change = self._kept_change(call, found)
        try:
            text = run_tool(self.tools, ctx, call.name, call.arguments)
        finally:  # an interrupted call may have bound names or written files too
            if change is not None:
                change.finish()
            if self.services.workspace is not None:
                self.services.workspace.take(call.id, code=argument_text(call.arguments))
        if change is not None and change.notes:
            text = "\n".join([text, *(f"note: {note}" for note in change.notes)])
        return ToolOutput(text, redacted=ctx.redacted, outcome=ctx.outcome, images=tuple(ctx.images))

    def _kept_change(self, call: ToolCall, tool: Tool | None) -> KeptChange | None:
        """Rewind keeps what a call of a tool that may change anything is about to change (None: nothing to keep)."""
        rewind = self.services.rewind
        if rewind is None or tool is None or tool.effect == READS:
            return None
        return rewind.change(call.id, argument_text(call.arguments))


def argument_text(arguments: str) -> str:
    """The text a call's JSON arguments hold (the python tool's code), for the workspace record to read names in."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    strings: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            strings.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return "\n".join(strings)
