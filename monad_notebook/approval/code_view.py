"""Code as the user sees it before approving it: nothing in it can hide, overwrite or reorder text.

The approved string is exactly the string that runs, so what is shown must not depend on how a
terminal or a browser treats control characters. A lone carriage return starts a new line for
Python; IPython also splits a cell at every ``str.splitlines`` boundary (form feed, vertical tab,
U+2028, ...) before it looks for ``!`` and ``%`` commands. So the view starts a new line at every
one of those, and replaces each control, format (bidi, zero-width) or blank-rendering character
with a visible marker such as ``<CR>`` or ``<U+202E>``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_NAMES = {
    "\x00": "NUL",
    "\x08": "BS",
    "\x0b": "VT",
    "\x0c": "FF",
    "\r": "CR",
    "\x1b": "ESC",
    "\x7f": "DEL",
}
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"})
_BLANK = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u2800\u3164\uffa0")
_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # str.splitlines
WRAP = 100


def is_hidden(char: str) -> bool:
    """True for characters a display may not show as themselves (tab and newline are shown as such)."""
    if char in "\t\n":
        return False
    code = ord(char)
    return (
        unicodedata.category(char) in _HIDDEN_CATEGORIES
        or char in _BLANK
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0000 <= code <= 0xE0FFF
    )


def marker(char: str) -> str:
    return f"<{_NAMES.get(char) or f'U+{ord(char):04X}'}>"


def visible(text: str) -> str:
    """``text`` with every hidden character replaced by its marker; tabs and newlines are kept."""
    if text.isascii():
        return _ASCII_HIDDEN.sub(lambda m: marker(m.group()), text)
    return "".join(marker(c) if is_hidden(c) else c for c in text)


def hidden_count(code: str) -> int:
    """How many markers the view of ``code`` shows (a CRLF line end is an ordinary line break)."""
    return sum(1 for c in code.replace("\r\n", "\n") if is_hidden(c))


def shown_lines(code: str) -> list[str]:
    """One entry per line any of Python or IPython could see; unusual line ends shown as markers."""
    lines = []
    for raw in code.splitlines(keepends=True):
        if raw.endswith("\r\n"):
            body, ending = raw[:-2], ""
        elif raw[-1] in _BREAKS:
            body, ending = raw[:-1], raw[-1]
        else:
            body, ending = raw, ""
        lines.append(visible(body) + ("" if ending in ("", "\n") else marker(ending)))
    return lines


def summary(code: str) -> str:
    """The facts a user must not miss: how many lines, hidden characters, very long lines."""
    lines = shown_lines(code)
    parts = [f"{len(lines)} line" + ("" if len(lines) == 1 else "s")]
    hidden = hidden_count(code)
    if hidden:
        kinds = sorted({marker(c) for c in code.replace("\r\n", "\n") if is_hidden(c)})
        shown = ", ".join(kinds[:6]) + (", ..." if len(kinds) > 6 else "")
        parts.append(f"{hidden} hidden character{'' if hidden == 1 else 's'} shown as {shown}")
    longest = max((len(line) for line in lines), default=0)
    if longest > WRAP:
        parts.append(f"longest line {longest:,} characters")
    return ", ".join(parts)


def approval_view(code: str) -> dict[str, Any]:
    """What a graphical approval shows: the lines to draw one per row, and the summary above them."""
    return {"lines": shown_lines(code), "summary": summary(code)}


def terminal_view(code: str, width: int = WRAP) -> str:
    """Numbered lines, long ones wrapped under a continuation mark, so nothing runs off the screen."""
    rows = []
    for number, line in enumerate(shown_lines(code), 1):
        chunks = [line[i : i + width] for i in range(0, len(line), width)] or [""]
        rows.append(f"{number:>4} | {chunks[0]}")
        rows.extend(f"   ~ | {chunk}" for chunk in chunks[1:])
    return "\n".join(rows)
