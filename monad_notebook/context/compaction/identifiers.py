"""Identifiers: the exact names that must outlive every summary, found in a message's original text.

A summary paraphrases, and a paraphrase loses the one thing a later step needs verbatim:
``data/sales_2024.csv``, the ``revenue`` column, the ``KeyError`` that is still open,
``12.5 MB``. So before a span is folded its identifiers are pulled out deterministically
(never by a model), each with its kind: what the user and the agent wrote, the files,
variables, columns, packages and commands in the code the agent ran, and the variables,
columns, package pins, ids, errors and numbers its tools printed. The identifier ledger
(``ledger.py``) weighs them; the summary's ``## Files & State`` carries the most salient.

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
MAX_ITEMS_PER_OUTPUT = 40  # one chatty log must not fill the store's ledger
MAX_ITEM_CHARS = 160

Found = tuple[int, str, str]  # (position, item, kind)
# When a message holds more than its cap, these kinds are kept first.
KIND_ORDER = ("error", "variable", "column", "package", "file", "url", "command", "number", "id", "name", "code")

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
_DTYPES = r"(?:u?int\d{0,2}|Int\d{1,2}|float\d{0,2}|Float\d{2}|object|bool|boolean|category|string|datetime64\S{0,20})"

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
_RESULT = re.compile(
    r"(?<![\w.,$/-])(?:\d{1,3}(?:,\d{3}){1,5}(?:\.\d{1,6})?|\d{1,12}\.\d{1,8})"
    rf"(?![\w%]|\.\d|,\d|\s?(?:{_UNIT}))"
)
_NAME = re.compile(r"(?<![\w./-])(?:[A-Za-z]\w{0,60}_\w{1,60}|[a-z]{1,30}[A-Z]\w{1,40})(?![\w/-]|\.\w)")
_ID = re.compile(
    r"(?<![\w./-])(?=[\w-]{0,40}\d)(?=[\w-]{0,40}[A-Za-z])[A-Za-z0-9]{1,20}(?:-[A-Za-z0-9]{1,20}){1,4}\b(?!\.\w)"
)
_PIN = re.compile(r"(?<![\w.-])[A-Za-z][\w.-]{0,60}(?:==|>=|~=)\d[\w.]{0,30}")
_INSTALLED = re.compile(r"Successfully installed ([^\n]{1,2000})")
_PROSE_COMMAND = re.compile(
    r"(?<![\w/.-])(?:python3?|pip3?|make|bash|sh|git|dbt|conda|docker|kubectl|airflow|spark-submit|Rscript|uv|npm)"
    r" [^\n;,`]{1,150}"
)
_COMMAND_END = re.compile(r"\.(?:\s|$)|\s(?:to|for|and|so|which|because|then|before|after)\s")
_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
_SUBSCRIPT = re.compile(r"\[\s{0,3}[\"']([^\"'\n\]]{1,60})[\"']\s{0,3}\]")
_QUOTED_NAME = re.compile(r"(?<![\w\\])[\"']([A-Za-z_]\w{1,40})[\"'](?!\w)")
_ASSIGNED = re.compile(r"^[ \t]{0,40}([A-Za-z_]\w{1,40})[ \t]{0,4}=(?!=)", re.M)
_FENCE = re.compile(r"```[\w+-]{0,20}\n(.{0,20000}?)```", re.S)
_CALL = re.compile(r"[\w\]\)]\(")
_COLUMN_LINE = re.compile(rf"^[ \t]{{0,8}}([A-Za-z_][\w ]{{0,60}}?)[ \t]{{0,4}}:?[ \t]{{1,20}}{_DTYPES}[ \t]*$", re.M)
_VARIABLE_LINE = re.compile(
    r"^([A-Za-z_]\w{0,60}): ?(?:DataFrame|Series|ndarray|int|float|str|list|dict|tuple|set|bool|bytes)\b", re.M
)
_INDEX_LIST = re.compile(r"Index\(\[([^\]]{1,4000})\]")
_SHELL_ECHO = re.compile(r"^(?:\$|>>>) ([^\n#]{2,150})", re.M)


def _clean(item: str) -> str:
    return " ".join(item.split())


def _paths(text: str, base: int = 0) -> Iterator[Found]:
    for token in _TOKEN.finditer(text):
        candidate = token.group().rstrip(".:!?")
        if "://" in candidate or len(candidate) > 300:
            continue
        match = _PATH.fullmatch(candidate)
        if match and ("/" in candidate or match.group(1).lower() in _KNOWN_EXTENSIONS):
            yield base + token.start(), candidate, "file"


def _command_kind(line: str) -> str:
    words = line.lstrip("!%$ ").split()
    installs = len(words) > 1 and words[0] in ("pip", "pip3", "conda", "mamba", "uv") and "install" in words[1:3]
    return "package" if installs else "command"


def _code_lines(code: str, base: int) -> Iterator[Found]:
    """Commands worth keeping: shell lines and magics, and calls ("code"), not every line of a long cell."""
    offset = 0
    for line in code.splitlines(keepends=True):
        stripped = line.strip()
        start, offset = offset, offset + len(line)
        if not stripped or stripped.startswith("#") or len(stripped) > MAX_ITEM_CHARS:
            continue
        first = stripped.lstrip("!%$ ").split(" ", 1)[0]
        if stripped[0] in "!%" or (first in _SHELL_WORDS and not _ASSIGNED.match(stripped)):
            yield base + start, stripped, _command_kind(stripped)
        elif _CALL.search(stripped):
            yield base + start, stripped, "code"


def _common(text: str, base: int = 0) -> Iterator[Found]:
    yield from ((base + m.start(), m.group().rstrip(".,;:!?"), "url") for m in _URL.finditer(text))
    yield from _paths(text, base)
    yield from ((base + m.start(), m.group(), "error") for m in _ERROR.finditer(text))
    yield from ((base + m.start(), m.group(), "number") for m in _NUMBER.finditer(text))
    yield from ((base + m.start(), m.group(), "package") for m in _PIN.finditer(text))


def _backticked(item: str) -> str:
    if _PATH.fullmatch(item) and ("/" in item or item.rsplit(".", 1)[-1].lower() in _KNOWN_EXTENSIONS):
        return "file"
    if item.lstrip("!%$ ").split(" ", 1)[0] in _SHELL_WORDS or item[:1] in "!%":
        return _command_kind(item)
    return "code" if _CALL.search(item) else "name"


def _prose_commands(text: str) -> Iterator[Found]:
    """Commands written out in a sentence ("run make job-42 TARGET=w1 to backfill..."), up to where prose resumes."""
    for match in _PROSE_COMMAND.finditer(text):
        command = match.group()
        end = _COMMAND_END.search(command)
        command = (command[: end.start()] if end else command).rstrip(".!?:) ")
        if " " in command:
            yield match.start(), command, _command_kind(command)


def _scan_prose(text: str) -> Iterator[Found]:
    yield from _common(text)
    yield from _prose_commands(text)
    yield from ((m.start(), m.group(), "number") for m in _RESULT.finditer(text))
    yield from ((m.start(), m.group(), "name") for m in _NAME.finditer(text))
    yield from ((m.start(), m.group(), "id") for m in _ID.finditer(text))
    yield from ((m.start(), m.group(1), _backticked(m.group(1))) for m in _BACKTICK.finditer(text))
    yield from ((m.start(), m.group(1), "column") for m in _SUBSCRIPT.finditer(text))
    yield from ((m.start(), m.group(1), "name") for m in _QUOTED_NAME.finditer(text))
    for fence in _FENCE.finditer(text):
        yield from _scan_code(fence.group(1), base=fence.start(1))


def _scan_code(code: str, base: int = 0) -> Iterator[Found]:
    yield from _code_lines(code, base)
    yield from _common(code, base)
    yield from ((base + m.start(), m.group(1), "column") for m in _SUBSCRIPT.finditer(code))
    yield from ((base + m.start(), m.group(1), "name") for m in _QUOTED_NAME.finditer(code))
    yield from ((base + m.start(1), m.group(1), "variable") for m in _ASSIGNED.finditer(code))


def _scan_output(text: str) -> Iterator[Found]:
    """What a tool printed: the common kinds, plus variables, columns, package pins and ids it names."""
    yield from _common(text)
    yield from ((m.start(1), m.group(1).strip(), "column") for m in _COLUMN_LINE.finditer(text))
    yield from ((m.start(1), m.group(1), "variable") for m in _VARIABLE_LINE.finditer(text))
    for echo in _SHELL_ECHO.finditer(text):
        yield echo.start(1), echo.group(1).strip(), _command_kind(echo.group(1))
    for listed in _INDEX_LIST.finditer(text):
        names = _QUOTED_NAME.finditer(listed.group(1))
        yield from ((listed.start(1) + m.start(), m.group(1), "column") for m in names)
    for installed in _INSTALLED.finditer(text):
        yield from ((installed.start(1), token, "package") for token in installed.group(1).split()[:40])
    yield from ((m.start(), m.group(), "id") for m in _ID.finditer(text))
    yield from ((m.start(), m.group(), "name") for m in _NAME.finditer(text))


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


def message_items(message: Message) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(item, kind) pairs in ``message``'s text, then in its tool calls' arguments; deduplicated, capped."""
    content = message.content[:SCAN_CAP_CHARS]
    text_found = list(_scan_output(content) if message.role == "tool" else _scan_prose(content))
    call_found: list[Found] = []
    base = 0
    for call in message.tool_calls:
        for is_code, text in _argument_texts(call.arguments):
            text = text[:SCAN_CAP_CHARS]
            call_found.extend((base + p, i, k) for p, i, k in (_scan_code(text) if is_code else _scan_prose(text)))
            base += len(text) + 1
    cap = MAX_ITEMS_PER_OUTPUT if message.role == "tool" else MAX_ITEMS_PER_MESSAGE
    return _unique(text_found, cap), _unique(call_found, MAX_ITEMS_PER_MESSAGE)


def _unique(found: list[Found], cap: int) -> list[tuple[str, str]]:
    """Each item once, in order of first appearance (a specific kind wins over "name"), at most ``cap``.

    Over the cap, the kinds that matter most (``KIND_ORDER``) are kept.
    """
    first: dict[str, tuple[int, str]] = {}
    for position, item, kind in sorted(found, key=lambda f: f[0]):
        item = _clean(item)
        if not 2 <= len(item) <= MAX_ITEM_CHARS or item.lower() == "dtype":
            continue
        seen = first.get(item)
        if seen is None or (seen[1] == "name" and kind != "name"):
            first[item] = (seen[0] if seen else position, kind)
    kept = sorted(first.items(), key=lambda pair: (KIND_ORDER.index(pair[1][1]), pair[1][0]))[:cap]
    return [(item, kind) for item, (_, kind) in sorted(kept, key=lambda pair: pair[1][0])]


def extract_identifiers(messages: list[Message]) -> list[str]:
    """Identifiers in ``messages``' original text, in order of first appearance, deduplicated."""
    seen: dict[str, None] = {}
    for message in messages:
        text_items, call_items = message_items(message)
        for item, _ in (*text_items, *call_items):
            seen.setdefault(item, None)
    return list(seen)
