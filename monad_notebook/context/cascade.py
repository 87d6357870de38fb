"""The cascade: the context stages in their order, and the one place their plans are kept and applied.

Each stage returns data (a filled tool message and the full text to spill, an eviction plan, a
pressure level, a compaction, the turn's blocks); the cascade persists it and applies it to the
window, cheapest first:

    per result   redaction -> truncation, the full text to the spill    (LosslessStage.process_result)
    per step     eviction plan -> store -> window                        (LosslessStage.plan_eviction)
                 pressure -> compaction -> spilled, saved, promoted -> window   (lossy.pressure, Compactor.fold)
    per turn     memory, plan anchor, related context                    (TurnStages.blocks)
    per commit   spilled outputs, images, messages -> store -> window, recall's index, events

The turn talks to the cascade only, never to its stages. Settings are pushed (``reconfigure``)
whenever a configuration is put in force; the session's services (memory promotion, recall) are
handed to it.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from monad_notebook import events as ev
from monad_notebook.config import ContextConfig
from monad_notebook.context.compaction.background import Background
from monad_notebook.context.compaction.compactor import (
    Compaction,
    CompactionStore,
    Compactor,
    choose_span,
    save_ledger,
)
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.handoff import handoff_nudge
from monad_notebook.context.compaction.lossy import pressure, summarizer
from monad_notebook.context.compaction.summarize import Summarizer
from monad_notebook.context.lossless.spill import Spill
from monad_notebook.context.lossless.stage import LosslessStage
from monad_notebook.context.occupancy.cost import CachePricing
from monad_notebook.context.occupancy.meter import Calibrations, Meter
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.prompt import Prompt
from monad_notebook.context.recall.service import RecallService
from monad_notebook.context.turn_stages import TurnStages
from monad_notebook.context.window import CRASHED_RESULT, Frame, Window
from monad_notebook.errors import ContextLengthError, SessionBusyError, StoreError
from monad_notebook.events import EventLog
from monad_notebook.images.image import Image
from monad_notebook.memory import MemoryPromotion, MemoryService
from monad_notebook.messages import Message, Role, ToolCall
from monad_notebook.provider import ChatModel
from monad_notebook.store.base import Images, Summary, Transcript
from monad_notebook.store.lease import TurnLease
from monad_notebook.workspace.block import BETWEEN_TURNS, budget
from monad_notebook.workspace.record import WorkspaceRecord

log = logging.getLogger(__name__)

INDEX_STOP_SECONDS = 5.0


class CascadeStore(CompactionStore, Transcript, Images, Calibrations, Protocol):
    """What the cascade keeps: messages, their placeholders and images, saved outputs, summaries, calibration."""


@dataclass(frozen=True)
class CascadeSettings:
    """What a configuration gives the cascade, built whole before it is in force (``session_setup.py``)."""

    context: ContextConfig
    agent: str | None  # whose memory scope (``agent.name``); None: global
    lossless: LosslessStage
    counter: TokenCounter
    frame: Frame
    pricing: CachePricing
    context_window: int
    summarizer_model: ChatModel | None  # writes the summaries; None: the extractive summary does


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
    ) -> None:
        """``memory``, ``promotion``, ``recall`` and ``workspace`` (the record taken from the kernel, which the
        ``<workspace>`` block shows) are the session's services, which the stages read."""
        self.window = window
        self.store = store
        self.events = events
        self.lease = lease
        self.stages = TurnStages(memory, recall)
        self.promotion = promotion
        self.recall = recall
        self.workspace = workspace
        if workspace is not None:
            workspace.turn = window.turn
        self.meter = Meter(store, window.session, counter)
        self.spill = Spill(store, window.session)
        self.compactor = Compactor(
            store=store, session=window.session, fallback=ExtractiveSummarizer(), counter=counter,
            reflect_at_tokens=0, ledger_max_items=0,
        )  # fmt: skip
        self.background: Background[Compaction] = Background("monad-compaction")
        self.settings = ContextConfig()
        self.lossless: LosslessStage | None = None
        self.summarizer: Summarizer | None = None
        self.context_window = 0
        self.agent: str | None = None
        self.compactions = 0
        self.images_refused_by: str | None = None  # the model whose endpoint refused images
        self.announced: dict[str, bool] = {}  # in the window before their step's commit (``announce``) -> stored
        self.unsaved: dict[str, Message] = {}  # results whose write failed, by call id: written with the next turn

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
        self.settings, self.agent, self.lossless = given.context, given.agent, given.lossless
        self.context_window = given.context_window
        self.summarizer = summarizer(given.summarizer_model, self.emit)
        summarize = given.context.summarize
        self.compactor.counter = counter
        self.compactor.reflect_at_tokens = summarize.reflect_at_tokens
        self.compactor.ledger_max_items = summarize.ledger_max_items
        self.compactor.ledger_max_tokens = summarize.ledger_max_tokens
        self.stages.reconfigure(given.context, given.agent)

    def emit(self, kind: str, **data: Any) -> None:
        """Tell listeners now; persisted kinds are written with the step, or at once from a worker thread.

        Each event carries the turn and step it happened in, so a replay places it where it happened.
        """
        data.setdefault("turn", self.window.turn)
        data.setdefault("step", self.window.step)
        self.events.emit(kind, **data)

    def flush(self) -> None:
        """Write the pending events; if the write fails they stay pending for the next flush."""
        self.events.flush()

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Around a turn: what the provider's counts taught and the pending events are written at its end,
        whatever ended it (a failure's own error is the one reported)."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                self.save_calibration()
            with contextlib.suppress(Exception):
                self.flush()
            raise
        self.save_calibration()
        self.flush()

    @property
    def redactor(self) -> Any:
        return self.lossless.redactor if self.lossless is not None else None

    def redact(self, text: str) -> str:
        """``text`` as it may be kept and sent: the configuration's redaction, whole."""
        return self.redactor.redact(text).text if self.redactor is not None else text

    # --- per turn -------------------------------------------------------------------

    def begin_turn(self, text: str) -> Message:
        """A new turn: the user's message, redacted, stored, and the turn's blocks in place (once per turn)."""
        self.window.begin_turn()
        if self.workspace is not None:
            self.workspace.turn = self.window.turn
            self.workspace.take(BETWEEN_TURNS)  # what code run outside a cell (a thread, a script) changed
        crashed = self.answer_crashed()
        user = self.new_message("user", self.redact(text))
        self.commit([*crashed, user])
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

    def new_message(self, role: Role, content: str, *, tool_calls: list[ToolCall] | None = None) -> Message:
        return self.window.new_message(role, content, tool_calls=tool_calls)

    def answer_crashed(self) -> list[Message]:
        """Results for the calls a dead kernel left running (``Window.unanswered``), of their own turn and step,
        written with the turn's first message: the next request holds each call and what became of it. A result
        this kernel has but could not write (the store failed, an interrupt) is written as it was."""
        found = self.window.take_in_results(self.store)
        unsaved, self.unsaved = self.unsaved, {}
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
        message = self.new_message("tool", "")
        message.tool_call_id = call.id
        message.name = call.name
        message.images = list(images)
        assert self.lossless is not None
        full = self.lossless.process_result(message, text, redacted=redacted)
        if full is not None:
            self.spill.queue(call.id, full)
        return message

    def saved_outputs(self, tool_call_ids: list[str]) -> set[str]:
        """Which of these tool-call ids have a saved full output."""
        return self.store.has_raw_outputs(self.window.session, tool_call_ids)

    def commit(self, messages: list[Message]) -> None:
        """Persist a step (one write per table: spilled full texts, images, messages), put it in the window,
        index it for recall (its words at once, its vectors in the background), and write its events."""
        session = self.window.session
        spilled = self.spill.take()
        self.spill.save(spilled)
        images = {m.tool_call_id: m.images for m in messages if m.images}
        if images:
            self.store.save_images(session, images)
        self._store_messages(messages)
        self.recall.index(messages, spilled)
        self.save_workspace()
        self.flush()

    def announce(self, assistant: Message) -> None:
        """Store an assistant message whose calls are about to run, and put it in the window, before they run: a
        kernel that dies during one leaves the call on record (``answer_crashed``); ``commit`` writes it no more.

        A write stopped midway (an interrupt) is looked up: if it did not land, the commit writes it."""
        self.window.extend([assistant])
        self.announced[assistant.id] = False
        try:
            self.window.wrote(self.store.append_messages([assistant]))
            self.announced[assistant.id] = True
        except BaseException:
            after = self.store.load_messages(self.window.session, after_seq=assistant.seq - 1)
            self.announced[assistant.id] = any(m.id == assistant.id for m in after)
            raise

    def _store_messages(self, messages: list[Message]) -> None:
        """Write the messages not stored already, in one write; those not in the window yet join it."""
        early = {m.id: self.announced.pop(m.id) for m in messages if m.id in self.announced}
        fresh = [m for m in messages if not early.get(m.id, False)]
        if fresh:
            try:
                self.window.wrote(self.store.append_messages(fresh))
            except BaseException:
                self.unsaved.update({m.tool_call_id: m for m in fresh if m.role == "tool"})
                raise
        self.window.extend([m for m in messages if m.id not in early])

    def save_workspace(self) -> None:
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
        self._relieve()

    def evict(self, *, force: bool = False) -> int:
        """Plan an eviction pass, persist it, apply it; the tokens reclaimed."""
        assert self.lossless is not None
        plan = self.lossless.plan_eviction(
            self.window,
            self.context_window,
            self.saved_outputs,
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

    def _relieve(self) -> None:
        """Land a finished compaction; at the hard threshold wait for the one in flight and compact now if still
        over; at the soft one start one in the background (or now, with ``summarize.background`` off)."""
        self._land_finished()
        cfg, occupancy = self.settings.summarize, self.meter.occupancy
        level = pressure(cfg, occupancy, self.window.prompt, self.context_window)
        if level == "hard":
            self.background.wait()
            self._land_finished()
            if pressure(cfg, occupancy, self.window.prompt, self.context_window) == "hard":
                self.compact_now("hard threshold")
        elif level == "soft" and cfg.background:
            snapshot, summary = copy.deepcopy(self.window.messages), copy.deepcopy(self.window.summary)
            self.background.start(lambda: self.compact_from(snapshot, summary, cfg.keep_recent, "soft threshold"))
        elif level == "soft":
            self.compact_now("soft threshold")

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
        compacted = self.compact_now("context length exceeded", keep_recent=2)
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

    def answered(self, real: int | None, estimate: int, cached_tokens: int) -> None:
        """The provider's count of that request (None: it reported none), and its bill."""
        self.meter.answered(real, estimate, cached_tokens)

    def projected(self) -> int:
        """What the next request would cost as the window stands now, before the cascade acts."""
        return self.meter.occupancy.predict(self.window.prompt())

    def occupancy_now(self) -> int:
        """effectiveInputTokens: the provider's last real count, else the calibrated estimate."""
        return self.meter.occupancy.current(self.window.prompt)

    def usage(self) -> dict[str, Any]:
        return self.meter.usage(self.window.prompt, self.context_window, len(self.window.messages))

    def save_calibration(self) -> None:
        self.meter.save_calibration()

    def indexing(self) -> dict[str, Any]:
        """How far recall's index is behind (``RecallService.indexing``)."""
        return self.recall.indexing()

    def status(self) -> dict[str, Any]:
        """What ``%monad status`` says of the window: its messages, the summary, recall's index, the occupancy."""
        summary = self.window.summary
        return {
            "window_messages": len(self.window.messages),
            "summary": bool(summary and summary.text),
            **self.indexing(),
            **self.usage(),
            "images": self.window.frame.image_detail or "",
        }

    # --- compaction: decided by the compactor, kept here -----------------------------

    def compact(self) -> bool:
        """Fold the window into the summary now, whatever the threshold (``%monad compact``)."""
        return self.compact_now("requested")

    def compact_now(self, reason: str, keep_recent: int | None = None) -> bool:
        """Compact synchronously (after any compaction in flight); False when nothing was folded."""
        self.background.wait()
        self._land_finished()
        keep = self.settings.summarize.keep_recent if keep_recent is None else keep_recent
        compaction = self.compact_from(self.window.messages, self.window.summary, keep, reason)
        if compaction is None:
            return False
        self._land(compaction, background=False)
        return True

    def compact_from(
        self, window: list[Message], summary: Summary | None, keep_recent: int, reason: str
    ) -> Compaction | None:
        """Fold the oldest of ``window`` (the window now, or a snapshot of it a background compaction took) and
        keep what was decided, on whichever thread compacts.

        The folded results' full texts are saved first (the handles the summary names keep
        resolving), then the summary, under the lease and only if it still extends the stored
        one, then its ledger; listeners are told; memory promotion reads the folded span last.
        None when nothing was folded, the summary was superseded, or compaction failed (said
        as an event; the previous summary stays).
        """
        span = choose_span(window, keep_recent)
        if not span:
            return None
        tokens_before = self.compactor.tokens(window, summary)
        self.emit(ev.COMPACTION_STARTED, reason=reason, messages=len(span), tokens_before=tokens_before)
        try:
            if self.settings.tool_output.persist_raw:
                self.spill.before_fold(span)
            compaction = self.compactor.fold(window, span, summary, self.summarizer)
            compaction.summary.text = self.redact(compaction.summary.text)  # a model's prose, as an answer is
            if not self._save_summary(compaction, summary):
                self.emit(ev.ERROR, message="Compaction skipped, the previous summary is kept: another kernel changed "
                          "this session meanwhile; it is compacted again when needed")  # fmt: skip
                return None
        except Exception as exc:
            log.debug("compaction of session %r failed", self.window.session, exc_info=True)
            self.emit(ev.ERROR, message=f"Compaction failed, the previous summary is kept: {exc}")
            return None
        self.emit(
            ev.COMPACTION_FINISHED,
            tokens_before=compaction.tokens_before,
            tokens_after=compaction.tokens_after,
            used_fallback=compaction.used_fallback,
            reflected=compaction.reflected,
            replaced=compaction.replaced,
            seconds=round(compaction.seconds, 3),
        )
        self.promotion.on_summary_saved(self.window.session, span, self.agent)
        return compaction

    def _save_summary(self, compaction: Compaction, previous: Summary | None) -> bool:
        """Save the summary (then its ledger) only if it still extends the stored one, holding the session's lease.

        Another kernel may have compacted, or written messages behind the new boundary that
        this kernel never saw, since the compaction began (it may run after this kernel's
        turn ended): then nothing is saved, and the messages stay in the window verbatim.
        """
        session, summary = self.window.session, compaction.summary
        try:
            self.lease.acquire(wait=0)
        except SessionBusyError:
            return False
        try:
            if not same_summary(self.store.load_summary(session), previous):
                return False
            after = previous.boundary_seq if previous is not None else -1
            folded = set(compaction.folded_ids)
            stored = self.store.load_messages(session, after_seq=after)
            if any(m.seq <= summary.boundary_seq and m.id not in folded for m in stored):
                return False
            self.store.save_summary(summary)
            save_ledger(self.store, session, compaction.ledger)
            return True
        finally:
            self.lease.release()

    def _land_finished(self) -> None:
        """Land a finished background compaction in the window (it is already durable)."""
        compaction = self.background.take()
        if compaction is not None:
            self._land(compaction, background=True)

    def _land(self, compaction: Compaction, *, background: bool) -> None:
        """Put a durable compaction in the window and say so once, in the units of occupancy (the whole
        prompt's estimate before and after); then suggest a handoff if the window is still heavy."""
        occupancy = self.meter.occupancy
        before = occupancy.estimate(self.window.prompt())
        self.window.apply_compaction(compaction.summary, compaction.folded_ids)
        occupancy.folded()
        self.compactions += 1
        self.emit(
            ev.COMPACTION_APPLIED,
            tokens_before=before,
            tokens_after=occupancy.estimate(self.window.prompt()),
            exact=False,
            messages=len(compaction.folded_ids),
            background=background,
            replaced=compaction.replaced,
        )
        fraction = self.occupancy_now() / self.context_window if self.context_window else 0.0
        reflections = self.window.summary.reflections if self.window.summary else 0
        nudge = handoff_nudge(self.settings.handoff, fraction, reflections, self.compactions)
        if nudge is not None:
            self.emit(ev.HANDOFF_SUGGESTED, **nudge)

    # --- the session's lifetime -------------------------------------------------------

    def catch_up(self) -> None:
        """Land a finished compaction, then take in what another kernel wrote to this session meanwhile."""
        self._land_finished()
        if self.window.catch_up(self.store):
            self.meter.occupancy.forget_count()

    def discard_pending(self) -> None:
        """Let a compaction in flight finish and drop its result (the conversation is being reset)."""
        self.background.wait()
        self.background.take()
        self.events.discard()  # the forgotten conversation's events, not yet written

    def forget(self) -> None:
        """After the stored conversation was forgotten: an empty window, and the counts start over."""
        self.window.reset(self.store)
        self.meter.forget()
        if self.workspace is not None:
            self.workspace.forget()

    def wait(self, timeout: float | None = None) -> None:
        """Let background work land: a compaction in flight and pending embeddings."""
        self.background.wait(timeout)
        self.recall.flush(timeout)

    def close(self) -> None:
        """Let a compaction in flight land, stop indexing within a few seconds, and write what is pending."""
        self.background.close()
        self.recall.close(INDEX_STOP_SECONDS)
        self.flush()


def same_summary(a: Summary | None, b: Summary | None) -> bool:
    """The same stored summary: None for none, else equal save time and boundary."""
    if a is None or b is None:
        return a is b
    return (a.created_at, a.boundary_seq) == (b.created_at, b.boundary_seq)
