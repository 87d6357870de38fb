"""The ``<workspace>`` block: what the kernel holds now, sent with every request, outside the summary.

Built at each request from the record as the last look at the kernel left it, newest first, within
a token budget (at most ``MAX_TOKENS`` unless configured), reading only as many entries as fit: the
block costs the same for 100,000 names as for 1,000. What does not fit is counted, with a pointer
to ``list_variables``. Names a kernel restart lost come first: they are what the agent must not take
for granted. What the record could not see (a value told by its type only, keys that are not
names, a look cut short) is said at the end.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from monad_notebook.store.base import WorkspaceEntry

BETWEEN_TURNS = "outside the session"  # what made a change seen at a turn's start that no call or cell made
MIN_TOKENS = 800
MAX_TOKENS = 4_000  # about 90 eight-column DataFrames or 190 lists, sent uncached at the prompt's end
SHARE_OF_WINDOW = 0.08
TYPED_SHOWN = 10
HEADER = (
    "What the kernel holds now, newest first, each with the tool call (its id{readable}) or the user's cell that made"
    " it, and the turn (values are never shown):"
)
LOST = "Not in the kernel now (a restart, or removed outside the session); rerun the call that made it to get it back:"
READABLE = ": read_tool_output shows its code"
FILES = "Files written under the notebook's directory:"
CLOSING = "({names:,} more names and {files:,} more files not shown: list_variables lists every name)"


def budget(max_tokens: int | None, context_window: int) -> int:
    """``context.workspace.maxTokens``, else about 8% of the window, at least ``MIN_TOKENS`` and at most
    ``MAX_TOKENS`` (the block ends every request, after the provider's cached prefix: a share of a
    1M-token window would be a cost on every step, not a bound)."""
    if max_tokens is not None:
        return max_tokens
    return min(MAX_TOKENS, max(MIN_TOKENS, int(context_window * SHARE_OF_WINDOW)))


@dataclass(frozen=True)
class Notes:
    """What the record could not see, said in the block and by ``%monad status`` for as long as it holds."""

    typed: list[str]  # names told by their type only: looking at the value raised or ran out of time
    odd_keys: int = 0  # keys of the namespace that are not strings
    deferred: int = 0  # names a look that ran out of time left for the next one

    def lines(self) -> list[str]:
        out = []
        if self.typed:
            more = len(self.typed) - TYPED_SHOWN
            named = ", ".join(self.typed[:TYPED_SHOWN]) + (f" and {more:,} more" if more > 0 else "")
            out.append(f"Told by type only (looking at the value failed or took too long): {named}")
        if self.odd_keys:
            out.append(f"The namespace also holds {self.odd_keys:,} key(s) that are not strings; they are not listed.")
        if self.deferred:
            out.append(f"The last look ran out of time: {self.deferred:,} names are looked at after the next call.")
        return out

    def sentence(self) -> str:
        return " ".join(self.lines())


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
    lost: Iterable[WorkspaceEntry],
    newest: Iterable[WorkspaceEntry],
    counts: tuple[int, int, int],
    count_text: Callable[[str], int],
    max_tokens: int,
    *,
    calls_readable: bool = True,
    notes: Notes | None = None,
) -> str:
    """The block, within ``max_tokens`` by ``count_text``; empty when the record holds nothing.

    ``lost`` (names a restart lost) and ``newest`` (live names and files) are read newest first,
    and only as far as the budget goes; ``counts`` are the names, files and lost names in all.
    ``calls_readable``: the header points at ``read_tool_output`` for a call's code.
    """
    told = notes.lines() if notes is not None else []
    if not (any(counts) or told):
        return ""
    header = HEADER.format(readable=READABLE if calls_readable else "")
    fixed = "\n".join(
        ["<workspace>", header, FILES if counts[1] else "", LOST if counts[2] else "", *told, "</workspace>"]
    )
    left = max_tokens - count_text(fixed)
    kept: list[tuple[WorkspaceEntry, int]] = []
    used, everything = 0, True
    for entry in itertools.chain(lost, newest):  # counted one by one until the budget is spent
        cost = count_text(line(entry)) + 1
        if used + cost > left:
            everything = False
            break
        used += cost
        kept.append((entry, cost))
    room = left - count_text(CLOSING.format(names=999_999, files=999_999))
    while not everything and kept and used > room:  # not all of it: room for the line that counts the rest
        used -= kept.pop()[1]
    shown = [e for e, _ in kept]
    out = ["<workspace>", header, *[line(e) for e in shown if e.kind == "name" and e.state != "lost"]]
    written = [line(e) for e in shown if e.kind == "file"]
    if written:
        out += [FILES, *written]
    gone = [line(e) for e in shown if e.state == "lost"]
    if gone:
        out += [LOST, *gone]
    out += told
    hidden_names = counts[0] + counts[2] - sum(1 for e in shown if e.kind == "name")
    hidden_files = counts[1] - len(written)
    if not everything and (hidden_names > 0 or hidden_files > 0):
        out.append(CLOSING.format(names=max(0, hidden_names), files=max(0, hidden_files)))
    out.append("</workspace>")
    return "\n".join(out)
