"""Compaction: fold the oldest part of the window into a new rolling summary, and say what was decided.

A :class:`Compactor` writes the new summary (the fast model's briefing, or the extractive one),
attaches the identifier ledger and reflects a summary grown too long; it saves nothing and tells
no one. The compaction policy (``policy.py``) keeps what it decided: the folded results' full
texts, then the summary, saved before anyone is told, under the session's turn lease and only if
it still extends the stored one, so a kernel that dies mid-compaction restarts from the previous
summary and the unfolded messages, never from half a summary; then the ledger, and memory
promotion.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from monad_notebook.context.compaction.ledger import IdentifierLedger
from monad_notebook.context.compaction.summarize import (
    Summarizer,
    attach_ledger,
    reflect_with_fallback,
    summarize_with_fallback,
)
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.messages import Message
from monad_notebook.store.base import LedgerEntry, Summaries, Summary, ToolOutputs


class FoldStore(Summaries, ToolOutputs, Protocol):
    """What a fold reads: the session's identifier ledger, the saved full text of truncated results."""


@dataclass
class Compaction:
    """What one compaction decided: a new summary over ``span`` (nothing of it saved yet)."""

    summary: Summary
    span: list[Message]  # the messages it folds, oldest first
    ledger: list[LedgerEntry]  # the ledger entries it changed
    tokens_before: int
    tokens_after: int
    used_fallback: bool
    reflected: bool
    seconds: float
    replaced: str = ""  # why the fast model's briefing was replaced by the extractive one ("" if it was not)
    background: bool = False  # folded from a snapshot on the background thread, landed at a later step

    @property
    def folded_ids(self) -> list[str]:
        return [m.id for m in self.span]


def choose_span(window: list[Message], keep_recent: int) -> list[Message]:
    """The oldest messages to fold, leaving the ``keep_recent`` newest verbatim.

    The cut moves earlier rather than split a tool round: an assistant message with tool
    calls and its results are folded together or kept together, so the kept window never
    starts with an orphan tool result.
    """
    cut = len(window) - max(0, keep_recent)
    while cut > 0:
        kept_starts_with_result = cut < len(window) and window[cut].role == "tool"
        folds_a_call = window[cut - 1].role == "assistant" and bool(window[cut - 1].tool_calls)
        if not (kept_starts_with_result or folds_a_call):
            break
        cut -= 1
    return window[: max(0, cut)]


class Compactor:
    """Folds a span of one session's window into a new rolling summary.

    A summary over ``reflect_at_tokens`` is reflected down to half of it, so the next
    compaction does not immediately reflect again.
    """

    def __init__(
        self,
        *,
        store: FoldStore,
        session: str,
        fallback: Summarizer,
        counter: TokenCounter,
        reflect_at_tokens: int,
        ledger_max_items: int,
        ledger_max_tokens: int = 1500,
    ) -> None:
        self.store = store
        self.session = session
        self.fallback = fallback
        self.counter = counter
        self.reflect_at_tokens = reflect_at_tokens
        self.ledger_max_items = ledger_max_items
        self.ledger_max_tokens = ledger_max_tokens

    def tokens(self, messages: list[Message], summary: Summary | None) -> int:
        """What ``messages`` under ``summary`` count, text only."""
        text = summary.text if summary else ""
        return self.counter.count_text(text) + sum(self.counter.count_text(m.sent_content) for m in messages)

    def fold(
        self, window: list[Message], span: list[Message], summary: Summary | None, summarizer: Summarizer | None
    ) -> Compaction:
        """The new summary over ``span`` (the oldest messages of ``window``), extending ``summary``.

        ``summarizer`` writes it (the fast model's briefing), else the extractive fallback does; a
        summarizer that fails falls back too. Raises only for what the fallback cannot survive.
        """
        started = time.monotonic()
        previous = summary.text if summary else ""
        tokens_before = self.tokens(window, summary)
        text, why = summarize_with_fallback(summarizer, self.fallback, previous or None, span)
        used_fallback = why is not None
        book = IdentifierLedger.load(self.store, self.session, previous)
        changed = book.add_span(span, self._raw_outputs(span))
        ledger, notes = book.top(self.ledger_max_tokens, self.ledger_max_items, self.counter.count_text)
        text = attach_ledger(text, ledger, notes)
        tokens = self.counter.count_text(text)
        reflections = summary.reflections if summary else 0
        reflected = tokens > self.reflect_at_tokens
        if reflected:
            target = max(1, self.reflect_at_tokens // 2)
            text = attach_ledger(
                reflect_with_fallback(None if used_fallback else summarizer, self.fallback, text, target), ledger, notes
            )
            if self.counter.count_text(text) > self.reflect_at_tokens:
                text = self.fallback.reflect(text, target)
            tokens = self.counter.count_text(text)
            reflections += 1
        new = Summary(self.session, text, span[-1].seq, time.time(), tokens=tokens, reflections=reflections)
        kept = window[len(span) :]
        return Compaction(
            summary=new,
            span=span,
            ledger=changed,
            tokens_before=tokens_before,
            tokens_after=self.tokens(kept, new),
            used_fallback=used_fallback,
            reflected=reflected,
            seconds=time.monotonic() - started,
            replaced=why or "",
        )

    def _raw_outputs(self, span: list[Message]) -> dict[str, str]:
        """The saved full text of the span's truncated results: the ledger reads what truncation hid."""
        ids = [m.tool_call_id for m in span if m.role == "tool" and m.tool_call_id and not m.redacted]
        return self.store.get_raw_outputs(self.session, ids) if ids else {}
