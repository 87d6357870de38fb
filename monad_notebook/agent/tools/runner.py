"""The tool runner: the tools a configuration offers, and the one way the turn runs a call.

The session lends its tools what they may see of the world (``ToolServices``: the kernel, the
store, memory, recall, the approval gate, the open notebook) once; each configuration in force
makes one runner from them and its settings (``ToolRunner.for_config``), and each call gets a
fresh :class:`ToolContext` from it, so what one call reports (redacted, its outcome, its images)
never leaks into the next.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monad_notebook.agent.tools.base import Tool, ToolContext, ToolOutput, ToolStore
from monad_notebook.agent.tools.registry import run_tool
from monad_notebook.config import Config
from monad_notebook.messages import ToolCall

if TYPE_CHECKING:
    from collections.abc import Callable

    from monad_notebook.context.recall.service import RecallService
    from monad_notebook.memory.service import MemoryService
    from monad_notebook.notebook.frontend import NotebookFrontend
    from monad_notebook.redaction.redactor import Redactor


@dataclass(frozen=True)
class ToolServices:
    """What the session lends its tools, the same whatever the configuration."""

    session: str
    namespace: dict[str, Any]
    shell: Any
    store: ToolStore
    memory: MemoryService
    recall: RecallService
    approve: Callable[..., bool | None] | None = None
    notebook: NotebookFrontend | None = None


class ToolRunner:
    def __init__(self, tools: dict[str, Tool], context: ToolContext, root: str | Path | None = None) -> None:
        """``root``: where the file tools may read (None: the kernel's working directory at each call)."""
        self.tools = tools
        self.context = context
        self.root = root

    @classmethod
    def for_config(
        cls,
        tools: dict[str, Tool],
        config: Config,
        services: ToolServices,
        *,
        root: str | Path | None,
        redactor: Redactor,
        memory_scope: str,
    ) -> ToolRunner:
        """The runner of a configuration: its tools, and the context each of their calls starts from.

        ``root``: the session's own file root (``Session(root=...)``), else ``tools.files.root``, else the
        working directory, which a notebook's ``%cd`` moves.
        """
        python = config.tools.python
        context = ToolContext(
            session=services.session,
            namespace=services.namespace,
            root=Path(),
            shell=services.shell,
            store=services.store,
            python_approval=python.approval,
            python_timeout=python.timeout_seconds,
            approve=services.approve,
            redactor=redactor,
            output_max_chars=config.context.tool_output.max_chars,
            memory=services.memory,
            memory_scope=memory_scope,
            recall=services.recall if config.context.recall.enabled else None,
            images_config=config.context.images,
            notebook=services.notebook,
        )
        return cls(tools, context, root or config.tools.files.root)

    def lend(self, **changes: Any) -> ToolRunner:
        """The same tools with what the session lends them changed (its namespace, its approval gate)."""
        return ToolRunner(self.tools, replace(self.context, **changes), self.root)

    def run(self, call: ToolCall, *, sees_images: bool = False) -> ToolOutput:
        """Run one call (a tool problem becomes a one-line ``error: ...`` result; only an interrupt raises).

        ``sees_images``: the model is sent images now (an endpoint that refused them stops that mid-session).
        """
        root = Path(self.root or os.getcwd()).expanduser().resolve()
        ctx = replace(self.context, root=root, redacted=False, outcome="", images=[], sees_images=sees_images)
        text = run_tool(self.tools, ctx, call.name, call.arguments)
        return ToolOutput(text, redacted=ctx.redacted, outcome=ctx.outcome, images=tuple(ctx.images))
