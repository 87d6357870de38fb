"""Recall that keeps up: is what a turn stored findable at the next turns, when turns come quickly?

    python benchmarks/recall_lag.py [--sets tuning held-out] [--paces quick paced] [--embedders local endpoint gemma]
                                    [--sessions 20] [--paced-sessions 5] [--turns 12]

Each session plants a fact in its first turn (a user's remark in plain words, ``recall_lag_facts.py``),
then every turn prints a 70-line table, as a data session does, except the question turns (the 3rd,
7th and 11th turns after the fact), which ask for the fact in other words. At a question turn the
model calls ``recall`` with the question; the fact is *back* when the turn's ``<related_context>``
block or the recall tool's answer holds the fact's key (a plain-words part of it that the summary's
identifier ledger would not keep). The window is small (``--window``, 4,000 tokens), so by the question turns
the cascade has folded the fact out of the prompt, and the summarizer keeps nothing of it (a weak
fast model); a turn whose prompt still shows the fact verbatim is counted apart.

Two paces: *quick* turns follow each other at once (an instant scripted model, no pause: the worst
case for background work), *paced* turns wait for the model (``--model-seconds`` per call, set
aside as a real model's latency is) and pause between turns (``--pause``, the user reading).
Two embedders: the offline MiniLM model, and a fake OpenAI-compatible endpoint serving MiniLM's
vectors at ``--endpoint-seconds`` per request (as a remote model's round trip); ``--embedders gemma``
adds EmbeddingGemma-300M served by llama-server on one thread, as a user runs it (the benchmark
fixture, ``fixtures.py``; its prefixes are the known defaults).

Printed per configuration: at each turn's first request, the stored messages not searchable by
their words and those without a vector yet (the store's own answer, read outside the timed part);
the seconds after the last turn until every message has its vector (the offline model is loaded
before the first session, as a kernel loads it once); the question turns whose block
or recall answer held the fact, from the third turn after it on; and each turn's wall time (p50,
p95), the store reads of the probe subtracted. The scripted model is a test tool: these figures
say how quickly recall's index keeps up, never how well a real model answers.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.recall_lag_facts import SETS, Fact
from monad_notebook.agent.tools.base import ToolContext, tool
from monad_notebook.config import Config, EmbeddingConfig
from monad_notebook.context.compaction.summarize import SECTIONS, render_sections
from monad_notebook.context.recall.chunks import indexed_text
from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.context.recall.pacing import Pacing
from monad_notebook.provider import ChatResponse, local_embedder
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, tool_call

QUESTION_AFTER = (3, 7, 11)  # question turns, counted after the fact's turn


def table(seed: int) -> str:
    """A 70-line table of numbers, as ``print(df)`` shows one."""
    rows = ["      a    b    c    d    e    f"]
    state = seed * 7919 + 13
    for row in range(70):
        values = []
        for _ in range(6):
            state = (state * 1103515245 + 12345) % 2**31
            values.append(f"{state % 1000:>4}")
        rows.append(f"{row:<3}" + " ".join(values))
    return "\n".join(rows)


@tool
def python(ctx: ToolContext, code: str) -> str:
    """Run Python code in the user's namespace.

    Args:
        code: The code to run.
    """
    return table(int(code.rsplit("#", 1)[-1]))


class WeakFastModel:
    """A fast tier whose briefings keep nothing (the five headings, one empty line each), at once.

    The fact then survives a compaction only where recall finds it (the summary's identifier
    ledger keeps some keys, never the sentence around them).
    """

    name = "weak-summarizer"

    def complete(self, messages: Any, tools: Any, on_text: Any = None) -> Any:
        return ChatResponse(content=render_sections({name: "- The analysis continued." for name in SECTIONS}))


class PacedModel(ScriptedModel):
    """The scripted model, answering after ``latency`` seconds as a real model would."""

    latency = 0.0

    def complete(self, messages: Any, tools: Any, on_text: Any = None) -> Any:
        if self.latency:
            time.sleep(self.latency)
        return super().complete(messages, tools, on_text=on_text)


@dataclass
class Result:
    label: str
    words_missing: list[int] = field(default_factory=list)  # per turn, at its first request
    vectors_missing: list[list[int]] = field(default_factory=list)  # per session, per turn
    catch_up: list[float] = field(default_factory=list)
    asked: int = 0  # question turns
    back: int = 0  # ... whose block or recall answer held the key
    by_block: int = 0
    by_recall: int = 0
    in_prompt: int = 0  # the fact still in the prompt verbatim, outside the block
    sessions_back_from_third: int = 0
    sessions: int = 0
    turn_seconds: list[float] = field(default_factory=list)


class Probe:
    """Reads the store at a turn's first request: what is not searchable by words, and what has no vector."""

    def __init__(self, store: LanceStore, session: str, model: str) -> None:
        self.store, self.session, self.model = store, session, model
        self.seconds = 0.0

    def __call__(self, turn: int) -> tuple[int, int]:
        started = time.perf_counter()
        stored = [
            m
            for m in self.store.load_messages(self.session)
            if m.turn < turn and m.role != "system" and (m.role == "tool" or indexed_text(m))
        ]
        ids = {m.id for m in stored}
        words = len(ids - self.store.search.chunked_ids(self.session, among=ids))
        vectors = len(ids - self.store.search.embedded_ids(self.session, model=self.model, among=ids))
        self.seconds += time.perf_counter() - started
        return words, vectors


def config(embedding: dict[str, Any]) -> Config:
    return Config.model_validate(
        {
            "tools": {"python": {"approval": "auto"}},
            "models": {"embedding": embedding},
            "context": {"retrieval": {"enabled": True}, "summarize": {"keepRecent": 4}},
        }
    )


def run_session(
    fact: Fact, seed: int, pace: str, args: argparse.Namespace, embedding: dict[str, Any], tmp: Path, result: Result
) -> None:
    store = LanceStore(tmp / f"s{seed}")
    model = PacedModel([], name="gpt-4o", context_window=args.window)
    model.latency = args.model_seconds if pace == "paced" else 0.0
    session = Session(
        "lag", config=config(embedding), store=store, model=model, fast_model=WeakFastModel(), extra_tools=[python]
    )
    embedder = session.recall.indexer.embedder
    probe = Probe(store, "lag", embedder.name)
    vectors: list[int] = []
    back_from_third = True
    for turn in range(1, args.turns + 1):
        after = turn - 1
        asks = after in QUESTION_AFTER
        if turn == 1:
            text, answers = fact.said, ["Noted."]
        elif asks:
            text, answers = fact.question, [tool_call("recall", {"query": fact.question}), "Answered."]
        else:
            text = f"Show me batch {turn} of the readings."
            answers = [tool_call("python", {"code": f"print(batch)  #{seed * 100 + turn}"}), f"Batch {turn} shown."]
        model.queue(*answers)
        first_call = len(model.calls)
        if turn > 1:
            words, missing = probe(turn)
            result.words_missing.append(words)
            vectors.append(missing)
        probe.seconds = 0.0
        started = time.perf_counter()
        session.ask(text)
        result.turn_seconds.append(time.perf_counter() - started - probe.seconds)
        if asks:
            result.asked += 1
            sent = model.calls[first_call].messages
            key = fact.key.lower()
            block = " ".join(str(m["content"]) for m in sent if "<related_context>" in str(m["content"]))
            window = " ".join(str(m["content"]) for m in sent if "<related_context>" not in str(m["content"]))
            answer = next(m for m in session.window.messages[::-1] if m.role == "tool" and m.name == "recall")
            found_block, found_recall = key in block.lower(), key in answer.content.lower()
            result.by_block += found_block
            result.by_recall += found_recall
            result.in_prompt += fact.said.lower() in window.lower()
            result.back += found_block or found_recall
            back_from_third &= found_block or found_recall
        if pace == "paced" and turn < args.turns:
            time.sleep(args.pause)
    ended = time.perf_counter()
    while probe(args.turns + 1)[1]:
        time.sleep(0.1)
    result.catch_up.append(time.perf_counter() - ended)
    result.vectors_missing.append(vectors)
    result.sessions += 1
    result.sessions_back_from_third += back_from_third
    session.close()


def report(result: Result) -> str:
    turns = sorted(result.turn_seconds)
    per_turn = [round(statistics.median(column)) for column in zip(*result.vectors_missing, strict=True)]
    most = max(max(session) for session in result.vectors_missing)
    return (
        f"| {result.label} | {result.sessions_back_from_third}/{result.sessions} | {result.back}/{result.asked} "
        f"| {result.by_block} | {result.by_recall} | {result.in_prompt} | {max(result.words_missing)} "
        f"| {' '.join(map(str, per_turn))} | {most} "
        f"| {statistics.median(result.catch_up):.1f} / {max(result.catch_up):.1f} "
        f"| {statistics.median(turns) * 1000:.0f} | {turns[int(0.95 * (len(turns) - 1))] * 1000:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", nargs="+", default=["tuning", "held-out"], choices=list(SETS))
    parser.add_argument("--paces", nargs="+", default=["quick", "paced"], choices=["quick", "paced"])
    parser.add_argument("--embedders", nargs="+", default=["local", "endpoint"], choices=["local", "endpoint", "gemma"])
    parser.add_argument("--sessions", type=int, default=20, help="quick sessions per set (one fact each)")
    parser.add_argument("--paced-sessions", type=int, default=5, help="paced sessions per set")
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--window", type=int, default=4_000, help="the model's context window, in tokens")
    parser.add_argument("--model-seconds", type=float, default=0.8, help="paced: the model's latency per call")
    parser.add_argument("--pause", type=float, default=2.0, help="paced: seconds between turns")
    parser.add_argument("--endpoint-seconds", type=float, default=0.15, help="endpoint: seconds per request")
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=RecallIndexer.settle_seconds,
        help="how long a search waits for the backlog of vectors (0: never)",
    )
    parser.add_argument(
        "--share",
        type=float,
        default=Pacing.share,
        help="the share of the time embedding keeps beside a busy turn",
    )
    args = parser.parse_args()
    RecallIndexer.settle_seconds, Pacing.share = args.settle_seconds, args.share
    logging.disable(logging.WARNING)
    if local_embedder.local_model_files() is None:
        sys.exit(f"the offline embedder is not installed: {local_embedder.LOCAL_INSTALL_HINT}")
    minilm = local_embedder.LocalEmbedder()
    minilm.embed(["the model loads once per kernel"])
    local_embedder.make_embedder(EmbeddingConfig()).embed(["the model loads once per kernel"])
    server = FakeOpenAIServer(embed=lambda text: minilm.embed([text])[0], embedding_dims=local_embedder.LOCAL_DIMS)
    server.embedding_delay = args.endpoint_seconds
    server.start()
    os.environ.setdefault("OPENAI_API_KEY", "fake-key")
    embeddings = {
        "local": {"provider": "local"},
        "endpoint": {
            "provider": "openai",
            "baseUrl": server.base_url,
            "model": "minilm-endpoint",
            "dimensions": local_embedder.LOCAL_DIMS,
        },
    }
    with ExitStack() as fixtures:
        if "gemma" in args.embedders:
            from benchmarks.fixture_server import embedding_server
            from benchmarks.fixtures import fetch

            path = fetch("gemma")
            url = fixtures.enter_context(embedding_server(path))
            embeddings["gemma"] = {"provider": "openai", "baseUrl": url, "model": path.stem}
        measure(args, embeddings)
    server.stop()


def measure(args: argparse.Namespace, embeddings: dict[str, dict[str, Any]]) -> None:
    print(f"settle {args.settle_seconds:g} s, share {args.share:g}\n")
    print(
        "| set, pace, embedder | sessions with the fact back at every question | questions | by block | by recall "
        "| fact still in the prompt | most messages unsearchable by words at a turn's first request "
        "| messages without a vector at each turn's first request, median of the sessions | most at any turn "
        "| catch-up s p50 / max | turn ms p50 | turn ms p95 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            for pace in args.paces:
                for embedder in args.embedders:
                    result = Result(f"{name}, {pace}, {embedder}")
                    count = args.sessions if pace == "quick" else args.paced_sessions
                    for seed, fact in enumerate(SETS[name][:count]):
                        run_session(fact, seed, pace, args, embeddings[embedder], Path(tmp) / result.label, result)
                    print(report(result), flush=True)


if __name__ == "__main__":
    main()
