"""Tool-call ids made unique and portable before a step is stored.

A model may repeat an id within one answer, reuse one from an earlier step or turn, or send
none. Stored as given, every later request carries the duplicate, which strict providers
refuse, and a spilled output overwrites the one saved earlier under the same id. Ids are
re-sent to whichever provider the session uses later, so they must suit the strictest:
OpenAI takes at most 40 characters, Anthropic only ``[A-Za-z0-9_-]``, Mistral exactly nine
letters and digits. A valid id not used yet is kept as it is; any other gets a fresh one.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Callable
from dataclasses import replace

from monad_notebook.context.window import Window
from monad_notebook.messages import Message, ToolCall

_VALID = re.compile(r"[A-Za-z0-9_-]{1,40}")
_ALPHABET = string.digits + string.ascii_letters
FRESH_ID_CHARS = 9


def is_portable(call_id: str) -> bool:
    """An id every known provider accepts back in a later request."""
    return _VALID.fullmatch(call_id) is not None


def fresh_call_id(seed: str) -> str:
    """Nine letters and digits derived from ``seed``: the same step always gets the same ids."""
    number = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
    chars = []
    for _ in range(FRESH_ID_CHARS):
        number, digit = divmod(number, len(_ALPHABET))
        chars.append(_ALPHABET[digit])
    return "".join(chars)


def window_call_ids(window: list[Message]) -> set[str]:
    """Every id the window's assistant messages and tool results carry: what later requests re-send."""
    ids = {m.tool_call_id for m in window if m.tool_call_id}
    ids.update(c.id for m in window for c in m.tool_calls)
    return ids


def dedupe_calls(calls: list[ToolCall], used: set[str], seed: str) -> list[ToolCall]:
    """``calls`` with every empty, unportable or already ``used`` id replaced by a fresh one.

    ``seed`` must differ between steps of one session (the assistant message's position does).
    """
    taken = set(used)
    unique: list[ToolCall] = []
    for index, call in enumerate(calls):
        call_id = call.id
        attempt = 0
        while not is_portable(call_id) or call_id in taken:
            call_id = fresh_call_id(f"{seed}\0{index}\0{attempt}")
            attempt += 1
        taken.add(call_id)
        unique.append(call if call_id == call.id else replace(call, id=call_id))
    return unique


def unique_tool_calls(window: Window, saved: Callable[[list[str]], set[str]], calls: list[ToolCall]) -> list[ToolCall]:
    """The calls of the window's next assistant message, with ids no earlier call of the session has.

    Ids older than the window matter only where their full output was saved, so those are
    looked up with ``saved`` (the store's ``has_raw_outputs``: one small read) rather than by
    reading the whole transcript.
    """
    if not calls:
        return calls
    used = window_call_ids(window.messages)
    unseen = sorted({c.id for c in calls if is_portable(c.id)} - used)
    if unseen:
        used |= saved(unseen)
    return dedupe_calls(calls, used, f"{window.session}\0{window.next_seq}")
