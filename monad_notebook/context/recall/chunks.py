"""What recall indexes: every message and every saved tool output, whole, in overlapping chunks.

A fact sits anywhere in a long output (a column in the middle of a ``describe()``, a row
count in the middle of a log), so nothing is clipped to its start. Chunks are short (a few
lines of a log, cut at a line end where one is near): a line embedded with a few neighbours
keeps its meaning, one among a dozen is drowned by them. Each chunk overlaps the previous, so
an identifier up to ``overlap_chars`` long lies whole in one chunk, and starts at a line start
where one is that near, so a line is not split from the words that say what it holds. A tool
result whose full text was saved is indexed from that text, so a chunk's offset is the one
``read_tool_output`` pages by. The sizes are in ``RecallTuning`` (``tuning.py``).

A tool output is mostly lines of a few patterns (rows of numbers, a templated log), and in a
chunk of them the one line that says something (``saved refund cleaned table -> ...``) is
drowned even in a short chunk. So when a few of a chunk's lines stand out (their pattern, each
number and each word blanked, occurs once in an output whose other lines repeat patterns), the
chunk is embedded whole and each of those lines on its own too (``embedding_inputs``): two lines
that stand out together, such as a table's ``[12 rows x 6 columns]`` and the ``saved ...`` line
printed after it, say two unrelated things, and embedded as one they drown each other. Its
full-text entry and its snippet stay the chunk itself.

The agent's reply answers the user's message just before it ("Yes, twice last month" says nothing
alone), so the first chunk of the agent's text directly after the user's (``said_before``; neither
with a call) is also embedded after the end of the user's message: a question in the words of the
one it answers finds the reply. Only the agent's reply, and only directly: a reply after its tools
ran answers their outputs, which are searchable themselves, and the user's next request is a new
one; embedded after what came before, both crowded tool outputs out (BENCHMARKS.md, "LoCoMo").
That vector too is the chunk's: a hit on it shows the reply's own text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable

from monad_notebook.context.lossless.eviction import PLACEHOLDER_PREFIX
from monad_notebook.context.recall.tuning import TUNING, RecallTuning
from monad_notebook.messages import Message
from monad_notebook.store.base import Chunk

_TOKEN = re.compile(r"\w+")


def chunk_spans(text: str, tuning: RecallTuning = TUNING) -> list[tuple[int, int]]:
    """(start, end) of each chunk of ``text``: whole lines where they fit, each overlapping the previous.

    The overlap reaches back to a line start when one lies within another ``overlap_chars``.

    Linear in ``len(text)``: every search is bounded by a constant window.
    """
    size, overlap = tuning.chunk_chars, tuning.overlap_chars
    if len(text) <= size:
        return [(0, len(text))] if text.strip() else []
    spans: list[tuple[int, int]] = []
    start = 0
    while True:
        end = min(len(text), start + size)
        if end < len(text):
            newline = text.rfind("\n", max(start + size // 2, end - tuning.line_search), end)
            if newline > start:
                end = newline + 1
        spans.append((start, end))
        if end >= len(text):
            return spans
        step = max(start + 1, end - overlap)
        line = text.rfind("\n", max(start, step - overlap), step) + 1
        word = line if line > start else _word_start(text, step, tuning.word_search)
        start = word if word > start else step


def _word_start(text: str, at: int, reach: int) -> int:
    """``at`` moved back to the start of the word it falls in, at most ``reach`` (more overlap, never less)."""
    floor = max(0, at - reach)
    while at > floor and not text[at - 1].isspace():
        at -= 1
    return at


def indexed_text(message: Message, raw: str | None = None) -> str:
    """The text recall indexes for ``message``: its saved full output, else its original text and calls.

    System prompts are not history and a placeholder says nothing about what it replaced:
    both give "". Tool-call arguments are decoded, so code is indexed as written.
    """
    if message.role == "system":
        return ""
    if message.role == "tool" and raw:
        return raw
    parts = [message.content.strip()]
    parts += [f"{call.name}: {_arguments_text(call.arguments)}" for call in message.tool_calls]
    text = "\n".join(part for part in parts if part)
    return "" if text.startswith(PLACEHOLDER_PREFIX) else text


def worth_indexing(message: Message) -> bool:
    """A message recall indexes: not a system prompt; a tool result always, any other with text to index."""
    return message.role != "system" and (message.role == "tool" or bool(indexed_text(message)))


def _arguments_text(arguments: str) -> str:
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return arguments
    if not isinstance(parsed, dict):
        return arguments
    return "\n".join(v if isinstance(v, str) else json.dumps(v) for v in parsed.values())


def message_chunks(message: Message, raw: str | None = None, tuning: RecallTuning = TUNING) -> list[Chunk]:
    """``message``'s indexed text in chunks, each knowing where it starts and whose it is."""
    text = indexed_text(message, raw)
    return [
        Chunk(
            message_id=message.id,
            offset=start,
            text=text[start:end],
            seq=message.seq,
            turn=message.turn,
            role=message.role,
            name=message.name,
            tool_call_id=message.tool_call_id,
            created_at=message.created_at,
        )
        for start, end in chunk_spans(text, tuning)
    ]


def _shape(line: str) -> str:
    """A line's pattern: each number a 0, each word an a, spacing blanked (the rows of a table share one)."""
    return " ".join(_TOKEN.sub(lambda m: "0" if m.group().isdigit() else "a", line).split())


def _standout_lines(text: str, shapes: Counter[str], tuning: RecallTuning) -> list[str]:
    """Lines of ``text`` whose pattern occurs once in the whole output (``shapes``); none unless they are few in
    the chunk (its other lines may be only two rows of a table: the output's count says they share a pattern)."""
    lines = [line for line in text.splitlines() if line.strip()]
    kept = [line for line in lines if shapes[_shape(line)] == 1]
    return kept if tuning.standout_share * len(kept) <= len(lines) else []


def embedding_inputs(
    message: Message,
    chunks: list[Chunk],
    seen: set[int] | None = None,
    tuning: RecallTuning = TUNING,
    before: str = "",
) -> list[tuple[Chunk, str]]:
    """What to embed for ``message``'s chunks: each chunk's text; for a tool output each standout line alone too,
    and with ``before`` (the user's message an agent's reply answers, ``said_before``) its first chunk after it too.

    Standout lines already embedded (``seen``: their hashes, updated here) are not embedded
    again: overlapping chunks share lines, and a table printed twenty times has one header.
    """
    inputs = [(chunk, chunk.text) for chunk in chunks]
    if before and chunks:
        inputs.append((chunks[0], before[-tuning.reply_context_chars :] + "\n" + chunks[0].text))
    if message.role != "tool" or not chunks:
        return inputs
    seen = set() if seen is None else seen
    shapes = Counter(_shape(line) for line in _joined(chunks).splitlines() if line.strip())
    if sum(count for count in shapes.values() if count > 1) < tuning.min_pattern_lines:
        return inputs  # among unlike lines none stands out
    for chunk in chunks:
        for line in _standout_lines(chunk.text, shapes, tuning):
            if hash(line) not in seen:
                seen.add(hash(line))
                inputs.append((chunk, line))
    return inputs


def _joined(chunks: list[Chunk]) -> str:
    """The text the (overlapping, in-order) chunks were cut from."""
    text = ""
    for chunk in chunks:
        text += chunk.text[max(0, len(text) - chunk.offset) :]
    return text


def said_before(messages: list[Message], earlier: Callable[[int], Message | None]) -> dict[str, str]:
    """For each agent's reply among ``messages`` directly after the user's message, the text of that message.

    The messages in hand are looked in first, then ``earlier`` (a session's message by its number).
    """
    by_seq = {m.seq: m for m in messages}
    found: dict[str, str] = {}
    for message in messages:
        if message.role == "assistant" and _is_speech(message) and message.seq > 0:
            prior = by_seq[message.seq - 1] if message.seq - 1 in by_seq else earlier(message.seq - 1)
            if prior is not None and prior.role == "user" and _is_speech(prior):
                found[message.id] = prior.content
    return found


def _is_speech(message: Message) -> bool:
    """A user's or agent's message with text and no call: what a person reads as said."""
    return message.role in ("user", "assistant") and not message.tool_calls and bool(message.content.strip())
