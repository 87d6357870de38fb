"""The notebook's cells as the agent reads them: from the open document, or from the saved file.

JupyterLab and Notebook 7 (through the extension) send the document as the user sees it now,
unsaved edits included. Elsewhere the saved ``.ipynb`` is what the kernel can read: VS Code
names it in ``__vsc_ipynb_file__``, a Jupyter server in ``JPY_SESSION_NAME``. nbformat JSON is
read here directly, so reading needs no extra package.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_NOTEBOOK_BYTES = 50_000_000


@dataclass(frozen=True)
class Cell:
    """One cell: its nbformat id, where it is, its type and source; outputs when they were asked for."""

    id: str
    index: int
    type: str
    source: str
    execution_count: int | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    pending: str = ""  # the id of a change waiting for the user's decision

    @classmethod
    def from_wire(cls, data: dict[str, Any], pending: str = "") -> Cell:
        count = data.get("execution_count")
        return cls(
            id=str(data.get("id") or ""),
            index=int(data.get("index") or 0),
            type=str(data.get("type") or data.get("cell_type") or "code"),
            source=_text(data.get("source")),
            execution_count=count if isinstance(count, int) else None,
            outputs=[o for o in data.get("outputs") or [] if isinstance(o, dict)],
            pending=pending or "",
        )


@dataclass(frozen=True)
class Snapshot:
    """Some cells of a notebook, and what they were read from."""

    path: str
    total: int
    cells: list[Cell]
    live: bool  # the open document (unsaved edits included), not the saved file


def _text(value: Any) -> str:
    """nbformat's multiline strings come as a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return "" if value is None else str(value)


class NotebookFileError(Exception):
    """The saved notebook cannot be read; the message is one line for the model."""


def saved_path(namespace: dict[str, Any], root: Path) -> Path | None:
    """The notebook file this kernel runs, when the frontend says: VS Code's variable, else the server's."""
    named = namespace.get("__vsc_ipynb_file__")  # a plain str only: any other value's methods are the user's code
    if type(named) is not str or not named:
        named = os.environ.get("JPY_SESSION_NAME") or ""
    if not named.endswith(".ipynb"):
        return None
    path = Path(named).expanduser()
    if not path.is_absolute():
        path = root / path
    return path


def read_saved(path: Path) -> list[Cell]:
    """Every cell of a saved notebook, in order."""
    try:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            raise NotebookFileError(f"{path.name} is larger than {MAX_NOTEBOOK_BYTES // 1_000_000} MB: not read")
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotebookFileError(f"{path} is not saved yet: ask the user to save the notebook") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise NotebookFileError(f"{path.name} could not be read as a notebook: {type(exc).__name__}") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise NotebookFileError(f"{path.name} is not a notebook (no cells)")
    found = []
    for index, cell in enumerate(c for c in cells if isinstance(c, dict)):
        found.append(Cell.from_wire({**cell, "index": index, "type": cell.get("cell_type")}))
    return found
