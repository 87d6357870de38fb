"""The window: what the next request is built from, and the accounting of what it costs.

One object owns the in-memory state of a conversation: the messages after the durable
summary boundary, the rolling summary, the seq/turn/step counters, the blocks the per-turn
stages injected, the token counter with its calibration, the prompt cache and the occupancy
figures. Stages read it and return plans (an eviction plan, a compaction result, turn
blocks); the window applies them, so there is one place where the window changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from monad_notebook.context.compaction import CompactionResult, apply_result
from monad_notebook.context.eviction import EvictionPlan, apply_plan
from monad_notebook.context.prompt import Prompt, assemble, count_parts
from monad_notebook.context.tokens import TokenCounter, effective_input_tokens
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

    def __init__(self, session: str, counter: TokenCounter) -> None:
        self.session = session
        self.counter = counter
        self.frame = Frame()
        self._frame_version = 0
        self.messages: list[Message] = []
        self.summary: Summary | None = None
        self.next_seq = 0
        self.turn = 0
        self.step = 0
        self.blocks: dict[str, str] = {}  # memory, plan, related_context: replaced once per turn
        self.last_real: int | None = None  # the provider's count of the last request
        self.last_estimate = 0
        self.last_raw = 0
        self.reclaimed = 0
        self.records: list[dict[str, Any]] = []
        self._token_cache: dict[tuple[str, bool], int] = {}
        self._last_prompt: tuple[tuple[Any, ...], Prompt] | None = None

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    # --- loading and counters ---------------------------------------------------------

    def load(self, store: Store) -> None:
        """Read the rolling summary and the messages after its boundary: O(window), never the transcript."""
        self.summary = store.load_summary(self.session)
        boundary = self.summary.boundary_seq if self.summary else -1
        self.messages = store.load_messages(self.session, after_seq=boundary)
        self.next_seq = (self.messages[-1].seq if self.messages else boundary) + 1
        self.turn = max((m.turn for m in self.messages), default=0)

    def reset(self, store: Store) -> None:
        """After the stored conversation was forgotten: reload, and start the counts over."""
        self.load(store)
        self.turn = 0
        self.step = 0
        self.records = []
        self.last_real = None
        self.last_estimate = 0
        self.reclaimed = 0

    def use_counter(self, counter: TokenCounter) -> None:
        """A new model's tokenizer: the old counts are meaningless under it."""
        self.counter = counter
        self._token_cache = {}
        self._last_prompt = None

    def set_frame(self, frame: Frame) -> None:
        """A new system prompt or tool set (a config reload)."""
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
        self.note_reclaimed(plan.reclaimed_tokens)

    def note_reclaimed(self, reclaimed: int) -> None:
        if reclaimed:
            self.reclaimed += reclaimed
            if self.last_real is not None:
                self.last_real = max(0, self.last_real - reclaimed)
            self.last_estimate = max(0, self.last_estimate - reclaimed)

    def apply_compaction(self, result: CompactionResult) -> None:
        """A landed compaction: the folded messages leave, the new summary opens the window."""
        self.messages = apply_result(self.messages, result)
        self.summary = result.summary
        self.last_real = None  # the provider's count described the unfolded window
        self.estimate(self.prompt())

    def set_blocks(self, blocks: dict[str, str]) -> None:
        self.blocks = dict(blocks)

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
            self.blocks.get("related_context"),
            self.blocks.get("plan"),
        )
        if self._last_prompt is not None and self._last_prompt[0] == inputs:
            return self._last_prompt[1]
        current_user = next((m.id for m in reversed(self.messages) if m.role == "user"), None)
        system, memory, summary, _, _, related, plan = inputs
        prompt = assemble(
            system=system,
            memory=memory,
            summary=summary,
            window=self.messages,
            tools=self.frame.tools,
            related=related,
            plan=plan,
            current_user_id=current_user,
        )
        self._last_prompt = (inputs, prompt)
        return prompt

    def estimate(self, prompt: Prompt) -> int:
        """The calibrated estimate of what the provider will count for this request.

        Window messages are counted once each (cached by id and eviction state), so a step
        costs a sum over the window rather than re-tokenizing it.
        """
        self.last_raw = self.raw_tokens(prompt)
        self.last_estimate = round(self.last_raw * self.counter.calibration)
        return self.last_estimate

    def projected(self) -> int:
        """What the next request would cost as the window stands now, calibrated; changes no figure
        (the panel compares it with what was sent after eviction and compaction acted)."""
        return round(self.raw_tokens(self.prompt()) * self.counter.calibration)

    def raw_tokens(self, prompt: Prompt) -> int:
        """The uncalibrated count of ``prompt``, kept on it."""
        raw = prompt.raw_tokens
        if raw is None:
            pure = [len(g) == 1 and g[0].source is not None for g in prompt.groups]
            loose = [m for m, is_pure in zip(prompt.messages, pure, strict=True) if not is_pure]
            raw = self.counter.count_messages(loose, prompt.tools)
            raw += sum(
                self.message_tokens(g[0].source) for g, is_pure in zip(prompt.groups, pure, strict=True) if is_pure
            )
            prompt.raw_tokens = raw
        return raw

    def message_tokens(self, message: Message) -> int:
        key = (message.id, message.evicted)
        count = self._token_cache.get(key)
        if count is None:
            count = self.counter.count_messages([message.to_openai()]) - self.counter.count_messages([])
            self._token_cache[key] = count
        return count

    def record(self, prompt: Prompt) -> None:
        """Keep an account of what the model received at this step (the inspector reads it)."""
        count_parts(prompt, self.message_tokens, self.counter.count_text)
        tools_tokens = self.counter.count_messages([], prompt.tools) - self.counter.count_messages([])
        self.records.append(prompt.record(self.turn, self.step, self.last_estimate, tools_tokens))
        del self.records[:-PROMPT_RECORDS_KEPT]

    def observe(self, real: int | None) -> None:
        """The provider's count of the request just sent (None when it reported none)."""
        if real is not None:
            self.counter.observe(self.last_raw, real)
        self.last_real = real

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
        }
