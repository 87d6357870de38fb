"""A session as a notebook a colleague can run top to bottom, and the last turn's code.

Reads the stored transcript, never the window: each question and answer becomes a Markdown cell
(through ``sanitize_markdown``), and each python call that ran without an error becomes a code
cell, in order, with outputs rebuilt from its stored result (the full saved output where the
window kept a cut copy) and the images it displayed, as kept. Calls that were skipped, refused
or failed are left out, so the code cells replay the session's working state. What that code read
and did not make comes first (``user_cells.py``): the user's own cells that made it, marked as
theirs, and a check naming what no cell in reach makes. The ``.ipynb`` is nbformat v4 JSON
written here, so exporting needs no extra package.
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from monad_notebook import events as ev
from monad_notebook.errors import UsageError
from monad_notebook.export.code_names import names_of
from monad_notebook.export.user_cells import Needs, Run, UserCell, needs_of
from monad_notebook.images.image import Image
from monad_notebook.messages import Message
from monad_notebook.notebook.proposals import without_decisions
from monad_notebook.safe_markdown import sanitize_markdown
from monad_notebook.store.base import Events, Images, ToolOutputs, Transcript, Workspaces

Redact = Callable[[str], str]


class ExportStore(Transcript, ToolOutputs, Images, Events, Workspaces, Protocol):
    """What an export reads: the transcript, the saved outputs and images of its code, how each call went,
    and the workspace record (which cell made each name)."""


_SECTION = re.compile(r"^(?:(stdout|stderr|displayed|value):\n|(value|error): )", re.M)
_MAX_LABELS = 400
_ORDER = ("stdout", "stderr", "displayed", "value", "error")
_REFUSALS = ("not run:", "the user declined", "interrupted:")


@dataclass
class RunOutput:
    """A python result split back into what the code printed, displayed and returned."""

    sections: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return "error" in self.sections


def parse_run(text: str) -> RunOutput | None:
    """The sections of a python tool result (see ``python._Run.render``); None when the code did not run.

    A label can also appear inside printed text, so of every split that ``render`` could have
    produced (sections in order, a ``value:`` on one line only when it has no line break, an
    ``error:`` last) the one with the most sections wins.
    """
    if text == "(no output)":
        return RunOutput()
    heads = [(m.start(), m.end(), m.group(1) or m.group(2), m.group(1) is None) for m in _SECTION.finditer(text)]
    heads = heads[:_MAX_LABELS]
    if not heads or heads[0][0] != 0:
        return None
    best: list[tuple[int, list[int]]] = [(0, [])] * len(heads)  # per head: (sections, chain) from it to the end
    for i in range(len(heads) - 1, -1, -1):
        _, body, name, inline = heads[i]
        options = [(1, [i])] if _fits(name, inline, text[body:]) else []
        for j in range(i + 1, len(heads)):
            after = heads[j]
            fits = _fits(name, inline, text[body : after[0] - 1])
            if best[j][0] and _ORDER.index(after[2]) > _ORDER.index(name) and fits:
                options.append((1 + best[j][0], [i, *best[j][1]]))
        best[i] = max(options, default=(0, []), key=lambda option: option[0])
    if not best[0][0]:
        return None
    chain = best[0][1]
    sections = {}
    for k, i in enumerate(chain):
        end = heads[chain[k + 1]][0] - 1 if k + 1 < len(chain) else len(text)
        sections[heads[i][2]] = text[heads[i][1] : end]
    return RunOutput(sections)


def _fits(name: str, inline: bool, body: str) -> bool:
    """Whether ``render`` could have written ``body`` under this label (``inline``: "label: body")."""
    if name == "value":
        return ("\n" in body) is not inline  # "value: x" holds one line; "value:\n..." more than one
    return bool(body.strip()) or name == "displayed"


@dataclass(frozen=True)
class CodeRun:
    """One python call that ran: its code, where it sits in the transcript, its stored result."""

    turn: int
    seq: int
    code: str
    result: str
    tool_call_id: str = ""


def _outcomes(store: ExportStore, session: str) -> dict[str, str]:
    return {
        str(e.data.get("tool_call_id")): str(e.data.get("outcome") or "")
        for e in store.list_events(session, kind=ev.TOOL_FINISHED)
    }


def _ran(result: str, outcome: str) -> bool:
    """Ran without an error: the tool's own word when it left one, else the result's shape."""
    if outcome:
        return outcome == "ok"
    if result.lstrip().startswith(_REFUSALS):
        return False
    parsed = parse_run(result)
    return parsed is not None and not parsed.failed


def code_runs(store: ExportStore, session: str, messages: list[Message] | None = None) -> list[CodeRun]:
    """Every python call of the session that ran without an error, oldest first."""
    messages = store.load_messages(session) if messages is None else messages
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    outcomes = _outcomes(store, session)
    runs = []
    for message in messages:
        for call in message.tool_calls if message.role == "assistant" else []:
            tool = results.get(call.id)
            if call.name != "python" or tool is None:
                continue
            try:
                code = call.parsed_arguments().get("code")
            except ValueError:
                continue
            text = store.get_raw_output(session, call.id) or tool.content
            if isinstance(code, str) and code.strip() and _ran(text, outcomes.get(call.id, "")):
                runs.append(CodeRun(message.turn, message.seq, code, text, call.id))
    return runs


def last_turn_code(
    store: ExportStore, session: str, history: Sequence[str] | None = None, redact: Redact | None = None
) -> str:
    """The code the last turn that ran python ran, as one cell's source; a first comment names what it reads
    and does not make, and where each came from (an earlier turn's code, the user's cell, or unknown)."""
    runs = code_runs(store, session)
    if not runs:
        raise UsageError("no python code has run in this session yet")
    last = runs[-1].turn
    code = "\n\n".join(run.code.strip("\n") for run in runs if run.turn == last)
    reads = [name for name, _ in needs_of([Run("", code)], [], None).missing]
    if not reads:
        return code
    earlier = {name for run in runs if run.turn < last for name in _binds(run.code)}
    needs = _needs(store, session, runs, history, redact)
    cells = {name: cell.number for cell in needs.cells for name in _binds(cell.source)}
    told = [
        f"{name} (an earlier turn)"
        if name in earlier
        else f"{name} (your cell In [{cells[name]}])"
        if name in cells
        else f"{name} (made outside the session)"
        for name in reads
    ]
    return f"# uses what it does not make: {', '.join(told)}\n{code}"


def _binds(code: str) -> frozenset[str]:
    names = names_of(code)
    return names.binds if names is not None else frozenset()


def _needs(
    store: ExportStore, session: str, runs: list[CodeRun], history: Sequence[str] | None, redact: Redact | None
) -> Needs:
    entries = store.load_workspace(session)
    return needs_of([Run(r.tool_call_id, r.code) for r in runs], entries, history, redact or (lambda text: text))


# --- the notebook ---------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _markdown(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": _lines(text)}


def _outputs(result: str, count: int, images: list[Image]) -> list[dict[str, Any]]:
    parsed = parse_run(result) or RunOutput({"stdout": result})
    outputs: list[dict[str, Any]] = []
    for name in ("stdout", "stderr"):
        if name in parsed.sections:
            outputs.append({"output_type": "stream", "name": name, "text": _lines(parsed.sections[name] + "\n")})
    if "displayed" in parsed.sections:
        data = {"text/plain": _lines(parsed.sections["displayed"])}
        outputs.append({"output_type": "display_data", "data": data, "metadata": {}})
    for image in images:  # the images the code displayed, as kept (scaled)
        data = {image.mime: base64.b64encode(image.data).decode("ascii"), "text/plain": [image.line()]}
        metadata = {image.mime: {"width": image.width, "height": image.height}}
        outputs.append({"output_type": "display_data", "data": data, "metadata": metadata})
    if "value" in parsed.sections:
        data = {"text/plain": _lines(parsed.sections["value"])}
        outputs.append({"output_type": "execute_result", "execution_count": count, "data": data, "metadata": {}})
    return outputs


def _code(run: CodeRun, count: int, images: list[Image]) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": count,
        "metadata": {},
        "source": _lines(run.code.strip("\n")),
        "outputs": _outputs(run.result, count, images),
    }


def build_notebook(
    store: ExportStore, session: str, history: Sequence[str] | None = None, redact: Redact | None = None
) -> dict[str, Any]:
    """The session as an nbformat v4 notebook: what its code needs first, then questions, code that ran,
    answers, in order. ``history`` is the kernel's inputs by execution count (IPython's ``In``), where the
    user's own cells are found; ``redact`` runs over each before it is written."""
    messages = store.load_messages(session)
    ran = code_runs(store, session, messages)
    runs: dict[int, list[CodeRun]] = {}
    for run in ran:
        runs.setdefault(run.seq, []).append(run)
    needs = _needs(store, session, ran, history, redact)
    images = store.load_images(session, [run.tool_call_id for run in ran])
    stamp = time.strftime("%Y-%m-%d %H:%M")
    yours = " Your own cells it relies on are carried in before it, marked as yours." if needs.cells else ""
    cells = [
        _markdown(
            f"# Session {sanitize_markdown(session)}\n\nExported from monad on {stamp}. The code cells are the "
            f"python the agent ran without an error, in order: run them top to bottom.{yours}"
        ),
        *_prelude(needs),
    ]
    count = 0
    for message in messages:
        asked = without_decisions(message.content) if message.role == "user" else ""
        if asked.strip():
            cells.append(_markdown(f"**Question**\n\n{sanitize_markdown(asked)}"))
        elif message.role == "assistant":
            if message.content.strip():
                label = "**Answer**\n\n" if not message.tool_calls else ""
                cells.append(_markdown(label + sanitize_markdown(message.content)))
            for run in runs.get(message.seq, []):
                cells.extend(_user_cells(needs.before_call.get(run.tool_call_id, []), "between the session's turns"))
                count += 1
                cells.append(_code(run, count, images.get(run.tool_call_id, [])))
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
            "monad": {"session": session, "exported_at": stamp},
        },
        "nbformat": 4,
        "nbformat_minor": 4,
    }


def _prelude(needs: Needs) -> list[dict[str, Any]]:
    """What must exist before the session's code: a check of the names no cell in reach makes, the user's cells."""
    cells = []
    if needs.missing:
        listed = "\n".join(f"- `{name}`{_what(entry)}" for name, entry in needs.missing)
        cells.append(
            _markdown(
                "**What must exist first**\n\nThe session's code uses these, made outside it by code this notebook "
                f"does not have: define them, or run this notebook where they exist.\n\n{sanitize_markdown(listed)}"
            )
        )
        names = tuple(name for name, _ in needs.missing)
        check = (
            f"missing = [name for name in {names!r} if name not in globals()]\n"
            "if missing:\n"
            '    raise NameError("define " + ", ".join(missing) + " before running this notebook: the session\'s '
            'code uses them and no cell here makes them")'
        )
        cells.append(_unrun(check, {}))
    return cells + _user_cells(needs.first, "before the session")


def _what(entry: Any) -> str:
    """What the workspace record knew of a name: its type, size and first columns."""
    if entry is None or not entry.type:
        return ""
    columns = f" [{', '.join(entry.columns)}{', ...' if entry.columns_total > len(entry.columns) else ''}]"
    return f": {entry.type} {entry.shape}{columns if entry.columns else ''}".rstrip()


def _user_cells(cells: list[UserCell], when: str) -> list[dict[str, Any]]:
    """The user's own cells, marked as theirs: a note naming them, then each with its number in metadata."""
    if not cells:
        return []
    numbers = ", ".join(f"In [{cell.number}]" for cell in cells)
    plural = "s" if len(cells) > 1 else ""
    note = _markdown(
        f"**Your own cell{plural}** ({numbers}), run in the kernel {when}: the session's code below uses what "
        f"{'they' if plural else 'it'} made."
    )
    return [
        note,
        *(_unrun(cell.source, {"tags": ["user-cell"], "monad": {"user_cell": cell.number}}) for cell in cells),
    ]


def _unrun(source: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """A code cell not run yet: no count, no outputs."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": metadata,
        "source": _lines(source.strip("\n")),
        "outputs": [],
    }


def export_notebook(
    store: ExportStore,
    session: str,
    path: str | Path,
    history: Sequence[str] | None = None,
    redact: Redact | None = None,
) -> tuple[Path, int]:
    """Write the session to ``path`` (an .ipynb) at once or not at all; returns the path and its code cells
    (``history`` and ``redact`` as ``build_notebook`` takes them)."""
    target = Path(path).expanduser()
    if target.suffix != ".ipynb":
        raise UsageError(f"export writes a notebook: give a path ending in .ipynb, not {str(path)!r}")
    if not target.parent.is_dir():
        raise UsageError(f"cannot export to {target}: the folder {target.parent} does not exist")
    notebook = build_notebook(store, session, history, redact)
    text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
    try:
        _write_atomically(target, text)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target.resolve(), sum(1 for cell in notebook["cells"] if cell["cell_type"] == "code")


def _write_atomically(target: Path, text: str) -> None:
    """A reader sees the old file or the whole new one, never half of it."""
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
