"""What lossless eviction costs per pass and what it buys over a long tool-heavy session.

    python benchmarks/eviction.py

Tool outputs are slices of a corpus built here (Python source, CSV rows, prose, JSON),
with sizes drawn from a log-normal around 1.5 K chars; outputs over 24 K chars are
truncated head/tail at execution time and their full text counts as already spilled.
Token counts use ``TokenCounter("gpt-4o")`` (exact o200k) when its BPE is available,
else chars/4. Eviction settings are the defaults: at 0.5 of the window, keep 3 rounds,
clear at least 2,000 tokens, skip results under 200 tokens.

Table 1, cost of one ``plan_eviction`` pass by transcript length: with a chars/4 counter
(the planner's own overhead), with the real counter on a cold cache (every result counted
once), and on the next step after the plan is applied (what each later step pays: results
too small to evict are counted again, so this grows with the number of small results; a
real window holds hundreds of messages, not 100,000, since summarization bounds it).

Table 2, a 300-step session in a 128 K window with no summarization, so only eviction
relieves the pressure: occupancy with and without eviction, passes, tokens reclaimed.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monad_notebook.context.lossless.eviction import plan_eviction
from monad_notebook.context.lossless.truncation import truncate_tool_output
from monad_notebook.messages import Message, ToolCall, apply_placeholders

WINDOW = 128_000
BASELINE_TOKENS = 3_000  # system prompt and tool schemas
MAX_CHARS = 24_000
SETTINGS = {"at_fraction": 0.5, "keep_recent_rounds": 3, "clear_at_least": 2000, "min_result_tokens": 200}
TOOLS = ("run_python", "read_file", "inspect_dataframe", "list_files")


def corpus() -> str:
    rng = random.Random(7)
    code = "\n\n".join(inspect.getsource(importlib.import_module(m)) for m in ("json.decoder", "csv", "textwrap"))
    rows = "\n".join(
        f"{i},{rng.choice(['north', 'south', 'east', 'west'])},{rng.uniform(0, 1e5):.2f},2024-{i % 12 + 1:02d}-01"
        for i in range(20_000)
    )
    records = json.dumps([{"id": i, "name": f"user{i}", "score": rng.random()} for i in range(4000)], indent=1)
    prose = " ".join(
        rng.choice(["the", "model", "reads", "a", "file", "and", "finds", "data", "rows"]) for _ in range(60_000)
    )
    return "\n".join([code, rows, records, prose])


class Outputs:
    """Realistic tool outputs: varied sizes and content, every one a distinct string."""

    def __init__(self, seed: int) -> None:
        self.text = corpus()
        self.rng = random.Random(seed)

    def next(self, call_id: str) -> str:
        size = min(int(self.rng.lognormvariate(math.log(1500), 1.3)), 200_000)
        start = self.rng.randrange(0, len(self.text) - 1)
        body = (self.text[start:] + self.text)[:size]
        return f"{call_id}\n{body}"


def step(outputs: Outputs, turn: int, n: int, spilled: set[str]) -> list[Message]:
    """One round: an assistant message with 1-3 parallel calls and their (truncated) results."""
    width = outputs.rng.choices((1, 2, 3), weights=(7, 2, 1))[0]
    calls = [ToolCall(f"call_{n}_{i}", outputs.rng.choice(TOOLS), "{}") for i in range(width)]
    messages = [Message("assistant", "Let me check that.", turn=turn, step=n, tool_calls=calls)]
    for call in calls:
        raw = outputs.next(call.id)
        if len(raw) > MAX_CHARS:
            spilled.add(call.id)
        content = truncate_tool_output(raw, tool_call_id=call.id, max_chars=MAX_CHARS, recoverable=True)
        messages.append(Message("tool", content, turn=turn, step=n, tool_call_id=call.id, name=call.name))
    return messages


def transcript(n_messages: int, seed: int = 1) -> tuple[list[Message], set[str]]:
    outputs, spilled, messages = Outputs(seed), set(), []
    n = 0
    while len(messages) < n_messages:
        if n % 10 == 0:
            messages.append(Message("user", "Next question about the data.", turn=n // 10))
        messages.extend(step(outputs, n // 10, n, spilled))
        n += 1
    return messages[:n_messages], spilled


def counters() -> tuple[str, Callable[[], Callable[[str], int]]]:
    """The real counter's name and a factory for fresh (cold-cache) instances; chars/4 without a BPE."""
    try:
        from monad_notebook.context.occupancy.tokens import TokenCounter

        if TokenCounter("gpt-4o").exact:
            return "o200k", lambda: TokenCounter("gpt-4o").count_text
    except ImportError:
        pass
    return "chars/4", lambda: chars4


def chars4(text: str) -> int:
    return (len(text) + 3) // 4


def timed_plan(messages: list[Message], count: Callable[[str], int], spilled: set[str], occupancy: int = WINDOW):
    start = time.perf_counter()
    plan = plan_eviction(
        messages,
        occupancy=occupancy,
        context_window=WINDOW,
        count_tokens=count,
        has_raw=lambda ids: spilled & set(ids),
        persist_raw=True,
        **SETTINGS,
    )
    return plan, (time.perf_counter() - start) * 1000


def cost_table(name: str, make_counter: Callable[[], Callable[[str], int]]) -> None:
    columns = ["messages", "tool text MB", "plan, chars/4 (ms)", f"plan, {name} cold (ms)", "next step (ms)"]
    print("| " + " | ".join([*columns, "evicted", "reclaimed"]) + " |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in (100, 1_000, 10_000, 100_000):
        messages, spilled = transcript(size)
        megabytes = sum(len(m.content) for m in messages if m.role == "tool") / 1e6
        fast = min(timed_plan(messages, chars4, spilled)[1] for _ in range(3))
        count = make_counter()
        plan, cold = timed_plan(messages, count, spilled)
        apply_placeholders(messages, plan.placeholders)
        following = min(timed_plan(messages, count, spilled)[1] for _ in range(3))
        print(
            f"| {size:,} | {megabytes:.1f} | {fast:.1f} | {cold:.0f} | {following:.1f} "
            f"| {len(plan.placeholders):,} | {plan.reclaimed_tokens:,} |"
        )


def session_table(name: str, count: Callable[[str], int], steps: int = 300) -> None:
    outputs, spilled = Outputs(2), set()
    messages: list[Message] = []
    plain = BASELINE_TOKENS
    passes = reclaimed = spill_bytes = peak = 0
    overflow_step = None
    pass_ms: list[float] = []
    print(f"Tokens counted with {name}; window {WINDOW:,}.\n")
    print("| step | occupancy, no eviction | occupancy, eviction | of window | passes | reclaimed so far |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in range(steps):
        new = ([Message("user", "Next question about the data.")] if n % 10 == 0 else []) + step(outputs, 0, n, spilled)
        messages.extend(new)
        plain += sum(count(m.content) for m in new)
        overflow_step = overflow_step or (n + 1 if plain > WINDOW else None)
        occupancy = BASELINE_TOKENS + sum(count(m.sent_content) for m in messages)
        peak = max(peak, occupancy)
        plan, ms = timed_plan(messages, count, spilled, occupancy)
        if plan:
            apply_placeholders(messages, plan.placeholders)
            spill_bytes += sum(len(text.encode()) for text in plan.spill.values())
            spilled |= set(plan.spill)
            passes, reclaimed = passes + 1, reclaimed + plan.reclaimed_tokens
            pass_ms.append(ms)
        if (n + 1) % 50 == 0:
            now = BASELINE_TOKENS + sum(count(m.sent_content) for m in messages)
            print(f"| {n + 1} | {plain:,} | {now:,} | {now / WINDOW:.0%} | {passes} | {reclaimed:,} |")
    print(
        f"\nWithout eviction the window overflows at step {overflow_step}; with it occupancy peaks at {peak:,} "
        f"({peak / WINDOW:.0%}). {passes} passes over {steps} steps, median pass "
        f"{sorted(pass_ms)[len(pass_ms) // 2]:.1f} ms; eviction spilled {spill_bytes / 1e6:.1f} MB of "
        "untruncated results so every placeholder has a recovery handle."
    )


def main() -> None:
    name, make_counter = counters()
    cost_table(name, make_counter)
    print()
    session_table(name, make_counter())


if __name__ == "__main__":
    main()
