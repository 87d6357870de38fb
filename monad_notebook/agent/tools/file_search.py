"""grep's search of one file: RE2 matching (linear time) on text that was redacted first.

Redaction runs on blocks of lines, each with the lines before it as context, so a key block
crossing a block edge is still seen whole; matching runs on the redacted lines, so grep never
matches or prints a secret. A block in which the pattern cannot match even before redaction is
skipped without being redacted: most of a large tree is, which keeps a search fast.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import re2

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
)
from monad_notebook.errors import ToolError

LINE_CHARS = 300
_CONTEXT_LINES = 256  # lines before a block redacted with it: more than any key block has
_BLOCK_LINES = 2000
_BLOCK_BYTES = 2_000_000
_TEXT_ANCHORS = re.compile(r"\\[Az]|\(\?[a-zA-Z]*-[a-zA-Z]*m")  # differ between one line and a block of lines


def _options(*, block: bool) -> Any:
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True  # only whether a line matches is asked: the DFA alone answers that
    options.never_nl = block  # a match never spans lines, so a block finds exactly the lines that match
    return options


@dataclass(frozen=True)
class Pattern:
    """A pattern for one line, and the same for a block of lines (None when it cannot be one)."""

    line: Any
    block: Any | None


def compile_pattern(pattern: str) -> Pattern:
    """RE2, which matches in linear time; text that is no regex at all is searched literally."""
    try:
        encoded = pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("pattern is not valid text (it holds a lone surrogate); search for plain text") from None
    try:
        line = re2.compile(encoded, _options(block=False))
    except re2.error as error:
        line = None
        reason = error.args[0].decode("utf-8", "replace") if error.args and isinstance(error.args[0], bytes) else error
    if line is None:
        try:
            re.compile(pattern)
        except (re.error, RecursionError, OverflowError):
            encoded = re2.escape(encoded)
            line = re2.compile(encoded, _options(block=False))
        else:
            raise ToolError(
                f"pattern {pattern!r} is not supported ({reason}): grep matches in linear time, without "
                "backreferences or lookahead/lookbehind; search for plain text or a simpler regex"
            )
    block = None if _TEXT_ANCHORS.search(pattern) else re2.compile(b"(?m)" + encoded, _options(block=True))
    return Pattern(line, block)


@dataclass
class Search:
    """One grep call: its pattern, the redaction to apply, and what it has found so far."""

    pattern: Pattern
    redact: Callable[[str], str]
    cap: int
    deadline: float
    hits: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stopped: str = ""


def search_file(search: Search, file: Path, name: str) -> bool:
    """Append the matches of one file; True once enough hits are collected or time is up."""
    try:
        with open_regular(file.resolve(), name) as handle:
            if looks_binary(handle.read(SNIFF_BYTES)):
                return False
            handle.seek(0)
            for entries in _matching_blocks(search, handle):
                for entry in entries:
                    search.hits.append(f"{name}:{entry.label}: {entry.text.strip()[:LINE_CHARS]}")
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


Line = tuple[bytes, int]  # a line's first MAX_LINE_BYTES bytes, and its full length


def _matching_blocks(search: Search, handle: BinaryIO) -> Iterator[list[Shown]]:
    """The matching lines of a file, a block at a time (a block may have none)."""
    context: list[Line] = []
    block: list[Line] = []
    index = size = 0
    for line in read_lines(handle):
        block.append(line)
        size += len(line[0])
        if len(block) >= _BLOCK_LINES or size >= _BLOCK_BYTES:
            yield _block_matches(search, context, block, index)
            context = _tail(context + block)
            index, block, size = index + len(block), [], 0
    if block:
        yield _block_matches(search, context, block, index)


def _block_matches(search: Search, context: list[Line], block: list[Line], index: int) -> list[Shown]:
    """Redact the block with its context, then match line by line; skipped if even the raw text cannot match."""
    if search.pattern.block is not None:
        raw = b"\n".join(data for data, _ in block).decode("utf-8", "replace").encode("utf-8")
        if not search.pattern.block.search(raw):
            return []
    texts = [kept_text(data, length, MAX_LINE_BYTES) for data, length in context + block]
    entries = redact_lines(search.redact, texts, index - len(context))
    matches = search.pattern.line.search
    return [e for e in entries if e.last >= index and matches(e.text.encode("utf-8", "surrogatepass"))]


def _tail(lines: list[Line]) -> list[Line]:
    """The last context lines, at most a quarter block of bytes."""
    kept: list[Line] = []
    size = 0
    for line in reversed(lines[-_CONTEXT_LINES:]):
        size += len(line[0])
        if size > _BLOCK_BYTES // 4:
            break
        kept.append(line)
    return kept[::-1]
