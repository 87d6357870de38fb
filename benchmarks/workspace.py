"""The workspace block on a long session: what the final request still names verbatim, with the block and without.

    python benchmarks/workspace.py [--turns 42] [--window 16000] [--summarizers good weak failing] [--cost]

A real ``Session`` (LanceDB in a temporary directory, the python tool running the agent's code
for real in a plain namespace, the notebook's directory a temporary one) is driven by a scripted
main model: each turn the agent creates a DataFrame with two columns named for the turn (20 of
them over 42 turns, a few deleted again), or writes a Parquet file with ``to_parquet`` (21),
prints a long report and answers at length, so the 16,000-token window compacts again and again. Summaries come
from ``benchmarks/fidelity.py``'s scripted fast model: "good", "weak" (empty headings) or
"failing" (errors: the extractive summary writes), the identifier ledger attached in all three.

Each summarizer runs twice: with the ``<workspace>`` block (the default) and without it
(``context.workspace.enabled`` false: the summary and its ledger alone). Reported:

- of the names the namespace holds at the end, of their columns, and of the files under the
  directory, the share verbatim (as a whole word) in the final request;
- the block's tokens per request (o200k), median and largest;
- billed input over the whole session with a provider's prefix cache (every request served its
  longest message-by-message prefix shared with the previous request at a 0.5 discount, as
  OpenAI bills; no pauses): the block's cost is what it adds;
- with ``--cost``, the cost of taking the record per tool call at 10, 1,000 and 10,000 names
  (``benchmarks/workspace_cost.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fidelity import FastModel
from monad_notebook.config import Config
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.events import COMPACTION_FINISHED
from monad_notebook.messages import ToolCall
from monad_notebook.provider import ChatResponse, Usage
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel

TOPICS = ["sales", "churn", "stock", "visits", "refunds", "leads", "tickets", "costs", "orders", "shifts"]
REPORT_LINES = 60
ANSWER = (
    "The figures of this step agree with the earlier ones: the totals reconcile, the regions line up with last "
    "quarter's, and nothing needs a second look before the next step. "
)
ANSWER_REPEATS = 20  # about 620 tokens an answer: the part of the window eviction cannot clear, so it compacts
DISCOUNT = 0.5


def calls_for(turn: int) -> list[str]:
    """The code the agent runs at ``turn``: a frame or a file, a deletion now and then, and a long report."""
    topic = f"{TOPICS[turn % len(TOPICS)]}_{turn}"
    if turn % 2 == 0:
        made = f"df_{topic} = pd.DataFrame({{'{topic}_region': ['n', 's'] * 5, '{topic}_amount': range(10)}})"
    else:
        made = f"pd.DataFrame({{'x': range(5)}}).to_parquet('out/{topic}.parquet')"
    if turn % 10 == 6:  # a frame made four turns ago goes again
        made += f"\ndel df_{TOPICS[(turn - 4) % len(TOPICS)]}_{turn - 4}"
    report = (
        f"for i in range({REPORT_LINES}):\n    print(f'{topic} check {{i}}: totals reconciled against the ledger, ok')"
    )
    return [f"import pandas as pd\n{made}", report]


def script(turns: int) -> list[tuple[str, list[ChatResponse | str]]]:
    out = []
    for turn in range(turns):
        steps: list[ChatResponse | str] = [
            ChatResponse(
                content="",
                tool_calls=[ToolCall(f"call_t{turn}s{i}", "python", json.dumps({"code": code}))],
                finish_reason="tool_calls",
            )
            for i, code in enumerate(calls_for(turn))
        ]
        out.append(
            (f"Step {turn}: go on with the analysis.", [*steps, f"Done with step {turn}. " + ANSWER * ANSWER_REPEATS])
        )
    return out


@dataclass
class Run:
    quality: str
    block: bool
    names: tuple[int, int] = (0, 0)  # (verbatim, live)
    columns: tuple[int, int] = (0, 0)
    paths: tuple[int, int] = (0, 0)
    compactions: int = 0
    block_tokens: list[int] = field(default_factory=list)
    billed: float = 0.0
    requests: int = 0
    missing: list[str] = field(default_factory=list)


def text_of(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        parts.append(str(message.get("content") or ""))
        parts.extend(c["function"]["arguments"] for c in message.get("tool_calls") or ())
    return "\n".join(parts)


def billed_input(requests: list[list[dict[str, Any]]], counter: TokenCounter, tools_tokens: int) -> float:
    """Uncached + ``DISCOUNT`` x cached, summed; a request's cached part is the prefix it shares with the one before."""
    total, previous = 0.0, []
    for messages in requests:
        counts = [counter.count_messages([m]) - counter.count_messages([]) for m in messages]
        shared = 0
        while shared < min(len(messages), len(previous)) and messages[shared] == previous[shared]:
            shared += 1
        cached = sum(counts[:shared]) + (tools_tokens if previous else 0)
        whole = sum(counts) + tools_tokens
        total += (whole - cached) + DISCOUNT * cached
        previous = messages
    return total


def run(turns: int, quality: str, block: bool, window: int, tmp: Path) -> Run:
    result = Run(quality, block)
    root = tmp / f"{quality}-{block}"
    (root / "out").mkdir(parents=True)
    counter = TokenCounter("gpt-4o")
    store = LanceStore(tmp / f"db-{quality}-{block}")
    model = ScriptedModel([], name="gpt-4o", context_window=window)
    config = Config.model_validate(
        {
            "models": {"main": {"contextWindow": window}, "embedding": {"provider": "none"}},
            "tools": {"python": {"approval": "auto"}},
            "context": {"workspace": {"enabled": block}},
        }
    )
    namespace: dict[str, Any] = {"__name__": "__main__"}
    cwd = os.getcwd()
    os.chdir(root)
    try:
        session = Session(
            "bench", config=config, store=store, model=model, fast_model=FastModel(quality), namespace=namespace,
            root=root,
        )  # fmt: skip
        tools_tokens = counter.count_messages(
            [], [t.schema() for t in session.tools.values()]
        ) - counter.count_messages([])
        model._usage = lambda messages: Usage(counter.count_messages(messages) + tools_tokens, 30)
        with contextlib.redirect_stdout(io.StringIO()):  # the reports the agent's code prints
            for user, steps in script(turns):
                model.queue(*steps)
                session.ask(user)
        session.cascade.compaction.background.wait()
        result.compactions = len(store.list_events("bench", kind=COMPACTION_FINISHED))
        session.close()
    finally:
        os.chdir(cwd)
    final = text_of(model.calls[-1].messages)
    frames = {k: v for k, v in namespace.items() if k.startswith("df_")}
    columns = [str(c) for v in frames.values() for c in v.columns]
    paths = [p.relative_to(root).as_posix() for p in root.rglob("*.parquet")]

    def found(items: list[str]) -> tuple[int, int]:
        missed = [i for i in items if not re.search(rf"(?<![\w/.]){re.escape(i)}(?![\w])", final)]
        result.missing.extend(missed[:3])
        return len(items) - len(missed), len(items)

    result.names, result.columns, result.paths = found(list(frames)), found(columns), found(paths)
    blocks = [
        next((m["content"] for m in c.messages if "<workspace>" in str(m.get("content"))), "") for c in model.calls
    ]
    result.block_tokens = [counter.count_text(b) for b in blocks if b]
    result.requests = len(model.calls)
    result.billed = billed_input([c.messages for c in model.calls], counter, tools_tokens)
    store.close()
    return result


def share(pair: tuple[int, int]) -> str:
    return f"{pair[0]}/{pair[1]} ({pair[0] / pair[1]:.0%})" if pair[1] else "-"


def report(runs: list[Run]) -> str:
    lines = [
        "| summarizer | block | compactions | live names | their columns | written paths | block tokens/request"
        " (median, max) | billed input (requests) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        tokens = f"{statistics.median(r.block_tokens):,.0f}, {max(r.block_tokens):,}" if r.block_tokens else "-"
        lines.append(
            f"| {r.quality} | {'on' if r.block else 'off'} | {r.compactions} | {share(r.names)} | {share(r.columns)} |"
            f" {share(r.paths)} | {tokens} | {r.billed:,.0f} ({r.requests}) |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=42)
    parser.add_argument("--window", type=int, default=16_000)
    parser.add_argument(
        "--summarizers", nargs="+", default=["good", "weak", "failing"], choices=["good", "weak", "failing"]
    )
    parser.add_argument("--cost", action="store_true", help="also time the record per tool call (workspace_cost.py)")
    args = parser.parse_args()
    logging.getLogger("monad_notebook").setLevel(logging.ERROR)
    print(f"{args.turns} turns, {args.window:,}-token window; default context.workspace.maxTokens (8%, at least 800)\n")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for quality in args.summarizers:
            for block in (True, False):
                runs.append(run(args.turns, quality, block, args.window, Path(tmp)))
                print(report(runs[-1:]).splitlines()[-1], "missing e.g.", runs[-1].missing[:3], flush=True)
    print()
    print(report(runs))
    if args.cost:
        from benchmarks import workspace_cost

        sys.argv = [sys.argv[0], "--calls", "200"]
        print()
        workspace_cost.main()


if __name__ == "__main__":
    main()
