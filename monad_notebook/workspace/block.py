"""The ``<workspace>`` block: what the kernel holds now, sent with every request, outside the summary.

Built at each request from the record checked against the live namespace, newest first, within a
token budget; what does not fit is counted, with a pointer to ``list_variables``. Names a kernel
restart lost come first: they are what the agent must not take for granted.
"""

from __future__ import annotations

from collections.abc import Callable

from monad_notebook.store.base import WorkspaceEntry

MIN_TOKENS = 800
SHARE_OF_WINDOW = 0.08
HEADER = (
    "What the kernel holds now, taken from it after each tool call and each cell the user ran, newest first "
    "(values are never shown; read_tool_output with a call's id shows the code that made a name)."
)
LOST = "Not in the kernel now (a restart, or removed outside the session); rerun the call that made it to get it back:"
FILES = "Files written under the notebook's directory:"


def budget(max_tokens: int | None, context_window: int) -> int:
    """``context.workspace.maxTokens``, else about 8% of the window and at least ``MIN_TOKENS``."""
    return max_tokens if max_tokens is not None else max(MIN_TOKENS, int(context_window * SHARE_OF_WINDOW))


def origin(entry: WorkspaceEntry) -> str:
    """Which call or cell made the entry, and at which turn."""
    if not entry.made_by:
        return "there before the session"
    verb = "changed" if entry.state == "changed" else entry.state if entry.kind == "file" else "made"
    return f"{verb} by {entry.made_by}, turn {entry.turn}"


def line(entry: WorkspaceEntry) -> str:
    """One entry as the model reads it: name or path, type and size, the first columns, what made it."""
    about = ", ".join(part for part in (entry.type if entry.kind == "name" else "", entry.shape) if part)
    columns = ""
    if entry.columns:
        more = entry.columns_total - len(entry.columns)
        columns = "; columns " + ", ".join(entry.columns) + (f" (+{more:,} more)" if more > 0 else "")
    return f"- {entry.key}: {about}{columns}; {origin(entry)}"


def render(
    names: list[WorkspaceEntry],
    files: list[WorkspaceEntry],
    lost: list[WorkspaceEntry],
    count_text: Callable[[str], int],
    max_tokens: int,
) -> str:
    """The block, within ``max_tokens`` by ``count_text``; empty when the record holds nothing."""
    if not (names or files or lost):
        return ""
    closing = "(999,999 more names and 999,999 more files not shown: list_variables lists every name)"
    left = max_tokens - count_text(f"<workspace>\n{HEADER}\n{LOST}\n{FILES}\n{closing}\n</workspace>")
    by_age = sorted(names + files, key=lambda e: -e.seq)
    kept: set[int] = set()
    for entry in lost + by_age:
        cost = count_text(line(entry)) + 1
        if cost > left:
            break
        left -= cost
        kept.add(id(entry))
    shown = [e for e in by_age if id(e) in kept]
    out = ["<workspace>", HEADER, *[line(e) for e in shown if e.kind == "name"]]
    written = [line(e) for e in shown if e.kind == "file"]
    if written:
        out += [FILES, *written]
    gone = [line(e) for e in lost if id(e) in kept]
    if gone:
        out += [LOST, *gone]
    hidden_names = len(names) + len(lost) - sum(1 for e in names + lost if id(e) in kept)
    hidden_files = len(files) - len(written)
    if hidden_names or hidden_files:
        out.append(
            f"({hidden_names:,} more names and {hidden_files:,} more files not shown: list_variables lists every name)"
        )
    out.append("</workspace>")
    return "\n".join(out)
