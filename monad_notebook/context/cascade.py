"""The cascade: the context stages in their order, and the one place their plans are applied.

Inputs are narrow (the window, the store, a config snapshot, an ``emit``, a model factory);
each stage returns data (a filled tool message, an eviction plan, a compaction result, the
turn's blocks) and the cascade persists it and applies it to the window, cheapest first:

    per result   redaction -> truncation with spill         (LosslessStage.process_result)
    per step     eviction plan -> store -> window           (LosslessStage.plan_eviction)
                 soft/hard thresholds -> compaction         (LossyStage.step)
    per turn     memory, plan anchor, related context       (TurnStages.blocks)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.context.compaction.compactor import CompactionResult
from monad_notebook.context.compaction.handoff import handoff_nudge
from monad_notebook.context.compaction.lossy import LossyStage, ModelFactory
from monad_notebook.context.lossless.stage import LosslessStage
from monad_notebook.context.recall import Passage
from monad_notebook.context.turn_stages import TurnStages
from monad_notebook.context.window import Window
from monad_notebook.errors import ContextLengthError
from monad_notebook.events import Emit, EventBus
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.base import Store, Summary
from monad_notebook.store.lease import TurnLease

INDEX_STOP_SECONDS = 5.0


class Cascade:
    def __init__(
        self,
        *,
        window: Window,
        store: Store,
        config: Callable[[], Config],
        emit: Emit,
        bus: EventBus,
        models: ModelFactory,
        context_window: Callable[[], int],
        lossless: LosslessStage,
        lease: TurnLease,
    ) -> None:
        self.window = window
        self.store = store
        self.config = config
        self.emit = emit
        self.context_window = context_window
        self.lossless = lossless
        self.turn_stages = TurnStages(
            store=store,
            config=config,
            redactor=self.lossless.redactor,
            emit=emit,
            bus=bus,
            fast_model=lambda: models("fast"),
        )
        self.lossy = LossyStage(
            store=store,
            window=window,
            config=config,
            emit=emit,
            models=models,
            on_summary_saved=self._on_summary_saved,
            on_landed=self._on_landed,
            lease=lease,
        )

    def reconfigure(self, lossless: LosslessStage) -> None:
        """A new config snapshot is in force (``lossless`` was built from it): follow it."""
        self.lossless = lossless
        self.turn_stages.reconfigure(self.lossless.redactor)
        self.lossy.reconfigure()

    @property
    def redactor(self) -> Any:
        return self.lossless.redactor

    # --- per result -----------------------------------------------------------------

    def tool_message(self, call: ToolCall, text: str, *, redacted: bool = False) -> Message:
        """The tool message for ``call``: redacted, truncated, its full text queued for spill."""
        message = self.window.new_message("tool", "")
        message.tool_call_id = call.id
        message.name = call.name
        self.lossless.process_result(message, text, redacted=redacted)
        return message

    def take_spill(self) -> dict[str, str]:
        return self.lossless.take_spill()

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
            force=force,
        )
        if plan is None:
            return 0
        if plan.spill:
            self.store.save_raw_outputs(session, plan.spill)
        self.window.wrote(self.store.set_placeholders(session, plan.placeholders))
        self.window.apply_eviction(plan)
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

        Judged on ``Window.guard_tokens`` (never below the provider's last count plus what was
        appended since), so a request the estimate underrates is not sent to fail. With neither
        a provider count to go on nor the model's own tokenizer, the provider judges: a server
        that leaves the tool schemas out would otherwise be refused its very first request.
        """
        if not (self.window.calibration.observations or self.window.counter.exact):
            return
        window = self.context_window()
        if self.window.guard_tokens(self.window.prompt()) < window:
            return
        self.make_room()
        tokens = self.window.guard_tokens(self.window.prompt())
        if tokens >= window:
            raise ContextLengthError(
                f"The prompt would be about {tokens:,} tokens, and the model's window holds {window:,} even after "
                "clearing tool results and compacting; it was not sent: shorten the message, or raise contextWindow "
                "in agents.json if the model holds more"
            )

    def compact(self) -> bool:
        return self.lossy.compact_now("requested")

    # --- per turn -------------------------------------------------------------------

    def run_turn(self, user: Message) -> None:
        """Stages that append to the prompt: once per turn, never per step."""
        blocks = self.turn_stages.blocks(self.window, user)
        self.window.set_blocks(blocks, user.id, retrieval=self.turn_stages.retrieval is not None)

    def committed(self, messages: list[Message]) -> None:
        """Messages just persisted: queue them for recall indexing."""
        self.turn_stages.index(self.window.session, messages)

    def recall(self, query: str) -> list[Passage]:
        """The ``recall`` tool's search: the best passages the window does not show."""
        return self.turn_stages.search(self.window, query, self.config().context.recall.max_results)

    # --- hooks ----------------------------------------------------------------------

    def _on_summary_saved(self, span: list[Message], summary: Summary) -> None:
        """On the compacting thread, right after a summary is saved: the span's last chance."""
        self.turn_stages.on_summary_saved(self.window.session, span, summary)

    def _on_landed(self, result: CompactionResult) -> None:
        """On the turn's thread, once a compaction is in the window: suggest a handoff if still heavy."""
        context_window = self.context_window()
        fraction = self.window.occupancy() / context_window if context_window else 0.0
        reflections = self.window.summary.reflections if self.window.summary else 0
        nudge = handoff_nudge(self.config().context.handoff, fraction, reflections, self.lossy.compactions)
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
