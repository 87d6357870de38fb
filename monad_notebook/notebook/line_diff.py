"""The line diff of a proposed cell: every line shown, computed in bounded time whatever the cell holds.

``difflib.SequenceMatcher`` alone is quadratic or worse on a large cell whose lines repeat, and the
diff is computed in the tool, on the kernel's main thread. So, as git's patience diff does, the
common head and tail are set aside, and lines that occur exactly once on each side anchor the rest
(the longest run of them in the same order); what lies between two anchors is diffed the same way.
A stretch with no anchor gets the fewest lines removed and added (Myers' greedy diff, whose cost
grows with its lines times its edits). Every step is counted against one budget per diff, and a
stretch beyond it is shown replaced whole: its old lines removed, its new lines added. Nothing is
ever left out, only paired more coarsely; ``benchmarks/cell_diff.py`` measures the time and how
often that happens.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence

Row = tuple[str, str]  # ("-" | "+" | " ", the line)

BUDGET = 150_000  # what one diff may spend: lines looked at, steps taken (spent whole: about 50 ms of one core)


class _Budget:
    def __init__(self, units: int) -> None:
        self.left = units

    def take(self, units: int) -> bool:
        if units > self.left:
            self.left = 0
            return False
        self.left -= units
        return True


Stretch = tuple[int, int, int, int]  # old lines [alo, ahi), new lines [blo, bhi)


def line_diff(old: Sequence[str], new: Sequence[str], *, budget: int = BUDGET) -> list[Row]:
    """Every line of ``old`` and ``new`` in order as ("-"|"+"|" ", line): the lines kept, removed and added."""
    spend = _Budget(budget)
    rows: list[Row] = []
    stack: list[Stretch | list[Row]] = [(0, len(old), 0, len(new))]
    while stack:
        task = stack.pop()
        if isinstance(task, list):
            rows.extend(task)
        else:
            stack.extend(reversed(_split(old, new, task, spend, rows)))
    return rows


def _split(
    old: Sequence[str], new: Sequence[str], stretch: Stretch, spend: _Budget, rows: list[Row]
) -> list[Stretch | list[Row]]:
    """Diff the head of a stretch into ``rows``; what remains of it, in order, as smaller stretches and kept lines."""
    alo, ahi, blo, bhi = stretch
    while alo < ahi and blo < bhi and old[alo] == new[blo]:
        rows.append((" ", old[alo]))
        alo, blo = alo + 1, blo + 1
    end = ahi
    while alo < ahi and blo < bhi and old[ahi - 1] == new[bhi - 1]:
        ahi, bhi = ahi - 1, bhi - 1
    tail = [(" ", line) for line in old[ahi:end]]
    if alo == ahi or blo == bhi or not spend.take((ahi - alo) + (bhi - blo)):
        rows.extend(_replaced(old, new, (alo, ahi, blo, bhi)))
        return [tail]
    anchors = _anchors(old, new, (alo, ahi, blo, bhi))
    if not anchors:
        rows.extend(_shortest(old, new, (alo, ahi, blo, bhi), spend) or _replaced(old, new, (alo, ahi, blo, bhi)))
        return [tail]
    parts: list[Stretch | list[Row]] = []
    kept: list[Row] = []
    for i, j in anchors:
        if i > alo or j > blo:
            parts += [kept, (alo, i, blo, j)]
            kept = []
        kept.append((" ", old[i]))
        alo, blo = i + 1, j + 1
    return [*parts, kept, (alo, ahi, blo, bhi), tail]


def _anchors(old: Sequence[str], new: Sequence[str], stretch: Stretch) -> list[tuple[int, int]]:
    """Pairs (i, j) of lines found exactly once on each side of the stretch: the longest run of them in order."""
    alo, ahi, blo, bhi = stretch
    count_old = Counter(old[alo:ahi])
    once = {line for line, count in Counter(new[blo:bhi]).items() if count == 1 and count_old[line] == 1}
    if not once:
        return []
    at_new = {new[j]: j for j in range(blo, bhi) if new[j] in once}
    pairs = [(i, at_new[old[i]]) for i in range(alo, ahi) if old[i] in once]
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of ``pairs`` (in order of i) whose j also increase (patience sorting)."""
    tops: list[int] = []  # the smallest j ending an increasing run of each length
    ends: list[int] = []  # index into pairs of that run's last pair
    before = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        length = bisect.bisect_left(tops, j)
        if length == len(tops):
            tops.append(j)
            ends.append(index)
        else:
            tops[length], ends[length] = j, index
        before[index] = ends[length - 1] if length else -1
    run, index = [], ends[-1] if ends else -1
    while index >= 0:
        run.append(pairs[index])
        index = before[index]
    return run[::-1]


def _shortest(old: Sequence[str], new: Sequence[str], stretch: Stretch, spend: _Budget) -> list[Row] | None:
    """The fewest lines removed and added (Myers' greedy diff), or None once it would overspend the budget.

    Its cost grows with the lines times the edits, so a stretch changed in a few lines is cheap
    whatever repeats in it.
    """
    alo, ahi, blo, bhi = stretch
    a, b = old[alo:ahi], new[blo:bhi]
    n, m = len(a), len(b)
    most = min(n + m, math.isqrt(2 * spend.left) + 1)  # the edits the budget could pay for
    middle = most + 1
    reach = [0] * (2 * middle + 1)  # reach[middle + k]: the furthest x reached on diagonal k = x - y
    trace: list[list[int]] = []  # reach as each round found it, diagonals -d-1 .. d+1
    for d in range(most + 1):
        if not spend.take(d + 1):
            return None
        trace.append(reach[middle - d - 1 : middle + d + 2])
        for k in range(-d, d + 1, 2):
            at = middle + k
            x = reach[at + 1] if k == -d or (k != d and reach[at - 1] < reach[at + 1]) else reach[at - 1] + 1
            y = start = x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            if y > start and not spend.take(y - start):
                return None
            reach[at] = x
            if x >= n and y >= m:
                return _walk_back(a, b, trace, k)
    return None


def _walk_back(a: Sequence[str], b: Sequence[str], trace: list[list[int]], k: int) -> list[Row]:
    """The rows of the path the greedy diff found, from its end back to the start."""
    rows: list[Row] = []
    x, y = len(a), len(b)
    for d in range(len(trace) - 1, 0, -1):
        reach = trace[d]  # reach[k + d + 1] is diagonal k
        at = k + d + 1
        down = k == -d or (k != d and reach[at - 1] < reach[at + 1])
        previous = k + 1 if down else k - 1
        px = reach[previous + d + 1]
        py = px - previous
        while x > px + (0 if down else 1) and y > py + (1 if down else 0):
            x, y = x - 1, y - 1
            rows.append((" ", a[x]))
        if down:
            y -= 1
            rows.append(("+", b[y]))
        else:
            x -= 1
            rows.append(("-", a[x]))
        k = previous
    while x > 0 and y > 0:
        x, y = x - 1, y - 1
        rows.append((" ", a[x]))
    return rows[::-1]


def _replaced(old: Sequence[str], new: Sequence[str], stretch: Stretch) -> list[Row]:
    alo, ahi, blo, bhi = stretch
    return [*(("-", line) for line in old[alo:ahi]), *(("+", line) for line in new[blo:bhi])]
