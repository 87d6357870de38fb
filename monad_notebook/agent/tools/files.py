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
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO

import re2

from monad_notebook.agent.tools.base import Tool, ToolContext, tool
from monad_notebook.agent.tools.file_access import (
    MAX_LINE_BYTES,
    SNIFF_BYTES,
    NotRegularFile,
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
from monad_notebook.errors import ToolError

__all__ = ["MAX_LINE_BYTES", "SNIFF_BYTES", "TOOLS", "grep", "list_files", "looks_binary", "read_file", "resolve_path"]

_SHOWN_LINE_CHARS = 2000
_READ_KEPT_BYTES = 16_384  # each line is redacted this far, well past what is shown of it
_GREP_LINE_CHARS = 300
_CONTEXT_LINES = 256  # lines around a window redacted with it, so a key block crossing its edge is seen whole
_GREP_BLOCK_LINES = 2000
_GREP_BLOCK_CHARS = 2_000_000
_MAX_LIST = 500
_MAX_SCAN = 200_000
_LIST_SECONDS = 10.0
_MAX_READ_LINES = 2000
_MAX_GREP_FILES = 20_000
_GREP_SECONDS = 20.0
_COUNT_LINES_UP_TO = 512 * 1024 * 1024
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".ipynb_checkpoints", ".venv", ".mypy_cache"}
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_RE2_OPTIONS.never_capture = True  # grep only asks whether a line matches: the DFA alone answers that


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
    text, length = entry.text, lengths[entry.first - start]
    cut = entry.first == entry.last and length > _READ_KEPT_BYTES
    if len(text) > _SHOWN_LINE_CHARS or cut:
        text = f"{text[:_SHOWN_LINE_CHARS]} [... line truncated, {length} bytes in all]"
    return f"{entry.label:>6}\t{text}"


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


def _compile(pattern: str) -> Any:
    """RE2, which matches in linear time; text that is no regex at all is searched literally."""
    try:
        encoded = pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("pattern is not valid text (it holds a lone surrogate); search for plain text") from None
    try:
        return re2.compile(encoded, _RE2_OPTIONS)
    except re2.error as error:
        reason = error.args[0].decode("utf-8", "replace") if error.args and isinstance(error.args[0], bytes) else error
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return re2.compile(re2.escape(encoded), _RE2_OPTIONS)
    raise ToolError(
        f"pattern {pattern!r} is not supported ({reason}): grep matches in linear time, without "
        "backreferences or lookahead/lookbehind; search for plain text or a simpler regex"
    )


@dataclass
class _Search:
    regex: Any
    redact: Callable[[str], str]
    cap: int
    deadline: float
    hits: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stopped: str = ""


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
    search = _Search(_compile(pattern), ctx.redact, max_results + 1, time.monotonic() + _GREP_SECONDS)
    count = 0
    for count, file in enumerate(_walk(base, root, search.deadline), start=1):
        if count > _MAX_GREP_FILES or time.monotonic() > search.deadline:
            search.stopped = f"[... stopped after {count - 1} files; narrow the path or pattern ...]"
            break
        if _grep_file(search, file, _display(ctx, file)):
            break
    if not search.stopped and time.monotonic() > search.deadline:
        search.stopped = f"[... stopped after {count} files: out of time; narrow the path or pattern ...]"
    return _grep_report(search, pattern, _display(ctx, base), max_results)


def _grep_report(search: _Search, pattern: str, where: str, max_results: int) -> str:
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


def _grep_file(search: _Search, file: Path, name: str) -> bool:
    """Append the matches of one file; True once enough hits are collected or time is up."""
    try:
        with open_regular(file.resolve(), name) as handle:
            if looks_binary(handle.read(SNIFF_BYTES)):
                return False
            handle.seek(0)
            for entries in _redacted_blocks(handle, search.redact):
                for entry in entries:
                    if search.regex.search(entry.text.encode("utf-8", "surrogatepass")):
                        search.hits.append(f"{name}:{entry.label}: {entry.text.strip()[:_GREP_LINE_CHARS]}")
                        if len(search.hits) >= search.cap:
                            return True
                if time.monotonic() > search.deadline:
                    search.stopped = f"[... stopped in {name}: out of time; narrow the path or pattern ...]"
                    return True
    except NotRegularFile:
        search.skipped.append(name)
    except (OSError, ToolError):
        return False
    return False


def _redacted_blocks(handle: BinaryIO, redact: Callable[[str], str]) -> Iterator[list[Shown]]:
    """A file's lines redacted a block at a time, each block with the lines before it as context."""
    context: list[str] = []
    block: list[str] = []
    index = chars = 0
    for raw, length in read_lines(handle):
        block.append(kept_text(raw, length, MAX_LINE_BYTES))
        chars += len(block[-1])
        if len(block) >= _GREP_BLOCK_LINES or chars >= _GREP_BLOCK_CHARS:
            yield [e for e in redact_lines(redact, context + block, index - len(context)) if e.last >= index]
            context = _tail(context + block)
            index, block, chars = index + len(block), [], 0
    if block:
        yield [e for e in redact_lines(redact, context + block, index - len(context)) if e.last >= index]


def _tail(lines: list[str]) -> list[str]:
    """The last context lines, at most a block's worth of characters."""
    kept: list[str] = []
    chars = 0
    for line in reversed(lines[-_CONTEXT_LINES:]):
        chars += len(line)
        if chars > _GREP_BLOCK_CHARS // 4:
            break
        kept.append(line)
    return kept[::-1]


TOOLS: list[Tool] = [list_files, read_file, grep]
