"""Tails of a turn at scale: per-step overhead, the related_context stage and the recall tool, p50 / p95 / max.

    python benchmarks/tails.py [--sizes 1000 10000 100000] [--turns 40] [--queries 30] [--model-seconds 0]

Each size seeds a store as a long session leaves it: N messages of a tool-using conversation
(varied notebook chatter, tool outputs, answers), their recall chunks under the full-text
index and one vector per chunk (real offline embeddings of the distinct texts plus small
noise, so seeding 100k does not take an hour), and a summary whose boundary leaves a small
window. One full optimize then stands for the passes the background optimize made during
that session (it builds the vector index past 20,000 rows). The background optimize stays
ON (the default, every 50 writes or 1,000 rows per table) while the turns are timed, and
the recall indexer embeds each new message with the real offline model, as in a notebook.

Timed on the turn's thread, what the user waits for:

- overhead per step: a turn's wall time minus the model call and the tool run, per step
  (default config: recall on, related_context off), turns of one tool step plus one answer;
- a turn's catch-up read (``seq > n`` of the session, nothing newer) on the freshly compacted store;
- the ``<related_context>`` stage as the turn runs it (query embedding, identifier lookup,
  full-text and vector search), with retrieval enabled, and the ``recall`` tool the model
  calls in the same turns (embedding included);
- the parts of those searches, both kinds together: the question's embedding and the vector
  search one after the other, the full-text search on another thread alongside them.

The scripted model answers at once by default: the worst case, where background work has no
model wait to run in and meets the turn's own work. ``--model-seconds`` makes each call wait as
a real model's does; the wait is the model's time, outside every figure.

Last come the goals, at the largest size when it is 100,000 or more: the per-step overhead's
p95 at most 1.5x its p95 at the smallest size, with the background optimize running, and both
searches' p95 at most 50 ms, the question's embedding included.

As in a kernel after its first ``%%monad`` cell, the heap is settled once everything a turn
uses is loaded (``monad_notebook.cell.heap``); the report counts the full garbage collections that ran during
the timed turns and the longest. It starts with a reference for the machine's speed at that
moment (one question embedded alone, 30 times), since runs on a shared machine differ by more
than most changes.

Every timed search is checked: one that fails stops the run (a turn hides the failure, and its
time would pass for fast), and the report says how many passages the searches found.

All sizes run back to back in one process, so their ratios are comparable.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.reference_trace import SUMMARY_TEXT, _Timed, _timed
from benchmarks.retrieval import FACTS, TEMPLATES, TOPICS
from monad_notebook.cell.heap import settle_heap
from monad_notebook.config import Config
from monad_notebook.context.recall.chunks import message_chunks
from monad_notebook.context.recall.search import Passage, Recall
from monad_notebook.messages import Message, ToolCall
from monad_notebook.provider.local_embedder import LocalEmbedder
from monad_notebook.session import Session
from monad_notebook.store.base import SearchIndex, Summary
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel

SESSION = "bench"
OUTPUT = (
    "       region  revenue  orders\n0      North   {a:,}    {b}\n"
    "1      South   {c:,}    {d}\n2      West    {e:,}    {f}\n"
)
GOAL_SIZE = 100_000
STEP_RATIO_GOAL = 1.5
SEARCH_P95_GOAL_MS = 50.0
QUESTIONS = [q for _, q in FACTS] + [f"Which file held order ORD-{40_000 + i} and its refund?" for i in range(8)]


def conversation(rng: random.Random, count: int) -> list[Message]:
    """``count`` messages of a tool-using notebook conversation: question, call, output, answer."""
    messages: list[Message] = []
    turn = 0
    while len(messages) < count:
        turn += 1
        topic = rng.choice(TOPICS)
        call = ToolCall(id=f"seed_{turn}", name="python", arguments='{"code": "df.groupby(\\"region\\").sum()"}')
        numbers = {k: rng.randint(10, 99_999) for k in "abcdef"}
        fact = FACTS[turn % len(FACTS)][0] if turn % 97 == 0 else ""
        for message in (
            Message(role="user", content=rng.choice(TEMPLATES).format(t=topic) + " " + fact),
            Message(role="assistant", content="", tool_calls=[call]),
            Message(role="tool", content=OUTPUT.format(**numbers), tool_call_id=call.id, name=call.name),
            Message(role="assistant", content=f"Done: {topic} for ORD-{rng.randint(10_000, 99_999)} looks right."),
        ):
            message.session, message.seq, message.turn, message.step = SESSION, len(messages), turn, 1
            messages.append(message)
    return messages[:count]


def seed(store: LanceStore, embedder: LocalEmbedder, count: int) -> None:
    """Messages, their chunks and their vectors, 2,000 messages per write; then a summary and one optimize."""
    rng = random.Random(count)
    noise = np.random.default_rng(count)
    cache: dict[str, np.ndarray] = {}
    messages = conversation(rng, count)
    for start in range(0, count, 2000):
        batch = messages[start : start + 2000]
        store.append_messages(batch)
        chunks = [c for m in batch for c in message_chunks(m)]
        store.search.save_chunks(SESSION, chunks)
        keys = [_shape(c.text) for c in chunks]
        missing = sorted({k for k in keys if k not in cache})
        for key, vector in zip(missing, embedder.embed(missing) if missing else [], strict=True):
            cache[key] = np.array(vector, dtype=np.float32)
        points = np.stack([cache[k] for k in keys]) + noise.normal(scale=0.02, size=(len(keys), embedder.dims))
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        store.search.save_embeddings(SESSION, list(zip(chunks, points.tolist(), strict=True)), embedder.name)
    last_user = (count - 1) // 4 * 4
    store.save_summary(Summary(SESSION, SUMMARY_TEXT, max(-1, last_user - 21), time.time()))
    store.optimize()


def _shape(text: str) -> str:
    """The text with its digits blanked: texts differing only in numbers share one real embedding."""
    return "".join("0" if c.isdigit() else c for c in text)


class _Paced:
    """The scripted model answering after ``seconds``, as a real one does; the wait is counted as the model's."""

    def __init__(self, model: ScriptedModel, seconds: float) -> None:
        self._model = model
        self._seconds = seconds
        self.name = model.name
        self.context_window = model.context_window

    def complete(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(self._seconds)
        return self._model.complete(*args, **kwargs)


class FullCollections:
    """Python's full garbage collections while ``active``: how long each held the interpreter, in ms."""

    def __init__(self) -> None:
        self.active = False
        self.durations: list[float] = []
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def close(self) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2 or not self.active:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.durations.append(1000 * (time.perf_counter() - self._started))


COLLECTIONS = FullCollections()


def timed_turns(
    session: Session, turns: int, questions: list[str], stage: dict[str, list[float]], model_seconds: float
) -> list[float]:
    """Ms per step outside the model and the tools, one sample per turn."""
    outside = {"seconds": 0.0}
    model = _Paced(session.model, model_seconds) if model_seconds else session.model  # type: ignore[arg-type]
    session.model = _Timed(model, outside)  # type: ignore[arg-type, assignment]
    execute = session.runner.run

    def tool(call: ToolCall, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return _timed(outside, execute, call, **kwargs)
        finally:
            stage.setdefault(call.name, []).append(1000 * (time.perf_counter() - started))

    session.runner.run = tool  # type: ignore[method-assign]
    per_step = []
    COLLECTIONS.active = True
    try:
        for n in range(turns):
            outside["seconds"] = 0.0
            started = time.perf_counter()
            reply = session.ask(questions[n % len(questions)])
            per_step.append(1000 * (time.perf_counter() - started - outside["seconds"]) / reply.steps)
    finally:
        COLLECTIONS.active = False
    return per_step


def run_size(size: int, turns: int, queries: int, embedder: LocalEmbedder, model_seconds: float) -> dict[str, Any]:
    """Seed a store of ``size`` messages, then time default turns, then turns with retrieval and recall."""
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "db")
        COLLECTIONS.durations = []
        started = time.perf_counter()
        seed(store, embedder, size)
        seeded = time.perf_counter() - started
        catch_up = [_timed_ms(lambda: store.load_messages(SESSION, after_seq=size)) for _ in range(30)]
        overhead = _phase(
            store, {}, turns, ["next question"] * turns, lambda n: ("list_variables", {}), {}, model_seconds
        )
        stage: dict[str, list[float]] = {}
        cfg = {"context": {"retrieval": {"enabled": True}}}
        asked = [QUESTIONS[n % len(QUESTIONS)] for n in range(queries)]
        _phase(store, cfg, queries, asked, lambda n: ("recall", {"query": asked[n]}), stage, model_seconds)
        optimized = store.tables.passes.runs
        store.close()
    return {
        "overhead": overhead,
        "stage": stage,
        "seeded": seeded,
        "optimize_runs": optimized,
        "catch_up": catch_up,
        "collections": COLLECTIONS.durations,
    }


def _timed_ms(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return 1000 * (time.perf_counter() - started)


def _phase(
    store: LanceStore,
    extra: dict[str, Any],
    turns: int,
    questions: list[str],
    call: Callable[[int], tuple[str, dict[str, Any]]],
    stage: dict[str, list[float]],
    model_seconds: float,
) -> list[float]:
    script: list[Any] = []
    for n in range(turns):
        script += [ScriptedModel.tool_call(*call(n)), "done"]
    model = ScriptedModel(script, context_window=128_000)
    config = Config.model_validate({"tools": {"python": {"approval": "auto"}}, **extra})
    session = Session(SESSION, config=config, store=store, model=model, namespace={"x": 1})
    stages = session.recall
    retrieval = stages.retrieval
    recalls = [r for r in (stages.recall, retrieval.recall if retrieval else None) if r is not None]
    for recall in recalls:
        _checked(recall, stage)
    if retrieval is not None:  # the phase that searches: time its parts
        _time_parts(store.search, recalls, stage)
        related = retrieval.related_context

        def timed_related(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return related(*args, **kwargs)
            finally:
                stage.setdefault("related_context", []).append(1000 * (time.perf_counter() - started))

        retrieval.related_context = timed_related  # type: ignore[method-assign]
    per_step = timed_turns(session, turns, questions, stage, model_seconds)
    session.close()
    return per_step[2:]  # the first turns load the model and warm caches


def _checked(recall: Recall, stage: dict[str, list[float]]) -> None:
    """Count each search's passages, and stop the run on a failed one: the turn would hide it, timed as fast."""
    search = recall.search

    def checked(*args: Any, **kwargs: Any) -> list[Passage]:
        try:
            passages = search(*args, **kwargs)
        except Exception as exc:
            raise SystemExit(f"tails: a recall search failed, so its time would mean nothing: {exc!r}") from exc
        stage.setdefault("passages", []).append(len(passages))
        return passages

    recall.search = checked  # type: ignore[method-assign]


PARTS = {
    "question embedding": "  · its question's embedding",
    "vector search": "  · its vector search",
    "full-text search": "  · its full-text search (runs alongside the two above)",
}


def _time_parts(index: SearchIndex, recalls: list[Recall], stage: dict[str, list[float]]) -> None:
    """Time the parts of each search the stage and the tool run: what the totals are made of.

    The embedder is wrapped for these searches only: the recall indexer shares the model but
    not this wrapper, so its background embeddings are not counted.
    """
    for method, key in (("search_embeddings", "vector search"), ("search_chunks", "full-text search")):
        setattr(index, method, _recorded(getattr(index, method), stage, key))
    for recall in recalls:
        if recall.embedder is not None:
            recall.embedder = _TimedEmbedder(recall.embedder, stage)  # type: ignore[assignment]


def _recorded(func: Callable[..., Any], stage: dict[str, list[float]], key: str) -> Callable[..., Any]:
    def recorded(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            stage.setdefault(key, []).append(1000 * (time.perf_counter() - started))

    return recorded


class _TimedEmbedder:
    """The embedder as one recall sees it, each question's embedding timed."""

    def __init__(self, embedder: Any, stage: dict[str, list[float]]) -> None:
        self.name = embedder.name
        self.dims = embedder.dims
        self.embed = _recorded(embedder.embed, stage, "question embedding")


def stats(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], ordered[-1]


def report(results: dict[int, dict[str, Any]]) -> list[str]:
    first = min(results)
    base = {key: stats(value)[1] for key, value in _series(results[first]).items()}
    lines = [
        "| stored messages | what | samples | p50 ms | p95 ms | max ms | p95 / p95 at smallest |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size, result in results.items():
        for key, samples in _series(result).items():
            p50, p95, top = stats(samples)
            ratio = p95 / base[key] if base.get(key) else float("nan")
            lines.append(f"| {size:,} | {key} | {len(samples)} | {p50:.1f} | {p95:.1f} | {top:.1f} | {ratio:.2f}x |")
    lines.append("")
    for size, result in results.items():
        found = sorted(result["stage"].get("passages", [0]))
        lines.append(
            f"{size:,} messages: seeded in {result['seeded']:.0f} s; "
            f"{result['optimize_runs']} background optimize pass(es) ran during the timed turns; "
            f"the searches found {found[0]} to {found[-1]} passages (median {statistics.median(found):g}); "
            f"{_collections(result['collections'])}."
        )
    return lines


def _collections(durations: list[float]) -> str:
    if not durations:
        return "no full garbage collection during the timed turns"
    return f"{len(durations)} full garbage collection(s) during the timed turns, the longest {max(durations):.1f} ms"


def speed_reference(embedder: LocalEmbedder) -> float:
    """The machine's speed now: p50 ms of one fixed question embedded alone (after two to warm up)."""
    times = [_timed_ms(lambda: embedder.embed(["which file held the churn raw extract?"])) for _ in range(32)]
    return statistics.median(times[2:])


def goals(results: dict[int, dict[str, Any]]) -> list[str]:
    """The goals at the largest size, each met or not; they are set at ``GOAL_SIZE`` stored messages."""
    first, last = min(results), max(results)
    if last < GOAL_SIZE:
        return [f"The goals are set at {GOAL_SIZE:,} stored messages; the largest size here is {last:,}."]
    small, large = _series(results[first]), _series(results[last])
    lines = [f"| goal at {last:,} stored messages | value | |", "|---|---:|---|"]
    key = "overhead per step"
    if last != first:
        ratio = stats(large[key])[1] / stats(small[key])[1]
        verdict = "met" if ratio <= STEP_RATIO_GOAL else "NOT met"
        lines.append(f"| {key}: p95 <= {STEP_RATIO_GOAL}x the p95 at {first:,} | {ratio:.2f}x | {verdict} |")
    for key in ("related_context (embedding included)", "recall (embedding included)"):
        if key in large:
            p95 = stats(large[key])[1]
            verdict = "met" if p95 <= SEARCH_P95_GOAL_MS else "NOT met"
            lines.append(f"| {key}: p95 <= {SEARCH_P95_GOAL_MS:g} ms | {p95:.1f} ms | {verdict} |")
    return lines


def _series(result: dict[str, Any]) -> dict[str, list[float]]:
    series = {"overhead per step": result["overhead"], "catch-up read (compacted store)": result["catch_up"]}
    for key in ("related_context", "recall"):
        if result["stage"].get(key):
            series[f"{key} (embedding included)"] = result["stage"][key][1:]
    for key, label in PARTS.items():
        if result["stage"].get(key):
            series[label] = result["stage"][key][2:]  # both searches of the first turn warm caches
    return series


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--turns", type=int, default=40, help="default turns timed per size")
    parser.add_argument("--queries", type=int, default=30, help="turns with related_context and recall per size")
    parser.add_argument(
        "--model-seconds",
        type=float,
        default=0.0,
        help="each model call answers after this many seconds, as a real model does (0: at once, the worst case)",
    )
    args = parser.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    command = " ".join(["python benchmarks/tails.py", *sys.argv[1:]])
    print(f"`{command}`: {os.cpu_count()} CPUs, load average {load} at start\n")
    embedder = LocalEmbedder()
    print(f"Speed reference: one question embedded alone, {speed_reference(embedder):.1f} ms p50.\n")
    settle_heap()  # everything a turn uses is loaded: the kernel's state after its first %%monad cell
    results = {}
    for size in args.sizes:
        results[size] = run_size(size, args.turns, args.queries, embedder, args.model_seconds)
        print(f"  {size:,} done", file=sys.stderr, flush=True)
    print("\n".join(report(results)))
    print("\n" + "\n".join(goals(results)))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nLoad average {load} at the end.")


if __name__ == "__main__":
    main()
