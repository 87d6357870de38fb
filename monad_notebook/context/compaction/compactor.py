"""Durable compaction: fold the oldest part of the window into the rolling summary.

The new summary and its boundary are saved to the store before anyone is told, so a
kernel that dies mid-compaction restarts from the previous summary and the unfolded
messages, never from half a summary. Background compaction works on a snapshot of the
window on a daemon thread (one per session at a time); the turn thread picks the result
up with :meth:`Compactor.take_result` and drops the folded messages from its window.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from monad_notebook import events as ev
from monad_notebook.context.compaction.ledger import parse_ledger
from monad_notebook.context.compaction.salience import Ledger, seed
from monad_notebook.context.compaction.summarize import (
    Summarizer,
    attach_ledger,
    reflect_with_fallback,
    summarize_with_fallback,
)
from monad_notebook.errors import MonadError
from monad_notebook.messages import Message
from monad_notebook.store.base import LedgerEntry, Store, Summary

log = logging.getLogger(__name__)

OnSummarySaved = Callable[[list[Message], Summary], None]
# Saves a new summary (only if it still extends ``previous``), then the ledger entries it changed.
SaveSummary = Callable[[Summary, Summary | None, list[Message], list[LedgerEntry]], bool]
Spill = Callable[[list[Message]], None]  # saves the full text of folded results not saved yet


class Superseded(MonadError):
    """The summary was not saved: the session changed in the store since the compaction began."""


@dataclass
class CompactionResult:
    summary: Summary  # already saved to the store
    folded_ids: list[str]  # message ids now behind the boundary
    tokens_before: int
    tokens_after: int
    used_fallback: bool
    reflected: bool
    replaced: str = ""  # why the fast model's briefing was replaced by the extractive one ("" if it was not)


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


def answered_calls_only(messages: list[Message]) -> list[Message]:
    """``messages`` without tool results that do not follow their call's assistant message.

    A provider rejects a request holding such a result; one can appear when a stored
    history was cut at a boundary between a call and its result.
    """
    kept: list[Message] = []
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                log.warning("dropped tool result %s from the window: its call is not in it", message.tool_call_id)
                continue
            open_calls.discard(message.tool_call_id)
        else:
            open_calls = {c.id for c in message.tool_calls} if message.role == "assistant" else set()
        kept.append(message)
    return kept


def apply_result(window: list[Message], result: CompactionResult) -> list[Message]:
    """``window`` without the messages ``result`` folded (the window may have grown meanwhile)."""
    folded = set(result.folded_ids)
    return [m for m in window if m.id not in folded]


def save_ledger(store: Store, session: str, changed: list[LedgerEntry]) -> None:
    """After the summary: it already shows the ledger's top, so a failed write costs only the rest."""
    try:
        store.save_ledger(session, changed)
    except Exception as exc:
        log.warning("could not save the identifier ledger of %r: %s", session, exc)


class Compactor:
    """Runs compactions for one session, synchronously or on its own worker thread.

    A summary over ``reflect_at_tokens`` is reflected down to half of it, so the next
    compaction does not immediately reflect again.
    """

    def __init__(
        self,
        *,
        store: Store,
        session: str,
        summarizer_factory: Callable[[], Summarizer | None],
        fallback: Summarizer,
        count_tokens: Callable[[str], int],
        emit: Callable[..., None],
        reflect_at_tokens: int,
        ledger_max_items: int,
        ledger_max_tokens: int = 1500,
        on_summary_saved: OnSummarySaved | None = None,
        spill: Spill | None = None,
        save: SaveSummary | None = None,
    ) -> None:
        self.store = store
        self.save = save or self._save
        self.session = session
        self.summarizer_factory = summarizer_factory
        self.fallback = fallback
        self.count_tokens = count_tokens
        self.emit = emit
        self.reflect_at_tokens = reflect_at_tokens
        self.ledger_max_items = ledger_max_items
        self.ledger_max_tokens = ledger_max_tokens
        self.on_summary_saved = on_summary_saved
        self.spill = spill
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._result: CompactionResult | None = None
        self._closed = False

    def _save(self, summary: Summary, previous: Summary | None, span: list[Message], ledger: list[LedgerEntry]) -> bool:
        self.store.save_summary(summary)
        save_ledger(self.store, summary.session, ledger)
        return True

    def _window_tokens(self, messages: list[Message], summary_text: str) -> int:
        return self.count_tokens(summary_text) + sum(self.count_tokens(m.sent_content) for m in messages)

    def compact_now(
        self, window: list[Message], summary: Summary | None, keep_recent: int, reason: str
    ) -> CompactionResult | None:
        """Fold and save synchronously; None when there is nothing to fold or compaction failed.

        A failure is logged and emitted as ``session.error``; the previous summary stays.
        """
        span = choose_span(window, keep_recent)
        if not span:
            return None
        try:
            return self._compact(window, span, summary, reason)
        except Superseded as exc:
            log.info("compaction of session %r not saved: %s", self.session, exc)
            self._emit_safely(ev.ERROR, message=f"Compaction skipped, the previous summary is kept: {exc}")
            return None
        except Exception as exc:
            log.debug("compaction of session %r failed", self.session, exc_info=True)  # reported by the event
            self._emit_safely(ev.ERROR, message=f"Compaction failed, the previous summary is kept: {exc}")
            return None

    def _summarizer(self) -> Summarizer | None:
        try:
            return self.summarizer_factory()
        except MonadError as exc:
            log.warning("no fast model for summaries, using the extractive summary: %s", exc)
            return None

    def _compact(
        self, window: list[Message], span: list[Message], summary: Summary | None, reason: str
    ) -> CompactionResult:
        previous = summary.text if summary else ""
        tokens_before = self._window_tokens(window, previous)
        self.emit(ev.COMPACTION_STARTED, reason=reason, messages=len(span), tokens_before=tokens_before)
        started = time.monotonic()
        primary = self._summarizer()
        text, why = summarize_with_fallback(primary, self.fallback, previous or None, span)
        used_fallback = why is not None
        if self.spill is not None:
            self.spill(span)  # folded results stay readable by the handles the ledger names
        book = self._ledger(previous)
        changed = book.add_span(span, self._raw_outputs(span))
        ledger, notes = book.top(self.ledger_max_tokens, self.ledger_max_items, self.count_tokens)
        text = attach_ledger(text, ledger, notes)
        tokens = self.count_tokens(text)
        reflections = summary.reflections if summary else 0
        reflected = tokens > self.reflect_at_tokens
        if reflected:
            target = max(1, self.reflect_at_tokens // 2)
            text = attach_ledger(
                reflect_with_fallback(None if used_fallback else primary, self.fallback, text, target), ledger, notes
            )
            if self.count_tokens(text) > self.reflect_at_tokens:
                text = self.fallback.reflect(text, target)
            tokens = self.count_tokens(text)
            reflections += 1
        new = Summary(self.session, text, span[-1].seq, time.time(), tokens=tokens, reflections=reflections)
        if not self.save(new, summary, span, changed):
            raise Superseded("another kernel changed this session meanwhile; it is compacted again when needed")
        kept = window[len(span) :]
        result = CompactionResult(
            summary=new,
            folded_ids=[m.id for m in span],
            tokens_before=tokens_before,
            tokens_after=self._window_tokens(kept, text),
            used_fallback=used_fallback,
            reflected=reflected,
            replaced=why or "",
        )
        self.emit(
            ev.COMPACTION_FINISHED,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            used_fallback=used_fallback,
            reflected=reflected,
            replaced=result.replaced,
            seconds=round(time.monotonic() - started, 3),
        )
        self._after(span, new)
        return result

    def _ledger(self, previous: str) -> Ledger:
        """The session's full ledger from the store; a summary's own list when the store has none yet."""
        stored = self.store.load_ledger(self.session)
        return Ledger(stored or seed(parse_ledger(previous)))

    def _raw_outputs(self, span: list[Message]) -> dict[str, str]:
        """The saved full text of the span's truncated results: the ledger reads what truncation hid."""
        ids = [m.tool_call_id for m in span if m.role == "tool" and m.tool_call_id and not m.redacted]
        return self.store.get_raw_outputs(self.session, ids) if ids else {}

    def _after(self, span: list[Message], summary: Summary) -> None:
        if self.on_summary_saved is None:
            return
        try:
            self.on_summary_saved(span, summary)
        except Exception:
            log.exception("after-compaction hook failed for session %r", self.session)

    def _emit_safely(self, kind: str, **data: object) -> None:
        try:
            self.emit(kind, **data)
        except Exception:
            log.exception("could not emit %s", kind)

    # --- background ------------------------------------------------------------------

    @property
    def in_flight(self) -> bool:
        worker = self._worker
        return worker is not None and worker.is_alive()

    def start_background(self, window: list[Message], summary: Summary | None, keep_recent: int, reason: str) -> bool:
        """Start compacting a snapshot of ``window``; False if one is running, unapplied, or closed.

        A finished result that was not yet taken also refuses: compacting the unapplied window
        again would fold the same messages against the superseded summary.
        """
        with self._lock:
            if self._closed or self.in_flight or self._result is not None:
                return False
            snapshot = copy.deepcopy(window)
            previous = copy.deepcopy(summary)
            worker = threading.Thread(
                target=self._run, args=(snapshot, previous, keep_recent, reason), name="monad-compaction", daemon=True
            )
            self._worker = worker
            worker.start()
        return True

    def _run(self, window: list[Message], summary: Summary | None, keep_recent: int, reason: str) -> None:
        try:
            result = self.compact_now(window, summary, keep_recent, reason)
        except BaseException:
            log.exception("background compaction of session %r crashed", self.session)
            return
        if result is not None:
            with self._lock:
                self._result = result

    def wait(self, timeout: float | None = None) -> None:
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout)

    def take_result(self) -> CompactionResult | None:
        """The finished background result, once; None while running or when there is none."""
        with self._lock:
            result, self._result = self._result, None
        return result

    def close(self, timeout: float | None = 30.0) -> None:
        """Refuse new work and let the running compaction land (it is durable either way)."""
        with self._lock:
            self._closed = True
        self.wait(timeout)
