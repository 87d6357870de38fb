"""The loop's own overhead per step: everything but the model call and the tool run.

A session is seeded with N stored messages (real LanceDB in a temp dir), then runs turns of
one tool step plus one answer against an instant scripted model and a trivial tool. The
time spent inside the model call and the tool is subtracted from the turn's wall time, and from the
CPU time of the turn's own thread (steadier than wall time on a busy machine). The
share of it spent storing a step's calls before they run (``Cascade.announce``: the write
that lets a crash leave the call on record) is printed too.

    python benchmarks/loop_overhead.py [--sizes 1000 10000] [--turns 20]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from monad_notebook.config import Config
from monad_notebook.messages import Message, ToolCall
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel, text, tool_call

BODY = "The quarterly revenue by region shows South ahead; details follow. " * 6


def seed(store: LanceStore, session: str, count: int) -> None:
    """Store ``count`` messages of a plausible tool-using conversation, in batches."""
    batch: list[Message] = []
    seq = 0
    turn = 0
    while seq < count:
        turn += 1
        call = ToolCall(id=f"seed_{seq}", name="list_variables", arguments="{}")
        for message in (
            Message(role="user", content=f"question {turn}: {BODY[:120]}"),
            Message(role="assistant", content="", tool_calls=[call]),
            Message(role="tool", content=BODY, tool_call_id=call.id, name=call.name),
            Message(role="assistant", content=f"answer {turn}: {BODY[:200]}"),
        ):
            message.session, message.seq, message.turn, message.step = session, seq, turn, 1
            batch.append(message)
            seq += 1
        if len(batch) >= 1000:
            store.append_messages(batch)
            batch = []
    if batch:
        store.append_messages(batch)


def measure(stored: int, turns: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "db")
        config = Config.model_validate({"tools": {"python": {"approval": "auto"}}})
        seed(store, "bench", stored)
        script = []
        for _ in range(turns):
            script += [tool_call("list_variables", {}), text("done")]
        model = ScriptedModel(script, context_window=10_000_000)
        session = Session("bench", config=config, store=store, model=model, namespace={"x": 1})
        # Wall seconds, and the CPU seconds of the turn's own thread: on a busy machine the second is the steadier.
        spent = {"model": [0.0, 0.0], "tool": [0.0, 0.0], "announce": [0.0, 0.0]}

        def timed(part: str, function):
            def run(*args, **kwargs):
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    return function(*args, **kwargs)
                finally:
                    spent[part][0] += time.perf_counter() - wall
                    spent[part][1] += time.thread_time() - cpu

            return run

        model.complete = timed("model", model.complete)
        session.runner.run = timed("tool", session.runner.run)
        session.cascade.announce = timed("announce", session.cascade.announce)
        per_step, per_step_cpu, announced = [], [], []
        for _ in range(turns):
            spent.update({part: [0.0, 0.0] for part in spent})
            wall, cpu = time.perf_counter(), time.thread_time()
            reply = session.ask("next question")
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
            per_step.append((wall - spent["model"][0] - spent["tool"][0]) / reply.steps)
            per_step_cpu.append((cpu - spent["model"][1] - spent["tool"][1]) / reply.steps)
            announced.append(spent["announce"][0] / reply.steps)
        session.close()
        store.close()

    def ms(values: list[float]) -> list[float]:
        return sorted(1000 * s for s in values[2:])  # the first turns warm caches

    per_step_ms, cpu_ms, announce_ms = ms(per_step), ms(per_step_cpu), ms(announced)
    return {
        "p50": statistics.median(per_step_ms),
        "max": per_step_ms[-1],
        "cpu": statistics.median(cpu_ms),
        "announce": statistics.median(announce_ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--turns", type=int, default=12)
    args = parser.parse_args()
    print(
        "| stored messages | overhead per step p50 (ms) | max (ms) | CPU of the turn's thread per step p50 (ms) "
        "| of which storing the calls first, p50 (ms) |"
    )
    print("| ---: | ---: | ---: | ---: | ---: |")
    for size in args.sizes:
        result = measure(size, args.turns)
        figures = (result[key] for key in ("p50", "max", "cpu", "announce"))
        print(f"| {size:,} | " + " | ".join(f"{figure:.1f}" for figure in figures) + " |")


if __name__ == "__main__":
    main()
