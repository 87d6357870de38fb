"""The ``<workspace>`` block: what the kernel holds now, sent with every request, outside the summary.

Built at each request from the record checked against the live namespace, newest first, within a
token budget; what does not fit is counted, with a pointer to ``list_variables``. Names a kernel
restart lost come first: they are what the agent must not take for granted.
"""

from __future__ import annotations

from collections.abc import Callable

from monad_notebook.store.base import WorkspaceEntry

BETWEEN_TURNS = "outside the session"  # what made a change seen at a turn's start that no call or cell made
MIN_TOKENS = 800
SHARE_OF_WINDOW = 0.08
HEADER = (
    "What the kernel holds now, newest first, each with the tool call (its id{readable}) or the user's cell that made"
    " it, and the turn (values are never shown):"
)
LOST = "Not in the kernel now (a restart, or removed outside the session); rerun the call that made it to get it back:"
READABLE = ": read_tool_output shows its code"
FILES = "Files written under the notebook's directory:"
CLOSING = "({names:,} more names and {files:,} more files not shown: list_variables lists every name)"


def budget(max_tokens: int | None, context_window: int) -> int:
    """``context.workspace.maxTokens``, else about 8% of the window and at least ``MIN_TOKENS``."""
    return max_tokens if max_tokens is not None else max(MIN_TOKENS, int(context_window * SHARE_OF_WINDOW))


def origin(entry: WorkspaceEntry, *, short: bool = False) -> str:
    """Which call or cell made the entry, and at which turn (``short``: "made by" left implicit, as in the block)."""
    if not entry.made_by:
        return "there before the session"
    if entry.made_by == BETWEEN_TURNS:
        return f"{entry.state} outside the session, before turn {entry.turn}"
    verb = {"changed": "changed by ", "modified": "modified by "}.get(entry.state, "" if short else "made by ")
    return f"{verb}{entry.made_by}, turn {entry.turn}"


def about(entry: WorkspaceEntry) -> str:
    """Type and size, and a frame's first columns: "DataFrame 1,200 rows x 8 cols [region, month, +6 more]"."""
    told = " ".join(part for part in (entry.type if entry.kind == "name" else "", entry.shape) if part)
    if entry.columns:
        more = entry.columns_total - len(entry.columns)
        told += " [" + ", ".join(entry.columns) + (f", +{more:,} more" if more > 0 else "") + "]"
    return told


def line(entry: WorkspaceEntry) -> str:
    """One entry as the model reads it: name or path, type and size, the first columns, what made it."""
    return f"- {entry.key}: {about(entry)} ({origin(entry, short=True)})"


def render(
    names: list[WorkspaceEntry],
    files: list[WorkspaceEntry],
    lost: list[WorkspaceEntry],
    count_text: Callable[[str], int],
    max_tokens: int,
    *,
    calls_readable: bool = True,
) -> str:
    """The block, within ``max_tokens`` by ``count_text``; empty when the record holds nothing (``calls_readable``:
    the header points at ``read_tool_output`` for a call's code)."""
    if not (names or files or lost):
        return ""
    header = HEADER.format(readable=READABLE if calls_readable else "")
    fixed = "\n".join(["<workspace>", header, FILES if files else "", LOST if lost else "", "</workspace>"])
    by_age = sorted(names + files, key=lambda e: -e.seq)
    left = max_tokens - count_text(fixed)
    kept: list[tuple[WorkspaceEntry, int]] = []
    used, everything = 0, True
    for entry in lost + by_age:  # counted one by one until the budget is spent: 10,000 names cost what 100 do
        cost = count_text(line(entry)) + 1
        if used + cost > left:
            everything = False
            break
        used += cost
        kept.append((entry, cost))
    room = left - count_text(CLOSING.format(names=999_999, files=999_999))
    while not everything and kept and used > room:  # not all of it: room for the line that counts the rest
        used -= kept.pop()[1]
    shown_ids = {id(entry) for entry, _ in kept}
    shown = [e for e in by_age if id(e) in shown_ids]
    out = ["<workspace>", header, *[line(e) for e in shown if e.kind == "name"]]
    written = [line(e) for e in shown if e.kind == "file"]
    if written:
        out += [FILES, *written]
    gone = [line(e) for e in lost if id(e) in shown_ids]
    if gone:
        out += [LOST, *gone]
    hidden_names = len(names) + len(lost) - sum(1 for e in names + lost if id(e) in shown_ids)
    hidden_files = len(files) - len(written)
    if hidden_names or hidden_files:
        out.append(CLOSING.format(names=hidden_names, files=hidden_files))
    out.append("</workspace>")
    return "\n".join(out)
