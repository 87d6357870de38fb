"""Which files under the notebook's directory were created or modified since the last look.

Two sources, because neither sees everything. Python's audit hook reports every ``open`` for
writing (``open``, ``pathlib``, ``os.open``, and what pandas' ``to_csv``, numpy's ``save`` or
matplotlib's ``savefig`` call), wherever the file is. Writers in C++ bypass it (pyarrow's
``to_parquet``, a ``write_dataset``), so a scan compares modification times too, breadth first
(the files nearest the directory first) and bounded: ``MAX_SCAN_ENTRIES`` entries, hidden
directories, caches and LanceDB tables left out, and notebooks (the frontend saves them on its
own; ``read_notebook`` reads them). A file beyond the bound is found by the hook
only.

An audit hook cannot be removed, so one is installed per process, the first time a watch
starts, and does nothing while no watch is active.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_SCAN_ENTRIES = 1_000
MAX_OPENED = 10_000  # write-opens remembered between two looks; beyond, the scan alone sees them
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_ACTIVE: weakref.WeakSet[FileWatch] = weakref.WeakSet()  # a session dropped unclosed stops being told
_INSTALLED = threading.Lock()
_hooked = False


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the watched directory, with forward slashes
    state: str  # created | modified
    size: int


def _on_audit(event: str, args: tuple[Any, ...]) -> None:
    """Every audited event of the process passes here: return at once unless it opens a file for writing."""
    if event != "open" or not _ACTIVE:
        return
    path, mode, flags = args
    if isinstance(path, int) or not (
        (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & _WRITE_FLAGS)
    ):
        return
    try:
        full = os.path.abspath(os.fsdecode(path))
    except Exception:
        return
    for watch in list(_ACTIVE):
        if len(watch.opened) < MAX_OPENED:
            watch.opened.add(full)


def _install() -> None:
    global _hooked
    with _INSTALLED:
        if not _hooked:
            sys.addaudithook(_on_audit)
            _hooked = True


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in _SKIPPED_DIRS or name.endswith(".lance")


def _skipped_file(name: str) -> bool:
    return name.startswith(".") or name.endswith(".ipynb")


def scan(root: Path, limit: int = MAX_SCAN_ENTRIES) -> dict[str, tuple[int, int]]:
    """Relative path -> (mtime in ns, size) of the regular files under ``root``, nearest first, at most ``limit``
    entries looked at (directories count). Plain strings, no ``Path``: this runs after every call."""
    found: dict[str, tuple[int, int]] = {}
    queue, seen = [(str(root), "")], 0
    for directory, prefix in queue:
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=_by_name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > limit:
                return found
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not _skipped(name):
                        queue.append((entry.path, f"{prefix}{name}/"))
                    continue
                if _skipped_file(name) or not entry.is_file(follow_symlinks=False):
                    continue
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found[prefix + name] = (stat.st_mtime_ns, stat.st_size)
    return found


def _by_name(entry: os.DirEntry[str]) -> str:
    return entry.name


class FileWatch:
    """The files under one directory as last seen, and the write-opens the audit hook reported since."""

    def __init__(self) -> None:
        self.root: Path | None = None
        self.seen: dict[str, tuple[int, int]] = {}
        self.opened: set[str] = set()

    def start(self, root: Path) -> None:
        """Watch ``root`` from now on: what is there now is the baseline, not a change."""
        _install()
        self.root, self.seen, self.opened = root, scan(root), set()
        _ACTIVE.add(self)

    def stop(self) -> None:
        _ACTIVE.discard(self)
        self.opened = set()

    def changes(self, root: Path) -> list[FileChange]:
        """Files created or modified under ``root`` since the last look; a new ``root`` (``%cd``) starts over."""
        if self.root != root or self not in _ACTIVE:
            self.start(root)
            return []
        opened, self.opened = self.opened, set()
        written = {relative for full in opened if (relative := _under(root, full)) is not None}
        now = scan(root)
        for relative in written - now.keys():
            try:
                stat = (root / relative).stat()
            except OSError:
                continue
            now[relative] = (stat.st_mtime_ns, stat.st_size)
        before, self.seen = self.seen, now
        out = []
        for path, (mtime, size) in now.items():
            old = before.get(path)
            if old is None:
                out.append(FileChange(path, "created", size))
            elif old != (mtime, size) or path in written:
                out.append(FileChange(path, "modified", size))
        return out


def _under(root: Path, full: str) -> str | None:
    """``full`` relative to ``root`` with forward slashes, or None when it lies outside (or in a skipped place)."""
    try:
        relative = Path(full).relative_to(root)
    except ValueError:
        return None
    if any(_skipped(part) for part in relative.parts) or _skipped_file(relative.name):
        return None
    return relative.as_posix()
