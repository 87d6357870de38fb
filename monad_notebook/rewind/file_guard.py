"""The moment before a file changes: Python's audit events, heard while the session's code runs.

An audit hook hears an event before the operation happens, so the file's earlier bytes can still be
read: ``open`` for writing (``open``, ``pathlib``, ``os.open``, and every writer built on them:
pandas' ``to_csv`` and ``to_pickle``, numpy's ``save``, pickle, matplotlib's ``savefig``),
``os.remove`` and ``os.unlink``, ``os.rename`` and ``os.replace`` (both ends), ``os.truncate``,
``shutil.rmtree`` (every file under the tree), and three doors to writers the hook cannot follow:
``sqlite3.connect`` (SQLite writes in C), and ``subprocess.Popen`` / ``os.system`` /
``os.posix_spawn`` (another program: the files its arguments name are kept first). Writers in C or
C++ that open files themselves (pyarrow's ``to_parquet``, ``write_table``, its CSV writer) raise
no event: ``named_paths.py`` keeps what a call's code names for such writers before it runs, and a
scan after the call finds what neither saw (its earlier bytes are then not kept, and it is said).

An audit hook cannot be removed, so one is installed per process; it returns at once while no
change is armed, and never lets a problem of its own reach the user's code.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
MAX_TREE_FILES = 2_000  # files of a tree about to be removed that are kept first
EVENTS = frozenset(
    {
        "open",
        "os.remove",
        "os.rename",
        "os.truncate",
        "shutil.rmtree",
        "sqlite3.connect",
        "subprocess.Popen",
        "os.system",
        "os.posix_spawn",
    }
)

Before = Callable[[str, str], None]  # before(absolute path, the event that is about to change it)

_armed: Before | None = None
_installed = False
_install_lock = threading.Lock()
_local = threading.local()


def arm(before: Before) -> None:
    """From now on, ``before`` hears every path about to change (until ``disarm``)."""
    global _armed, _installed
    with _install_lock:
        if not _installed:
            sys.addaudithook(_on_audit)
            _installed = True
    _armed = before


def disarm() -> None:
    global _armed
    _armed = None


class quiet:
    """While the keeper itself reads and writes files, the hook ignores this thread."""

    def __enter__(self) -> None:
        self.was = getattr(_local, "busy", False)
        _local.busy = True

    def __exit__(self, *exc: object) -> None:
        _local.busy = self.was


def _on_audit(event: str, args: tuple[Any, ...]) -> None:
    before = _armed
    if before is None or event not in EVENTS or getattr(_local, "busy", False):
        return
    _local.busy = True
    try:
        for path in _paths(event, args):
            before(path, event)
    except Exception:  # the user's code must never see the keeper fail
        pass
    finally:
        _local.busy = False


def _paths(event: str, args: tuple[Any, ...]) -> Iterator[str]:
    """The absolute paths ``event`` is about to change (or, for another program, names)."""
    if event == "open":
        path, mode, flags = args
        if not isinstance(path, int) and _writes(mode, flags):
            yield from _absolute(path)
    elif event in ("os.remove", "os.truncate"):
        yield from _absolute(args[0], args[1] if len(args) > 1 else None)
    elif event == "os.rename":
        src, dst, src_fd, dst_fd = (*args, None, None)[:4]
        yield from _absolute(src, src_fd)
        yield from _absolute(dst, dst_fd)
    elif event == "shutil.rmtree":
        for top in _absolute(args[0], args[1] if len(args) > 1 else None):
            yield from tree(top)
    elif event == "sqlite3.connect":
        if args and args[0] not in (":memory:", b":memory:", ""):
            yield from _absolute(args[0])
    else:
        yield from _program_arguments(event, args)


def _writes(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _absolute(path: Any, dir_fd: Any = None) -> Iterator[str]:
    if isinstance(path, int):
        return
    try:
        text = os.fsdecode(path)
        if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(text):
            text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
        yield os.path.abspath(text)
    except (OSError, TypeError, ValueError):
        return


def tree(top: str) -> Iterator[str]:
    count = 0
    for directory, _, files in os.walk(top):
        for name in files:
            count += 1
            if count > MAX_TREE_FILES:
                return
            yield os.path.join(directory, name)


def _program_arguments(event: str, args: tuple[Any, ...]) -> Iterator[str]:
    """Words of another program's command line that name existing files (what it may change)."""
    command = args[0] if event == "os.system" else args[1] if len(args) > 1 else None
    cwd = args[2] if event == "subprocess.Popen" and len(args) > 2 else None
    try:
        if isinstance(command, (str, bytes)):
            words = shlex.split(os.fsdecode(command))
        else:
            words = [os.fsdecode(word) for word in command or []]
        base = os.fsdecode(cwd) if cwd is not None else ""
    except (ValueError, TypeError):
        return
    for word in words[1:]:
        for path in _absolute(os.path.join(base, word) if base else word):
            if os.path.isfile(path):
                yield path
