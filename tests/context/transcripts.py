"""Transcripts for the eviction tests: turns of tool rounds, four characters a token, a plan with defaults."""

from __future__ import annotations

import itertools

from monad_notebook.context.lossless.eviction import EvictionPlan, plan_eviction
from monad_notebook.messages import Message, ToolCall


def count_tokens(text: str) -> int:
    return (len(text) + 3) // 4


class Transcript:
    """Builds OpenAI-format transcripts: user turns, rounds of (parallel) tool calls, answers."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._ids = itertools.count()
        self.turn = 0

    def user(self, text: str = "question") -> Transcript:
        self.turn += 1
        self.messages.append(Message("user", text, turn=self.turn))
        return self

    def round(self, *sizes: int, redacted: tuple[bool, ...] = (), name: str = "run_python") -> list[str]:
        ids = [f"call_{next(self._ids)}" for _ in sizes]
        step = sum(1 for m in self.messages if m.turn == self.turn and m.role == "assistant")
        calls = [ToolCall(i, name, "{}") for i in ids]
        self.messages.append(Message("assistant", "", turn=self.turn, step=step, tool_calls=calls))
        for i, (call_id, size) in enumerate(zip(ids, sizes, strict=True)):
            red = redacted[i] if i < len(redacted) else False
            body = f"{call_id}:" + "o" * max(0, size - len(call_id) - 1)
            self.messages.append(
                Message("tool", body, turn=self.turn, step=step, tool_call_id=call_id, name=name, redacted=red)
            )
        return ids

    def answer(self, text: str = "done") -> Transcript:
        self.messages.append(Message("assistant", text, turn=self.turn))
        return self


def plan(messages: list[Message], **overrides) -> EvictionPlan:
    args = {
        "occupancy": 90_000,
        "context_window": 100_000,
        "at_fraction": 0.5,
        "keep_recent_rounds": 1,
        "clear_at_least": 100,
        "min_result_tokens": 50,
        "count_tokens": count_tokens,
        "has_raw": RawOutputs(),
        "persist_raw": True,
    }
    return plan_eviction(messages, **{**args, **overrides})


class RawOutputs:
    """A fake of the store's raw-output table: which tool-call ids already have a saved full text."""

    def __init__(self, saved: set[str] | None = None) -> None:
        self.saved = set(saved or ())
        self.asked: list[list[str]] = []

    def __call__(self, ids: list[str]) -> set[str]:
        self.asked.append(list(ids))
        return self.saved & set(ids)
