"""The cascade: the context stages in their order, and the one place their plans are applied.

Inputs are narrow (the window, the store, a config snapshot, an ``emit``, a model factory);
each stage returns data (a filled tool message, an eviction plan, a compaction result, the
turn's blocks) and the cascade persists it and applies it to the window, cheapest first:

    per result   redaction -> truncation with spill         (LosslessStage.process_result)
    per step     eviction plan -> store -> window           (LosslessStage.plan_eviction)
                 soft/hard thresholds -> compaction         (LossyStage.step; saved and landed here)
    per turn     memory, plan anchor, related context       (TurnStages.blocks)
    per commit   spilled outputs, messages -> store -> window, then recall's index

The session talks to the cascade only, never to its stages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from monad_notebook import events as ev
from monad_notebook.config import Config, EmbeddingConfig
from monad_notebook.context.compaction.compactor import CompactionResult, save_ledger
from monad_notebook.context.compaction.handoff import handoff_nudge
from monad_notebook.context.compaction.lossy import LossyStage, ModelFactory
from monad_notebook.context.lossless.stage import LosslessStage
from monad_notebook.context.occupancy.calibration import Calibration
from monad_notebook.context.occupancy.cost import CachePricing, CostMeter
from monad_notebook.context.occupancy.occupancy import Occupancy
from monad_notebook.context.occupancy.records import PromptRecords
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.prompt import Prompt
from monad_notebook.context.recall.search import Passage
from monad_notebook.context.turn_stages import TurnStages
from monad_notebook.context.window import Frame, Window
from monad_notebook.errors import ContextLengthError, SessionBusyError
from monad_notebook.events import Emit, EventBus
from monad_notebook.memory import MemoryService
from monad_notebook.messages import Image, Message, ToolCall
from monad_notebook.provider.local_embedder import Embedder, make_embedder
from monad_notebook.store.base import LedgerEntry, Store, Summary
from monad_notebook.store.lease import TurnLease

INDEX_STOP_SECONDS = 5.0


class Cascade:
    def __init__(
        self,
        *,
        window: Window,
        counter: TokenCounter,
        store: Store,
        config: Callable[[], Config],
        emit: Emit,
        bus: EventBus,
        models: ModelFactory,
        context_window: Callable[[], int],
        lossless: LosslessStage,
        lease: TurnLease,
        embedders: Callable[[EmbeddingConfig], Embedder | None] = make_embedder,
    ) -> None:
        """``embedders`` builds recall's embedder from ``models.embedding`` (a fixed one in tests and demos)."""
        self.window = window
        self.store = store
        self.occupancy = Occupancy(counter, self.stored_calibration(counter.model))
        self.cost = CostMeter()
        self.records = PromptRecords()
        self.config = config
        self.emit = emit
        self.context_window = context_window
        self.lossless = lossless
        self.lease = lease
        self.compactions = 0
        self.images_refused_by: str | None = None  # the model whose endpoint refused images
        self.turn_stages = TurnStages(
            store=store,
            config=config,
            redactor=self.lossless.redactor,
            emit=emit,
            bus=bus,
            fast_model=lambda: models("fast"),
            embedders=embedders,
        )
        self.lossy = LossyStage(
            store=store,
            window=window,
            occupancy=self.occupancy,
            config=config,
            emit=emit,
            models=models,
            on_summary_saved=self._on_summary_saved,
            save=self._save_summary,
            spill=self._spill_folded,
            land=self._land,
        )

    def reconfigure(self, lossless: LosslessStage, counter: TokenCounter, frame: Frame, pricing: CachePricing) -> None:
        """A new config snapshot is in force (these were built from it): follow it.

        Another model's counter starts from what earlier kernels learnt of its provider's counts.
        """
        if counter is not self.occupancy.counter:
            self.occupancy.use_counter(counter, self.stored_calibration(counter.model))
            self.window.new_model()
        if self.images_refused_by == counter.model:
            frame = replace(frame, image_detail=None)
        self.window.set_frame(frame)
        self.cost.pricing = pricing
        self.lossless = lossless
        self.turn_stages.reconfigure(self.lossless.redactor)
        self.lossy.reconfigure()

    def stop_images(self, reason: str) -> bool:
        """The endpoint refused a request for its images: describe them in text from now on.

        Holds for this model in this kernel (a reload keeps it); False when no image was being sent.
        """
        if self.window.frame.image_detail is None:
            return False
        self.images_refused_by = self.occupancy.counter.model
        self.window.set_frame(replace(self.window.frame, image_detail=None))
        self.emit(ev.ERROR, message=f"{reason}. Images are described in text from now on in this session.")
        return True

    @property
    def redactor(self) -> Any:
        return self.lossless.redactor

    # --- per result -----------------------------------------------------------------

    def tool_message(
        self, call: ToolCall, text: str, *, redacted: bool = False, images: Sequence[Image] = ()
    ) -> Message:
        """The tool message for ``call``: redacted, truncated, its full text queued for spill; its images kept."""
        message = self.window.new_message("tool", "")
        message.tool_call_id = call.id
        message.name = call.name
        message.images = list(images)
        self.lossless.process_result(message, text, redacted=redacted)
        return message

    def commit(self, messages: list[Message]) -> None:
        """Persist a step (one write per table: spilled full texts, then messages), put it in the
        window, and queue it for recall's index."""
        session = self.window.session
        spilled = self.lossless.take_spill()
        if spilled:
            self.store.save_raw_outputs(session, spilled)
        images = {m.tool_call_id: m.images for m in messages if m.images}
        if images:
            self.store.save_images(session, images)
        self.window.wrote(self.store.append_messages(messages))
        self.window.extend(messages)
        self.turn_stages.index(session, messages)

    # --- per step -------------------------------------------------------------------

    def run_step(self) -> None:
        """Stages that react to the growing window: eviction first (lossless), then compaction."""
        self.evict()
        self.lossy.step(self.context_window())

    def evict(self, *, force: bool = False) -> int:
        """Plan an eviction pass, persist it, apply it; the tokens reclaimed."""
        session = self.window.session
        plan = self.lossless.plan_eviction(
            self.window,
            self.context_window(),
            lambda ids: self.store.has_raw_outputs(session, ids),
            occupancy=self.occupancy_now,
            cache_discount=self.cost.pricing.discount if self.cost.cache_warm() else 1.0,
            force=force,
        )
        if plan is None:
            return 0
        if plan.spill:
            self.store.save_raw_outputs(session, plan.spill)
        self.window.wrote(self.store.set_placeholders(session, plan.placeholders))
        self.window.apply_eviction(plan)
        self.occupancy.reclaim(plan.reclaimed_tokens)
        self.emit(
            ev.EVICTED,
            reclaimed=plan.reclaimed_tokens,
            count=len(plan.placeholders),
            tool_call_ids=plan.evicted_tool_call_ids,
        )
        return plan.reclaimed_tokens

    def make_room(self) -> bool:
        """After a provider context-length error: clear every result, then compact now."""
        reclaimed = self.evict(force=True)
        compacted = self.lossy.compact_now("context length exceeded", keep_recent=2)
        return reclaimed > 0 or compacted

    def ensure_fits(self) -> None:
        """Before a request goes out: make room if it would not fit the window, and refuse it if it still would not.

        Judged on ``Occupancy.guard_tokens`` (never below the provider's last count plus what was
        appended since), so a request the estimate underrates is not sent to fail. With neither
        a provider count to go on nor the model's own tokenizer, the provider judges: a server
        that leaves the tool schemas out would otherwise be refused its very first request.
        """
        if not (self.occupancy.calibration.observations or self.occupancy.counter.exact):
            return
        window = self.context_window()
        if self.occupancy.guard_tokens(self.window.prompt()) < window:
            return
        self.make_room()
        tokens = self.occupancy.guard_tokens(self.window.prompt())
        if tokens >= window:
            raise ContextLengthError(
                f"The prompt would be about {tokens:,} tokens, and the model's window holds {window:,} even after "
                "clearing tool results and compacting; it was not sent: shorten the message, or raise contextWindow "
                "in agents.json if the model holds more"
            )

    def compact(self) -> bool:
        return self.lossy.compact_now("requested")

    def catch_up(self) -> None:
        """Land a finished compaction, then take in what another kernel wrote to this session meanwhile."""
        self.lossy.apply_pending()
        if self.window.catch_up(self.store):
            self.occupancy.forget_count()

    def forget(self) -> None:
        """After the stored conversation was forgotten: an empty window, and the counts start over."""
        self.window.reset(self.store)
        self.occupancy.reset()
        self.records.clear()

    # --- accounting -----------------------------------------------------------------

    def stored_calibration(self, model: str) -> Calibration:
        """What earlier kernels learnt of this model's provider counts, so a restart does not start over."""
        return Calibration.from_dict(self.store.load_calibration(self.window.session, model))

    def save_calibration(self) -> None:
        """Keep what the provider's counts taught us: one small write per turn at most, none if nothing new."""
        calibration = self.occupancy.calibration
        if calibration.dirty:
            self.store.save_calibration(self.window.session, self.occupancy.counter.model, calibration.to_dict())
            calibration.dirty = False

    def account(self, prompt: Prompt) -> int:
        """The request about to go out: its calibrated estimate, and a record of what it holds."""
        estimate = self.occupancy.estimate(prompt)
        self.records.add(prompt, self.occupancy, self.window.turn, self.window.step)
        return estimate

    def answered(self, real: int | None, estimate: int, cached_tokens: int) -> None:
        """The provider's count of that request (None: it reported none), and the bill: the calibration
        learns, and the cost and the record take the figures."""
        self.occupancy.observe(real)
        billed = real if real is not None else estimate
        self.cost.add(billed, cached_tokens)
        self.records.answered(real, billed, self.cost.last_cached_tokens)

    def projected(self) -> int:
        """What the next request would cost as the window stands now, before the cascade acts."""
        return self.occupancy.predict(self.window.prompt())

    def occupancy_now(self) -> int:
        """effectiveInputTokens: the provider's last real count, else the calibrated estimate."""
        return self.occupancy.current(self.window.prompt)

    def usage(self) -> dict[str, Any]:
        occupancy, context_window = self.occupancy_now(), self.context_window()
        return {
            "occupancy": occupancy,
            "context_window": context_window,
            "fraction": round(occupancy / context_window, 4) if context_window else 0.0,
            "exact": self.occupancy.last_real is not None,
            "reclaimed": self.occupancy.reclaimed,
            "messages": len(self.window.messages),
            **self.cost.snapshot(),
        }

    def discard_pending(self) -> None:
        """Let a compaction in flight finish and drop its result (the conversation was reset)."""
        self.lossy.discard_pending()

    # --- what compaction saves, and how its result lands ----------------------------

    def _save_summary(
        self, summary: Summary, previous: Summary | None, span: list[Message], ledger: list[LedgerEntry]
    ) -> bool:
        """Save only a summary that still extends the stored one, holding the session's turn lease; then its ledger.

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
            save_ledger(self.store, session, ledger)
            return True
        finally:
            self.lease.release()

    def _spill_folded(self, span: list[Message]) -> None:
        """Save the full text of folded tool results not saved yet, so their handles keep resolving."""
        if not self.config().context.tool_output.persist_raw:
            return
        session = self.window.session
        results = {m.tool_call_id: m.content for m in span if m.role == "tool" and m.tool_call_id and not m.redacted}
        if results:
            saved = self.store.has_raw_outputs(session, list(results))
            unsaved = {k: v for k, v in results.items() if k not in saved}
            if unsaved:
                self.store.save_raw_outputs(session, unsaved)

    def _land(self, result: CompactionResult, background: bool) -> None:
        """Put a durable compaction in the window and say so once, in the units of occupancy: the whole
        prompt's estimate before and after; then suggest a handoff if the window is still heavy."""
        before = self.occupancy.estimate(self.window.prompt())
        self.window.apply_compaction(result)
        self.occupancy.folded()
        self.compactions += 1
        self.emit(
            ev.COMPACTION_APPLIED,
            tokens_before=before,
            tokens_after=self.occupancy.estimate(self.window.prompt()),
            exact=False,
            messages=len(result.folded_ids),
            background=background,
            replaced=result.replaced,
        )
        self._on_landed()

    # --- per turn -------------------------------------------------------------------

    def run_turn(self, user: Message) -> None:
        """Stages that append to the prompt: once per turn, never per step."""
        blocks = self.turn_stages.blocks(self.window, user, self.occupancy.counter.count_text)
        retrieval = self.turn_stages.retrieval is not None
        self.window.set_blocks(blocks, user.id, retrieval=retrieval, cache_warm=self.cost.cache_warm())

    @property
    def memory(self) -> MemoryService:
        return self.turn_stages.memory

    @property
    def memory_scope(self) -> str:
        """Where facts the user saves go: the agent's scope (``agent.name``), else global."""
        return self.turn_stages.scope

    def indexing(self) -> dict[str, Any]:
        """How far recall's index is behind: messages not yet indexed, and whether earlier history is still checked."""
        return {"unindexed": self.turn_stages.unindexed, "recall_checking": self.turn_stages.checking_history}

    def recall(self, query: str, also: Sequence[str] = ()) -> list[Passage]:
        """The ``recall`` tool's search: the best passages the window does not show."""
        return self.turn_stages.search(self.window, query, self.config().context.recall.max_results, also)

    # --- hooks ----------------------------------------------------------------------

    def _on_summary_saved(self, span: list[Message], summary: Summary) -> None:
        """On the compacting thread, right after a summary is saved: the span's last chance."""
        self.turn_stages.on_summary_saved(self.window.session, span, summary)

    def _on_landed(self) -> None:
        """On the turn's thread, once a compaction is in the window: suggest a handoff if still heavy."""
        context_window = self.context_window()
        fraction = self.occupancy_now() / context_window if context_window else 0.0
        reflections = self.window.summary.reflections if self.window.summary else 0
        nudge = handoff_nudge(self.config().context.handoff, fraction, reflections, self.compactions)
        if nudge is not None:
            self.emit(ev.HANDOFF_SUGGESTED, **nudge)

    # --- background -----------------------------------------------------------------

    def wait(self, timeout: float | None = None) -> None:
        """Let background work land: a compaction in flight and pending embeddings."""
        self.lossy.compactor.wait(timeout)
        self.turn_stages.flush(timeout)

    def close(self) -> None:
        self.lossy.close()
        self.turn_stages.close(INDEX_STOP_SECONDS)


def same_summary(a: Summary | None, b: Summary | None) -> bool:
    """The same stored summary: None for none, else equal save time and boundary."""
    if a is None or b is None:
        return a is b
    return (a.created_at, a.boundary_seq) == (b.created_at, b.boundary_seq)
