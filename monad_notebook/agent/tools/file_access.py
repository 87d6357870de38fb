"""Reading files for the file tools: confined paths, opens that cannot block, and redaction first.

Redaction must see a file's text as it is: a key whose lines get numbered, or a token cut at a
display clip, no longer looks like a secret. So the tools read a piece of text, redact it whole
with ``redact_lines``, and only then number, clip or match its lines.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.errors import ToolError

SNIFF_BYTES = 8192
MAX_LINE_BYTES = 1_000_000  # longer lines are read (and searched) only this far
_TEXT_CONTROL = {7, 8, 9, 10, 12, 13, 27}
_TOKEN_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-."
_CUT_TAIL = 512
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC


class NotRegularFile(ToolError):
    """A FIFO, socket or device: reading one can block forever or never end."""


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


def under_root(root: Path, path: Path) -> bool:
    try:
        real = path.resolve()
    except OSError:
        return False
    return real == root or root in real.parents


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    return "directory" if stat.S_ISDIR(mode) else "special file"


def open_regular(path: Path, shown: str) -> BinaryIO:
    """Open a resolved path for reading; a FIFO, socket or device is refused instead of blocking.

    The type is checked before opening (opening some devices has effects of its own), then again
    on the opened descriptor, so a file swapped in between cannot slip through: O_NONBLOCK lets a
    swapped-in FIFO open at once, and O_NOFOLLOW refuses a swapped-in symlink.
    """
    try:
        if not stat.S_ISREG(mode := os.stat(path).st_mode):
            raise NotRegularFile(f"{shown!r} is a {_kind(mode)}, not a regular file; it is not read")
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise ToolError(f"{shown!r} cannot be opened: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode := os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFile(f"{shown!r} is a {_kind(mode)}, not a regular file; it is not read")
    return os.fdopen(fd, "rb")


def read_lines(handle: BinaryIO) -> Iterator[tuple[bytes, int]]:
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


def kept_text(raw: bytes, length: int, cap: int) -> str:
    """The first ``cap`` bytes of a line as text; a token cut at the cap is dropped whole.

    A cut token is only part of a secret, which redaction may not recognise.
    """
    kept = raw[:cap]
    if length > cap:
        tail = kept[-_CUT_TAIL:]
        kept = kept[: len(kept) - len(tail)] + tail.rstrip(_TOKEN_BYTES)
    return kept.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Shown:
    """A line of redacted text and the original lines it stands for (0-based, inclusive)."""

    first: int
    last: int
    text: str

    @property
    def label(self) -> str:
        return str(self.first + 1) if self.first == self.last else f"{self.first + 1}-{self.last + 1}"


def redact_lines(redact: Callable[[str], str], lines: list[str], start: int) -> list[Shown]:
    """Redact ``lines`` (numbered from ``start``) as one text, then number what remains.

    A secret spanning lines (a key block) becomes one placeholder line, labelled with the
    range of lines it replaced; every other line keeps its own number.
    """
    text = "\n".join(lines)
    redacted = redact(text)
    new = lines if redacted == text else redacted.split("\n")
    if len(new) == len(lines):
        return [Shown(start + i, start + i, line) for i, line in enumerate(new)]
    head = 0
    while head < min(len(lines), len(new)) and lines[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(lines), len(new)) - head and lines[-1 - tail] == new[-1 - tail]:
        tail += 1
    shown = [Shown(start + i, start + i, new[i]) for i in range(head)]
    old_mid, new_mid = lines[head : len(lines) - tail], new[head : len(new) - tail]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_mid, new_mid).get_opcodes():
        first = start + head + i1
        if tag == "equal":
            shown += [Shown(first + k, first + k, new_mid[j1 + k]) for k in range(i2 - i1)]
        else:
            shown += _spread(first, i2 - i1, new_mid[j1:j2])
    offset = start + len(lines) - tail
    shown += [Shown(offset + k, offset + k, line) for k, line in enumerate(new[len(new) - tail :])]
    return shown


def _spread(first: int, count: int, texts: list[str]) -> list[Shown]:
    """Give ``texts`` the ``count`` original lines from ``first``: the last one takes what is left."""
    if not texts:
        return [Shown(first, first + count - 1, "")] if count else []
    if count == 0:
        return [Shown(max(first - 1, 0), max(first - 1, 0), text) for text in texts]
    shown = [Shown(first + min(k, count - 1), first + min(k, count - 1), t) for k, t in enumerate(texts)]
    if len(texts) < count:
        shown[-1] = Shown(first + len(texts) - 1, first + count - 1, texts[-1])
    return shown
