"""The diff of a proposed change to a large cell: how long it takes, and how much of it is paired line by line.

    python benchmarks/cell_diff.py [--sizes 1200 2000 10000] [--sets tuning held-out] [--before] [--timeout 60]

The diff is computed in the tool, on the kernel's main thread, so its time is time the kernel is
frozen. Each case is an old cell and the agent's new source for it, at each size (lines):

- tuning (what ``BUDGET`` in ``notebook/line_diff.py`` was chosen on): ``repetitive`` (three lines
  over and over, a line added on top and the last one changed, so no common head or tail helps),
  ``unique`` (every line different, every 100th changed), ``code`` (functions made from one
  template, a few edits spread through it), ``rewritten`` (every line changed: the budget is
  spent whole), ``alternating`` (two lines in turn, shifted by one), ``same`` (one line repeated,
  a tenth more of it), ``shuffled`` (the same lines in another order), ``half`` (the second half
  replaced), ``blocks`` (ten-line blocks that differ in one name, every block edited);
- held-out (written after the budget was chosen): ``renamed`` (this project's own source as one
  cell, a name replaced everywhere), ``inserted`` (the same, a function added in the middle and the
  last lines removed), ``reversed`` (twenty lines repeating, in reverse order), ``interleaved``
  (a line added after every tenth), ``dedented`` (the project's source, one indent level less).

Reported per case: milliseconds of wall time and of CPU time (the best of 3; wall time counts
whatever else the machine runs), the rows shown, and the rows beyond those of
``difflib`` over the whole cell (where it finishes), so a stretch shown replaced whole shows here. ``--before``
also times ``difflib.SequenceMatcher`` over the whole cell, as the diff was computed before, in a
child process stopped after ``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import difflib
import multiprocessing
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monad_notebook.notebook.line_diff import line_diff

Case = Callable[[int], tuple[list[str], list[str]]]


def repetitive(n: int) -> tuple[list[str], list[str]]:
    old = [("x = 1", "y = x + 1", "print(x, y)")[i % 3] for i in range(n)]
    return old, ["import math", *old[:-1], "print('done')"]


def unique(n: int) -> tuple[list[str], list[str]]:
    old = [f"value_{i} = {i} * scale" for i in range(n)]
    return old, [f"value_{i} = {i} * scale + 1" if i % 100 == 50 else line for i, line in enumerate(old)]


def code(n: int) -> tuple[list[str], list[str]]:
    template = [
        "def step_{k}(frame):",
        "    frame = frame.copy()",
        "    frame['x'] = frame['x'] * 2",
        "    return frame",
        "",
    ]
    old = [line.format(k=i // len(template)) for i, line in enumerate(template * (n // len(template) + 1))][:n]
    new = list(old)
    for i in range(2, n, max(1, n // 12)):
        new[i] = "    frame['x'] = frame['x'] * 3"
    return old, new


def rewritten(n: int) -> tuple[list[str], list[str]]:
    return [f"x{i % 30} = {i % 7}" for i in range(n)], [f"y{i % 30} = {i % 7}" for i in range(n)]


def alternating(n: int) -> tuple[list[str], list[str]]:
    old = ["total += row", "count += 1"] * (n // 2)
    return old, [*old[1:], "print(total / count)"]


def same(n: int) -> tuple[list[str], list[str]]:
    return ["pass"] * n, ["pass"] * (n + n // 10)


def shuffled(n: int) -> tuple[list[str], list[str]]:
    old = [f"print({i % 50})" for i in range(n)]
    new = list(old)
    random.Random(7).shuffle(new)
    return old, new


def half(n: int) -> tuple[list[str], list[str]]:
    old = [f"a{i % 40} = b{i % 40}" for i in range(n)]
    return old, old[: n // 2] + [f"c{i % 40} = d{i % 40}" for i in range(n - n // 2)]


def blocks(n: int) -> tuple[list[str], list[str]]:
    block = ["for item in {name}:", "    if item:", "        seen.add(item)", "    else:", "        empty += 1"]
    block += ["", "log('{name}')", "assert seen", "", "# ---"]
    old = [line.format(name=f"batch{i // 10}") for i, line in enumerate(block * (n // 10 + 1))][:n]
    return old, [line.replace("seen.add(item)", "seen.add(item.id)") for line in old]


def _sources(n: int) -> list[str]:
    """This project's own Python source, file after file, as one long cell of ``n`` lines."""
    lines: list[str] = []
    for path in sorted((Path(__file__).resolve().parents[1] / "monad_notebook").rglob("*.py")):
        lines += path.read_text(encoding="utf-8").splitlines()
    return (lines * (n // max(1, len(lines)) + 1))[:n]


def renamed(n: int) -> tuple[list[str], list[str]]:
    old = _sources(n)
    return old, [line.replace("self", "this") for line in old]


def inserted(n: int) -> tuple[list[str], list[str]]:
    old = _sources(n)
    helper = ["def helper(value):", '    """Added by the agent."""', "    return value", ""]
    return old, old[: n // 2] + helper + old[n // 2 : -3]


def reversed_lines(n: int) -> tuple[list[str], list[str]]:
    old = [f"row{i % 20}.append({i % 3})" for i in range(n)]
    return old, old[::-1]


def interleaved(n: int) -> tuple[list[str], list[str]]:
    old = [f"a{i % 4} += 1" for i in range(n)]
    new: list[str] = []
    for i, line in enumerate(old):
        new += [line, "check()"] if i % 10 == 9 else [line]
    return old, new


def dedented(n: int) -> tuple[list[str], list[str]]:
    old = _sources(n)
    return old, [line[4:] if line.startswith("    ") else line for line in old]


SETS: dict[str, dict[str, Case]] = {
    "tuning": {
        "repetitive": repetitive,
        "unique": unique,
        "code": code,
        "rewritten": rewritten,
        "alternating": alternating,
        "same": same,
        "shuffled": shuffled,
        "half": half,
        "blocks": blocks,
    },
    "held-out": {
        "renamed": renamed,
        "inserted": inserted,
        "reversed": reversed_lines,
        "interleaved": interleaved,
        "dedented": dedented,
    },
}


def _difflib_rows(old: list[str], new: list[str]) -> int:
    rows = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        rows += (i2 - i1) if tag == "equal" else (i2 - i1) + (j2 - j1)
    return rows


def _timed_difflib(old: list[str], new: list[str], queue: multiprocessing.Queue) -> None:
    started = time.perf_counter()
    rows = _difflib_rows(old, new)
    queue.put((time.perf_counter() - started, rows))


def before(old: list[str], new: list[str], timeout: float) -> tuple[float | None, int | None]:
    """difflib over the whole cell, as before: (seconds, rows), or (None, None) when it did not finish in time."""
    queue: multiprocessing.Queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=_timed_difflib, args=(old, new, queue))
    child.start()
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
        return None, None
    seconds, rows = queue.get()
    return seconds, rows


def after(old: list[str], new: list[str]) -> tuple[float, float, list[tuple[str, str]]]:
    """(wall seconds, CPU seconds, rows): the best of 3 runs of the diff as it is now."""
    wall, cpu, rows = float("inf"), float("inf"), []
    for _ in range(3):
        started, used = time.perf_counter(), time.thread_time()
        rows = line_diff(old, new)
        wall, cpu = min(wall, time.perf_counter() - started), min(cpu, time.thread_time() - used)
    return wall, cpu, rows


def check(old: list[str], new: list[str], rows: list[tuple[str, str]]) -> None:
    """Every old line and every new line is shown, in order: the diff hides nothing."""
    assert [t for s, t in rows if s != "+"] == old and [t for s, t in rows if s != "-"] == new


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1200, 2000, 10000])
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--before", action="store_true", help="also time difflib over the whole cell")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    head = "| set | case | lines | ms | CPU ms | rows | rows beyond difflib's |"
    if args.before:
        head += " difflib ms (before) |"
    print(head)
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: |" if args.before else ""))
    for name in args.sets:
        for label, case in SETS[name].items():
            for size in args.sizes:
                old, new = case(size)
                wall, cpu, rows = after(old, new)
                check(old, new, rows)
                line = f"| {name} | {label} | {size:,} | {wall * 1000:.1f} | {cpu * 1000:.1f} | {len(rows):,} |"
                then, then_rows = before(old, new, args.timeout) if args.before else (None, None)
                line += f" {len(rows) - then_rows:,} |" if then_rows is not None else " n/a |"
                if args.before:
                    line += f" {then * 1000:,.0f} |" if then is not None else f" > {args.timeout * 1000:,.0f} |"
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
