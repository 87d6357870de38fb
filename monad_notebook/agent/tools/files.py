"""File tools: list, read and search files under the session's root directory.

Every path is resolved (symlinks included) and must stay under ``ctx.root``: the agent
sees the project the notebook works on, not the rest of the machine. Files are read
in bounded pieces, so a 50 MB log or a binary blob never floods memory or the context,
and a FIFO or device is refused rather than read. Text is redacted before it is numbered,
clipped or searched (see ``file_access``), and searches use RE2, whose matching time is
linear, so no pattern can stall the kernel.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from monad_notebook.agent.tools.base import Tool, ToolContext, reads, tool
from monad_notebook.agent.tools.file_access import (
    MAX_LINE_BYTES,
    SNIFF_BYTES,
    Shown,
    kept_text,
    looks_binary,
    open_regular,
    read_lines,
    redact_lines,
    resolve_path,
    under_root,
)
from monad_notebook.agent.tools.file_glob import Budget, glob, pattern_parts
from monad_notebook.agent.tools.file_search import Search, compile_pattern, search_file
from monad_notebook.errors import ToolError

__all__ = ["MAX_LINE_BYTES", "SNIFF_BYTES", "TOOLS", "grep", "list_files", "looks_binary", "read_file", "resolve_path"]

_SHOWN_LINE_CHARS = 2000
_READ_KEPT_BYTES = 16_384  # each line is redacted this far, well past what is shown of it
_CONTEXT_LINES = 256  # lines around a window redacted with it, so a key block crossing its edge is seen whole
_MAX_LIST = 500
_MAX_SCAN = 200_000
_LIST_SECONDS = 10.0
_MAX_READ_LINES = 2000
_MAX_GREP_FILES = 20_000
_GREP_SECONDS = 20.0
_COUNT_LINES_UP_TO = 512 * 1024 * 1024
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".ipynb_checkpoints", ".venv", ".mypy_cache"}


def _display(ctx: ToolContext, path: Path) -> str:
    root = Path(ctx.root).resolve()
    return "." if path == root else path.relative_to(root).as_posix()


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


@reads
@tool
def list_files(ctx: ToolContext, path: str = ".", pattern: str = "*") -> str:
    """List files and folders under a directory of the user's project, with their sizes.

    Args:
        path: Directory to list, relative to the project root.
        pattern: Glob pattern, e.g. "*.csv"; use "**/*.py" to search subfolders too.
    """
    base = resolve_path(ctx, path)
    if not base.is_dir():
        raise ToolError(f"{path!r} is not a directory" + ("" if base.exists() else " (it does not exist)"))
    root = Path(ctx.root).resolve()
    budget = Budget(root, _MAX_SCAN, _LIST_SECONDS)
    found = list(islice((p for p in glob(base, pattern_parts(pattern), budget) if under_root(root, p)), _MAX_LIST + 1))
    if not found and not budget.spent:
        return f"no entries in {_display(ctx, base)} match {pattern!r}"
    lines = []
    for entry in sorted(found[:_MAX_LIST]):
        name = entry.relative_to(base).as_posix()
        try:
            lines.append(f"{name}/" if entry.is_dir() else f"{name}  {_human(entry.stat().st_size)}")
        except OSError:
            lines.append(f"{name}  (unreadable)")
    if len(found) > _MAX_LIST:
        lines.append("[... more entries not listed; narrow the pattern or path ...]")
    elif budget.spent:
        lines.append(f"[... stopped after scanning {budget.spent}; narrow the pattern or path ...]")
    return "\n".join(lines)


def _target(ctx: ToolContext, path: str) -> Path:
    target = resolve_path(ctx, path)
    if not target.exists():
        raise ToolError(f"{path!r} does not exist; list_files shows what is there")
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory; use list_files")
    return target


def _count_lines(handle: BinaryIO, size: int) -> int | None:
    if size > _COUNT_LINES_UP_TO:
        return None
    handle.seek(0)
    count = 0
    last = b""
    while chunk := handle.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk
    return count + (1 if last and not last.endswith(b"\n") else 0)


@dataclass
class _Window:
    """The requested lines plus context either side, as read: (text, full length in bytes)."""

    start: int = 0
    lines: list[tuple[str, int]] = field(default_factory=list)
    end: int = 0  # index after the last requested line that exists


def _read_window(handle: BinaryIO, offset: int, limit: int) -> _Window:
    before: deque[tuple[int, str, int]] = deque(maxlen=_CONTEXT_LINES)
    window = _Window(end=offset)
    for index, (raw, length) in enumerate(read_lines(handle)):
        if index < offset - _CONTEXT_LINES:
            continue
        if index >= offset + limit + _CONTEXT_LINES:
            break
        text = kept_text(raw, length, _READ_KEPT_BYTES)
        if index < offset:
            before.append((index, text, length))
            continue
        window.lines.append((text, length))
        window.end = min(index + 1, offset + limit)
    window.start = before[0][0] if before else offset
    window.lines[:0] = [(text, length) for _, text, length in before]
    return window


def _numbered(entry: Shown, lengths: list[int], start: int) -> str:
    text, at = entry.text, entry.first - start
    length = lengths[at] if 0 <= at < len(lengths) else len(text)
    cut = entry.first == entry.last and length > _READ_KEPT_BYTES
    if len(text) > _SHOWN_LINE_CHARS or cut:
        text = f"{text[:_SHOWN_LINE_CHARS]} [... line truncated, {length} bytes in all]"
    return f"{entry.label:>6}\t{text}"


@reads
@tool
def read_file(ctx: ToolContext, path: str, offset: int = 0, limit: int = 200) -> str:
    """Read lines of a text file in the user's project, numbered, a window at a time.

    Args:
        path: File to read, relative to the project root.
        offset: Number of lines to skip from the start (0 reads from the first line).
        limit: Maximum number of lines to return.
    """
    if offset < 0 or limit < 1:
        raise ToolError("offset must be >= 0 and limit >= 1")
    limit = min(limit, _MAX_READ_LINES)
    target = _target(ctx, path)
    name = _display(ctx, target)
    with open_regular(target, path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if looks_binary(handle.read(SNIFF_BYTES)):
            return f"{name}: binary file, {size} bytes, not shown"
        handle.seek(0)
        window = _read_window(handle, offset, limit)
        total = _count_lines(handle, size)
    total_text = f"{total} lines" if total is not None else f"{_human(size)}, lines not counted"
    if window.end <= offset:
        return f"{name}: no lines after line {offset} ({total_text})"
    entries = redact_lines(ctx.redact, [text for text, _ in window.lines], window.start)
    lengths = [length for _, length in window.lines]
    shown = [_numbered(e, lengths, window.start) for e in entries if e.last >= offset and e.first < window.end]
    header = f"{name}: lines {offset + 1}-{window.end} of {total_text}"
    more = total is None or window.end < total
    footer = f"\n[... more lines: read_file(path={path!r}, offset={window.end}) continues ...]" if more else ""
    return header + "\n" + "\n".join(shown) + footer


def _walk(base: Path, root: Path, deadline: float) -> Iterator[Path]:
    if not base.is_dir():
        yield base
        return
    for folder, dirs, files in os.walk(base):
        if time.monotonic() > deadline:
            return
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for file in sorted(files):
            candidate = Path(folder) / file
            if under_root(root, candidate):
                yield candidate


@reads
@tool
def grep(ctx: ToolContext, pattern: str, path: str = ".", max_results: int = 50) -> str:
    """Search the user's project files for a regular expression (or literal text), line by line.

    Args:
        pattern: Regular expression in RE2 syntax (no backreferences or lookarounds); text that is not
            a regular expression at all is searched literally.
        path: File or directory to search, relative to the project root.
        max_results: Maximum number of matching lines to return.
    """
    if not pattern:
        raise ToolError("pattern must not be empty")
    max_results = max(1, min(max_results, 500))
    base = resolve_path(ctx, path)
    if not base.exists():
        raise ToolError(f"{path!r} does not exist; list_files shows what is there")
    root = Path(ctx.root).resolve()
    search = Search(compile_pattern(pattern), ctx.redact, max_results + 1, time.monotonic() + _GREP_SECONDS)
    count = 0
    for count, file in enumerate(_walk(base, root, search.deadline), start=1):
        if count > _MAX_GREP_FILES or time.monotonic() > search.deadline:
            search.stopped = f"[... stopped after {count - 1} files; narrow the path or pattern ...]"
            break
        if search_file(search, file, _display(ctx, file)):
            break
    if not search.stopped and time.monotonic() > search.deadline:
        search.stopped = f"[... stopped after {count} files: out of time; narrow the path or pattern ...]"
    return _grep_report(search, pattern, _display(ctx, base), max_results)


def _grep_report(search: Search, pattern: str, where: str, max_results: int) -> str:
    hits = search.hits
    if len(hits) > max_results:
        hits[max_results:] = ["[... more matches not shown; narrow the pattern or path ...]"]
    lines = hits or [f"no matches for {pattern!r} in {where}"]
    if search.stopped:
        lines.append(search.stopped)
    if search.skipped:
        names = ", ".join(search.skipped[:5]) + (", ..." if len(search.skipped) > 5 else "")
        lines.append(f"[skipped {len(search.skipped)} FIFO/socket/device file(s), not regular files: {names}]")
    return "\n".join(lines)


TOOLS: list[Tool] = [list_files, read_file, grep]
