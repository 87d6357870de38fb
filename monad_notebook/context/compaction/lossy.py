"""The lossy stage: soft/hard thresholds over the durable Compactor.

Crossing ``softFraction`` starts a background compaction (deduplicated per session) and the
turn goes on at full width; at or over ``hardFraction`` the step waits for the compaction in
flight, then compacts synchronously if still over. The hard figure is ``Occupancy.guard_tokens``:
never below the provider's last real count plus what was appended since, so an estimate that
is off cannot let a request through. The stage decides when to compact; what a compaction
saves (``save``, ``spill``) and how its result lands in the window (``land``) are the cascade's.
"""

from __future__ import annotations

from collections.abc import Callable

from monad_notebook import events as ev
from monad_notebook.config import SCRIPTED_DEMO_MODEL, Config
from monad_notebook.context.compaction.compactor import CompactionResult, Compactor, OnSummarySaved, SaveSummary, Spill
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.summarize import LLMSummarizer, Summarizer
from monad_notebook.context.occupancy.occupancy import Occupancy
from monad_notebook.context.window import Window
from monad_notebook.events import Emit
from monad_notebook.provider import ChatModel
from monad_notebook.store.base import Store

ModelFactory = Callable[[str], ChatModel]  # tier ("main" | "fast") -> model
Land = Callable[[CompactionResult, bool], None]  # (result, landed from the background)


class LossyStage:
    def __init__(
        self,
        *,
        store: Store,
        window: Window,
        occupancy: Occupancy,
        config: Callable[[], Config],
        emit: Emit,
        models: ModelFactory,
        on_summary_saved: OnSummarySaved,
        save: SaveSummary,
        spill: Spill,
        land: Land,
    ) -> None:
        """``on_summary_saved`` runs on the compacting thread right after ``save`` made a summary
        durable; ``land`` on the turn's thread puts a result in the window."""
        self.window = window
        self.occupancy = occupancy
        self.config = config
        self.models = models
        self.emit = emit
        self.land = land
        self.compactor = Compactor(
            store=store,
            session=window.session,
            summarizer_factory=self._summarizer,
            fallback=ExtractiveSummarizer(),
            count_tokens=lambda text: self.occupancy.counter.count_text(text),
            emit=emit,
            reflect_at_tokens=config().context.summarize.reflect_at_tokens,
            ledger_max_items=config().context.summarize.ledger_max_items,
            ledger_max_tokens=config().context.summarize.ledger_max_tokens,
            on_summary_saved=on_summary_saved,
            spill=spill,
            save=save,
        )

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
        self.land(result, True)
        return True

    # --- thresholds -----------------------------------------------------------------

    def step(self, context_window: int) -> None:
        """Per-step: land results, start background work at soft, guard hard on the bound that cannot lag."""
        w, occupancy = self.window, self.occupancy
        cfg = self.config().context.summarize
        self.apply_pending()
        if not cfg.enabled:
            return
        soft, hard = cfg.soft_fraction * context_window, cfg.hard_fraction * context_window
        if occupancy.guard_tokens(w.prompt()) >= hard:
            self.compactor.wait()
            self.apply_pending()
            if occupancy.guard_tokens(w.prompt()) >= hard:
                self.compact_now("hard threshold")
        elif occupancy.current(w.prompt) >= soft:
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
        self.land(result, False)
        return True

    def discard_pending(self) -> None:
        """Let a compaction in flight finish and drop its result (the conversation was reset)."""
        self.compactor.wait()
        self.compactor.take_result()

    def close(self) -> None:
        self.compactor.close()
