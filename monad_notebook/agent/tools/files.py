"""File tools: list, read and search files under the session's root directory.

Every path is resolved (symlinks included) and must stay under ``ctx.root``: the agent
sees the project the notebook works on, not the rest of the machine. Files are read
in bounded pieces, so a 50 MB log or a binary blob never floods memory or the context.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from monad_notebook.agent.tools.base import Tool, ToolContext, tool
from monad_notebook.errors import ToolError

SNIFF_BYTES = 8192
MAX_LINE_BYTES = 1_000_000  # longer lines are read (and searched) only this far
_SHOWN_LINE_CHARS = 2000
_GREP_LINE_CHARS = 300
_MAX_LIST = 500
_MAX_READ_LINES = 2000
_MAX_GREP_FILES = 20_000
_GREP_SECONDS = 20.0
_COUNT_LINES_UP_TO = 512 * 1024 * 1024
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".ipynb_checkpoints", ".venv", ".mypy_cache"}
_TEXT_CONTROL = {7, 8, 9, 10, 12, 13, 27}


def looks_binary(sample: bytes) -> bool:
    """NUL bytes, or mostly undecodable / control bytes: not worth showing as text."""
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 3 and exc.reason == "unexpected end of data":
            return False
    odd = sum(1 for b in sample if (b < 32 and b not in _TEXT_CONTROL) or 127 <= b < 160)
    return odd / len(sample) > 0.1


def resolve_path(ctx: ToolContext, path: str) -> Path:
    """The real path for ``path`` under the root; anything escaping the root is refused."""
    root = Path(ctx.root).resolve()
    if "\x00" in path:
        raise ToolError("path contains a NUL character")
    candidate = Path(path).expanduser()
    resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if resolved != root and root not in resolved.parents:
        raise ToolError(f"{path!r} is outside the working directory {root}; use a path under it")
    return resolved


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


def _under_root(root: Path, path: Path) -> bool:
    try:
        real = path.resolve()
    except OSError:
        return False
    return real == root or root in real.parents


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
    try:
        found = list(islice((p for p in base.glob(pattern) if _under_root(root, p)), _MAX_LIST + 1))
    except (ValueError, NotImplementedError) as exc:
        raise ToolError(f"bad pattern {pattern!r}: {exc}; use a relative glob such as '*.csv'") from None
    if not found:
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
    return "\n".join(lines)


def _lines(handle: BinaryIO) -> Iterator[tuple[bytes, int]]:
    """Lines as (first MAX_LINE_BYTES bytes, full length): one giant line cannot fill memory."""
    while True:
        line = handle.readline(MAX_LINE_BYTES)
        if not line:
            return
        length, rest = len(line), line
        while len(rest) == MAX_LINE_BYTES and not rest.endswith(b"\n"):
            rest = handle.readline(MAX_LINE_BYTES)
            length += len(rest)
        yield line.rstrip(b"\r\n"), length


def _open_text(ctx: ToolContext, path: str) -> tuple[Path, int]:
    target = resolve_path(ctx, path)
    if not target.exists():
        raise ToolError(f"{path!r} does not exist; list_files shows what is there")
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory; use list_files")
    return target, target.stat().st_size


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
    target, size = _open_text(ctx, path)
    name = _display(ctx, target)
    with target.open("rb") as handle:
        if looks_binary(handle.read(SNIFF_BYTES)):
            return f"{name}: binary file, {size} bytes, not shown"
        handle.seek(0)
        shown = []
        for number, (raw, length) in enumerate(islice(_lines(handle), offset, offset + limit), start=offset + 1):
            text = raw[: _SHOWN_LINE_CHARS * 4].decode("utf-8", errors="replace")
            if length > _SHOWN_LINE_CHARS:
                text = f"{text[:_SHOWN_LINE_CHARS]} [... line truncated, {length} bytes in all]"
            shown.append(f"{number:>6}\t{text}")
        total = _count_lines(handle, size)
    end = offset + len(shown)
    total_text = f"{total} lines" if total is not None else f"{_human(size)}, lines not counted"
    if not shown:
        return f"{name}: no lines after line {offset} ({total_text})"
    header = f"{name}: lines {offset + 1}-{end} of {total_text}"
    more = total is None or end < total
    footer = f"\n[... more lines: read_file(path={path!r}, offset={end}) continues ...]" if more else ""
    return header + "\n" + "\n".join(shown) + footer


def _walk(base: Path, root: Path) -> Iterator[Path]:
    if base.is_file():
        yield base
        return
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for file in sorted(files):
            candidate = Path(folder) / file
            if _under_root(root, candidate):
                yield candidate


def _compile(pattern: str) -> re.Pattern[bytes]:
    try:
        return re.compile(pattern.encode("utf-8"))
    except re.error:
        return re.compile(re.escape(pattern.encode("utf-8")))


@tool
def grep(ctx: ToolContext, pattern: str, path: str = ".", max_results: int = 50) -> str:
    """Search the user's project files for a regular expression (or literal text), line by line.

    Args:
        pattern: Python regular expression; if it does not compile it is searched as literal text.
        path: File or directory to search, relative to the project root.
        max_results: Maximum number of matching lines to return.
    """
    if not pattern:
        raise ToolError("pattern must not be empty")
    max_results = max(1, min(max_results, 500))
    base = resolve_path(ctx, path)
    if not base.exists():
        raise ToolError(f"{path!r} does not exist; list_files shows what is there")
    regex = _compile(pattern)
    root = Path(ctx.root).resolve()
    hits: list[str] = []
    deadline = time.monotonic() + _GREP_SECONDS
    for count, file in enumerate(_walk(base, root), start=1):
        if count > _MAX_GREP_FILES or time.monotonic() > deadline:
            hits.append(f"[... stopped after {count - 1} files; narrow the path or pattern ...]")
            break
        if _grep_file(file, regex, _display(ctx, file), hits, max_results + 1, deadline):
            break
    if not hits:
        return f"no matches for {pattern!r} in {_display(ctx, base)}"
    if len(hits) > max_results:
        hits[max_results:] = ["[... more matches not shown; narrow the pattern or path ...]"]
    return "\n".join(hits)


def _grep_file(file: Path, regex: re.Pattern[bytes], name: str, hits: list[str], cap: int, deadline: float) -> bool:
    """Append matches of one file; True once ``cap`` hits are collected or time is up."""
    try:
        with file.open("rb") as handle:
            if looks_binary(handle.read(SNIFF_BYTES)):
                return False
            handle.seek(0)
            for number, (raw, _length) in enumerate(_lines(handle), start=1):
                if regex.search(raw):
                    text = raw[: _GREP_LINE_CHARS * 4].decode("utf-8", errors="replace").strip()
                    hits.append(f"{name}:{number}: {text[:_GREP_LINE_CHARS]}")
                    if len(hits) >= cap:
                        return True
                if number % 1000 == 0 and time.monotonic() > deadline:
                    hits.append(f"[... stopped in {name} at line {number}: out of time; narrow the path ...]")
                    return True
    except OSError:
        return False
    return False


TOOLS: list[Tool] = [list_files, read_file, grep]
