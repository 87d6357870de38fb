"""The ledger as a summary carries it: a heading, then one line per identifier, verbatim, with where it was seen.

Every summarizer writes the same block into ``## Files & State`` (``summarize.attach_ledger``),
and it is read back from a summary's text (a session from before the store kept its ledger,
a reflection that must keep it unchanged), so rendering and reading live together here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

LEDGER_HEADING = "Identifiers (verbatim):"

_ITEM_LINE = re.compile(
    r"^\s{0,8}[-*]\s{1,4}(?:(`{1,3})\s?(.{1,400}?)\s?\1(?:\s{1,3}\(([^()\n]{0,200})\))?|(.{1,400}?))\s*$"
)


def _quoted(item: str) -> str:
    fence = "``" if "`" in item else "`"
    pad = " " if item.startswith("`") or item.endswith("`") else ""
    return f"{fence}{pad}{item}{pad}{fence}"


def ledger_line(item: str, note: str = "") -> str:
    """One ledger line: the item verbatim in backticks, and where it was seen in brackets."""
    note = " ".join(note.replace("(", "[").replace(")", "]").split())[:200]
    return f"- {_quoted(item)} ({note})" if note else f"- {_quoted(item)}"


def render_ledger(items: list[str], notes: dict[str, str] | None = None) -> str:
    """The ledger as a Markdown sub-list; empty when there is nothing to carry."""
    if not items:
        return ""
    notes = notes or {}
    return "\n".join([LEDGER_HEADING, *(ledger_line(item, notes.get(item, "")) for item in items)])


def _ledger_lines(summary_text: str) -> Iterator[tuple[str, str]]:
    reading = False
    for line in summary_text.splitlines():
        if line.strip().lower() == LEDGER_HEADING.lower():
            reading = True
            continue
        if not reading:
            continue
        match = _ITEM_LINE.match(line)
        if match is None:
            reading = False
            continue
        item = " ".join((match.group(2) if match.group(1) else match.group(4)).split())
        if item:
            yield item, (match.group(3) or "") if match.group(1) else ""


def parse_ledger(summary_text: str) -> list[str]:
    """The ledger items in a summary (every ledger block, in order, deduplicated)."""
    return list(dict.fromkeys(item for item, _ in _ledger_lines(summary_text)))


def parse_notes(summary_text: str) -> dict[str, str]:
    """Each ledger item's note (where it was seen), for re-rendering the ledger unchanged."""
    notes: dict[str, str] = {}
    for item, note in _ledger_lines(summary_text):
        notes.setdefault(item, note)
    return notes


def strip_ledger(section_text: str) -> str:
    """``section_text`` without its ledger blocks, so a fresh ledger can be written once."""
    kept: list[str] = []
    reading = False
    for line in section_text.splitlines():
        if line.strip().lower() == LEDGER_HEADING.lower():
            reading = True
            continue
        if reading and _ITEM_LINE.match(line):
            continue
        reading = False
        kept.append(line)
    return "\n".join(kept).strip()
