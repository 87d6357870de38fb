"""The diff of a proposed cell: every line shown in order, in bounded time however large or repetitive the cell."""

from __future__ import annotations

import random
import time

import pytest

from monad_notebook.notebook.proposals import Proposal, diff_lines
from monad_notebook.time_limit import CodeTimedOut, TimeLimit

LINES = 10_000
TARGET_SECONDS = 0.1  # what a diff may cost the kernel; the test allows ten times that on a busy machine


def repetitive(n: int) -> tuple[str, str]:
    """Three lines over and over; a line added on top and the last one changed, so no common head or tail."""
    old = [("x = 1", "y = x + 1", "print(x, y)")[i % 3] for i in range(n)]
    return "\n".join(old), "\n".join(["import math", *old[:-1], "print('done')"])


def rewritten(n: int) -> tuple[str, str]:
    """Every line changed, every line repeated: the most a diff could compare."""
    return "\n".join(f"x{i % 30} = {i % 7}" for i in range(n)), "\n".join(f"y{i % 30} = {i % 7}" for i in range(n))


def spread(n: int) -> tuple[str, str]:
    """Lines that differ, every hundredth changed."""
    old = [f"value_{i} = {i} * scale" for i in range(n)]
    return "\n".join(old), "\n".join(line + " + 1" if i % 100 == 50 else line for i, line in enumerate(old))


def shows_every_line(base: str, source: str, rows: list[tuple[str, str]]) -> bool:
    kept_old, kept_new = [t for s, t in rows if s != "+"], [t for s, t in rows if s != "-"]
    return kept_old == base.splitlines() and kept_new == source.splitlines()


def timed_diff(base: str, source: str) -> tuple[list[tuple[str, str]], float]:
    """The diff and the CPU seconds this thread spent on it; a diff still running after 10 s fails the test."""
    started = time.thread_time()
    try:
        with TimeLimit(10.0):
            rows = diff_lines(base, source)
    except CodeTimedOut:
        pytest.fail("the diff was still running after 10 s")
    return rows, time.thread_time() - started


@pytest.mark.parametrize("cell", [repetitive, rewritten, spread])
def test_the_diff_of_a_ten_thousand_line_cell_takes_bounded_time_and_shows_every_line(cell):
    base, source = cell(LINES)
    rows, seconds = timed_diff(base, source)
    assert seconds < 10 * TARGET_SECONDS
    assert shows_every_line(base, source, rows)


def test_a_few_changes_to_a_large_repetitive_cell_are_paired_line_by_line():
    base, source = repetitive(LINES)
    rows, _ = timed_diff(base, source)
    assert [row for row in rows if row[0] != " "] == [("+", "import math"), ("-", "x = 1"), ("+", "print('done')")]


def test_a_large_cell_too_changed_to_pair_is_shown_replaced_whole():
    base, source = rewritten(LINES)
    rows, _ = timed_diff(base, source)
    assert rows == [("-", line) for line in base.split("\n")] + [("+", line) for line in source.split("\n")]


def test_a_proposal_for_a_large_cell_counts_its_lines_from_the_bounded_diff():
    base, source = repetitive(2_000)
    proposal = Proposal(id="p1", kind="change", cell_id="c", source=source, base=base)
    assert (proposal.added, proposal.removed) == (2, 1)


def test_small_diffs_show_both_sides_whole_and_in_order():
    chooser = random.Random(5)
    for _ in range(300):
        words = ["a = 1", "b = 2", "print(a)", "", "c = a + b"][: chooser.randint(1, 5)]
        base = "\n".join(chooser.choice(words) for _ in range(chooser.randint(0, 30)))
        source = "\n".join(chooser.choice(words) for _ in range(chooser.randint(0, 30)))
        assert shows_every_line(base, source, diff_lines(base, source))
