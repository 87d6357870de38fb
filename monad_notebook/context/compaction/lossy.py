"""The lossy stage: soft/hard thresholds over the durable Compactor.

Crossing ``softFraction`` starts a background compaction (deduplicated per session) and the
turn goes on at full width; at or over ``hardFraction`` the step waits for the compaction in
flight, then compacts synchronously if still over. The hard figure is ``Window.guard_tokens``:
never below the provider's last real count plus what was appended since, so an estimate that
is off cannot let a request through. Results are
already durable when they arrive; the window applies them.
"""

from __future__ import annotations

from collections.abc import Callable

from monad_notebook import events as ev
from monad_notebook.config import SCRIPTED_DEMO_MODEL, Config
from monad_notebook.context.compaction.compactor import CompactionResult, Compactor, OnSummarySaved
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.summarize import LLMSummarizer, Summarizer
from monad_notebook.context.window import Window
from monad_notebook.errors import SessionBusyError
from monad_notebook.events import Emit
from monad_notebook.messages import Message
from monad_notebook.provider import ChatModel
from monad_notebook.store.base import Store, Summary
from monad_notebook.store.lease import TurnLease

ModelFactory = Callable[[str], ChatModel]  # tier ("main" | "fast") -> model
Landed = Callable[[CompactionResult], None]


class LossyStage:
    def __init__(
        self,
        *,
        store: Store,
        window: Window,
        config: Callable[[], Config],
        emit: Emit,
        models: ModelFactory,
        on_summary_saved: OnSummarySaved,
        on_landed: Landed,
        lease: TurnLease,
    ) -> None:
        """``on_summary_saved`` runs on the compacting thread right after a summary is saved;
        ``landed`` on the turn's thread once a result has been applied to the window."""
        self.store = store
        self.window = window
        self.config = config
        self.models = models
        self.emit = emit
        self.on_landed = on_landed
        self.lease = lease
        self.compactor = Compactor(
            store=store,
            session=window.session,
            summarizer_factory=self._summarizer,
            fallback=ExtractiveSummarizer(),
            count_tokens=lambda text: self.window.counter.count_text(text),
            emit=emit,
            reflect_at_tokens=config().context.summarize.reflect_at_tokens,
            ledger_max_items=config().context.summarize.ledger_max_items,
            ledger_max_tokens=config().context.summarize.ledger_max_tokens,
            on_summary_saved=on_summary_saved,
            spill=self._spill_folded,
            save=self._save_if_current,
        )
        self.compactions = 0

    def _save_if_current(self, summary: Summary, previous: Summary | None, span: list[Message]) -> bool:
        """Save only a summary that still extends the stored one, holding the session's turn lease.

        Another kernel may have compacted, or written messages behind the new boundary that
        this kernel never saw, since the compaction began (it may run after this kernel's
        turn ended): then nothing is saved, and the messages stay in the window verbatim.
        """
        session = self.window.session
        try:
            self.lease.acquire(wait=0)
        except SessionBusyError:
            return False
        try:
            if not same_summary(self.store.load_summary(session), previous):
                return False
            after = previous.boundary_seq if previous is not None else -1
            folded = {m.id for m in span}
            stored = self.store.load_messages(session, after_seq=after)
            if any(m.seq <= summary.boundary_seq and m.id not in folded for m in stored):
                return False
            self.store.save_summary(summary)
            return True
        finally:
            self.lease.release()

    def _spill_folded(self, span: list[Message]) -> None:
        """Save the full text of folded tool results not saved yet, so their handles keep resolving."""
        if not self.config().context.tool_output.persist_raw:
            return
        results = {m.tool_call_id: m.content for m in span if m.role == "tool" and m.tool_call_id and not m.redacted}
        if results:
            saved = self.store.has_raw_outputs(self.window.session, list(results))
            unsaved = {k: v for k, v in results.items() if k not in saved}
            if unsaved:
                self.store.save_raw_outputs(self.window.session, unsaved)

    def reconfigure(self) -> None:
        cfg = self.config().context.summarize
        self.compactor.reflect_at_tokens = cfg.reflect_at_tokens
        self.compactor.ledger_max_items = cfg.ledger_max_items
        self.compactor.ledger_max_tokens = cfg.ledger_max_tokens

    def _summarizer(self) -> Summarizer | None:
        """The fast tier writes summaries; the scripted demo model cannot, so it gets the extractive one."""
        if self.config().models.resolved_fast().model == SCRIPTED_DEMO_MODEL:
            return None
        model = self.models("fast")

        def rejected(why: str, attempt: int) -> None:
            then = "retrying" if attempt == 1 else "using the extractive summary"
            self.emit(ev.SUMMARY_REJECTED, model=model.name, reason=why, attempt=attempt, then=then)

        return LLMSummarizer(model, on_rejected=rejected)

    # --- applying results -----------------------------------------------------------

    def apply_pending(self) -> bool:
        """Land a finished background compaction in the window (it is already durable)."""
        result = self.compactor.take_result()
        if result is None:
            return False
        self._apply(result, background=True)
        return True

    def _apply(self, result: CompactionResult, *, background: bool = False) -> None:
        """Land ``result`` and say so once, in the units of occupancy: the whole prompt's estimate, before and after."""
        before = self.window.estimate(self.window.prompt())
        self.window.apply_compaction(result)
        self.compactions += 1
        self.emit(
            ev.COMPACTION_APPLIED,
            tokens_before=before,
            tokens_after=self.window.estimate(self.window.prompt()),
            exact=False,
            messages=len(result.folded_ids),
            background=background,
        )
        self.on_landed(result)

    # --- thresholds -----------------------------------------------------------------

    def step(self, context_window: int) -> None:
        """Per-step: land results, start background work at soft, guard hard on the bound that cannot lag."""
        w = self.window
        cfg = self.config().context.summarize
        self.apply_pending()
        if not cfg.enabled:
            return
        soft, hard = cfg.soft_fraction * context_window, cfg.hard_fraction * context_window
        if w.guard_tokens(w.prompt()) >= hard:
            self.compactor.wait()
            self.apply_pending()
            if w.guard_tokens(w.prompt()) >= hard:
                self.compact_now("hard threshold")
        elif w.occupancy() >= soft:
            if cfg.background:
                self.compactor.start_background(w.messages, w.summary, cfg.keep_recent, "soft threshold")
            else:
                self.compact_now("soft threshold")

    def compact_now(self, reason: str, keep_recent: int | None = None) -> bool:
        """Compact synchronously (after any compaction in flight); False when nothing was folded."""
        self.compactor.wait()
        self.apply_pending()
        keep = self.config().context.summarize.keep_recent if keep_recent is None else keep_recent
        result = self.compactor.compact_now(self.window.messages, self.window.summary, keep, reason)
        if result is None:
            return False
        self._apply(result)
        return True

    def discard_pending(self) -> None:
        """Let a compaction in flight finish and drop its result (the conversation was reset)."""
        self.compactor.wait()
        self.compactor.take_result()

    def close(self) -> None:
        self.compactor.close()


def same_summary(a: Summary | None, b: Summary | None) -> bool:
    """The same stored summary: None for none, else equal save time and boundary."""
    if a is None or b is None:
        return a is b
    return (a.created_at, a.boundary_seq) == (b.created_at, b.boundary_seq)
