"""The identifier ledger: every identifier a session folded, weighed, and the part of it a summary shows.

Recency is the wrong rule: a session that reads a new file every step pushes out the file
the user named an hour ago. So every identifier ``identifiers.py`` finds gets a weight from where
it was seen (its salience): what the user wrote counts most, then numbers the agent reported as
results, files, packages, variables and commands in the code it ran, errors not yet followed by
a clean run of the same tool, and, least, what tools printed (columns, variables, pins, ids,
numbers). Each later sighting adds a little. The full ledger lives in the store (``ledger``
table: loaded before a fold, saved after the summary); the summary shows the most salient
entries that fit ``ledgerMaxTokens``, each with where it was seen (``ledger_text.py``), and
read-back handles of folded outputs (ranked by how many salient names each holds) get at most
a quarter of it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace

from monad_notebook.context.compaction.identifiers import message_items
from monad_notebook.context.compaction.ledger_text import ledger_line, parse_ledger
from monad_notebook.messages import Message
from monad_notebook.store.base import LedgerEntry, Summaries

log = logging.getLogger(__name__)

WEIGHTS: dict[str, dict[str, float]] = {
    "user": {},
    "assistant": {"number": 8.0, "code": 3.0},
    "call": {"file": 7.0, "package": 7.0, "variable": 6.0, "command": 6.0, "column": 5.0, "url": 5.0, "id": 5.0},
    "output": {
        "error": 7.0,
        "variable": 4.0,
        "column": 4.0,
        "package": 4.0,
        "file": 3.0,
        "url": 3.0,
        "command": 3.0,
        "code": 1.0,
    },
}
DEFAULT_WEIGHT = {"user": 10.0, "assistant": 6.0, "call": 4.0, "output": 2.0}
CALL_CODE_WEIGHT = 2.0
CLOSED_ERROR = 2.0
HANDLE_WEIGHT = 3.0
HANDLE_BONUS, HANDLE_BONUS_MAX = 0.25, 2.0  # per identifier of weight >= 3 first seen in that output
HOLDS_CHARS = 80
RECURRENCE_BONUS, RECURRENCE_MAX = 0.5, 2.0
HANDLE_SHARE = 0.25
FAMILY_MIN, FAMILY_SHOWN = 3, 1
FIT_MISSES = 40
HANDLE_PREFIX = "read_tool_output id="
_DIGITS = re.compile(r"\d+")


def _holds(message: Message, names: list[LedgerEntry]) -> str:
    """A handle's note: whose output it is and the most salient names first seen in it."""
    best = sorted(
        (e for e in names if _weight("output", e.kind) >= 3), key=lambda e: (-_weight("output", e.kind), e.seq)
    )
    shown: list[str] = []
    for entry in best:
        if sum(len(x) + 2 for x in shown) + len(entry.item) > HOLDS_CHARS:
            break
        shown.append(entry.item)
    where = f"{message.name or 'tool'} output"
    return f"{where}; holds {', '.join(shown)}" if shown else where


def _weight(place: str, kind: str) -> float:
    if place == "call" and kind == "code":
        return CALL_CODE_WEIGHT
    return WEIGHTS[place].get(kind, DEFAULT_WEIGHT[place])


def _bonus(count: int) -> float:
    return min(RECURRENCE_MAX, RECURRENCE_BONUS * max(0, count - 1))


def _as_read(message: Message, raw: dict[str, str]) -> Message:
    """A tool result with its saved full text in place of what the window showed, when there is one."""
    full = raw.get(message.tool_call_id) if message.role == "tool" else None
    return replace(message, content=full) if full else message


def extract_handles(messages: list[Message]) -> list[tuple[str, Message]]:
    """One read-back handle per folded tool result that has one, naming its exact id, with the result.

    What the output holds is said in the handle's note (``_holds``), not in the handle.
    """
    return [
        (f"{HANDLE_PREFIX}{message.tool_call_id}", message)
        for message in messages
        if message.role == "tool" and not message.redacted and message.tool_call_id
    ]


def folded_ledger(span: list[Message], raw: dict[str, str]) -> list[LedgerEntry]:
    """The ledger compaction grows from ``span`` folded from the start (``raw``: saved full outputs by call id)."""
    ledger = IdentifierLedger()
    ledger.add_span(span, raw)
    return list(ledger.entries.values())


class IdentifierLedger:
    """A session's ledger entries by item, grown one folded span at a time."""

    def __init__(self, entries: list[LedgerEntry] | None = None) -> None:
        self.entries: dict[str, LedgerEntry] = {e.item: replace(e) for e in entries or []}

    @classmethod
    def load(cls, store: Summaries, session: str, summary_text: str) -> IdentifierLedger:
        """The session's full ledger from the store; the summary's own list when the store has none yet."""
        return cls(store.load_ledger(session) or seed(parse_ledger(summary_text)))

    def add_span(self, span: list[Message], raw: dict[str, str] | None = None) -> list[LedgerEntry]:
        """Fold ``span``'s sightings in, in order; the entries that changed (to save).

        ``raw``: the saved full text of truncated results (tool-call id -> text), read instead of
        what the window showed, so what truncation hid is in the ledger too.
        """
        found = [(message, *message_items(_as_read(message, raw or {}))) for message in span]
        changed: dict[str, LedgerEntry] = {}
        held: dict[str, list[LedgerEntry]] = {}
        for message, text_items, call_items in found:
            touched = self._add_message(message, text_items, call_items)
            for entry in touched:
                changed[entry.item] = entry
            if message.role == "tool":
                held[message.tool_call_id] = [e for e in touched if e.tool_call_id == message.tool_call_id]
        for handle, message in extract_handles(span):
            names = held.get(message.tool_call_id, [])
            strong = sum(_weight("output", e.kind) >= 3 for e in names)
            weight = HANDLE_WEIGHT + min(HANDLE_BONUS_MAX, HANDLE_BONUS * strong)
            entry = self._see(handle, "output", weight, message, _holds(message, names), "")
            changed[handle] = entry
        return list(changed.values())

    def _add_message(
        self, message: Message, text_items: list[tuple[str, str]], call_items: list[tuple[str, str]]
    ) -> list[LedgerEntry]:
        touched = []
        if message.role == "tool":
            source = f"{message.name or 'tool'} output"
            for item, kind in text_items:
                touched.append(self._see(item, kind, _weight("output", kind), message, source, message.tool_call_id))
            if not any(kind == "error" for _, kind in text_items):
                touched += self._close_errors(source)
            return touched
        if message.role in ("user", "assistant"):
            for item, kind in text_items:
                touched.append(self._see(item, kind, _weight(message.role, kind), message, message.role, ""))
        calls = ", ".join(dict.fromkeys(c.name for c in message.tool_calls))
        for item, kind in call_items:
            touched.append(self._see(item, kind, _weight("call", kind), message, f"{calls} call", ""))
        return touched

    def _see(self, item: str, kind: str, weight: float, message: Message, source: str, call_id: str) -> LedgerEntry:
        entry = self.entries.get(item)
        if entry is None:
            entry = LedgerEntry(item, kind, weight, 1, message.seq, message.turn, source, call_id)
            entry.open = kind == "error" and message.role == "tool"
            self.entries[item] = entry
            return entry
        base = entry.score - _bonus(entry.count)
        entry.count += 1
        if weight > base or (entry.kind == "name" and kind != "name"):
            entry.kind, entry.source, entry.tool_call_id = kind, source, call_id
            entry.seq, entry.turn = message.seq, message.turn
        if kind == "error" and message.role == "tool":
            entry.open = True
        entry.score = max(base, weight) + _bonus(entry.count)
        return entry

    def _close_errors(self, source: str) -> list[LedgerEntry]:
        """A clean run of a tool closes the errors it raised before: they drop to the bottom."""
        closed = [e for e in self.entries.values() if e.open and e.source == source]
        for entry in closed:
            entry.open = False
            entry.score = CLOSED_ERROR + _bonus(entry.count)
        return closed

    def top(
        self, max_tokens: int, max_items: int, count_tokens: Callable[[str], int]
    ) -> tuple[list[str], dict[str, str]]:
        """The most salient items that fit ``max_tokens`` and ``max_items``, and the note of each.

        Read-back handles get at most ``HANDLE_SHARE`` of the budget, so identifiers always
        have room; whatever they leave, identifiers may use.
        """
        ranked, notes = collapse(contained(sorted(self.entries.values(), key=lambda e: (-e.score, -e.seq, e.item))))
        handles = [e for e in ranked if e.kind == "output"]
        names = [e for e in ranked if e.kind != "output"]
        shown_handles, used = _fit(handles, notes, int(max_tokens * HANDLE_SHARE), max_items // 4, count_tokens)
        shown_names, _ = _fit(names, notes, max_tokens - used, max_items - len(shown_handles), count_tokens)
        shown = sorted([*shown_names, *shown_handles], key=lambda e: (-e.score, -e.seq, e.item))
        return [e.item for e in shown], {e.item: notes[e.item] for e in shown}


def contained(ranked: list[LedgerEntry]) -> list[LedgerEntry]:
    """Without items written out inside another item of the same message (a script inside its command line).

    The longer one shows both verbatim; comparing within one message keeps this linear in practice.
    """
    by_message: dict[int, list[LedgerEntry]] = {}
    for entry in ranked:
        if entry.kind != "output":
            by_message.setdefault(entry.seq, []).append(entry)
    inside = {
        e.item
        for group in by_message.values()
        if len(group) > 1
        for e in group
        if any(e.item != o.item and e.item in o.item and o.score >= e.score - 1 for o in group)
    }
    return [e for e in ranked if e.item not in inside]


def collapse(ranked: list[LedgerEntry]) -> tuple[list[LedgerEntry], dict[str, str]]:
    """Names that differ only in their digits (``part_0001.parquet``, ``part_0002.parquet``...) as one line.

    A loop that reads a new file every step makes hundreds of such names, each as salient by
    kind as the one file the session is really about; beyond the most salient (``FAMILY_SHOWN``),
    they are shown as one pattern (digits as ``*``) with their count, where they took space
    from names that each say something. What the user or the agent wrote is never grouped.
    Returns the entries to rank (patterns in place of their hidden members) and each one's note.
    """
    families: dict[str, list[LedgerEntry]] = {}
    for entry in ranked:
        if entry.kind != "output" and entry.source not in ("user", "assistant") and _DIGITS.search(entry.item):
            families.setdefault(_DIGITS.sub("*", entry.item), []).append(entry)
    stand_in: dict[str, LedgerEntry] = {}
    hidden: set[str] = set()
    notes: dict[str, str] = {}
    for pattern, members in families.items():
        if len(members) < FAMILY_MIN:
            continue
        rest = members[FAMILY_SHOWN:]
        hidden.update(e.item for e in rest)
        turns = sorted(e.turn for e in members)
        stand_in[rest[0].item] = LedgerEntry(pattern, "family", rest[0].score, len(members), rest[0].seq, turns[-1])
        notes[pattern] = f"{len(members)} {members[0].kind} names like this, turns {turns[0]}-{turns[-1]}"
    out = []
    for entry in ranked:
        if entry.item in stand_in:
            out.append(stand_in[entry.item])
        elif entry.item not in hidden:
            out.append(entry)
            notes[entry.item] = note(entry)
    return out, notes


def note(entry: LedgerEntry) -> str:
    """Where an entry was seen, as the ledger line shows it: kind, source, turn, and the output's id."""
    if entry.kind == "output":
        return f"{entry.source}, turn {entry.turn}" if entry.source else f"turn {entry.turn}"
    if not entry.source and not entry.turn:
        return ""
    where = f"{entry.kind}; {entry.source}, turn {entry.turn}" if entry.source else f"{entry.kind}; turn {entry.turn}"
    state = "; open" if entry.open else ""
    return f"{where}, id {entry.tool_call_id}{state}" if entry.tool_call_id else where + state


def _fit(
    entries: list[LedgerEntry], notes: dict[str, str], budget: int, max_items: int, count_tokens: Callable[[str], int]
) -> tuple[list[LedgerEntry], int]:
    """The entries that fit, in rank order; a line too long is skipped for shorter ones after it (a few dozen)."""
    kept: list[LedgerEntry] = []
    used = misses = 0
    for entry in entries:
        if len(kept) >= max_items or budget - used < 4 or misses > FIT_MISSES:
            break
        cost = count_tokens(ledger_line(entry.item, notes[entry.item])) + 1
        if used + cost > budget:
            misses += 1
            continue
        kept.append(entry)
        used += cost
    return kept, used


def seed(items: list[str]) -> list[LedgerEntry]:
    """Entries for a ledger read back from a summary (a session from before the store kept it)."""
    return [LedgerEntry(item, "name", 3.0) for item in items]


def save_ledger(store: Summaries, session: str, changed: list[LedgerEntry]) -> None:
    """After the summary: it already shows the ledger's top, so a failed write costs only the rest."""
    try:
        store.save_ledger(session, changed)
    except Exception as exc:
        log.warning("could not save the identifier ledger of %r: %s", session, exc)
