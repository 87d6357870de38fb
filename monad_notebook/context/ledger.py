"""The identifier ledger: exact names that must outlive every summary.

A summary paraphrases, and a paraphrase loses the one thing a later step needs verbatim:
``data/sales_2024.csv``, the ``revenue`` column, the ``KeyError`` that is still open,
``12.5 MB``. So before a span is folded we pull those identifiers deterministically from
its ORIGINAL text (never from a model), and carry them in a bounded list inside the
summary's ``## Files & State`` section, where the next compaction reads them back.

Scanning is linear: every pattern uses bounded quantifiers, and each text is capped at
``SCAN_CAP_CHARS`` characters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from monad_notebook.messages import Message

SCAN_CAP_CHARS = 200_000
MAX_ITEMS_PER_MESSAGE = 60
MAX_ITEMS_PER_OUTPUT = 12  # one chatty log must not flush the ledger
HANDLE_PREFIX = "read_tool_output id="
MAX_ITEM_CHARS = 160
LEDGER_HEADING = "Identifiers (verbatim):"

_CODE_KEYS = frozenset({"code", "command", "cmd", "source", "script", "query", "sql", "shell"})
_SHELL_TEXT = (
    "pip conda mamba uv git python python3 ls cat head tail curl wget mkdir cp mv rm cd grep find "
    "jupyter pytest make docker unzip tar awk sed wc du df chmod export"
)
_EXTENSIONS_TEXT = (
    "csv tsv json jsonl ndjson parquet feather arrow orc avro xlsx xls xlsm ods txt md rst py pyi ipynb "
    "yaml yml toml ini cfg conf env sql db sqlite sqlite3 duckdb h5 hdf5 nc zarr pkl pickle joblib npy npz "
    "png jpg jpeg gif svg pdf html htm xml log zip gz bz2 xz tar tgz 7z sh bash r rmd js ts jsx tsx "
    "css java c cpp h hpp rs go rb pt pth onnx safetensors bin whl lock dat"
)
_SHELL_WORDS = frozenset(_SHELL_TEXT.split())
_KNOWN_EXTENSIONS = frozenset(_EXTENSIONS_TEXT.split())

_TOKEN = re.compile(r"[^\s\"'`()\[\]{}<>,;=|]{1,400}")
_PATH = re.compile(r"(?:~|\.{1,2})?/?(?:[\w.@+-]{1,120}/){0,30}[\w@+-][\w.@+-]{0,120}\.([A-Za-z][A-Za-z0-9]{0,7})")
_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]{1,300}")
_ERROR = re.compile(r"\b[A-Z]\w{0,60}?(?:Error|Exception|Warning)\b")
_UNIT = (
    r"%|[kKMGT]i?B\b|B\b|ms\b|s\b|secs?\b|seconds?\b|mins?\b|minutes?\b|h\b|hrs?\b|hours?\b|days?\b"
    r"|rows?\b|columns?\b|cols?\b|px\b|GHz\b|MHz\b|°C\b"
)
_NUMBER = re.compile(
    r"(?<![\w.,$])(?:\$\d{1,3}(?:,\d{3}){1,5}(?:\.\d{1,2})?(?:[kKMB]\b)?|\$\d{1,15}(?:\.\d{1,2})?(?:[kKMB]\b)?"
    rf"|\d{{1,15}}(?:,\d{{3}}){{0,5}}(?:\.\d{{1,6}})?\s?(?:{_UNIT}))"
)
_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
_SUBSCRIPT = re.compile(r"\[\s{0,3}[\"']([^\"'\n\]]{1,60})[\"']\s{0,3}\]")
_QUOTED_NAME = re.compile(r"(?<![\w\\])[\"']([A-Za-z_]\w{1,40})[\"'](?!\w)")
_ASSIGNED = re.compile(r"^[ \t]{0,40}([A-Za-z_]\w{1,40})[ \t]{0,4}=(?!=)", re.M)
_FENCE = re.compile(r"```[\w+-]{0,20}\n(.{0,20000}?)```", re.S)
_CALL = re.compile(r"[\w\]\)]\(")
_ITEM_LINE = re.compile(r"^\s{0,8}[-*]\s{1,4}(?:(`{1,3})\s?(.{1,400}?)\s?\1|(.{1,400}?))\s*$")


def _clean(item: str) -> str:
    return " ".join(item.split())


def _paths(text: str) -> Iterator[tuple[int, str]]:
    for token in _TOKEN.finditer(text):
        candidate = token.group().rstrip(".:!?")
        if "://" in candidate or len(candidate) > 300:
            continue
        match = _PATH.fullmatch(candidate)
        if match and ("/" in candidate or match.group(1).lower() in _KNOWN_EXTENSIONS):
            yield token.start(), candidate


def _code_lines(code: str) -> Iterator[tuple[int, str]]:
    """Commands worth keeping: calls, magics and shell lines, not every line of a long cell."""
    offset = 0
    for line in code.splitlines(keepends=True):
        stripped = line.strip()
        start, offset = offset, offset + len(line)
        if not stripped or stripped.startswith("#") or len(stripped) > MAX_ITEM_CHARS:
            continue
        first = stripped.lstrip("!%$ ").split(" ", 1)[0]
        if stripped[0] in "!%" or first in _SHELL_WORDS or _CALL.search(stripped):
            yield start, stripped


def _scan_prose(text: str) -> Iterator[tuple[int, str]]:
    yield from ((m.start(), m.group().rstrip(".,;:!?")) for m in _URL.finditer(text))
    yield from _paths(text)
    yield from ((m.start(), m.group()) for m in _ERROR.finditer(text))
    yield from ((m.start(), m.group()) for m in _NUMBER.finditer(text))
    yield from ((m.start(), m.group(1)) for m in _BACKTICK.finditer(text))
    yield from ((m.start(), m.group(1)) for m in _SUBSCRIPT.finditer(text))
    yield from ((m.start(), m.group(1)) for m in _QUOTED_NAME.finditer(text))
    for fence in _FENCE.finditer(text):
        yield from _scan_code(fence.group(1), base=fence.start(1))


def _scan_code(code: str, base: int = 0) -> Iterator[tuple[int, str]]:
    yield from ((base + pos, line) for pos, line in _code_lines(code))
    yield from ((base + m.start(), m.group().rstrip(".,;:")) for m in _URL.finditer(code))
    yield from ((base + pos, path) for pos, path in _paths(code))
    yield from ((base + m.start(), m.group(1)) for m in _SUBSCRIPT.finditer(code))
    yield from ((base + m.start(), m.group(1)) for m in _QUOTED_NAME.finditer(code))
    yield from ((base + m.start(1), m.group(1)) for m in _ASSIGNED.finditer(code))


def _scan_output(text: str) -> Iterator[tuple[int, str]]:
    """Tool output is noisy (tables, JSON, log timings): only URLs, paths and error types."""
    yield from ((m.start(), m.group().rstrip(".,;:!?")) for m in _URL.finditer(text))
    yield from _paths(text)
    yield from ((m.start(), m.group()) for m in _ERROR.finditer(text))


def _strings(value: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > 6:
        return
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, str(k), depth + 1)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key, depth + 1)


def _argument_texts(arguments: str) -> Iterator[tuple[bool, str]]:
    """(is_code, text) for each string in a tool call's JSON arguments."""
    try:
        parsed = json.loads(arguments[:SCAN_CAP_CHARS]) if arguments.strip() else {}
    except ValueError:
        yield False, arguments
        return
    for key, text in _strings(parsed):
        yield key.lower() in _CODE_KEYS or "\n" in text, text


def _message_items(message: Message) -> list[str]:
    found: list[tuple[int, str]] = []
    content = message.content[:SCAN_CAP_CHARS]
    found.extend(_scan_output(content) if message.role == "tool" else _scan_prose(content))
    base = len(content)
    for call in message.tool_calls:
        for is_code, text in _argument_texts(call.arguments):
            text = text[:SCAN_CAP_CHARS]
            found.extend((base + pos, item) for pos, item in (_scan_code(text) if is_code else _scan_prose(text)))
            base += len(text) + 1
    items = [_clean(item) for _, item in sorted(found, key=lambda pair: pair[0])]
    unique = list(dict.fromkeys(item for item in items if 2 <= len(item) <= MAX_ITEM_CHARS))
    return unique[: MAX_ITEMS_PER_OUTPUT if message.role == "tool" else MAX_ITEMS_PER_MESSAGE]


def extract_handles(messages: list[Message]) -> list[str]:
    """One ledger line per folded tool result that can be read back, naming its exact id."""
    calls = {c.id: c for m in messages for c in m.tool_calls}
    handles = []
    for message in messages:
        if message.role != "tool" or message.redacted or not message.tool_call_id:
            continue
        call = calls.get(message.tool_call_id)
        preview = " ".join(call.arguments.split())[:60] if call else ""
        handles.append(_clean(f"{HANDLE_PREFIX}{message.tool_call_id} ({message.name} {preview})"))
    return handles


def merge_with_handles(old: list[str], identifiers: list[str], handles: list[str], max_items: int) -> list[str]:
    """Identifiers and read-back handles, each bounded on its own so neither crowds out the other."""
    old_handles = [item for item in old if item.startswith(HANDLE_PREFIX)]
    old_names = [item for item in old if not item.startswith(HANDLE_PREFIX)]
    return merge_ledger(old_names, identifiers, max_items) + merge_ledger(old_handles, handles, max_items // 2)


def extract_identifiers(messages: list[Message]) -> list[str]:
    """Identifiers in ``messages``' original text, in order of first appearance, deduplicated."""
    seen: dict[str, None] = {}
    for message in messages:
        for item in _message_items(message):
            seen.setdefault(item, None)
    return list(seen)


def merge_ledger(old: list[str], new: list[str], max_items: int) -> list[str]:
    """The ledger after a compaction, at most ``max_items`` long, least recently seen first.

    Policy (least-recently-seen eviction): an identifier that recurs in ``new`` moves to the
    recent end, so names still in use survive; when over the bound the ones not seen for the
    longest are dropped first. Old and new are read in order, so the result is deterministic.
    """
    if max_items <= 0:
        return []
    merged: dict[str, None] = {}
    for item in (*old, *new):
        item = _clean(item)
        if not item:
            continue
        merged.pop(item, None)
        merged[item] = None
    items = list(merged)
    return items[-max_items:]


def _quoted(item: str) -> str:
    fence = "``" if "`" in item else "`"
    pad = " " if item.startswith("`") or item.endswith("`") else ""
    return f"{fence}{pad}{item}{pad}{fence}"


def render_ledger(items: list[str]) -> str:
    """The ledger as a Markdown sub-list; empty when there is nothing to carry."""
    if not items:
        return ""
    return "\n".join([LEDGER_HEADING, *(f"- {_quoted(item)}" for item in items)])


def parse_ledger(summary_text: str) -> list[str]:
    """The ledger items in a summary (every ledger block, in order, deduplicated)."""
    items: dict[str, None] = {}
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
        item = _clean(match.group(2) if match.group(1) else match.group(3))
        if item:
            items.setdefault(item, None)
    return list(items)


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
