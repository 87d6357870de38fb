"""A change the agent proposed, applied on top of the user's edit of the same cell: a three-way line merge.

The agent's change was made against the source it read (the base); the user then edited the cell.
Both are read as changes of the base, each a list of stretches of base lines replaced by new lines
(``line_diff``, the diff the review shows). When no stretch of one touches a stretch of the other,
applying both is the only sound reading, and that is the merge. When they touch (the same lines,
an insertion inside a stretch the other replaces, two insertions at one place), which should win is
the user's call, so there is no merge. The merged source is shown as a diff against the user's edit
before anything lands, so what the user accepts is exactly what the cell then holds.

Lines are split at "\\n" only and joined back the same way, so every other character (a "\\r", a
missing final newline) survives the merge as it was. The kernel computes it for both paths (the
extension asks for it, the output review uses it directly), so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from monad_notebook.notebook.line_diff import line_diff


@dataclass(frozen=True)
class _Stretch:
    start: int  # base lines [start, end) replaced by ``lines``; start == end: an insertion before base line start
    end: int
    lines: tuple[str, ...]
    at: int = field(compare=False)  # where it begins in its own side's lines: the same change on both sides is one


@dataclass(frozen=True)
class Merge:
    """The merged source, or None with ``overlap`` saying where the two edits touch (one line for the user)."""

    source: str | None
    overlap: str = ""


def _stretches(base: list[str], other: list[str]) -> list[_Stretch]:
    """What ``other`` changed of ``base``, as stretches of base lines and what replaced them."""
    found: list[_Stretch] = []
    old = new = 0
    open_at: tuple[int, int] | None = None  # (base line, other line) where the current stretch began
    added: list[str] = []
    for sign, text in [*line_diff(base, other), (" ", "")]:
        if sign == " ":
            if open_at is not None:
                found.append(_Stretch(open_at[0], old, tuple(added), open_at[1]))
                open_at, added = None, []
            old, new = old + 1, new + 1
            continue
        if open_at is None:
            open_at = (old, new)
        if sign == "-":
            old += 1
        else:
            added.append(text)
            new += 1
    return found


def _touch(a: _Stretch, b: _Stretch) -> bool:
    """Whether two stretches of different sides cannot both apply in one well-defined order."""
    if a == b:
        return False  # the same change made on both sides
    if a.start == a.end == b.start == b.end:
        return True  # two insertions at one place: which goes first is not known
    return a.start < b.end and b.start < a.end


def merge_on_top(base: str, edited: str, proposed: str) -> Merge:
    """``proposed`` (a change of ``base``) applied on top of ``edited`` (the user's change of ``base``)."""
    old = base.split("\n")
    mine = _stretches(old, edited.split("\n"))
    theirs = _stretches(old, proposed.split("\n"))
    for a in mine:
        for b in theirs:
            if _touch(a, b):
                where = f"line {a.at + 1}" if len(a.lines) <= 1 else f"lines {a.at + 1}-{a.at + len(a.lines)}"
                return Merge(None, f"your edit and the agent's change touch the same lines ({where} of the cell now)")
    merged: list[str] = []
    at = 0
    for stretch in sorted(set(mine) | set(theirs), key=lambda s: (s.start, s.end)):
        merged += old[at : stretch.start]
        merged += stretch.lines
        at = stretch.end
    merged += old[at:]
    return Merge("\n".join(merged))
