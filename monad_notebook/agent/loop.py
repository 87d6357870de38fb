"""The turn: per-turn stages once, then steps until the model answers without tool calls.

Each step's new messages (the assistant message and its tool results) are persisted in
one batched write, so an interrupt or a crash never leaves half a step in the store.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from monad_notebook import events as ev
from monad_notebook.agent.call_ids import unique_tool_calls
from monad_notebook.agent.model import ChatResponse, TextCallback
from monad_notebook.errors import ContextLengthError
from monad_notebook.messages import Message, ToolCall

if TYPE_CHECKING:
    from monad_notebook.session import Session

INTERRUPTED_RESULT = "interrupted: the user stopped this tool call before it finished; nothing more is known."
NOT_RUN_RESULT = "not run: the turn was interrupted before this tool call started."


@dataclass
class Reply:
    """What a turn produced: the final text and the accounting behind it."""

    text: str
    steps: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0  # sum over steps: the provider's counts, else our estimates
    completion_tokens: int = 0
    estimated: bool = False  # True when some step had no provider count
    stopped_at_max_steps: bool = False
    tool_names: list[str] = field(default_factory=list)


class Turn:
    """One user message and everything the agent does to answer it."""

    def __init__(self, session: Session, text: str, on_text: TextCallback | None = None) -> None:
        self.session = session
        self.text = text
        self.on_text = on_text
        self.reply = Reply(text="")

    def run(self) -> Reply:
        s = self.session
        s.begin_turn()
        user = s.new_message("user", s.lossless.redactor.redact(self.text).text)
        s.commit_step([user])
        s.emit(ev.TURN_STARTED, turn=s.turn, text=user.content)
        s.run_turn_stages(user)
        max_steps = s.config.agent.max_steps
        for _ in range(max_steps):
            response = self._step()
            if not response.tool_calls:
                self.reply.text = response.content
                break
        else:
            self.reply.stopped_at_max_steps = True
            self.reply.text = (
                f"(stopped after agent.maxSteps={max_steps} steps without a final answer; "
                "ask again to continue, or raise agent.maxSteps)"
            )
        s.emit(ev.TURN_FINISHED, turn=s.turn, steps=self.reply.steps, tool_calls=self.reply.tool_calls)
        return self.reply

    def _step(self) -> ChatResponse:
        s = self.session
        s.step += 1
        self.reply.steps += 1
        s.run_step_stages()
        response, prompt_tokens = self._call_model()
        calls = unique_tool_calls(s, response.tool_calls)
        assistant = s.new_message("assistant", response.content, tool_calls=calls)
        results = self._run_tools(assistant, calls)
        s.commit_step([assistant, *results])
        self.reply.prompt_tokens += prompt_tokens
        if response.usage is not None:
            self.reply.completion_tokens += response.usage.completion_tokens
        s.emit(ev.USAGE, **s.usage_snapshot())
        return response

    def _call_model(self) -> tuple[ChatResponse, int]:
        """Call the model; on a context-length error compact synchronously and retry once."""
        s = self.session
        streamed: list[str] = []

        def on_text(delta: str) -> None:
            streamed.append(delta)
            if self.on_text is not None:
                self.on_text(delta)

        for attempt in (1, 2):
            prompt = s.assemble_prompt()
            estimate = s.estimate_prompt(prompt)
            s.record_prompt(prompt)
            try:
                response = s.model.complete(prompt.messages, prompt.tools, on_text=on_text)
            except KeyboardInterrupt:
                self._persist_interrupted_text("".join(streamed))
                raise
            except ContextLengthError:
                if attempt == 2 or not s.compact_for_overflow():
                    raise
                continue
            real = response.usage.prompt_tokens if response.usage and response.usage.prompt_tokens else None
            s.record_prompt_tokens(estimate, real)
            if real is None:
                self.reply.estimated = True
            return response, real if real is not None else estimate
        raise AssertionError("unreachable")

    def _persist_interrupted_text(self, text: str) -> None:
        if text:
            s = self.session
            s.commit_step([s.new_message("assistant", text + "\n\n[interrupted by the user]")])

    def _run_tools(self, assistant: Message, calls: list[ToolCall]) -> list[Message]:
        s = self.session
        results: list[Message] = []
        for index, call in enumerate(calls):
            s.emit(ev.TOOL_STARTED, tool_call_id=call.id, name=call.name, arguments=call.arguments[:200])
            started = time.perf_counter()
            try:
                output = s.execute_tool(call)
            except KeyboardInterrupt:
                results.append(s.tool_result(call, INTERRUPTED_RESULT))
                results.extend(s.tool_result(c, NOT_RUN_RESULT) for c in calls[index + 1 :])
                s.commit_step([assistant, *results])
                raise
            result = s.tool_result(call, output.text, redacted=output.redacted)
            results.append(result)
            self.reply.tool_calls += 1
            self.reply.tool_names.append(call.name)
            s.emit(
                ev.TOOL_FINISHED,
                tool_call_id=call.id,
                name=call.name,
                preview=result.content[:200],
                seconds=round(time.perf_counter() - started, 3),
            )
        return results
