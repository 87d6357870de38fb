"""The turn: per-turn stages once, then steps until the model answers without tool calls.

An assistant message that calls tools is stored before they run, and their results in one
batched write once they all have one; a step without calls is one write. So an interrupt leaves
every call answered, and a kernel killed while a call runs leaves the call on record: the next
turn answers it as interrupted by a crash (``Cascade.begin_turn``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from monad_notebook import events as ev
from monad_notebook.agent.call_ids import unique_tool_calls
from monad_notebook.agent.text_calls import TextCallReader
from monad_notebook.agent.tools.base import ToolOutput
from monad_notebook.agent.tools.runner import ToolRunner
from monad_notebook.approval.gate import QuestionInterrupted
from monad_notebook.context.cascade import Cascade
from monad_notebook.errors import ContextLengthError, ImagesRefusedError
from monad_notebook.events import Excerpt
from monad_notebook.foreground import FOREGROUND
from monad_notebook.messages import Message, ToolCall
from monad_notebook.provider import ChatModel, ChatResponse, TextCallback

INTERRUPTED_RESULT = "interrupted: the user stopped this tool call before it finished; nothing more is known."
NOT_RUN_RESULT = "not run: the turn was interrupted before this tool call started."
TRUNCATED_NOTE = (
    '[cut off: the answer reached the output token limit (finish_reason "length"); '
    "ask to continue, or raise models.main.maxOutputTokens]"
)
SERVER_CUT_NOTE = (  # no output limit of ours was set: the server's context (n_ctx) or its own limit stopped it
    '[cut off by the server (finish_reason "length"): the request and the answer filled its context, or reached '
    "its own output limit; ask to continue, or give the server a larger context and set "
    "models.main.contextWindow to match]"
)
EMPTY_NOTE = "(the model returned an empty answer; ask again, or try another model)"
ARGUMENTS_SHOWN = 20_000  # characters of arguments a tool.call.started event carries (the cell shows the code)
PREVIEW_SHOWN = 2_000  # characters of a result its tool.call.finished event carries


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
    truncated: bool = False  # the final answer was cut off by the output token limit (its text says so)
    note: str = ""  # a line the cell adds below the streamed answer: why it stopped, was cut off, or is empty
    tool_names: list[str] = field(default_factory=list)
    recovered_calls: int = 0  # of tool_calls: written as text by the model, read and run (text_calls.py)
    text_call_note: str = ""  # the model wrote calls as text and none could run: what to change


class Turn:
    """One user message and everything the agent does to answer it: the cascade keeps the window, the
    runner runs the tools, the model answers."""

    def __init__(self, cascade: Cascade, tools: ToolRunner, model: ChatModel, *, max_steps: int) -> None:
        self.cascade = cascade
        self.tools = tools
        self.model = model
        self.max_steps = max_steps
        self.text_calls: TextCallReader | None = None
        self.on_text: TextCallback | None = None
        self.reply = Reply(text="")

    def run(self, text: str, on_text: TextCallback | None = None, *, text_calls: TextCallReader | None = None) -> Reply:
        """Answer ``text`` (streamed to ``on_text``): steps until the model answers without tool calls.

        ``text_calls`` reads the calls a reply wrote as text (None: its text is the answer).
        """
        cascade = self.cascade
        self.on_text, self.text_calls = on_text, text_calls
        cascade.begin_turn(text)
        for _ in range(self.max_steps):
            response = self._step()
            if not response.tool_calls:
                self.reply.text = response.content
                self.reply.truncated = response.finish_reason == "length"
                self.reply.note = self._cut_note() if self.reply.truncated else ""
                break
        else:
            self.reply.stopped_at_max_steps = True
            self.reply.text = self.reply.note = (
                f"(stopped after agent.maxSteps={self.max_steps} steps without a final answer; "
                "ask again to continue, or raise agent.maxSteps)"
            )
        self._text_call_verdict()
        if not self.reply.text.strip() and not self.reply.text_call_note:
            self.reply.text = self.reply.note = EMPTY_NOTE
        cascade.emit(ev.TURN_FINISHED, steps=self.reply.steps, tool_calls=self.reply.tool_calls)
        return self.reply

    def _step(self) -> ChatResponse:
        cascade = self.cascade
        cascade.begin_step()
        self.reply.steps += 1
        before = cascade.projected()
        cascade.run_step()
        response, prompt_tokens = self._call_model()
        calls = unique_tool_calls(
            cascade.window, cascade.spill.saved, response.tool_calls or self._written_calls(response)
        )
        if response.finish_reason == "length":
            response.content = f"{response.content}\n\n{self._cut_note()}".lstrip()
            cascade.emit(ev.ANSWER_TRUNCATED, tool_calls=len(calls), chars=len(response.content))
        response.content = cascade.redact(response.content)  # a key read off an image is not written down
        assistant = cascade.window.new_message("assistant", response.content, tool_calls=calls)
        if calls:
            try:
                cascade.announce(assistant)
            except KeyboardInterrupt:
                cascade.commit([assistant, *(cascade.tool_message(c, NOT_RUN_RESULT) for c in calls)])
                raise
        results = self._run_tools(assistant, calls)
        cascade.commit([assistant, *results])
        self.reply.prompt_tokens += prompt_tokens
        if response.usage is not None:
            self.reply.completion_tokens += response.usage.completion_tokens
        cascade.emit(ev.USAGE, **cascade.usage(), before=before)
        return response

    def _cut_note(self) -> str:
        """Why an answer stopped at finish_reason "length": our output limit when one is set, else the server's."""
        return TRUNCATED_NOTE if getattr(self.model, "max_output_tokens", None) else SERVER_CUT_NOTE

    def _written_calls(self, response: ChatResponse) -> list[ToolCall]:
        """The calls the reply wrote in its text (it has none through the API); its text keeps the rest."""
        reader = self.text_calls
        found = reader.read(response.content, response.finish_reason) if reader is not None else None
        if found is None:
            return []
        response.content, response.tool_calls = found.prose, [a.call for a in found.attempts]
        written = [
            {"name": Excerpt(a.call.name, 100), "form": a.call.recovered, "problem": a.problem} for a in found.attempts
        ]
        self.cascade.emit(ev.TEXT_CALLS, calls=written, run=found.usable, prose_chars=len(found.prose))
        return response.tool_calls

    def _refused(self, call: ToolCall) -> ToolOutput | None:
        """A call written as text that must not run (unknown tool, bad arguments, a repeat): its one-line result."""
        line = self.text_calls.refusal(call.id) if self.text_calls is not None and call.recovered else None
        return ToolOutput(line, outcome="refused") if line is not None else None

    def _text_call_verdict(self) -> None:
        reader = self.text_calls
        if reader is None:
            return
        self.reply.recovered_calls = reader.recovered
        self.reply.text_call_note = reader.verdict()
        if self.reply.text_call_note:
            self.cascade.emit(ev.TEXT_CALLS_UNUSED, message=self.reply.text_call_note)

    def _call_model(self) -> tuple[ChatResponse, int]:
        """Call the model; on a context-length error make room (evict, compact) and retry once, and
        on an endpoint refusing images, stop sending them and retry once.

        A request that would not fit the window even after making room is refused, never sent.
        """
        cascade = self.cascade
        streamed: list[str] = []

        def on_text(delta: str) -> None:
            streamed.append(delta)
            if self.on_text is not None:
                self.on_text(delta)

        for attempt in (1, 2):
            cascade.ensure_fits()
            prompt, estimate = cascade.request()
            try:
                with FOREGROUND.aside():  # the turn only waits: background work may have the cores
                    response = self.model.complete(prompt.messages, prompt.tools, on_text=on_text)
            except KeyboardInterrupt:
                self._persist_interrupted_text("".join(streamed))
                raise
            except ContextLengthError:
                if attempt == 2 or not cascade.make_room():
                    raise
                continue
            except ImagesRefusedError as refused:
                if not cascade.stop_images(str(refused).rstrip(".")):
                    raise
                continue
            real = response.usage.prompt_tokens if response.usage and response.usage.prompt_tokens else None
            cascade.meter.answered(real, estimate, response.usage.cached_tokens if response.usage else 0)
            if real is None:
                self.reply.estimated = True
            return response, real if real is not None else estimate
        raise AssertionError("unreachable")

    def _persist_interrupted_text(self, text: str) -> None:
        if text:
            said = self.cascade.redact(text)
            self.cascade.commit([self.cascade.window.new_message("assistant", said + "\n\n[interrupted by the user]")])

    def _run_tools(self, assistant: Message, calls: list[ToolCall]) -> list[Message]:
        cascade = self.cascade
        results: list[Message] = []
        for index, call in enumerate(calls):
            written = {"recovered": call.recovered} if call.recovered else {}
            arguments = Excerpt(call.arguments, ARGUMENTS_SHOWN)
            cascade.emit(ev.TOOL_STARTED, tool_call_id=call.id, name=call.name, arguments=arguments, **written)
            started = time.perf_counter()
            try:
                with FOREGROUND.aside():
                    sees_images = cascade.window.frame.image_detail is not None
                    output = self._refused(call) or self.tools.run(call, sees_images=sees_images)
            except KeyboardInterrupt as stop:
                told = stop.result if isinstance(stop, QuestionInterrupted) else INTERRUPTED_RESULT
                results.append(cascade.tool_message(call, told))
                results.extend(cascade.tool_message(c, NOT_RUN_RESULT) for c in calls[index + 1 :])
                cascade.commit([assistant, *results])
                raise
            result = cascade.tool_message(call, output.text, redacted=output.redacted, images=output.images)
            results.append(result)
            self.reply.tool_calls += 1
            self.reply.tool_names.append(call.name)
            cascade.emit(
                ev.TOOL_FINISHED,
                tool_call_id=call.id,
                name=call.name,
                preview=Excerpt(result.content, PREVIEW_SHOWN),
                outcome=output.outcome,
                seconds=round(time.perf_counter() - started, 3),
            )
        return results
