"""The cascade: the context stages in their order, and the one place their plans are kept and applied.

Each stage returns data (a filled tool message and the full text to spill, an eviction plan, a
durable compaction, the turn's blocks); the cascade persists it and applies it to the window,
cheapest first:

    per result   redaction -> truncation, the full text to the spill    (LosslessStage.process_result)
    per step     eviction plan -> store -> window                        (LosslessStage.plan_eviction)
                 durable compactions -> window                           (CompactionPolicy.relieve)
    per turn     memory, plan anchor, related context                    (TurnStages.blocks)
    per commit   spilled outputs, images, messages -> store -> window, recall's index, events

When, how and on which thread a compaction runs, and how it is kept, is the compaction policy's
(``compaction/policy.py``); it hands each durable compaction over, and the cascade puts it in
the window. The turn talks to the cascade only, never to its stages. Settings are pushed
(``reconfigure``) whenever a configuration is put in force; the session's services (memory
promotion, recall) are handed to it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Protocol

from monad_notebook import events as ev
from monad_notebook.config import ContextConfig
from monad_notebook.context.compaction.compactor import Compaction
from monad_notebook.context.compaction.policy import CompactionPolicy, CompactionStore
from monad_notebook.context.lossless.spill import Spill
from monad_notebook.context.lossless.stage import LosslessStage
from monad_notebook.context.occupancy.meter import Calibrations, Meter
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.prompt import Prompt
from monad_notebook.context.recall.service import RecallService
from monad_notebook.context.settings import CascadeSettings
from monad_notebook.context.transcript_writer import TranscriptWriter
from monad_notebook.context.turn_stages import TurnStages
from monad_notebook.context.window import CRASHED_RESULT, Window
from monad_notebook.errors import ContextLengthError, StoreError
from monad_notebook.events import EventLog
from monad_notebook.images.image import Image
from monad_notebook.memory import MemoryPromotion, MemoryService
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.base import Images
from monad_notebook.store.lease import TurnLease
from monad_notebook.workspace.block import BETWEEN_TURNS, budget
from monad_notebook.workspace.record import WorkspaceRecord

INDEX_STOP_SECONDS = 5.0


class Activity(Protocol):
    """The user's work in the notebook since the last turn (``notebook.activity.NotebookActivity``)."""

    def block(self, count_text: Callable[[str], int]) -> str: ...
    def seen(self) -> None: ...


class CascadeStore(CompactionStore, Images, Calibrations, Protocol):
    """What the cascade keeps: messages, their placeholders and images, saved outputs, summaries, calibration."""


class Cascade:
    def __init__(
        self,
        *,
        window: Window,
        store: CascadeStore,
        events: EventLog,
        lease: TurnLease,
        counter: TokenCounter,
        memory: MemoryService,
        promotion: MemoryPromotion,
        recall: RecallService,
        workspace: WorkspaceRecord | None = None,
        activity: Activity | None = None,
    ) -> None:
        """``memory``, ``promotion``, ``recall``, ``workspace`` (the record taken from the kernel, which the
        ``<workspace>`` block shows) and ``activity`` (the user's cells since the last turn, the
        ``<notebook_activity>`` block) are the session's services, which the stages read."""
        self.window = window
        self.store = store
        self.events = events
        self.stages = TurnStages(memory, recall)
        self.recall = recall
        self.workspace = workspace
        self.activity = activity
        if workspace is not None:
            workspace.turn = window.turn
        self.meter = Meter(store, window.session, counter)
        self.spill = Spill(store, window.session)
        self.compaction = CompactionPolicy(
            store=store, session=window.session, lease=lease, spill=self.spill, promotion=promotion,
            counter=counter, emit=self.emit,
        )  # fmt: skip
        self.settings = ContextConfig()
        self.lossless: LosslessStage | None = None
        self.context_window = 0
        self.images_refused_by: str | None = None  # the model whose endpoint refused images
        self.writer = TranscriptWriter(window, store)

    def reconfigure(self, given: CascadeSettings) -> None:
        """A configuration is in force: follow it.

        Another model's counter starts from what earlier kernels learnt of its provider's counts.
        """
        counter, frame = given.counter, given.frame
        if self.meter.use_counter(counter):
            self.window.new_model()
        if self.images_refused_by == counter.model:
            frame = replace(frame, image_detail=None)
        self.window.set_frame(frame)
        self.meter.cost.pricing = given.pricing
        self.settings, self.lossless = given.context, given.lossless
        self.context_window = given.context_window
        self.compaction.reconfigure(
            given.context, agent=given.agent, counter=counter, summarizer_model=given.summarizer_model,
            context_window=given.context_window, redactor=given.lossless.redactor,
        )  # fmt: skip
        self.stages.reconfigure(given.context, given.agent)

    def emit(self, kind: str, **data: Any) -> None:
        """Tell listeners now; persisted kinds are written with the step, or at once from a worker thread.

        Each event carries the turn and step it happened in, so a replay places it where it happened.
        """
        data.setdefault("turn", self.window.turn)
        data.setdefault("step", self.window.step)
        self.events.emit(kind, **data)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Around a turn: what the provider's counts taught and the pending events are written at its end,
        whatever ended it (a failure's own error is the one reported). A turn that failed before the model said
        anything leaves the conversation as it was."""
        try:
            yield
        except BaseException:
            stored = self.writer.withdraw()
            if stored is not None:
                self.recall.index([stored], {})
            with contextlib.suppress(Exception):
                self.meter.save_calibration()
            with contextlib.suppress(Exception):
                self.events.flush()
            raise
        self.meter.save_calibration()
        self.events.flush()

    def redact(self, text: str) -> str:
        """``text`` as it may be kept and sent: the configuration's redaction, whole."""
        return self.lossless.redactor.redact(text).text if self.lossless is not None else text

    # --- per turn -------------------------------------------------------------------

    def begin_turn(self, text: str) -> Message:
        """A new turn: the user's message, redacted, in the window, and the turn's blocks in place (once per turn).

        The message is stored with the step the model first answers: a turn the model never answered (no key,
        a dead endpoint, an interrupt while it was asked) leaves no question behind to be asked twice."""
        self.window.begin_turn()
        if self.workspace is not None:
            self.workspace.turn = self.window.turn
            self.workspace.take(BETWEEN_TURNS)  # what code run outside a cell (a thread, a script) changed
        crashed = self.answer_crashed()
        if crashed:
            self.commit(crashed)
        user = self.window.new_message("user", self.redact(text))
        self.writer.ask(user)
        self.window.activity = self.activity.block(self.meter.counter.count_text) if self.activity is not None else ""
        self.emit(ev.TURN_STARTED, turn=self.window.turn, text=user.content)
        blocks = self.stages.blocks(self.window, user, self.meter.counter.count_text)
        related = blocks.get("related_context")
        if related:
            self.emit(ev.REINJECTED, chars=len(related), hits=related.count("\n- "))
        retrieval = self.recall.retrieval is not None
        self.window.set_blocks(blocks, user.id, retrieval=retrieval, cache_warm=self.meter.cost.cache_warm())
        return user

    def begin_step(self) -> None:
        """A new step: the ``<workspace>`` block rebuilt from the record checked against the kernel as it is now."""
        self.window.begin_step()
        if self.workspace is not None:
            limit = budget(self.settings.workspace.max_tokens, self.context_window)
            self.window.workspace = self.workspace.block(self.meter.counter.count_text, limit)

    def answer_crashed(self) -> list[Message]:
        """Results for the calls a dead kernel left running (``Window.unanswered``), of their own turn and step,
        written with the turn's first message: the next request holds each call and what became of it. A result
        this kernel has but could not write (the store failed, an interrupt) is written as it was."""
        found = self.window.take_in_results(self.store)
        unsaved, self.writer.unsaved = self.writer.unsaved, {}
        if found is None:
            return []
        assistant, calls = found
        crashed = [call for call in calls if call.id not in unsaved]
        results = [unsaved.get(call.id) or self.tool_message(call, CRASHED_RESULT) for call in calls]
        for result in results:
            result.turn, result.step = assistant.turn, assistant.step
        if crashed:
            self.emit(ev.ERROR, message=f"{len(crashed)} tool call(s) of turn {assistant.turn} were cut short when "
                      "the kernel stopped; the model is told they were interrupted by a crash")  # fmt: skip
        return results

    # --- per result -----------------------------------------------------------------

    def tool_message(
        self, call: ToolCall, text: str, *, redacted: bool = False, images: Sequence[Image] = ()
    ) -> Message:
        """The tool message for ``call``: redacted, truncated, its full text queued for the spill; its images kept."""
        message = self.window.new_message("tool", "")
        message.tool_call_id = call.id
        message.name = call.name
        message.images = list(images)
        assert self.lossless is not None
        full = self.lossless.process_result(message, text, redacted=redacted)
        if full is not None:
            self.spill.queue(call.id, full)
        return message

    def commit(self, messages: list[Message]) -> None:
        """Persist a step (one write per table: spilled full texts, images, messages), put it in the window,
        index it for recall (its words at once, its vectors in the background), and write its events."""
        session = self.window.session
        spilled = self.spill.take()
        self.spill.save(spilled)
        images = {m.tool_call_id: m.images for m in messages if m.images}
        if images:
            self.store.save_images(session, images)
        asked = self.writer.question
        messages = self.writer.store_step(messages)
        self._answered(asked)
        self.recall.index(messages, spilled)
        self._save_workspace()
        self.events.flush()

    def announce(self, assistant: Message) -> None:
        """Store an assistant message whose calls are about to run, before they run (``TranscriptWriter``)."""
        asked = self.writer.question
        self.writer.announce(assistant)
        self._answered(asked)

    def _answered(self, question: Message | None) -> None:
        """The turn's question was stored with the model's first answer: the notebook activity it was sent with
        is not sent again."""
        if question is not None and self.activity is not None:
            self.activity.seen()

    def _save_workspace(self) -> None:
        """What the step's calls changed in the kernel, in one write; a failed write is said and tried again later."""
        if self.workspace is None:
            return
        try:
            self.workspace.save()
        except StoreError as exc:
            self.emit(ev.ERROR, message=f"the workspace record was not saved (it is tried again next step): {exc}")

    # --- per step -------------------------------------------------------------------

    def run_step(self) -> None:
        """Stages that react to the growing window: eviction first (lossless), then compaction."""
        self.evict()
        self._land(self.compaction.relieve(self.window, self.meter.occupancy))

    def evict(self, *, force: bool = False) -> int:
        """Plan an eviction pass, persist it, apply it; the tokens reclaimed."""
        assert self.lossless is not None
        plan = self.lossless.plan_eviction(
            self.window,
            self.context_window,
            self.spill.saved,
            occupancy=self.occupancy_now,
            cache_discount=self.meter.cost.pricing.discount if self.meter.cost.cache_warm() else 1.0,
            force=force,
        )
        if plan is None:
            return 0
        self.spill.save(plan.spill)
        self.window.wrote(self.store.set_placeholders(self.window.session, plan.placeholders))
        self.window.apply_eviction(plan.placeholders)
        self.meter.occupancy.reclaim(plan.reclaimed_tokens)
        self.emit(
            ev.EVICTED,
            reclaimed=plan.reclaimed_tokens,
            count=len(plan.placeholders),
            tool_call_ids=plan.evicted_tool_call_ids,
        )
        return plan.reclaimed_tokens

    def ensure_fits(self) -> None:
        """Before a request goes out: make room if it would not fit the window, and refuse it if it still would not.

        Judged on ``Occupancy.guard_tokens`` (never below the provider's last count plus what was
        appended since), so a request the estimate underrates is not sent to fail. With neither
        a provider count to go on nor the model's own tokenizer, the provider judges: a server
        that leaves the tool schemas out would otherwise be refused its very first request.
        """
        occupancy = self.meter.occupancy
        if not (occupancy.calibration.observations or occupancy.counter.exact):
            return
        if occupancy.guard_tokens(self.window.prompt()) < self.context_window:
            return
        self.make_room()
        tokens = occupancy.guard_tokens(self.window.prompt())
        if tokens >= self.context_window:
            raise ContextLengthError(
                f"The prompt would be about {tokens:,} tokens, and the model's window holds {self.context_window:,} "
                "even after clearing tool results and compacting; it was not sent: shorten the message, or raise "
                "contextWindow in agents.json if the model holds more"
            )

    def make_room(self) -> bool:
        """After a provider context-length error: clear every result, then compact now."""
        reclaimed = self.evict(force=True)
        compacted = self.compact("context length exceeded", keep_recent=2)
        return reclaimed > 0 or compacted

    def stop_images(self, reason: str) -> bool:
        """The endpoint refused a request for its images: describe them in text from now on.

        Holds for this model in this kernel (a reload keeps it); False when no image was being sent.
        """
        if self.window.frame.image_detail is None:
            return False
        self.images_refused_by = self.meter.counter.model
        self.window.set_frame(replace(self.window.frame, image_detail=None))
        self.emit(ev.ERROR, message=f"{reason}. Images are described in text from now on in this session.")
        return True

    # --- the request ----------------------------------------------------------------

    def request(self) -> tuple[Prompt, int]:
        """The prompt about to go out and its calibrated estimate; a record of what it holds is kept."""
        prompt = self.window.prompt()
        return prompt, self.meter.account(prompt, self.window.turn, self.window.step)

    def projected(self) -> int:
        """What the next request would cost as the window stands now, before the cascade acts."""
        return self.meter.occupancy.predict(self.window.prompt())

    def occupancy_now(self) -> int:
        """effectiveInputTokens: the provider's last real count, else the calibrated estimate."""
        return self.meter.occupancy.current(self.window.prompt)

    def usage(self) -> dict[str, Any]:
        return self.meter.usage(self.window.prompt, self.context_window, len(self.window.messages))

    # --- compaction: decided by the policy, applied here --------------------------------

    def compact(self, reason: str = "requested", keep_recent: int | None = None) -> bool:
        """Fold the window into the summary now, whatever the threshold (``%monad compact``), after any compaction
        in flight has landed; False when nothing new was folded."""
        landed = self._land(self.compaction.now(self.window, self.meter.occupancy, reason, keep_recent))
        return any(not compaction.background for compaction in landed)

    def _land(self, compactions: Iterable[Compaction]) -> list[Compaction]:
        """Put each durable compaction the policy hands over in the window, in turn (the policy judges the window
        after each)."""
        landed = []
        for compaction in compactions:
            self.window.apply_compaction(compaction.summary, compaction.folded_ids)
            self.meter.occupancy.folded()
            landed.append(compaction)
        return landed

    # --- the session's lifetime -------------------------------------------------------

    def catch_up(self) -> None:
        """Land a finished compaction, then take in what another kernel wrote to this session meanwhile."""
        self._land(self.compaction.finished(self.window, self.meter.occupancy))
        if self.window.catch_up(self.store):
            self.meter.occupancy.forget_count()

    def discard_pending(self) -> None:
        """Let a compaction in flight finish and drop its result (the conversation is being reset)."""
        self.compaction.discard()
        self.events.discard()  # the forgotten conversation's events, not yet written

    def forget(self) -> None:
        """After the stored conversation was forgotten: an empty window, and the counts start over."""
        self.window.reset(self.store)
        self.meter.forget()
        if self.workspace is not None:
            self.workspace.forget()

    def wait(self, timeout: float | None = None) -> None:
        """Let background work land: a compaction in flight and pending embeddings."""
        self.compaction.wait(timeout)
        self.recall.flush(timeout)

    def close(self) -> None:
        """Let a compaction in flight land, stop indexing within a few seconds, and write what is pending."""
        self.compaction.close()
        self.recall.close(INDEX_STOP_SECONDS)
        self.events.flush()
