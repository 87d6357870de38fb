"""A glob walk that stays under the root and stops on a budget.

``Path.glob`` resolves ``..`` and walks whatever a pattern names before anything can filter the
results, with no way to stop it: ``../../**`` walks the whole machine. Here a pattern that leaves
its folder is refused up front, folders outside the root are never scanned, and the walk stops
after a number of directory entries or seconds, saying so.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from monad_notebook.agent.tools.file_access import under_root
from monad_notebook.errors import ToolError

_MAGIC = re.compile(r"[*?\[]")


class Budget:
    """How many directory entries and seconds a walk may use; ``spent`` says why it stopped."""

    def __init__(self, root: Path, max_entries: int, seconds: float) -> None:
        self.root = root
        self.max_entries = max_entries
        self.seconds = seconds
        self.entries = 0
        self.started = time.monotonic()
        self.spent = ""

    def take(self) -> bool:
        """Count one entry; False once the budget is used up."""
        if self.spent:
            return False
        self.entries += 1
        if self.entries > self.max_entries:
            self.spent = f"{self.max_entries} entries"
        elif self.entries % 256 == 0 and time.monotonic() - self.started > self.seconds:
            self.spent = f"{self.seconds:g} seconds ({self.entries} entries)"
        return not self.spent


def pattern_parts(pattern: str) -> tuple[str, ...]:
    """The parts of a relative glob; anything that could leave the folder is refused."""
    if "\x00" in pattern:
        raise ToolError("pattern contains a NUL character")
    parts = PurePosixPath(pattern).parts
    if PurePosixPath(pattern).is_absolute() or ".." in parts:
        raise ToolError(
            f"pattern {pattern!r} leaves the folder being listed; use a relative glob without '..' "
            "such as '**/*.csv', and choose the folder with path"
        )
    if not parts:
        raise ToolError(f"bad pattern {pattern!r}; use a relative glob such as '*.csv'")
    return parts


def glob(base: Path, parts: tuple[str, ...], budget: Budget) -> Iterator[Path]:
    """Paths under ``base`` matching ``parts`` (``**`` spans folders, symlinked folders not followed)."""
    seen: set[Path] = set()
    for path in _select(base, parts, budget):
        if path not in seen:
            seen.add(path)
            yield path


def _select(path: Path, parts: tuple[str, ...], budget: Budget) -> Iterator[Path]:
    if not parts:
        yield path
        return
    part, rest = parts[0], parts[1:]
    if part == "**":
        for folder in _folders(path, budget):
            yield from _select(folder, rest, budget)
    elif _MAGIC.search(part):
        for entry in _entries(path, budget):
            if fnmatchcase(entry.name, part) and (not rest or _is_dir(entry)):
                yield from _select(Path(entry.path), rest, budget)
    else:
        child = path / part
        if (child.is_dir() if rest else (child.exists() or child.is_symlink())) and budget.take():
            yield from _select(child, rest, budget)


def _folders(top: Path, budget: Budget) -> Iterator[Path]:
    """``top`` and every folder below it, depth first, without following symlinked folders."""
    stack = [top]
    while stack:
        folder = stack.pop()
        yield folder
        below = [Path(e.path) for e in _entries(folder, budget) if _is_dir(e) and not e.is_symlink()]
        stack.extend(reversed(below))


def _entries(folder: Path, budget: Budget) -> list[os.DirEntry[str]]:
    """The entries of a folder under the root, sorted, as far as the budget allows."""
    if budget.spent or not under_root(budget.root, folder):
        return []
    entries = []
    try:
        with os.scandir(folder) as scan:
            for entry in scan:
                if not budget.take():
                    break
                entries.append(entry)
    except OSError:
        return entries
    return sorted(entries, key=lambda e: e.name)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
