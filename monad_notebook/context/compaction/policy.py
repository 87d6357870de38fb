"""The compaction policy: when a session compacts, how, what is kept of it, and what follows its landing.

At each step the cascade asks ``relieve``: crossing the soft threshold starts a compaction on a
background thread from a snapshot of the window (one at a time; with ``summarize.background`` off,
one now) while the turn goes on at full width; at or over the hard one the step waits for the
compaction in flight, then compacts now if still over. ``now`` compacts at once, whatever the
threshold (``%monad compact``, a provider's context-length error).

On whichever thread folds, ``compact`` keeps what the compactor decided, top to bottom: the folded
results' full texts saved first (the handles the summary names keep resolving), then the summary,
redacted as an answer is, under the session's lease and only if it still extends the stored one,
then its ledger; listeners are told; memory promotion reads the folded span last.

The policy never changes the window. Each durable compaction is handed to the cascade (yielded),
which applies it; the policy resumes once it is in the window and judges what follows on the
window as it now is: the ``context.compaction.applied`` event, a handoff nudge, whether the hard
threshold still holds.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import Protocol

from monad_notebook import events as ev
from monad_notebook.config import ContextConfig
from monad_notebook.context.compaction.background import Background
from monad_notebook.context.compaction.compactor import Compaction, Compactor, FoldStore, choose_span
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.handoff import handoff_nudge
from monad_notebook.context.compaction.ledger import save_ledger
from monad_notebook.context.compaction.summarize import LLMSummarizer, Summarizer
from monad_notebook.context.compaction.thresholds import pressure
from monad_notebook.context.lossless.spill import Spill
from monad_notebook.context.occupancy.occupancy import Occupancy
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.window import Window
from monad_notebook.errors import SessionBusyError
from monad_notebook.events import Emit
from monad_notebook.memory import MemoryPromotion
from monad_notebook.messages import Message
from monad_notebook.provider import ChatModel
from monad_notebook.redaction.redactor import Redactor
from monad_notebook.store.base import Summary, Transcript
from monad_notebook.store.lease import TurnLease

log = logging.getLogger(__name__)

Landings = Iterator[Compaction]  # durable compactions, each to be applied to the window before the next is judged


class CompactionStore(FoldStore, Transcript, Protocol):
    """What compaction reads and keeps: summaries and their ledger, saved full outputs, and the stored messages
    a new summary must not pass over."""


class CompactionPolicy:
    def __init__(
        self,
        *,
        store: CompactionStore,
        session: str,
        lease: TurnLease,
        spill: Spill,
        promotion: MemoryPromotion,
        counter: TokenCounter,
        emit: Emit,
    ) -> None:
        """``emit`` tells listeners (the cascade's, which stamps the turn and step); ``spill`` is where the folded
        results' full texts are saved; ``promotion`` the session's memory promotion, which reads each folded span."""
        self.store = store
        self.session = session
        self.lease = lease
        self.spill = spill
        self.promotion = promotion
        self.emit = emit
        self.compactor = Compactor(
            store=store, session=session, fallback=ExtractiveSummarizer(), counter=counter,
            reflect_at_tokens=0, ledger_max_items=0,
        )  # fmt: skip
        self.background: Background[Compaction] = Background("monad-compaction")
        self.settings = ContextConfig()
        self.summarizer: Summarizer | None = None
        self.redactor: Redactor | None = None
        self.context_window = 0
        self.agent: str | None = None
        self.compactions = 0

    def reconfigure(
        self,
        context: ContextConfig,
        *,
        agent: str | None,
        counter: TokenCounter,
        summarizer_model: ChatModel | None,
        context_window: int,
        redactor: Redactor,
    ) -> None:
        """A configuration is in force: its thresholds, its summarizer (None: the extractive one), its sizes, and
        the redaction every summary passes before it is kept."""
        self.settings, self.agent, self.context_window = context, agent, context_window
        self.redactor = redactor
        self.summarizer = self._summarizer(summarizer_model)
        summarize = context.summarize
        self.compactor.counter = counter
        self.compactor.reflect_at_tokens = summarize.reflect_at_tokens
        self.compactor.ledger_max_items = summarize.ledger_max_items
        self.compactor.ledger_max_tokens = summarize.ledger_max_tokens

    def _summarizer(self, fast_model: ChatModel | None) -> Summarizer | None:
        """The fast tier writes summaries, each rejected draft told as an event; None (the scripted demo, which
        cannot): the extractive summary."""
        if fast_model is None:
            return None

        def rejected(why: str, attempt: int) -> None:
            then = "retrying" if attempt == 1 else "using the extractive summary"
            self.emit(ev.SUMMARY_REJECTED, model=fast_model.name, reason=why, attempt=attempt, then=then)

        return LLMSummarizer(fast_model, on_rejected=rejected)

    # --- when, and how ---------------------------------------------------------------

    def relieve(self, window: Window, occupancy: Occupancy) -> Landings:
        """At each step: land a finished compaction; at the hard threshold wait for the one in flight and compact
        now if still over; at the soft one start one in the background (or now, with ``summarize.background`` off)."""
        yield from self.finished(window, occupancy)
        cfg = self.settings.summarize
        level = pressure(cfg, occupancy, window.prompt, self.context_window)
        if level == "hard":
            self.background.wait()
            yield from self.finished(window, occupancy)
            if pressure(cfg, occupancy, window.prompt, self.context_window) == "hard":
                yield from self.now(window, occupancy, "hard threshold")
        elif level == "soft" and cfg.background:
            snapshot, summary = copy.deepcopy(window.messages), copy.deepcopy(window.summary)
            self.background.start(lambda: self.compact(snapshot, summary, cfg.keep_recent, "soft threshold"))
        elif level == "soft":
            yield from self.now(window, occupancy, "soft threshold")

    def now(self, window: Window, occupancy: Occupancy, reason: str, keep_recent: int | None = None) -> Landings:
        """Compact synchronously, after any compaction in flight has landed; nothing more when nothing was folded."""
        self.background.wait()
        yield from self.finished(window, occupancy)
        keep = self.settings.summarize.keep_recent if keep_recent is None else keep_recent
        compaction = self.compact(window.messages, window.summary, keep, reason)
        if compaction is not None:
            yield from self._landing(compaction, window, occupancy)

    def finished(self, window: Window, occupancy: Occupancy) -> Landings:
        """A finished background compaction, once (it is already durable)."""
        compaction = self.background.take()
        if compaction is not None:
            yield from self._landing(replace(compaction, background=True), window, occupancy)

    # --- what is kept ----------------------------------------------------------------

    def compact(
        self, messages: list[Message], summary: Summary | None, keep_recent: int, reason: str
    ) -> Compaction | None:
        """Fold the oldest of ``messages`` (the window now, or a snapshot of it a background compaction took) and
        keep what was decided, on whichever thread compacts.

        The folded results' full texts are saved first (the handles the summary names keep
        resolving), then the summary, under the lease and only if it still extends the stored
        one, then its ledger; listeners are told; memory promotion reads the folded span last.
        None when nothing was folded, the summary was superseded, or compaction failed (said
        as an event; the previous summary stays).
        """
        span = choose_span(messages, keep_recent)
        if not span:
            return None
        tokens_before = self.compactor.tokens(messages, summary)
        self.emit(ev.COMPACTION_STARTED, reason=reason, messages=len(span), tokens_before=tokens_before)
        try:
            if self.settings.tool_output.persist_raw:
                self.spill.before_fold(span)
            compaction = self.compactor.fold(messages, span, summary, self.summarizer)
            if self.redactor is not None:
                compaction.summary.text = self.redactor.redact(compaction.summary.text).text  # a model's prose
            if not self._save_summary(compaction, summary):
                self.emit(ev.ERROR, message="Compaction skipped, the previous summary is kept: another kernel changed "
                          "this session meanwhile; it is compacted again when needed")  # fmt: skip
                return None
        except Exception as exc:
            log.debug("compaction of session %r failed", self.session, exc_info=True)
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
        self.promotion.on_summary_saved(self.session, span, self.agent)
        return compaction

    def _save_summary(self, compaction: Compaction, previous: Summary | None) -> bool:
        """Save the summary (then its ledger) only if it still extends the stored one, holding the session's lease.

        Another kernel may have compacted, or written messages behind the new boundary that
        this kernel never saw, since the compaction began (it may run after this kernel's
        turn ended): then nothing is saved, and the messages stay in the window verbatim.
        """
        summary = compaction.summary
        try:
            self.lease.acquire(wait=0)
        except SessionBusyError:
            return False
        try:
            if not same_summary(self.store.load_summary(self.session), previous):
                return False
            after = previous.boundary_seq if previous is not None else -1
            folded = set(compaction.folded_ids)
            stored = self.store.load_messages(self.session, after_seq=after)
            if any(m.seq <= summary.boundary_seq and m.id not in folded for m in stored):
                return False
            self.store.save_summary(summary)
            save_ledger(self.store, self.session, compaction.ledger)
            return True
        finally:
            self.lease.release()

    # --- what follows a landing ------------------------------------------------------

    def _landing(self, compaction: Compaction, window: Window, occupancy: Occupancy) -> Landings:
        """Hand ``compaction`` over to be put in the window; then say so once, in the units of occupancy (the
        whole prompt's estimate before and after), and suggest a handoff if the window is still heavy."""
        before = occupancy.estimate(window.prompt())
        yield compaction
        self.compactions += 1
        self.emit(
            ev.COMPACTION_APPLIED,
            tokens_before=before,
            tokens_after=occupancy.estimate(window.prompt()),
            exact=False,
            messages=len(compaction.folded_ids),
            background=compaction.background,
            replaced=compaction.replaced,
        )
        fraction = occupancy.current(window.prompt) / self.context_window if self.context_window else 0.0
        reflections = window.summary.reflections if window.summary else 0
        nudge = handoff_nudge(self.settings.handoff, fraction, reflections, self.compactions)
        if nudge is not None:
            self.emit(ev.HANDOFF_SUGGESTED, **nudge)

    # --- the session's lifetime -------------------------------------------------------

    def discard(self) -> None:
        """Let a compaction in flight finish and drop its result (the conversation is being reset)."""
        self.background.wait()
        self.background.take()

    def wait(self, timeout: float | None = None) -> None:
        self.background.wait(timeout)

    def close(self) -> None:
        """Refuse new compactions and let the one in flight land in the store."""
        self.background.close()


def same_summary(a: Summary | None, b: Summary | None) -> bool:
    """The same stored summary: None for none, else equal save time and boundary."""
    if a is None or b is None:
        return a is b
    return (a.created_at, a.boundary_seq) == (b.created_at, b.boundary_seq)
