"""The reference trace through four context strategies, and the whole cascade's per-step overhead.

    python benchmarks/reference_trace.py [--steps 300] [--windows 32000 64000] [--sizes 1000 10000 100000]

The trace (``benchmarks/trace.py``) is a tool-heavy data-exploration session with identifiers
planted early. Each strategy meets it as an agent loop would: one model request before each
tool call and before each turn's answer. Strategies:

1. none: every message is sent; requests over the window are counted as overflows.
2. summarize-only: at 75% of the window the oldest messages (all but the last 8) are folded
   into a rolling summary; no truncation, no eviction. Also shown with the identifier ledger.
3. LangChain: ``ClearToolUsesEdit`` (keep 3, placeholder ``[cleared]``, trigger at 50% of the
   window, the same point our eviction fires) then ``trim_messages`` to the window, applied
   to the full history before every request, as ``ContextEditingMiddleware`` does.
4. monad: a real ``Session`` (LanceDB in a temp dir, default context config) driven by a
   ``ScriptedModel`` that issues the trace's calls to a ``replay`` tool returning the recorded
   outputs. Like a provider, the model reports exact prompt counts and refuses a request over
   the window (the session then compacts and retries; the refused request still counts).

Summaries are written by the extractive summarizer (no LLM) in every strategy, so the runs are
offline and comparable; "summary input" is what the fast model would have been sent (the
LLMSummarizer request), recorded by a model that declines so that the extractive fallback runs.
Tokens are exact o200k counts (``TokenCounter("gpt-4o")``) of what each strategy sends, with the
same system prompt and tool schemas; "after the shared prefix" is what a provider's prefix cache
could not reuse. The overhead table seeds a store with N messages and a summary whose boundary
leaves a small window, then times steps minus the model and tool time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.loop_overhead import seed
from benchmarks.trace import (
    Planted,
    Trace,
    TraceStep,
    TraceTurn,
    generate_trace,
    replay_events,
    tool_call_message,
    tool_result_message,
)
from monad_notebook.agent.instructions import SYSTEM_PROMPT
from monad_notebook.agent.tools.base import Tool, ToolContext, tool
from monad_notebook.config import Config
from monad_notebook.context.compaction.compactor import Compactor, choose_span
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.summarize import LLMSummarizer
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.prompt import Prompt, assemble
from monad_notebook.errors import ContextLengthError, ModelError
from monad_notebook.messages import Message, ToolCall
from monad_notebook.provider import ChatResponse, Usage
from monad_notebook.session import Session
from monad_notebook.store.base import Summary
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel

SOFT_FRACTION = 0.75
EVICT_FRACTION = 0.5
KEEP_RECENT = 8
Handle = Callable[[TraceStep], "str | None"]
_SUMMARY_BLOCK = re.compile(r"<summary>.*?</summary>", re.S)


def replay_tool(trace: Trace) -> Tool:
    """A ``replay(step, code)`` tool answering with the trace's recorded output of that step."""
    outputs = {step.index: step.output for step in trace.steps}

    def replay(ctx: ToolContext, step: int, code: str = "") -> str:
        """Run the code of one recorded step and return its recorded output.

        Args:
            step: The trace step to replay.
            code: The code that step ran (recorded for the transcript).
        """
        return outputs[step]

    return tool(replay)


def tool_schemas(trace: Trace, tmp: Path) -> list[dict[str, Any]]:
    """The tools every strategy sends: a default session's tools plus replay."""
    store = LanceStore(tmp / "schemas")
    session = Session("schemas", config=_config(64_000), store=store, model=ScriptedModel([]))
    schemas = [*(t.schema() for t in session.tools.values()), replay_tool(trace).schema()]
    session.close()
    store.close()
    return schemas


def _config(window: int) -> Config:
    """Defaults but the window, and recall by words only: embedding 3 MB of output would take minutes."""
    return Config.model_validate(
        {
            "models": {"main": {"contextWindow": window}, "embedding": {"provider": "none"}},
            "agent": {"maxSteps": 64},
        }
    )


class PrefixMeter:
    """Tokens a provider's prefix cache could not reuse: all after the prefix shared with the previous request.

    Tool schemas and the system prompt lead every request, so they count as shared whenever the
    first message is unchanged. Message-level granularity: a changed message ends the prefix.
    """

    def __init__(self, counter: TokenCounter, tools: list[dict[str, Any]]) -> None:
        self.counter = counter
        self.priming = counter.count_messages([])
        self.tools_tokens = counter.count_messages([], tools) - self.priming
        self.previous: list[dict[str, Any]] = []
        self._cache: dict[int, tuple[dict[str, Any], int]] = {}

    def _tokens(self, message: dict[str, Any]) -> int:
        hit = self._cache.get(id(message))
        if hit is None or hit[0] is not message:
            hit = self._cache[id(message)] = (message, self.counter.count_messages([message]) - self.priming)
        return hit[1]

    def new_tokens(self, messages: list[dict[str, Any]], total: int) -> int:
        shared = 0
        for new, old in zip(messages, self.previous, strict=False):
            if new is not old and new != old:
                break
            shared += self._tokens(new)
        self.previous = messages
        return total - (shared + self.tools_tokens + self.priming if shared else 0)


@dataclass
class Result:
    name: str
    meter: PrefixMeter | None = field(default=None, repr=False)
    requests: int = 0
    tokens_sent: int = 0
    uncached: int = 0
    peak: int = 0
    overflows: int = 0
    summary_calls: int = 0
    summary_input: int = 0
    found: dict[str, str] = field(default_factory=dict)  # planted value -> where it is still recoverable
    outputs_recoverable: int = 0  # verbatim in the final prompt, or by a handle whose id is in it
    outputs_stored_only: int = 0  # saved whole, but no id in the final prompt to ask for them by
    failed_turns: int = 0  # turns that ended in a context-length error even after the overflow compaction
    seconds: float = 0.0

    def send(self, tokens: int, window: int, messages: list[dict[str, Any]]) -> None:
        self.requests += 1
        self.tokens_sent += tokens
        self.uncached += self.meter.new_tokens(messages, tokens) if self.meter else tokens
        self.peak = max(self.peak, tokens)
        self.overflows += tokens > window


class DecliningModel:
    """A fast model that records what it was asked and declines, so the extractive fallback writes."""

    name = "gpt-4o"

    def __init__(self, counter: TokenCounter, result: Result) -> None:
        self.counter = counter
        self.result = result

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: Any = None) -> Any:
        self.result.summary_calls += 1
        self.result.summary_input += self.counter.count_messages(messages)
        raise ModelError("declined: the benchmark uses the extractive summarizer")


class _SummarySink:
    """Compactor's store calls in the simulated strategies: the ledger lives in each summary only."""

    def save_summary(self, summary: Summary) -> None:
        pass

    def load_ledger(self, session: str) -> list[Any]:
        return []

    def save_ledger(self, session: str, entries: list[Any]) -> None:
        pass

    def get_raw_outputs(self, session: str, tool_call_ids: list[str]) -> dict[str, str]:
        return {}


def _texts(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        parts += [str(message.get("content") or ""), str(message.get("tool_call_id") or "")]
        parts.extend(f"{c['id']} {c['function']['arguments']}" for c in message.get("tool_calls") or ())
    return _SUMMARY_BLOCK.sub("", "\n".join(parts))


def _recoverable_in(messages: list[dict[str, Any]], trace: Trace) -> set[str]:
    """Ids of tool outputs a final request still carries verbatim."""
    sent = {m.get("tool_call_id"): m.get("content") for m in messages if m.get("role") == "tool"}
    return {s.call_id for s in trace.steps if sent.get(s.call_id) == s.output}


def _locate(
    result: Result,
    trace: Trace,
    final: list[dict[str, Any]],
    summary: str,
    handle: Handle,
    history: str = "",
    recall: Callable[[Planted], str] | None = None,
) -> None:
    """Where each planted identifier can still be read: the prompt, the summary, a handle, recall, or only the store.

    Counted only what a model that forgot the identifier can reach: the final prompt, a saved
    output whose id the prompt shows (a placeholder, a truncation marker, a ledger handle), or
    the ``recall`` tool's answer to the identifier's probe, a question naming its context
    (``recall``, ours only). A stored output whose id left the prompt is "handle, id not in prompt".
    """
    window_text = _texts(final)
    for plant in trace.planted:
        step = trace.steps[plant.step - 1]
        if plant.value in window_text:
            where = "window"
        elif plant.value in summary:
            where = "summary"
        elif plant.carrier.startswith("output") and plant.value in (handle(step) or "") and step.call_id in window_text:
            where = "handle"
        elif recall is not None and plant.value in recall(plant):
            where = "recall"
        elif plant.carrier.startswith("output") and plant.value in (handle(step) or ""):
            where = "handle, id not in prompt"
        else:
            where = "history only" if plant.value in history else "lost"
        result.found[plant.value] = where


def _as_message(data: dict[str, Any], seq: int) -> Message:
    calls = [ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in data.get("tool_calls") or ()]
    message = Message(data["role"], data.get("content") or "", session="sim", seq=seq, tool_calls=calls)
    message.tool_call_id = data.get("tool_call_id", "")
    message.name = "replay" if data["role"] == "tool" else ""
    return message


def _history_after(event: tuple[str, Any]) -> list[dict[str, Any]]:
    kind, value = event
    if kind == "user":
        return [{"role": "user", "content": value}]
    if kind == "answer":
        return [{"role": "assistant", "content": value}]
    return [tool_call_message(value), tool_result_message(value)]


def run_none(trace: Trace, window: int, tools: list[dict[str, Any]], counter: TokenCounter) -> Result:
    result = Result("none (send everything)", PrefixMeter(counter, tools))
    system = {"role": "system", "content": SYSTEM_PROMPT}
    total = counter.count_messages([system], tools)
    priming = counter.count_messages([])
    history: list[dict[str, Any]] = []
    for event in replay_events(trace):
        if event[0] != "user":
            result.send(total, window, [system, *history])
        for message in _history_after(event):
            total += counter.count_messages([message]) - priming
            history.append(message)
    final = [system, *history[:-1]]
    _locate(result, trace, final, "", lambda step: None)
    result.outputs_recoverable = len(_recoverable_in(final, trace))
    return result


def _summarized_prompt(
    summary: Summary | None, window: list[Message], tools: list[dict[str, Any]], counter: TokenCounter
) -> tuple[Prompt, int]:
    text = summary.text if summary else None
    prompt = assemble(system=SYSTEM_PROMPT, memory="", summary=text, window=window, tools=tools)
    return prompt, counter.count_messages(prompt.messages, tools)


def run_summarize(
    trace: Trace, window: int, tools: list[dict[str, Any]], counter: TokenCounter, *, ledger: bool
) -> Result:
    result = Result("summarize-only + ledger" if ledger else "summarize-only", PrefixMeter(counter, tools))
    compactor = Compactor(
        store=_SummarySink(),  # type: ignore[arg-type]
        session="sim",
        fallback=ExtractiveSummarizer(),
        counter=counter,
        reflect_at_tokens=4000,
        ledger_max_items=80 if ledger else 0,
    )
    summarizer = LLMSummarizer(DecliningModel(counter, result))  # type: ignore[arg-type]
    messages: list[Message] = []
    summary: Summary | None = None
    final: list[dict[str, Any]] = []
    for event in replay_events(trace):
        if event[0] != "user":
            prompt = assemble(
                system=SYSTEM_PROMPT, memory="", summary=summary and summary.text, window=messages, tools=tools
            )
            tokens = counter.count_messages(prompt.messages, tools)
            if tokens > SOFT_FRACTION * window:
                span = choose_span(messages, KEEP_RECENT)
                done = compactor.fold(messages, span, summary, summarizer) if span else None
                if done is not None:
                    summary = done.summary
                    messages = [m for m in messages if m.id not in set(done.folded_ids)]
                    prompt = assemble(
                        system=SYSTEM_PROMPT, memory="", summary=summary.text, window=messages, tools=tools
                    )
                    tokens = counter.count_messages(prompt.messages, tools)
            result.send(tokens, window, prompt.messages)
            final = prompt.messages
        for data in _history_after(event):
            messages.append(_as_message(data, len(messages)))
    _locate(result, trace, final, summary.text if summary else "", lambda step: None)
    result.outputs_recoverable = len(_recoverable_in(final, trace))
    return result


def to_langchain(data: dict[str, Any]) -> Any:
    """One replayed message (OpenAI chat format) as a LangChain message."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    if data["role"] == "user":
        return HumanMessage(data["content"])
    if data["role"] == "tool":
        return ToolMessage(data["content"], tool_call_id=data["tool_call_id"], name="replay")
    calls = [
        {"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])}
        for c in data.get("tool_calls") or ()
    ]
    return AIMessage(data["content"], tool_calls=calls)


def run_langchain(trace: Trace, window: int, tools: list[dict[str, Any]], counter: TokenCounter) -> Result:
    from langchain.agents.middleware import ClearToolUsesEdit
    from langchain_core.messages import BaseMessage, SystemMessage, convert_to_openai_messages, trim_messages

    result = Result("LangChain ClearToolUsesEdit + trim_messages", PrefixMeter(counter, tools))
    tools_tokens = counter.count_messages([], tools) - counter.count_messages([])
    edit = ClearToolUsesEdit(
        trigger=int(EVICT_FRACTION * window), clear_at_least=0, keep=3, placeholder="[cleared]", exclude_tools=()
    )

    cache: dict[int, tuple[BaseMessage, int]] = {}

    def message_tokens(message: BaseMessage) -> int:
        hit = cache.get(id(message))
        if hit is None or hit[0] is not message:
            tokens = counter.count_messages(convert_to_openai_messages([message])) - counter.count_messages([])
            hit = cache[id(message)] = (message, tokens)
        return hit[1]

    def sum_tokens(messages: list[BaseMessage]) -> int:
        return sum(message_tokens(m) for m in messages)

    def count(messages: list[BaseMessage]) -> int:
        return counter.count_messages([]) + tools_tokens + sum_tokens(messages)

    history: list[BaseMessage] = [SystemMessage(SYSTEM_PROMPT)]
    final: list[dict[str, Any]] = []
    for event in replay_events(trace):
        if event[0] != "user":
            edited = list(history)
            edit.apply(edited, count_tokens=count)
            kept = trim_messages(
                edited,
                max_tokens=window - tools_tokens - counter.count_messages([]),
                token_counter=sum_tokens,
                strategy="last",
                start_on="human",
                include_system=True,
            )
            final = convert_to_openai_messages(kept)
            result.send(counter.count_messages(final, tools), window, final)
        history.extend(to_langchain(data) for data in _history_after(event))
    _locate(result, trace, final, "", lambda step: None)
    result.outputs_recoverable = len(_recoverable_in(final, trace))
    return result


def _turn_script(turn: TraceTurn) -> list[ChatResponse | str]:
    script: list[ChatResponse | str] = []
    for step in turn.steps:
        call = ToolCall(step.call_id, "replay", json.dumps({"step": step.index, "code": step.code}))
        script.append(ChatResponse(content=step.note, tool_calls=[call], finish_reason="tool_calls"))
    return [*script, turn.answer]


class Provider:
    """A scripted model behind a provider's window check: a request over the window is refused.

    Every attempt is counted (a refused request was still sent); each turn gets a fresh script,
    so a turn that fails cannot shift the answers of the next one.
    """

    name = "gpt-4o"
    vision = False  # the trace shows no image (images.py measures them): no view_image schema in the prompt

    def __init__(self, counter: TokenCounter, window: int, result: Result) -> None:
        self.counter = counter
        self.context_window = window
        self.result = result
        self.calls: list[Any] = []
        self.tools_tokens = 0
        self.model = ScriptedModel([])

    def start_turn(self, turn: TraceTurn) -> None:
        self.calls.extend(self.model.calls)
        usage = lambda messages: Usage(self.counter.count_messages(messages) + self.tools_tokens, 30)  # noqa: E731
        self.model = ScriptedModel(_turn_script(turn), name=self.name, context_window=self.context_window, usage=usage)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: Any = None) -> Any:
        tokens = self.counter.count_messages(messages, tools)
        if self.result.meter is None:
            self.result.meter = PrefixMeter(self.counter, tools)
        self.result.send(tokens, self.context_window, messages)
        if tokens > self.context_window:
            raise ContextLengthError(f"{tokens} tokens exceed the {self.context_window}-token window")
        return self.model.complete(messages, tools, on_text=on_text)


def run_monad(trace: Trace, window: int, counter: TokenCounter, tmp: Path) -> Result:
    result = Result("monad cascade")
    store = LanceStore(tmp / "db")
    provider = Provider(counter, window, result)
    session = Session(
        "reference",
        config=_config(window),
        store=store,
        model=provider,  # type: ignore[arg-type]
        fast_model=DecliningModel(counter, result),  # type: ignore[arg-type]
        extra_tools=[replay_tool(trace)],
    )
    tools = [t.schema() for t in session.tools.values()]
    provider.tools_tokens = counter.count_messages([], tools) - counter.count_messages([])
    background = session.cascade.compaction.background
    for turn in trace.turns:
        provider.start_turn(turn)
        try:
            session.ask(turn.user)
        except ContextLengthError:
            result.failed_turns += 1
    background.wait()
    provider.start_turn(trace.turns[-1])
    summary = store.load_summary(session.name)
    final = provider.calls[-1].messages

    def handle(step: TraceStep) -> str | None:
        return store.get_raw_output(session.name, step.call_id)

    history = "\n".join(m.content + "".join(c.arguments for c in m.tool_calls) for m in session.history())
    session.cascade.wait()

    def recall(plant: Planted) -> str:
        call = ToolCall(f"probe_{plant.step}", "recall", json.dumps({"query": plant.probe}))
        return session.execute_tool(call).text

    offered = {t["function"]["name"] for t in provider.calls[-1].tools}
    _locate(
        result, trace, final, summary.text if summary else "", handle, history, recall if "recall" in offered else None
    )
    in_window, final_text = _recoverable_in(final, trace), _texts(final)
    stored = [s for s in trace.steps if s.call_id not in in_window and handle(s) == s.output]
    result.outputs_recoverable = len(in_window) + sum(s.call_id in final_text for s in stored)
    result.outputs_stored_only = sum(s.call_id not in final_text for s in stored)
    session.close()
    store.close()
    return result


def run_strategies(steps: int, window: int) -> tuple[Trace, list[Result]]:
    logging.getLogger("monad_notebook").setLevel(logging.ERROR)
    trace = generate_trace(steps)
    counter = TokenCounter("gpt-4o")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tools = tool_schemas(trace, Path(tmp))
        runs: list[Callable[[], Result]] = [
            lambda: run_none(trace, window, tools, counter),
            lambda: run_summarize(trace, window, tools, counter, ledger=False),
            lambda: run_summarize(trace, window, tools, counter, ledger=True),
            lambda: run_langchain(trace, window, tools, counter),
            lambda: run_monad(trace, window, counter, Path(tmp)),
        ]
        for run in runs:
            started = time.perf_counter()
            result = run()
            result.seconds = time.perf_counter() - started
            results.append(result)
    return trace, results


# --- per-step overhead with a durable summary near the end -------------------------------

SUMMARY_TEXT = (
    "## Objective\n- Explain the Q3 revenue gap by region.\n\n## Decisions & Facts\n- South grew fastest.\n\n"
    "## Files & State\n- `data/raw/sales_2024_q3.csv` loaded as `orders`.\n\n## Open Tasks\n- Check returns.\n\n"
    "## Next Step\n- Group returns by channel.\n"
)


def measure_overhead(stored: int, turns: int) -> dict[str, float]:
    """Median and max ms per step outside the model and the tool, with ``stored`` messages in the store.

    The summary's boundary leaves the last 20 stored messages as the window, as a compaction would.
    """
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "db")
        seed(store, "bench", stored)
        last_user = (stored - 1) // 4 * 4
        store.save_summary(Summary("bench", SUMMARY_TEXT, max(-1, last_user - 21), time.time()))
        store.optimize()
        script: list[ChatResponse | str] = []
        for _ in range(turns):
            script += [ScriptedModel.tool_call("list_variables", {}), "done"]
        model = ScriptedModel(script, context_window=128_000)
        config = Config.model_validate({"tools": {"python": {"approval": "auto"}}})
        session = Session("bench", config=config, store=store, model=model, namespace={"x": 1})
        window = len(session.window)
        outside = {"seconds": 0.0}
        session.model = _Timed(model, outside)  # type: ignore[assignment]
        execute = session.runner.run
        session.runner.run = lambda call, **kw: _timed(outside, execute, call, **kw)  # type: ignore[method-assign]
        per_step = []
        for _ in range(turns):
            outside["seconds"] = 0.0
            started = time.perf_counter()
            reply = session.ask("next question")
            per_step.append((time.perf_counter() - started - outside["seconds"]) / reply.steps)
        session.close()
        store.close()
    per_step_ms = sorted(1000 * s for s in per_step[2:])  # the first turns warm caches
    return {"p50": statistics.median(per_step_ms), "max": per_step_ms[-1], "window": window}


def _timed(outside: dict[str, float], func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    started = time.perf_counter()
    try:
        return func(*args, **kwargs)
    finally:
        outside["seconds"] += time.perf_counter() - started


class _Timed:
    """The scripted model with its own time counted as outside the loop."""

    def __init__(self, model: ScriptedModel, outside: dict[str, float]) -> None:
        self._model = model
        self._outside = outside
        self.name = model.name
        self.context_window = model.context_window

    def complete(self, *args: Any, **kwargs: Any) -> ChatResponse:
        return _timed(self._outside, self._model.complete, *args, **kwargs)


# --- report ---------------------------------------------------------------------------


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def strategy_tables(trace: Trace, results: list[Result], window: int) -> str:
    planted, steps = len(trace.planted), len(trace.steps)
    lines = [
        "| strategy | requests | prompt tokens sent | after the shared prefix | summary calls | summary input tokens "
        "| peak tokens | peak of window | overflows | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {r.requests} | {r.tokens_sent:,} | {r.uncached:,} | {r.summary_calls} | {r.summary_input:,} "
            f"| {r.peak:,} | {_pct(r.peak, window)} | {r.overflows} | {r.seconds:.1f} |"
        )
    lines += [
        "",
        "| strategy | planted ids in window | in summary/ledger | by handle | by recall | recoverable "
        "| by stored handle, id not in prompt | only in stored history | lost | tool outputs recoverable "
        "| saved, id not in prompt |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    places = ("window", "summary", "handle", "recall", "handle, id not in prompt", "history only", "lost")
    for r in results:
        n = {where: sum(v == where for v in r.found.values()) for where in places}
        kept = n["window"] + n["summary"] + n["handle"] + n["recall"]
        lines.append(
            f"| {r.name} | {n['window']} | {n['summary']} | {n['handle']} | {n['recall']} "
            f"| {kept}/{planted} ({_pct(kept, planted)}) "
            f"| {n['handle, id not in prompt']} | {n['history only']} | {n['lost']} "
            f"| {r.outputs_recoverable}/{steps} ({_pct(r.outputs_recoverable, steps)}) | {r.outputs_stored_only} |"
        )
    lines += ["", "| planted identifier | kind | step | placed in | " + " | ".join(r.name for r in results) + " |"]
    lines.append("|---|---|---:|---|" + "---|" * len(results))
    for p in trace.planted:
        row = " | ".join(r.found.get(p.value, "-") for r in results)
        lines.append(f"| `{p.value}` | {p.kind} | {p.step} | {p.carrier} | {row} |")
    failed = sum(r.failed_turns for r in results)
    lines += [
        "",
        f"monad: overflows are requests the provider refused; the session then compacted and retried "
        f"({failed} turn(s) still failed).",
    ]
    return "\n".join(lines)


def header(args: argparse.Namespace) -> str:
    command = " ".join(["python benchmarks/reference_trace.py", *sys.argv[1:]])
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"`{command}` — {now}; {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"lancedb {version('lancedb')}, langchain {version('langchain')}, langchain-core {version('langchain-core')}. "
        "Summaries by the extractive summarizer (no LLM) in every strategy; tokens are exact o200k counts."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="tool steps in the trace")
    parser.add_argument("--windows", type=int, nargs="*", default=[32_000, 64_000], help="context windows in tokens")
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10_000, 100_000], help="stored messages")
    parser.add_argument("--turns", type=int, default=20, help="turns timed per size")
    args = parser.parse_args()
    print(header(args))
    for window in args.windows:
        trace, results = run_strategies(args.steps, window)
        print(
            f"\n### Reference trace, {window:,}-token window\n\n{len(trace.steps)} tool steps in {len(trace.turns)} "
            f"turns, {trace.output_chars():,} chars of tool output, {len(trace.planted)} planted identifiers.\n"
        )
        print(strategy_tables(trace, results, window), flush=True)
    if args.sizes:
        print("\n### Per-step overhead of the whole cascade\n")
        print("| stored messages | window messages | overhead per step p50 (ms) | max (ms) |")
        print("| ---: | ---: | ---: | ---: |")
        for size in args.sizes:
            m = measure_overhead(size, args.turns)
            print(f"| {size:,} | {m['window']:.0f} | {m['p50']:.1f} | {m['max']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
