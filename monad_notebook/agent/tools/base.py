"""Tool plumbing: a JSON schema generated from a Python signature, and safe execution.

A tool is a plain function whose first parameter is the ToolContext; the remaining
parameters become the schema. The docstring's first paragraph is the description and
its ``Args:`` section describes the parameters.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from monad_notebook.config_schema import ImagesConfig, ToolOutputConfig
from monad_notebook.errors import ToolError
from monad_notebook.images.image import Image
from monad_notebook.store.base import Images, Sessions, ToolOutputs

if TYPE_CHECKING:
    from monad_notebook.context.recall.service import RecallService
    from monad_notebook.memory.service import MemoryService
    from monad_notebook.notebook.frontend import NotebookFrontend
    from monad_notebook.redaction.redactor import Redactor
    from monad_notebook.workspace.record import WorkspaceRecord


class ToolStore(ToolOutputs, Images, Sessions, Protocol):
    """What tools read of the store: saved full outputs, the images results showed (in a handed-off session's
    parent too)."""


_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}

# What a tool does to the world, which decides how a call read from the model's text is asked about
READS = "reads"  # it only reads (a file, the kernel's names, the notebook, the session): runs as any call does
ASKS = "asks"  # it can change things and asks the user itself (python, the cell tools, MCP tools)
CHANGES = "changes"  # it can change things and does not ask (memory, a user's own tool): the runner asks for it


@dataclass
class ToolContext:
    """What a tool may see of the world (the user's kernel and the session), and what one call reports back.

    The tool runner (``runner.py``) gives each call a fresh one.
    """

    session: str
    namespace: dict[str, Any]
    root: Path
    shell: Any = None  # IPython InteractiveShell, when running inside one
    store: ToolStore | None = None
    python_approval: str = "ask"  # ask | auto | off
    python_timeout: float | None = None  # seconds before the python tool stops the code; None: no limit
    namespace_timeout: float = 10.0  # seconds list_variables and describe may spend in the user's code
    approve: Callable[..., bool | None] | None = None  # approve(text, subject="python"); None: nobody can answer
    redactor: Redactor | None = None
    output_max_chars: int = ToolOutputConfig().max_chars  # what a tool paging saved text shows at once
    memory: MemoryService | None = None
    memory_scope: str = ""  # where facts the agent saves go: its agent's scope, else global
    recall: RecallService | None = None  # the session's recall (its search, how far its index is); None: off
    images_config: ImagesConfig = field(default_factory=ImagesConfig)
    sees_images: bool = False  # the model is sent images (models.main.vision)
    redacted: bool = False  # set once a tool's own redaction took something out
    outcome: str = ""  # how the call went, when the tool says: "ok", "error" or "refused"
    images: list[Image] = field(default_factory=list)  # what the call showed, each named by a line in its text
    notebook: NotebookFrontend | None = None  # the open notebook (agent/tools/cells.py); None: no notebook is open
    workspace: WorkspaceRecord | None = None  # what made each name (list_variables shows it); None: off
    written: str = ""  # the call was read from the model's text, in this form ("json block"...); "": an API call

    def redact(self, text: str) -> str:
        """Redact ``text`` whole, before a tool cuts, numbers or formats it (the spec's order).

        A tool that formats its output (line numbers, per-line grep hits, clipped cells) calls
        this on the text as it is; the result is marked redacted, so it gets no recovery handle.
        """
        if self.redactor is None:
            return text
        redaction = self.redactor.redact(text)
        self.redacted = self.redacted or redaction.redacted
        return redaction.text


@dataclass(frozen=True)
class ToolOutput:
    """A tool call's result text, and whether redaction already took something out of it."""

    text: str
    redacted: bool = False
    outcome: str = ""  # "ok", "error", "refused", or "" when the tool does not say
    images: tuple[Image, ...] = ()


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., str]
    effect: str = CHANGES  # READS, ASKS or CHANGES: a tool not declared otherwise is taken to change things

    def schema(self) -> dict[str, Any]:
        """The tool in OpenAI ``tools`` form."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def run(self, ctx: ToolContext, arguments: dict[str, Any]) -> str:
        """Call the tool; bad arguments raise ToolError with a message for the model."""
        self.check(arguments)
        return self.func(ctx, **arguments)

    def check(self, arguments: dict[str, Any]) -> None:
        """Raise ToolError, in one line for the model, when ``arguments`` do not fit the schema
        (unknown or missing names, wrong JSON types)."""
        props = self.parameters.get("properties", {})
        unknown = sorted(set(arguments) - set(props))
        if unknown and self.parameters.get("additionalProperties", True) is False:
            raise ToolError(f"{self.name}: unknown argument(s) {', '.join(unknown)}; expected {', '.join(props)}")
        missing = [name for name in self.parameters.get("required", []) if name not in arguments]
        if missing:
            raise ToolError(f"{self.name}: missing required argument(s) {', '.join(missing)}")
        for name, value in arguments.items():
            if name in props:
                _check_type(self.name, name, props[name], value)


def _check_type(tool: str, name: str, schema: dict[str, Any], value: Any) -> None:
    expected = schema.get("type")
    if isinstance(expected, list):
        if value is None:
            return
        expected = expected[0]
    ok = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
    }.get(expected, lambda v: True)  # other types (object, null) are the tool's own to check
    if not ok(value):
        raise ToolError(f"{tool}: argument {name!r} must be {expected}, got {type(value).__name__}")


def tool(func: Callable[..., str]) -> Tool:
    """Build a Tool from a function ``f(ctx, ...) -> str`` with type hints and a docstring."""
    description, arg_docs = _parse_docstring(inspect.getdoc(func) or "")
    hints = typing.get_type_hints(func)
    params = list(inspect.signature(func).parameters.values())[1:]  # skip ctx
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in params:
        prop = _json_schema(hints[param.name])
        if param.name in arg_docs:
            prop["description"] = arg_docs[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        elif param.default is not None:
            prop["default"] = param.default
        properties[param.name] = prop
    parameters = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return Tool(name=func.__name__, description=description, parameters=parameters, func=func)


def reads(made: Tool) -> Tool:
    """Declare a tool that only reads: a call of it read from the model's text runs as an API call does."""
    return replace(made, effect=READS)


def asks(made: Tool) -> Tool:
    """Declare a tool that asks the user itself before it changes anything, a call read from text included."""
    return replace(made, effect=ASKS)


def _json_schema(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        schema = _json_schema(args[0])
        schema["type"] = [schema["type"], "null"]
        return schema
    if origin is list:
        (item,) = typing.get_args(hint) or (str,)
        return {"type": "array", "items": _json_schema(item)}
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    raise TypeError(f"unsupported tool parameter type {hint!r}")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    parts = re.split(r"\n\s*Args:\s*\n", doc, maxsplit=1)
    description = " ".join(parts[0].split("\n\n")[0].split())
    args: dict[str, str] = {}
    if len(parts) == 2:
        current = ""
        for line in parts[1].splitlines():
            match = re.match(r"\s*(\w+):\s*(.*)", line)
            if match and (not line.startswith(" " * 8) or not current):
                current = match.group(1)
                args[current] = match.group(2).strip()
            elif current and line.strip():
                args[current] += " " + line.strip()
    return description, args
