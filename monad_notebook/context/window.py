"""The window: what the next request is built from, and the accounting of what it costs.

One object owns the in-memory state of a conversation: the messages after the durable
summary boundary, the rolling summary, the seq/turn/step counters, the blocks the per-turn
stages injected, the token counter, the calibration learnt from the provider's counts, the
prompt cache and the occupancy figures. Stages read it and return plans (an eviction plan, a compaction result, turn
blocks); the window applies them, so there is one place where the window changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from monad_notebook.context.compaction.compactor import CompactionResult, answered_calls_only, apply_result
from monad_notebook.context.lossless.eviction import EvictionPlan, apply_plan
from monad_notebook.context.occupancy.calibration import Calibration
from monad_notebook.context.occupancy.cost import CostMeter
from monad_notebook.context.occupancy.tokens import TokenCounter, effective_input_tokens
from monad_notebook.context.prompt import Prompt, assemble, count_parts
from monad_notebook.messages import Message, Role, ToolCall
from monad_notebook.store.base import Store, Summary

PROMPT_RECORDS_KEPT = 50


@dataclass(frozen=True)
class Frame:
    """What surrounds the messages in every request: the system prompt and the tools' schemas."""

    system: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)


class Window:
    """The in-memory window of one session (a turn never reads the whole transcript)."""

    def __init__(self, session: str, counter: TokenCounter, calibration: Calibration | None = None) -> None:
        self.session = session
        self.counter = counter
        self.calibration = calibration or Calibration()
        self.frame = Frame()
        self._frame_version = 0
        self.messages: list[Message] = []
        self.summary: Summary | None = None
        self.next_seq = 0
        self.turn = 0
        self.step = 0
        self.blocks: dict[str, str] = {}  # memory, plan: replaced once per turn
        self.related: dict[str, str] = {}  # user message id -> the related-context block found for it
        self.last_real: int | None = None  # the provider's count of the last request
        self.last_estimate = 0
        self.last_parts = (0, 0)  # raw (messages, tools) tokens of the prompt estimated last
        self._basis_raw: int | None = None  # raw tokens of the request ``last_real`` counted
        self.reclaimed = 0
        self.records: list[dict[str, Any]] = []
        self.cost = CostMeter()
        self._token_cache: dict[tuple[str, bool], int] = {}
        self._last_prompt: tuple[tuple[Any, ...], Prompt] | None = None
        self._mark: tuple[int, int] | None = None  # the store's history mark when this window last knew every write

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    # --- loading and counters ---------------------------------------------------------

    def load(self, store: Store) -> None:
        """Read the rolling summary and the messages after its boundary: O(window), never the transcript.

        A tool result whose call fell behind the boundary is left out: no request ever holds an orphan.
        """
        self.summary = store.load_summary(self.session)
        boundary = self.summary.boundary_seq if self.summary else -1
        stored = store.load_messages(self.session, after_seq=boundary)
        self.messages = answered_calls_only(stored)
        self.related = {}
        self.next_seq = (stored[-1].seq if stored else boundary) + 1
        self.turn = max((m.turn for m in stored), default=0)

    def catch_up(self, store: Store) -> bool:
        """Reload if another kernel wrote to this session since this one last looked (True if it did).

        Called holding the turn lease, so numbering continues from the store's newest message and
        the model sees the other kernel's turns. When no one but this window wrote the messages
        or summaries tables since it last looked (``wrote``), the store's history mark says so in
        two manifest reads; otherwise two small reads, whose cost grows with the writes not yet
        compacted.
        """
        mark = store.history_mark()
        if mark is not None and mark == self._mark:
            return False
        newer = store.load_messages(self.session, after_seq=self.next_seq - 1)
        known = (self.summary.created_at, self.summary.boundary_seq) if self.summary else None
        if not newer and store.summary_head(self.session) == known:
            self._mark = mark
            return False
        turn = self.turn
        self.load(store)
        self.turn = max(turn, self.turn)
        self.last_real = None
        self.last_estimate = 0
        self._last_prompt = None
        self._mark = mark
        return True

    def wrote(self, version: int | None) -> None:
        """This window's own write to the messages table committed ``version``.

        The mark moves with it only when it is the very next version: a commit by anyone else
        in between (another kernel, another session of this kernel) makes the next catch-up read.
        """
        if self._mark is not None and version is not None and version == self._mark[0] + 1:
            self._mark = (version, self._mark[1])
        else:
            self._mark = None

    def reset(self, store: Store) -> None:
        """After the stored conversation was forgotten: reload, and start the counts over."""
        self.load(store)
        self.turn = 0
        self.step = 0
        self.records = []
        self.last_real = None
        self._basis_raw = None
        self.last_estimate = 0
        self.reclaimed = 0

    def use_counter(self, counter: TokenCounter, calibration: Calibration | None = None) -> None:
        """A new model's tokenizer (and what was learnt about its provider): the old counts are meaningless."""
        self.counter = counter
        self.calibration = calibration or Calibration()
        self._token_cache = {}
        self.related = {}  # another model: another provider cache
        self._last_prompt = None

    def set_frame(self, frame: Frame) -> None:
        """A new system prompt or tool set (a config reload)."""
        if frame != self.frame:
            self.related = {}  # the prompt changes from its start
        self.frame = frame
        self._frame_version += 1

    def begin_turn(self) -> None:
        self.turn += 1
        self.step = 0

    def begin_step(self) -> None:
        self.step += 1

    def new_message(self, role: Role, content: str, *, tool_calls: list[ToolCall] | None = None) -> Message:
        message = Message(
            role=role,
            content=content,
            session=self.session,
            seq=self.next_seq,
            turn=self.turn,
            step=self.step,
            tool_calls=list(tool_calls or []),
        )
        self.next_seq += 1
        return message

    # --- applying what the stages decided ---------------------------------------------

    def extend(self, messages: list[Message]) -> None:
        """Messages just persisted join the window."""
        self.messages.extend(messages)

    def apply_eviction(self, plan: EvictionPlan) -> None:
        """Placeholders replace the cleared results; the stale provider count shrinks by as much."""
        apply_plan(self.messages, plan)
        self._drop_related(after=next((m.id for m in self.messages if m.id in plan.placeholders), None))
        self.note_reclaimed(plan.reclaimed_tokens)

    def note_reclaimed(self, reclaimed: int) -> None:
        if reclaimed:
            self.reclaimed += reclaimed
            if self.last_real is not None:
                self.last_real = max(0, self.last_real - reclaimed)
            if self._basis_raw is not None:
                self._basis_raw -= reclaimed  # the growth since that count is measured without them
            self.last_estimate = max(0, self.last_estimate - reclaimed)

    def apply_compaction(self, result: CompactionResult) -> None:
        """A landed compaction: the folded messages leave, the new summary opens the window."""
        self.messages = apply_result(self.messages, result)
        self.summary = result.summary
        self._drop_related(after=self.messages[0].id if self.messages else None)  # the summary changed the top
        self.last_real = None  # the provider's count described the unfolded window
        self._basis_raw = None
        self.estimate(self.prompt())

    def set_blocks(self, blocks: dict[str, str], user_id: str | None = None, *, retrieval: bool = True) -> None:
        """This turn's blocks; a ``related_context`` block rides on ``user_id``, this turn's message.

        Earlier turns' blocks stay on their messages: taking one away would change the prompt
        from that message on, and the provider would bill the whole turn after it uncached. They
        go when that costs nothing, because the prompt changes before them anyway or the cache
        is cold: at a turn whose cache has expired or whose memory block changed, with a new
        system prompt, tools or model, with an eviction pass that clears a result before them,
        with a compaction; and when retrieval is turned off (``retrieval`` False).
        """
        blocks = dict(blocks)
        related = blocks.pop("related_context", None)
        if not retrieval or not self.cost.cache_warm() or blocks.get("memory") != self.blocks.get("memory"):
            self.related = {}
        if related and user_id:
            self.related[user_id] = related
        self.blocks = blocks

    def _drop_related(self, *, after: str | None) -> None:
        """Keep this turn's block and those before the message ``after``: from there on the prompt changes anyway."""
        if not self.related:
            return
        ids = [m.id for m in self.messages]
        kept = set(ids[: ids.index(after)] if after in ids else ids)
        kept |= {next((m.id for m in reversed(self.messages) if m.role == "user"), "")}
        self.related = {k: v for k, v in self.related.items() if k in kept}

    # --- the prompt and its cost ------------------------------------------------------

    def prompt(self) -> Prompt:
        """What the model receives now: system prompt and memory, summary, window, injected blocks.

        A step asks for it several times (thresholds, hard guard, the call); while nothing it
        is built from has changed, the same prompt (and its token count) is handed out again.
        """
        inputs = (
            self.frame.system,
            self.blocks.get("memory", ""),
            self.summary.text if self.summary else None,
            tuple((m.id, m.placeholder) for m in self.messages),
            self._frame_version,  # a reload may change the tools' schemas
            tuple(self.related.items()),
            self.blocks.get("plan"),
        )
        if self._last_prompt is not None and self._last_prompt[0] == inputs:
            return self._last_prompt[1]
        system, memory, summary, _, _, _, plan = inputs
        prompt = assemble(
            system=system,
            memory=memory,
            summary=summary,
            window=self.messages,
            tools=self.frame.tools,
            related=self.related,
            plan=plan,
        )
        self._last_prompt = (inputs, prompt)
        return prompt

    def estimate(self, prompt: Prompt) -> int:
        """The calibrated estimate of what the provider will count for this request.

        Window messages are counted once each (cached by id and eviction state), so a step
        costs a sum over the window rather than re-tokenizing it.
        """
        self.last_parts = self.raw_parts(prompt)
        self.last_estimate = self.calibration.predict(*self.last_parts)
        return self.last_estimate

    def raw_parts(self, prompt: Prompt) -> tuple[int, int]:
        """Uncalibrated (messages, tool schemas) tokens of a prompt, counted once per prompt."""
        if prompt.raw_tokens is None or prompt.tools_tokens is None:
            pure = [len(g) == 1 and g[0].source is not None for g in prompt.groups]
            loose = [m for m, is_pure in zip(prompt.messages, pure, strict=True) if not is_pure]
            raw = self.counter.count_messages(loose, prompt.tools)
            raw += sum(
                self.message_tokens(g[0].source) for g, is_pure in zip(prompt.groups, pure, strict=True) if is_pure
            )
            prompt.raw_tokens = raw
            prompt.tools_tokens = self.counter.count_messages([], prompt.tools) - self.counter.count_messages([])
        return prompt.raw_tokens - prompt.tools_tokens, prompt.tools_tokens

    def projected(self) -> int:
        """What the next request would cost as the window stands now, calibrated; changes no figure
        (the panel compares it with what was sent after eviction and compaction acted)."""
        return self.calibration.predict(*self.raw_parts(self.prompt()))

    def guard_tokens(self, prompt: Prompt) -> int:
        """The hard guard's figure: the estimate, or the provider's last count plus the growth since, if larger.

        An estimate can be far off (a server that counts with another tokenizer, a calibration
        still learning), but the last real count is the truth for what was sent then; what was
        appended since is counted raw, at no less than one provider token per raw token.
        """
        estimate = self.estimate(prompt)
        if self.last_real is None or self._basis_raw is None:
            return estimate
        growth = sum(self.last_parts) - self._basis_raw
        scale = max(1.0, self.calibration.fit.ratio) if growth > 0 else min(1.0, self.calibration.fit.ratio)
        return max(estimate, round(self.last_real + growth * scale))

    def message_tokens(self, message: Message) -> int:
        key = (message.id, message.evicted)
        count = self._token_cache.get(key)
        if count is None:
            count = self.counter.count_messages([message.to_openai()]) - self.counter.count_messages([])
            self._token_cache[key] = count
        return count

    def record(self, prompt: Prompt) -> None:
        """Keep an account of what the model received at this step (the inspector reads it).

        Parts are in the headline's units: the tool schemas as the provider counts them (none,
        for a server that leaves them out), the rest scaled so that the parts add up.
        """
        count_parts(prompt, self.message_tokens, self.counter.count_text)
        _, tools = self.raw_parts(prompt)
        total = self.calibration.predict(*self.raw_parts(prompt))
        tools_tokens = min(total, max(0, round(self.calibration.fit.tools_weight * tools)))
        self.records.append(prompt.record(self.turn, self.step, total, tools_tokens))
        del self.records[:-PROMPT_RECORDS_KEPT]

    def observe(self, real: int | None) -> None:
        """The provider's count of the request just estimated (None when it reported none)."""
        if real is not None:
            self.calibration.observe(*self.last_parts, real)
            if self.records:
                self.records[-1]["real_tokens"] = real
        self.last_real = real
        self._basis_raw = sum(self.last_parts) if real is not None else None

    def bill(self, prompt_tokens: int, cached_tokens: int) -> None:
        """The request just answered, priced: into the session's totals and this step's prompt record."""
        self.cost.add(prompt_tokens, cached_tokens)
        if self.records:
            self.records[-1].update(prompt_tokens=prompt_tokens, cached_tokens=self.cost.last_cached_tokens)

    def occupancy(self) -> int:
        """effectiveInputTokens: the provider's last real count, else the calibrated estimate."""
        if self.last_real is None and not self.last_estimate:
            self.estimate(self.prompt())
        return effective_input_tokens(self.last_real, self.last_estimate)

    def usage(self, context_window: int) -> dict[str, Any]:
        occupancy = self.occupancy()
        return {
            "occupancy": occupancy,
            "context_window": context_window,
            "fraction": round(occupancy / context_window, 4) if context_window else 0.0,
            "exact": self.last_real is not None,
            "reclaimed": self.reclaimed,
            "messages": len(self.messages),
            **self.cost.snapshot(),
        }
