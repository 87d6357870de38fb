"""What each context strategy is billed for the reference trace, with a provider's prefix cache and pauses.

    python benchmarks/cost.py [--steps 300] [--windows 32000 64000 128000] [--discounts 1 0.5 0.1] [--retrieval]
                              [--workspace]

Raw prompt tokens hide what a provider bills: the part of a request that repeats a recent
request's prefix is served from its cache at a discount ``d`` (OpenAI 0.5 or less, Anthropic
0.1), and a cached prefix is forgotten ``ttl`` seconds after its last use. So the trace
(``benchmarks/trace.py``) gets seeded pauses: seconds between the steps of a turn, and
between turns a person reading, sometimes longer than the cache lifetime.

The provider's cache is simulated: a request's cached part is the longest prefix (tools and
leading messages, counted in o200k tokens, message by message, then the text the first message
that differs shares with its counterpart when both are of one role and answer one call) it shares
with any request answered within the last ``ttl`` seconds. Billed input = uncached + d x cached. A
request over the window is refused: it counts as an overflow, is not billed and caches nothing.

Strategies, each meeting the trace as an agent loop would (one request per step and per answer):

1. send everything;
2. summarize-only, keeping the newest 25% of the window by tokens and folding the rest into a
   rolling summary (extractive, as everywhere here) whenever a request would pass 75%;
3. LangChain ``ClearToolUsesEdit`` (keep 3, trigger at 50%) with ``trim_messages``, as in
   ``reference_trace.py``;
4. LangChain ``SummarizationMiddleware`` (trigger at 75%, keep 20 messages), run for real with
   the same extractive summarizer;
5. monad: a real ``Session`` (as ``reference_trace.run_monad``) whose clock follows the
   simulated pauses and whose ``models.main.cache`` states the cell's ``d``.
   With ``--retrieval``, monad runs a second time with ``context.retrieval`` on. With
   ``--workspace``, monad's kernel holds what the trace's code makes (``orders``, a 1,000 x 14
   DataFrame, there before the session; each name a step's code assigns, bound to such a frame when
   the step is replayed) and monad runs twice: with the ``<workspace>`` block (the default) and
   with ``context.workspace.enabled`` false, so the block's cost is the difference.

Findable, as in ``benchmarks/fidelity.py``: of the trace's planted identifiers, how many an agent
that has forgotten them can still reach at the end: verbatim in the last request (window,
summary, ledger), in a saved output whose ``read_tool_output`` id that request shows (monad), or
in the ``recall`` tool's answer to the identifier's probe (monad). A last request that was
refused reaches nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.reference_trace import (
    DecliningModel,
    Provider,
    Result,
    _as_message,
    _history_after,
    _SummarySink,
    replay_tool,
    to_langchain,
    tool_schemas,
)
from benchmarks.trace import COLUMNS, Planted, Trace, generate_trace, replay_events
from monad_notebook.agent.instructions import SYSTEM_PROMPT
from monad_notebook.agent.tools.base import Tool, ToolContext, tool
from monad_notebook.config import Config
from monad_notebook.context.compaction.compactor import Compactor, choose_span
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.summarize import LLMSummarizer
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.prompt import assemble
from monad_notebook.errors import ContextLengthError
from monad_notebook.messages import Message, ToolCall
from monad_notebook.session import Session
from monad_notebook.store.base import Summary
from monad_notebook.store.lance import LanceStore

TTL_SECONDS = 300.0
SOFT_FRACTION = 0.75
KEEP_FRACTION = 0.25
Messages = list[dict[str, Any]]
ASSIGNED = re.compile(r"^([A-Za-z_]\w*) = ", re.MULTILINE)  # a name a step's code binds


@dataclass
class Clock:
    """Simulated seconds since the session began; every strategy's requests are stamped with it."""

    now: float = 1_000_000.0

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


@dataclass
class Pauses:
    """Seeded pauses: before each turn (a person reading; about a third outlast a 5-minute cache) and per step."""

    before_turn: list[float]
    per_step: dict[int, float]

    @classmethod
    def for_trace(cls, trace: Trace, seed: int = 11) -> Pauses:
        rng = random.Random(seed)
        before = [rng.uniform(360, 2400) if rng.random() < 0.35 else rng.uniform(15, 200) for _ in trace.turns]
        return cls(before, {step.index: rng.uniform(4, 40) for step in trace.steps})


@dataclass
class Sent:
    at: float
    messages: Messages
    tokens: int
    refused: bool


@dataclass
class Log:
    """Every request a strategy sent, in order."""

    name: str
    window: int
    clock: Clock
    requests: list[Sent] = field(default_factory=list)
    seconds: float = 0.0
    findable: int = 0  # planted identifiers reachable at the end (see the module's docstring)

    def send(self, messages: Messages, tokens: int) -> bool:
        refused = tokens > self.window
        self.requests.append(Sent(self.clock.now, messages, tokens, refused))
        return not refused


@dataclass
class Bill:
    billed: float = 0.0
    sent: int = 0
    cached: int = 0
    overflows: int = 0


class PrefixCache:
    """A provider's prefix cache at message granularity: the longest prefix shared with a live request."""

    def __init__(self, counter: TokenCounter, tools: list[dict[str, Any]]) -> None:
        self.counter = counter
        self.head = counter.count_messages([], tools)  # priming and tools lead every request
        self.priming = counter.count_messages([])
        self._tokens: dict[str, int] = {}
        self._keys: dict[int, tuple[dict[str, Any], str]] = {}

    def _key(self, message: dict[str, Any]) -> str:
        hit = self._keys.get(id(message))
        if hit is None or hit[0] is not message:
            digest = hashlib.blake2b(json.dumps(message, sort_keys=True).encode(), digest_size=16).hexdigest()
            hit = self._keys[id(message)] = (message, digest)
            if digest not in self._tokens:
                self._tokens[digest] = self.counter.count_messages([message]) - self.priming
        return hit[1]

    def bill(self, log: Log, discount: float, ttl: float) -> Bill:
        bill = Bill()
        live: list[tuple[float, list[str], Messages]] = []
        for request in log.requests:
            if request.refused:
                bill.overflows += 1
                continue
            keys = [self._key(m) for m in request.messages]
            live = [entry for entry in live if request.at - entry[0] <= ttl]
            best = max(live, key=lambda entry: _common(keys, entry[1]), default=None)
            shared = _common(keys, best[1]) if best is not None else 0
            cached = 0
            if shared:
                partial = self._shared_text(request.messages, best[2], shared) if best is not None else 0
                cached = min(request.tokens, self.head + sum(self._tokens[k] for k in keys[:shared]) + partial)
            bill.sent += request.tokens
            bill.cached += cached
            bill.billed += request.tokens - cached + discount * cached
            live.append((request.at, keys, request.messages))
        return bill

    def _shared_text(self, messages: Messages, earlier: Messages, index: int) -> int:
        """Tokens of the text the first differing message shares with the earlier request's, as a provider's
        token-level cache keeps them (less one: the token at the edge may differ)."""
        if index >= len(messages) or index >= len(earlier):
            return 0
        new, old = messages[index], earlier[index]
        same_slot = new.get("role") == old.get("role") and new.get("tool_call_id") == old.get("tool_call_id")
        if not same_slot or not isinstance(new.get("content"), str) or not isinstance(old.get("content"), str):
            return 0
        a, b = new["content"], old["content"]
        length = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        return max(0, self.counter.count_text(a[:length]) - 1) if length else 0


def _prompt_text(messages: Messages) -> str:
    parts = []
    for message in messages:
        parts += [str(message.get("content") or ""), str(message.get("tool_call_id") or "")]
        parts.extend(f"{c['id']} {c['function']['arguments']}" for c in message.get("tool_calls") or ())
    return "\n".join(parts)


def findable(
    trace: Trace,
    log: Log,
    handle: Callable[[str], str | None] = lambda call_id: None,
    recall: Callable[[Planted], str] | None = None,
) -> int:
    """Planted identifiers the end of the session still reaches: the last request, a handle it shows, recall."""
    if not log.requests or log.requests[-1].refused:
        return 0
    text = _prompt_text(log.requests[-1].messages)
    found = 0
    for plant in trace.planted:
        call_id = trace.steps[plant.step - 1].call_id
        by_handle = call_id in text and plant.value in (handle(call_id) or "")
        found += plant.value in text or by_handle or (recall is not None and plant.value in recall(plant))
    return found


def _common(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _drive(trace: Trace, pauses: Pauses, log: Log, request: Callable[[], None], add: Callable[[Messages], None]) -> Log:
    """Replay the trace's events through a simulated strategy: ``request`` before each step and answer."""
    turn = -1
    started = time.perf_counter()
    for kind, value in replay_events(trace):
        if kind == "user":
            turn += 1
            log.clock.advance(pauses.before_turn[turn])
        else:
            request()
        add(_history_after((kind, value)))
        if kind == "step":
            log.clock.advance(pauses.per_step[value.index])
    log.seconds = time.perf_counter() - started
    log.findable = findable(trace, log)
    return log


def run_everything(trace: Trace, pauses: Pauses, window: int, tools: list[Any], counter: TokenCounter) -> Log:
    log = Log("send everything", window, Clock())
    history: Messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    total = [counter.count_messages(history, tools)]
    priming = counter.count_messages([])

    def add(messages: Messages) -> None:
        history.extend(messages)
        total[0] += sum(counter.count_messages([m]) - priming for m in messages)

    return _drive(trace, pauses, log, lambda: log.send(list(history), total[0]), add)


def run_summarize_budget(trace: Trace, pauses: Pauses, window: int, tools: list[Any], counter: TokenCounter) -> Log:
    """Fold all but the newest KEEP_FRACTION of the window (by tokens) once a request would pass SOFT_FRACTION."""
    log = Log(f"summarize-only (keep newest {KEEP_FRACTION:.0%} by tokens)", window, Clock())
    compactor = Compactor(
        store=_SummarySink(),  # type: ignore[arg-type]
        session="sim",
        fallback=ExtractiveSummarizer(),
        counter=counter,
        reflect_at_tokens=4000,
        ledger_max_items=0,
    )
    summarizer = LLMSummarizer(DecliningModel(counter, Result("sink")))  # type: ignore[arg-type]
    state: dict[str, Any] = {"messages": [], "summary": None}
    priming = counter.count_messages([])
    sizes: dict[str, int] = {}

    def size(message: Message) -> int:
        if message.id not in sizes:
            sizes[message.id] = counter.count_messages([message.to_openai()]) - priming
        return sizes[message.id]

    def prompt() -> tuple[Messages, int]:
        summary: Summary | None = state["summary"]
        built = assemble(
            system=SYSTEM_PROMPT, memory="", summary=summary and summary.text, window=state["messages"], tools=tools
        )
        return built.messages, counter.count_messages(built.messages, tools)

    def request() -> None:
        messages, tokens = prompt()
        if tokens > SOFT_FRACTION * window:
            keep, budget = 0, KEEP_FRACTION * window
            for message in reversed(state["messages"]):
                budget -= size(message)
                if budget < 0:
                    break
                keep += 1
            span = choose_span(state["messages"], max(1, keep))
            done = compactor.fold(state["messages"], span, state["summary"], summarizer) if span else None
            if done is not None:
                state["summary"] = done.summary
                folded = set(done.folded_ids)
                state["messages"] = [m for m in state["messages"] if m.id not in folded]
                messages, tokens = prompt()
        log.send(messages, tokens)

    def add(messages: Messages) -> None:
        state["messages"].extend(_as_message(m, len(state["messages"]) + i) for i, m in enumerate(messages))

    return _drive(trace, pauses, log, request, add)


def _langchain_counter(counter: TokenCounter) -> Callable[[list[Any]], int]:
    from langchain_core.messages import convert_to_openai_messages

    cache: dict[int, tuple[Any, int]] = {}
    priming = counter.count_messages([])

    def count(messages: list[Any]) -> int:
        total = 0
        for message in messages:
            hit = cache.get(id(message))
            if hit is None or hit[0] is not message:
                tokens = counter.count_messages(convert_to_openai_messages([message])) - priming
                hit = cache[id(message)] = (message, tokens)
            total += hit[1]
        return total

    return count


def send_trimmed(
    log: Log, edited: list[Any], count: Callable[[list[Any]], int], counter: TokenCounter, tools: list[Any]
) -> None:
    """``trim_messages`` to the window (the newest that fit, from a human message on), then one request."""
    from langchain_core.messages import convert_to_openai_messages, trim_messages

    kept = trim_messages(
        edited,
        max_tokens=log.window - counter.count_messages([], tools),
        token_counter=count,
        strategy="last",
        start_on="human",
        include_system=True,
    )
    final = convert_to_openai_messages(kept)
    log.send(final, counter.count_messages(final, tools))


def run_langchain_clear(trace: Trace, pauses: Pauses, window: int, tools: list[Any], counter: TokenCounter) -> Log:
    from langchain.agents.middleware import ClearToolUsesEdit
    from langchain_core.messages import SystemMessage

    log = Log("LangChain ClearToolUsesEdit + trim", window, Clock())
    head = counter.count_messages([], tools)
    count = _langchain_counter(counter)
    edit = ClearToolUsesEdit(trigger=window // 2, clear_at_least=0, keep=3, placeholder="[cleared]", exclude_tools=())
    history: list[Any] = [SystemMessage(SYSTEM_PROMPT)]

    def request() -> None:
        edited = list(history)
        edit.apply(edited, count_tokens=lambda messages: head + count(messages))
        send_trimmed(log, edited, count, counter, tools)

    return _drive(trace, pauses, log, request, lambda messages: history.extend(map(to_langchain, messages)))


def run_langchain_summarize(trace: Trace, pauses: Pauses, window: int, tools: list[Any], counter: TokenCounter) -> Log:
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import SystemMessage, convert_to_openai_messages

    log = Log("LangChain SummarizationMiddleware", window, Clock())
    head = counter.count_messages([], tools) + counter.count_messages([{"role": "system", "content": SYSTEM_PROMPT}])
    count = _langchain_counter(counter)
    extractive = ExtractiveSummarizer()

    def summarize(messages: list[Any]) -> str:
        data = convert_to_openai_messages(messages)
        return extractive.summarize(None, [_as_message(m, i) for i, m in enumerate(data)])

    middleware = SummarizationMiddleware(
        FakeListChatModel(responses=["unused"]),
        trigger=("tokens", int(SOFT_FRACTION * window) - head),
        keep=("messages", 20),
        token_counter=count,
        summarizer=summarize,
    )
    state: dict[str, list[Any]] = {"messages": []}
    system = SystemMessage(SYSTEM_PROMPT)

    def request() -> None:
        update = middleware.before_model(state, None)  # type: ignore[arg-type]
        if update is not None:
            state["messages"] = list(update["messages"][1:])  # after RemoveMessage(REMOVE_ALL_MESSAGES)
        final = convert_to_openai_messages([system, *state["messages"]])
        log.send(final, counter.count_messages(final, tools))

    return _drive(trace, pauses, log, request, lambda messages: state["messages"].extend(map(to_langchain, messages)))


def orders_frame() -> Any:
    """What the trace's code works on: a 1,000-row frame with the trace's 14 columns (its values do not matter)."""
    import pandas as pd

    return pd.DataFrame(0, index=range(1000), columns=COLUMNS)


def paced_replay_tool(trace: Trace, clock: Clock, pauses: Pauses, *, binds: bool = False) -> Tool:
    """``replay`` that lets the step's simulated time pass, as running the code and the next request would;
    ``binds``: each name the code assigns is bound in the kernel, as running it would."""
    recorded = replay_tool(trace).func

    def replay(ctx: ToolContext, step: int, code: str = "") -> str:
        """Run the code of one recorded step and return its recorded output.

        Args:
            step: The trace step to replay.
            code: The code that step ran (recorded for the transcript).
        """
        clock.advance(pauses.per_step[step])
        if binds:
            ctx.namespace.update((name, orders_frame()) for name in ASSIGNED.findall(code))
        return recorded(ctx, step, code)

    return tool(replay)


def run_monad(
    trace: Trace,
    pauses: Pauses,
    window: int,
    discount: float,
    counter: TokenCounter,
    tmp: Path,
    *,
    retrieval: bool = False,
    kernel: bool | None = None,
) -> Log:
    """``kernel``: None, the kernel holds nothing; else it holds what the trace's code makes, and the
    ``<workspace>`` block is sent when True."""
    name = "monad cascade" + (" + retrieval" if retrieval else "")
    name += {None: "", True: " (workspace block)", False: " (no workspace block)"}[kernel]
    log = Log(name, window, Clock())
    result = Result("monad")
    store = LanceStore(tmp / f"db-{window}-{discount}-{retrieval}-{kernel}")
    provider = Provider(counter, window, result)
    config = Config.model_validate(
        {
            "models": {"main": {"contextWindow": window, "cache": {"discount": discount, "ttlSeconds": TTL_SECONDS}}},
            "agent": {"maxSteps": 64},
            "context": {"retrieval": {"enabled": retrieval}, "workspace": {"enabled": kernel is not False}},
        }
    )
    session = Session(
        "cost",
        config=config,
        store=store,
        model=provider,  # type: ignore[arg-type]
        fast_model=DecliningModel(counter, result),  # type: ignore[arg-type]
        extra_tools=[paced_replay_tool(trace, log.clock, pauses, binds=kernel is not None)],
        namespace={} if kernel is None else {"orders": orders_frame()},
    )
    session.cascade.meter.cost.clock = log.clock
    tools = [t.schema() for t in session.tools.values()]
    provider.tools_tokens = counter.count_messages([], tools) - counter.count_messages([])
    complete = provider.complete

    def logged(messages: Messages, tools: list[Any], on_text: Any = None) -> Any:
        log.send(messages, counter.count_messages(messages, tools))
        return complete(messages, tools, on_text=on_text)

    provider.complete = logged  # type: ignore[method-assign]
    started = time.perf_counter()
    for turn, pause in zip(trace.turns, pauses.before_turn, strict=True):
        log.clock.advance(pause)
        provider.start_turn(turn)
        with contextlib.suppress(ContextLengthError):
            session.ask(turn.user)
        session.wait_for_background()
    log.seconds = time.perf_counter() - started

    def recall(plant: Planted) -> str:
        call = ToolCall(f"probe_{plant.step}", "recall", json.dumps({"query": plant.probe}))
        return session.execute_tool(call).text

    session.wait_for_background()
    log.findable = findable(trace, log, lambda call_id: store.get_raw_output(session.name, call_id), recall)
    session.close()
    store.close()
    return log


def table(rows: list[tuple[int, float, dict[str, Bill]]], names: list[str]) -> str:
    lines = [
        "| window | d | " + " | ".join(names) + " | cheapest without overflows | monad vs it |",
        "|---:|---:|" + "---:|" * len(names) + "---|---:|",
    ]
    for window, discount, bills in rows:
        cells = [f"{bills[n].billed / 1e6:.2f}M ({bills[n].overflows})" for n in names]
        fits = {n: b.billed for n, b in bills.items() if b.overflows == 0}
        best = min(fits, key=fits.__getitem__) if fits else "-"
        monad = next(n for n in names if n.startswith("monad cascade"))  # the first monad run: the default's
        ratio = f"{bills[monad].billed / fits[best]:.2f}x" if best != "-" else "-"
        lines.append(f"| {window // 1000}k | {discount:g} | " + " | ".join(cells) + f" | {best} | {ratio} |")
    return "\n".join(lines)


def findable_table(rows: list[tuple[int, float, dict[str, Log]]], names: list[str], planted: int) -> str:
    lines = [
        f"Planted identifiers findable at the end, of {planted} (as in benchmarks/fidelity.py):",
        "",
        "| window | d | " + " | ".join(names) + " |",
        "|---:|---:|" + "---:|" * len(names),
    ]
    for window, discount, logs in rows:
        lines.append(f"| {window // 1000}k | {discount:g} | " + " | ".join(str(logs[n].findable) for n in names) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="tool steps in the trace")
    parser.add_argument("--windows", type=int, nargs="*", default=[32_000, 64_000, 128_000])
    parser.add_argument("--discounts", type=float, nargs="*", default=[1.0, 0.5, 0.1])
    parser.add_argument("--seed", type=int, default=11, help="seed of the pauses")
    parser.add_argument(
        "--retrieval", action="store_true", help="also run monad with context.retrieval on (its blocks are billed too)"
    )
    parser.add_argument(
        "--workspace",
        action="store_true",
        help="the kernel holds what the trace's code makes: monad with the <workspace> block and without it",
    )
    args = parser.parse_args()
    logging.getLogger("monad_notebook").setLevel(logging.ERROR)
    trace = generate_trace(args.steps)
    pauses = Pauses.for_trace(trace, args.seed)
    counter = TokenCounter("gpt-4o")
    long_pauses = sum(p > TTL_SECONDS for p in pauses.before_turn)
    print(
        f"{len(trace.steps)} tool steps in {len(trace.turns)} turns; {long_pauses} pauses between turns outlast the "
        f"{TTL_SECONDS:.0f}-s cache. Billed input tokens (uncached + d x cached), overflows in brackets."
    )
    simulated = [run_everything, run_summarize_budget, run_langchain_clear, run_langchain_summarize]
    rows: list[tuple[int, float, dict[str, Bill]]] = []
    found: list[tuple[int, float, dict[str, Log]]] = []
    names: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        tools = tool_schemas(trace, Path(tmp))
        cache = PrefixCache(counter, tools)
        for window in args.windows:
            logs = [run(trace, pauses, window, tools, counter) for run in simulated]
            for discount in args.discounts:
                kernels = [True, False] if args.workspace else [None]
                ours = [run_monad(trace, pauses, window, discount, counter, Path(tmp), kernel=k) for k in kernels]
                if args.retrieval:
                    with_retrieval = run_monad(
                        trace, pauses, window, discount, counter, Path(tmp), retrieval=True, kernel=kernels[0]
                    )
                    ours.append(with_retrieval)
                bills = {log.name: cache.bill(log, discount, TTL_SECONDS) for log in [*logs, *ours]}
                names = list(bills)
                rows.append((window, discount, bills))
                found.append((window, discount, {log.name: log for log in [*logs, *ours]}))
                print(
                    f"  {window:,} d={discount:g}: "
                    + ", ".join(f"{n} {b.billed / 1e6:.2f}M" for n, b in bills.items()),
                    file=sys.stderr,
                    flush=True,
                )
    print()
    print(table(rows, names))
    print()
    print(findable_table(found, names, len(trace.planted)))


if __name__ == "__main__":
    main()
