"""Per-result truncation: cap one tool result with a head/tail window and a paging hint.

Truncation fires per result at a fixed character cap, not on window pressure. The head
keeps what a command printed first (headers, the start of a file), the tail keeps how it
ended (errors, totals). The omitted middle is named by exact character offsets into the
full text, so when that text was spilled as a raw output the model can page it back with
``read_tool_output`` instead of re-running the tool.
"""

from __future__ import annotations

import json

DEFAULT_MAX_CHARS = 24000
DEFAULT_HEAD_FRACTION = 0.7
_NEWLINE_SEARCH_CHARS = 1000


def read_call(tool_call_id: str, **paging: int) -> str:
    """The exact ``read_tool_output(...)`` call text a model can copy; the id is JSON-escaped."""
    return f"read_tool_output({json.dumps({'id': tool_call_id, **paging})})"


def message_call(seq: int, **paging: int) -> str:
    """The exact ``read_message(...)`` call text that pages back message ``#seq`` whole."""
    return f"read_message({json.dumps({'seq': seq, **paging})})"


def truncate_tool_output(
    text: str,
    *,
    tool_call_id: str,
    max_chars: int = DEFAULT_MAX_CHARS,
    head_fraction: float = DEFAULT_HEAD_FRACTION,
    recoverable: bool,
) -> str:
    """``text`` itself when it fits in ``max_chars``; else head + one-line marker + tail.

    Head and tail together keep at most ``max_chars`` characters of ``text``. The result is
    ``text[:offset] + marker + text[offset + limit:]`` where the marker states ``offset``,
    ``limit`` and the total length, so ``head + raw[offset:offset + limit] + tail`` is the
    original text exactly. ``recoverable`` says whether the full text was saved (persistRaw
    on and nothing redacted): only then does the marker advertise ``read_tool_output``.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    if not 0.0 <= head_fraction <= 1.0:
        raise ValueError("head_fraction must be between 0 and 1")
    total = len(text)
    if total <= max_chars:
        return text
    head_budget = int(max_chars * head_fraction)
    head_end = _head_cut(text, head_budget)
    tail_start = _tail_cut(text, total - (max_chars - head_budget))
    omitted = tail_start - head_end
    marker = _marker(tool_call_id, offset=head_end, omitted=omitted, total=total, recoverable=recoverable)
    head = text[:head_end]
    lead = "" if not head or head.endswith("\n") else "\n"
    return f"{head}{lead}{marker}\n{text[tail_start:]}"


def _head_cut(text: str, budget: int) -> int:
    """End of the head: just after the last newline shortly before ``budget``, else ``budget``."""
    window = min(_NEWLINE_SEARCH_CHARS, budget // 5)
    newline = text.rfind("\n", budget - window, budget)
    return newline + 1 if window and newline >= 0 else budget


def _tail_cut(text: str, earliest: int) -> int:
    """Start of the tail: the first line start at or shortly after ``earliest``, else ``earliest``."""
    window = min(_NEWLINE_SEARCH_CHARS, (len(text) - earliest) // 5)
    if earliest > 0 and text[earliest - 1] == "\n":
        return earliest
    newline = text.find("\n", earliest, earliest + window)
    return newline + 1 if window and newline >= 0 else earliest


def _marker(tool_call_id: str, *, offset: int, omitted: int, total: int, recoverable: bool) -> str:
    where = f"[... {omitted} characters omitted (chars {offset}..{offset + omitted} of {total})"
    if recoverable:
        return f"{where}; read them with {read_call(tool_call_id, offset=offset, limit=omitted)} ...]"
    return f"{where}; this output was not saved, so the middle cannot be paged back ...]"


def cap_raw(text: str, raw_cap_bytes: int) -> str:
    """The copy of ``text`` to spill: at most ``raw_cap_bytes`` of UTF-8, ending in a note when capped.

    The kept part is a prefix of ``text``, so character offsets quoted by a truncation marker
    still point at the same characters in the spilled copy. The cut never splits a character;
    the note counts toward the cap unless the cap is smaller than the note itself.
    """
    if raw_cap_bytes < 0:
        raise ValueError("raw_cap_bytes must not be negative")
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= raw_cap_bytes:
        return text
    note = f"\n[raw output capped at {raw_cap_bytes} bytes of UTF-8; the rest of its {len(data)} bytes was not saved]"
    keep = max(0, raw_cap_bytes - len(note))
    while keep and data[keep] & 0xC0 == 0x80:
        keep -= 1
    return data[:keep].decode("utf-8", errors="surrogatepass") + note
