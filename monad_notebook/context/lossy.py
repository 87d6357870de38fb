"""The lossy stage wired into a session: soft/hard thresholds over the durable Compactor.

Crossing ``softFraction`` starts a background compaction (deduplicated per session) and the
turn goes on at full width; at or over ``hardFraction`` the step waits for the compaction in
flight, then compacts synchronously if the in-turn estimate is still over.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from monad_notebook import events as ev
from monad_notebook.context.compaction import CompactionResult, Compactor, apply_result
from monad_notebook.context.summarize import ExtractiveSummarizer, LLMSummarizer, Summarizer
from monad_notebook.errors import SessionBusyError
from monad_notebook.messages import Message
from monad_notebook.store.base import Summary

if TYPE_CHECKING:
    from monad_notebook.session import Session

AfterCompact = Callable[[list[Message], Summary], None]


class LossyStage:
    def __init__(self, session: Session, after_compact: AfterCompact | None = None) -> None:
        self.session = session
        cfg = session.config.context.summarize
        self.compactor = Compactor(
            store=session.store,
            session=session.name,
            summarizer_factory=self._summarizer,
            fallback=ExtractiveSummarizer(),
            count_tokens=lambda text: session.counter.count_text(text),
            emit=session.emit,
            reflect_at_tokens=cfg.reflect_at_tokens,
            ledger_max_items=cfg.ledger_max_items,
            after_compact=after_compact,
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
        s = self.session
        try:
            s.lease.acquire(wait=0)
        except SessionBusyError:
            return False
        try:
            if not same_summary(s.store.load_summary(s.name), previous):
                return False
            after = previous.boundary_seq if previous is not None else -1
            folded = {m.id for m in span}
            stored = s.store.load_messages(s.name, after_seq=after)
            if any(m.seq <= summary.boundary_seq and m.id not in folded for m in stored):
                return False
            s.store.save_summary(summary)
            return True
        finally:
            s.lease.release()

    def _spill_folded(self, span: list[Message]) -> None:
        """Save the full text of folded tool results not saved yet, so their handles keep resolving."""
        s = self.session
        if not s.config.context.tool_output.persist_raw:
            return
        results = {m.tool_call_id: m.content for m in span if m.role == "tool" and m.tool_call_id and not m.redacted}
        if results:
            saved = s.store.has_raw_outputs(s.name, list(results))
            unsaved = {k: v for k, v in results.items() if k not in saved}
            if unsaved:
                s.store.save_raw_outputs(s.name, unsaved)

    def reconfigure(self) -> None:
        cfg = self.session.config.context.summarize
        self.compactor.reflect_at_tokens = cfg.reflect_at_tokens
        self.compactor.ledger_max_items = cfg.ledger_max_items

    def _summarizer(self) -> Summarizer | None:
        """The fast tier writes summaries; the scripted demo model cannot, so it gets the extractive one."""
        from monad_notebook.session import build_model

        config = self.session.config
        if config.models.resolved_fast().model == "scripted-demo":
            return None
        return LLMSummarizer(build_model(config, "fast"))

    # --- applying results -----------------------------------------------------------

    def apply_pending(self) -> bool:
        """Land a finished background compaction in the window (it is already durable)."""
        result = self.compactor.take_result()
        if result is None:
            return False
        self._apply(result)
        return True

    def _apply(self, result: CompactionResult) -> None:
        s = self.session
        s.window = apply_result(s.window, result)
        s.summary = result.summary
        s.last_prompt_tokens = None  # the provider's count described the unfolded window
        s.estimate_prompt(s.assemble_prompt())
        self.compactions += 1
        s.after_compaction()

    # --- thresholds -----------------------------------------------------------------

    def step(self) -> None:
        """Per-step: land results, start background work at soft, guard hard on the in-turn estimate."""
        s = self.session
        cfg = s.config.context.summarize
        self.apply_pending()
        if not cfg.enabled:
            return
        soft, hard = cfg.soft_fraction * s.context_window, cfg.hard_fraction * s.context_window
        if s.estimate_prompt(s.assemble_prompt()) >= hard:
            self.compactor.wait()
            self.apply_pending()
            if s.estimate_prompt(s.assemble_prompt()) >= hard:
                self.compact_now("hard threshold")
        elif s.occupancy() >= soft:
            if cfg.background:
                self.compactor.start_background(s.window, s.summary, cfg.keep_recent, "soft threshold")
            else:
                self.compact_now("soft threshold")

    def compact_now(self, reason: str, keep_recent: int | None = None) -> bool:
        """Compact synchronously (after any compaction in flight); False when nothing was folded."""
        s = self.session
        self.compactor.wait()
        self.apply_pending()
        keep = s.config.context.summarize.keep_recent if keep_recent is None else keep_recent
        result = self.compactor.compact_now(s.window, s.summary, keep, reason)
        if result is None:
            return False
        self._apply(result)
        return True

    def close(self) -> None:
        self.compactor.close()


def same_summary(a: Summary | None, b: Summary | None) -> bool:
    """The same stored summary: None for none, else equal save time and boundary."""
    if a is None or b is None:
        return a is b
    return (a.created_at, a.boundary_seq) == (b.created_at, b.boundary_seq)


def emit_handoff_if_heavy(session: Session, compactions: int) -> None:
    """Suggest a fresh session when the window stays heavy even after compaction."""
    cfg = session.config.context.handoff
    if not cfg.enabled:
        return
    fraction = session.occupancy() / session.context_window if session.context_window else 0.0
    reflections = session.summary.reflections if session.summary else 0
    if fraction >= cfg.at_fraction or reflections >= cfg.after_reflections:
        why = (
            f"{fraction:.0%} of the window after compaction"
            if fraction >= cfg.at_fraction
            else (f"the summary was condensed {reflections} times")
        )
        session.emit(
            ev.HANDOFF_SUGGESTED,
            message=f"This session stays heavy ({why}). Start fresh from its summary with %monad handoff NEW.",
            fraction=round(fraction, 3),
            reflections=reflections,
            compactions=compactions,
        )
