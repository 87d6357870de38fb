"""The notebook tools: read the open notebook's cells, propose new and changed cells, queue a cell to run.

Named and shaped as jupyter-mcp-server and jupyter-ai-tools name them, so models know them. The
notebook itself is ``ctx.notebook`` (``notebook/frontend.py``): the document as open in JupyterLab
or Notebook 7, or the saved file elsewhere. A change is only ever proposed: the user accepts or
rejects it (``tools.notebook.approval`` "ask"), or it is applied and shown ("auto"). Every source
and output is redacted whole (``ctx.redact``) before it is clipped or formatted; the result then
takes the path of every tool result (truncation with a handle, eviction, recall).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from monad_notebook.agent.tools.base import Tool, ToolContext, asks, reads, tool
from monad_notebook.agent.tools.notebook import _clip
from monad_notebook.agent.tools.python import approval_refusal, strip_ansi
from monad_notebook.approval.gate import cell_subject
from monad_notebook.errors import ToolError
from monad_notebook.images.figures import FigureRecorder
from monad_notebook.notebook.document import Cell
from monad_notebook.notebook.frontend import EXTENSION, NotebookRefused
from monad_notebook.notebook.proposals import CELL_TYPES, POSITIONS, new_cell_id

if TYPE_CHECKING:
    from monad_notebook.notebook.frontend import NotebookFrontend

NOT_OPEN = "no notebook is open here (a script, nbclient or papermill run): no cell can be read or changed"
TURNED_OFF = 'the notebook tools are off (tools.notebook.approval is "off")'
SOURCE_CHARS = 4_000  # a cell's source in read_notebook; read_cell shows it whole
OUTPUT_CHARS = 1_500  # each output's text
MAX_CELLS = 100
_REDACTED = re.compile(r"\[REDACTED:")
# the monad magics in any line, their names handed to IPython's magic runners, or the package itself
_CALLS_MONAD = re.compile(
    r"^[ \t]*%{1,2}[ \t]*monad\b|\b(?:run_cell_magic|run_line_magic|magic)\s*\(\s*[rbuf]*['\"]%*\s*monad\b"
    r"|\bmonad_notebook\b",
    re.M,
)


def unavailable(ctx: ToolContext) -> str:
    """Why a notebook tool is not offered, in one line."""
    return NOT_OPEN if ctx.notebook is None else TURNED_OFF


def _notebook(ctx: ToolContext) -> NotebookFrontend:
    if ctx.notebook is None:
        raise ToolError(NOT_OPEN)
    if ctx.notebook.approval == "off":
        raise ToolError(TURNED_OFF)
    return ctx.notebook


@contextmanager
def _refusals() -> Iterator[None]:
    try:
        yield
    except NotebookRefused as refused:
        raise ToolError(str(refused)) from None


def _told(notebook: NotebookFrontend, text: str) -> str:
    """``text``, and the decisions the user took since the agent was last told."""
    decided = notebook.untold()
    if not decided:
        return text
    return text + "\n\nMeanwhile the user decided:\n" + "\n".join(f"- {d.told()}" for d in decided)


def _header(cell: Cell, running: str) -> str:
    parts = [f"[{cell.index}] id {cell.id}", cell.type]
    if cell.type == "code":
        parts.append(f"ran as [{cell.execution_count}]" if cell.execution_count is not None else "not run")
    if cell.id and cell.id == running:
        parts.append("the running %%monad cell (this conversation)")
    if cell.pending:
        parts.append(f"change {cell.pending} waits for the user's decision")
    return " · ".join(parts)


def _output_lines(ctx: ToolContext, cell: Cell, recorder: FigureRecorder) -> list[str]:
    lines: list[str] = []
    for output in cell.outputs:
        kind = output.get("output_type")
        if kind == "stream":
            lines.append(_clip(ctx.redact(_joined(output.get("text")).rstrip()), OUTPUT_CHARS))
        elif kind == "error":
            trace = strip_ansi("\n".join(_joined(line) for line in output.get("traceback") or [])[-OUTPUT_CHARS:])
            text = f"{output.get('ename', 'Error')}: {output.get('evalue', '')}\n{trace}".rstrip()
            lines.append(_clip(ctx.redact(text), OUTPUT_CHARS))
        elif kind in ("execute_result", "display_data"):
            lines.append(_display_line(ctx, output.get("data") or {}, recorder))
    left_out = recorder.summary_line()
    return [line for line in [*lines, left_out] if line]


def _display_line(ctx: ToolContext, data: dict[str, Any], recorder: FigureRecorder) -> str:
    image = recorder.record(data)
    if image:
        return image
    for mime in ("text/plain", "text/markdown", "application/json"):
        if mime in data:
            return _clip(ctx.redact(_joined(data[mime]).rstrip()), OUTPUT_CHARS)
    kinds = ", ".join(sorted(data)) or "nothing"
    return f"[{kinds} shown in the notebook; not text]"


def _joined(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return "" if value is None else str(value)


def _cell_text(ctx: ToolContext, cell: Cell, running: str, *, outputs: bool, clip: bool) -> str:
    source = ctx.redact(cell.source)
    if clip and len(source) > SOURCE_CHARS:
        source = _clip(source, SOURCE_CHARS) + f"\n[read_cell({cell.id!r}) shows the whole source]"
    text = f"{_header(cell, running)}\n{source}" if source else f"{_header(cell, running)}\n(empty)"
    if not outputs or cell.type != "code":
        return text
    if cell.id == running:
        return text + "\noutputs: (this conversation)"
    left = max(0, ctx.images_config.max_per_result - len(ctx.images))
    config = ctx.images_config.model_copy(update={"max_per_result": left})
    recorder = FigureRecorder(config, cell.source, ctx.redact)
    lines = _output_lines(ctx, cell, recorder)
    ctx.images.extend(recorder.captured.images)
    return text + ("\noutputs:\n" + "\n".join(lines) if lines else "\noutputs: none")


@reads
@tool
def read_notebook(ctx: ToolContext, start_index: int = 0, limit: int = 20, include_outputs: bool = False) -> str:
    """Read the open notebook as the user sees it now: each cell's id, index, type, source and execution count.

    The running %%monad cell (this conversation) is marked. Use the ids with read_cell, insert_cell,
    overwrite_cell_source, edit_cell_source and execute_cell.

    Args:
        start_index: The first cell to show (0 is the top).
        limit: How many cells to show, at most 100.
        include_outputs: Also show each code cell's outputs (text clipped, images as image lines).
    """
    notebook = _notebook(ctx)
    if start_index < 0 or not 1 <= limit <= MAX_CELLS:
        raise ToolError(f"start_index must be 0 or more and limit between 1 and {MAX_CELLS}")
    with _refusals():
        snapshot = notebook.read(start=start_index, limit=limit, outputs=include_outputs)
        running = notebook.running_id(snapshot.cells)
    name = snapshot.path.rsplit("/", 1)[-1] or "the notebook"
    state = "as open now (unsaved edits included)" if snapshot.live else "as last saved (unsaved edits not shown)"
    if not snapshot.cells:
        return _told(notebook, f"notebook {name}: {snapshot.total} cells {state}; none from index {start_index}")
    first, last = snapshot.cells[0].index, snapshot.cells[-1].index
    head = f"notebook {name}: {snapshot.total} cells {state}; cells {first}-{last}:"
    cells = [_cell_text(ctx, cell, running, outputs=include_outputs, clip=True) for cell in snapshot.cells]
    more = f"\n\nmore cells: read_notebook(start_index={last + 1})" if last + 1 < snapshot.total else ""
    return _told(notebook, head + "\n\n" + "\n\n".join(cells) + more)


@reads
@tool
def read_cell(ctx: ToolContext, cell_id: str, include_outputs: bool = True) -> str:
    """Read one cell of the open notebook by its id: its whole source, and its outputs.

    Args:
        cell_id: The cell's id, as read_notebook lists it.
        include_outputs: Also show the cell's outputs (text clipped, images as image lines).
    """
    notebook = _notebook(ctx)
    with _refusals():
        snapshot = notebook.read(ids=[cell_id], outputs=include_outputs)
        running = notebook.running_id(snapshot.cells)
    if not snapshot.cells:
        raise ToolError(f"no cell with id {cell_id} in the notebook: read_notebook lists the ids")
    return _told(notebook, _cell_text(ctx, snapshot.cells[0], running, outputs=include_outputs, clip=False))


@asks
@tool
def insert_cell(
    ctx: ToolContext, cell_type: str, cell_source: str, cell_id: str | None = None, position: str = "below"
) -> str:
    """Propose a new cell; by default just below the running %%monad cell. The user accepts or rejects it.

    Args:
        cell_type: "code", "markdown" or "raw".
        cell_source: The new cell's whole source.
        cell_id: The cell to place it against; omit for the running %%monad cell.
        position: "below" or "above" that cell.
    """
    notebook = _notebook(ctx)
    if cell_type not in CELL_TYPES or position not in POSITIONS:
        raise ToolError(f"cell_type must be one of {', '.join(CELL_TYPES)} and position one of {', '.join(POSITIONS)}")
    _no_copied_placeholders(ctx, cell_source, "")
    running = notebook.running_cell()
    anchor = cell_id or running
    with _refusals():
        if not anchor and notebook.path() == EXTENSION:
            raise ToolError("the running cell's id is not known: name the cell_id to insert against")
        said = notebook.propose(
            "insert",
            anchor,
            cell_source,
            cell_type=cell_type,
            position=position,
            new_id=new_cell_id(),
            anchor_is_running=cell_id is None or cell_id == running,
            written=ctx.written,
        )
        return _told(notebook, said)


def _no_copied_placeholders(ctx: ToolContext, source: str, base: str) -> None:
    """Refuse a source holding more ``[REDACTED:...]`` placeholders than the cell's real source: each stands for a
    secret the agent was never shown, and accepting the copy would put the placeholder where the secret was.

    Both review paths (the extension's diff at the cell, the review in the cell's output) and "auto"
    take proposals from here, so none of them ever shows or applies such a change.
    """
    found = ctx.redactor.placeholders(source) if ctx.redactor is not None else []
    copied = [p for p in dict.fromkeys(found) if source.count(p) > base.count(p)]
    if copied:
        raise ToolError(
            f"the new source holds {', '.join(copied)}: a placeholder stands for a secret of the user's that you were "
            "never shown, and accepting it would replace the secret; leave the lines that hold one out of the change "
            "(edit_cell_source of the text around them), and never write a placeholder into a cell"
        )


def _propose_change(ctx: ToolContext, cell_id: str, source: str, base: str) -> str:
    notebook = _notebook(ctx)
    _no_copied_placeholders(ctx, source, base)
    if source == base:
        return _told(notebook, f"cell {cell_id} already holds this source: nothing to change")
    with _refusals():
        return _told(notebook, notebook.propose("change", cell_id, source, base=base, written=ctx.written))


def _base(ctx: ToolContext, cell_id: str) -> str:
    notebook = _notebook(ctx)
    if cell_id and cell_id == notebook.running_cell():
        raise ToolError(f"cell {cell_id} is the running %%monad cell (this conversation): propose a new cell instead")
    with _refusals():
        return notebook.base_of(cell_id)


@asks
@tool
def overwrite_cell_source(ctx: ToolContext, cell_id: str, cell_source: str) -> str:
    """Propose a new source for a cell you have read. The user accepts or rejects the change.

    Args:
        cell_id: The cell's id, as read_notebook lists it.
        cell_source: The cell's whole new source.
    """
    return _propose_change(ctx, cell_id, cell_source, _base(ctx, cell_id))


@asks
@tool
def edit_cell_source(ctx: ToolContext, cell_id: str, old_string: str, new_string: str) -> str:
    """Propose replacing one exact passage of a cell you have read. The user accepts or rejects the change.

    Args:
        cell_id: The cell's id, as read_notebook lists it.
        old_string: Text that occurs exactly once in the cell's source, as you read it.
        new_string: What replaces it.
    """
    base = _base(ctx, cell_id)
    count = base.count(old_string) if old_string else 0
    if count == 0:
        hint = " (text shown redacted cannot be matched)" if _REDACTED.search(old_string) else ""
        raise ToolError(f"old_string is not in cell {cell_id} as you read it{hint}: copy it exactly from read_cell")
    if count > 1:
        raise ToolError(f"old_string occurs {count} times in cell {cell_id}: include more of the text around it")
    return _propose_change(ctx, cell_id, base.replace(old_string, new_string, 1), base)


@asks
@tool
def execute_cell(ctx: ToolContext, cell_id: str) -> str:
    """Run a cell of the notebook. The kernel is busy with this turn, so the run is queued for after it.

    Its outputs are readable with read_cell at the next turn. Code runs as the python tool's does:
    with the user's approval when tools.python.approval is "ask".

    Args:
        cell_id: The cell's id, as read_notebook lists it.
    """
    notebook = _notebook(ctx)
    running = notebook.running_cell()
    if cell_id and cell_id == running:
        raise ToolError(f"cell {cell_id} is the running %%monad cell (this conversation): it does not run itself")
    with _refusals():
        notebook.check_can_run(cell_id)
        snapshot = notebook.read(ids=[cell_id, running] if running else [cell_id])
        cell = next((c for c in snapshot.cells if c.id == cell_id), None)
        if cell is None:
            raise ToolError(f"no cell with id {cell_id} in the notebook: read_notebook lists the ids")
        if cell.type == "code":
            _refuse_monad(cell)
            here = next((c.index for c in snapshot.cells if c.id == running), None)
            refusal = approval_refusal(ctx, cell.source, cell_subject(cell.index + 1, cell.id, _where(cell, here)))
            if refusal is not None:
                return _told(notebook, ctx.refuse(refusal))
        return _told(notebook, notebook.run(cell_id, cell.source, ctx.cell_keeper))


def _where(cell: Cell, running: int | None) -> str:
    """Where ``cell`` is from the running ``%%monad`` cell (at index ``running``), as its question says it."""
    if running is None or running == cell.index:
        return ""
    apart = abs(running - cell.index)
    side = "above" if cell.index < running else "below"
    return f"{'just' if apart == 1 else f'{apart} cells'} {side} this one"


def _refuse_monad(cell: Cell) -> None:
    """A cell that calls monad itself would start a turn (or change the session) when it runs: the user runs it."""
    found = _CALLS_MONAD.search(cell.source)
    if found:
        raise ToolError(
            f"cell {cell.id} calls monad itself ({found.group().strip()[:40]}): the agent does not run such a "
            "cell, so no turn starts another; ask the user to run it"
        )


TOOLS: list[Tool] = [read_notebook, read_cell, insert_cell, overwrite_cell_source, edit_cell_source, execute_cell]
NAMES = frozenset(t.name for t in TOOLS)
