"""Occupancy against a real OpenAI-compatible server: the estimate before each request vs the provider's count.

    python benchmarks/real_server.py [--turns 5]

Servers: llama.cpp's ``llama-server`` on SmolLM2-135M (``monad_notebook.testing.llama``; it
leaves the tool schemas out of the prompt), and ``FakeOpenAIServer`` told to count the schemas
(JSON characters / 4 for messages and schemas alike). Each runs one session of ``--turns``
questions, then a new Session on the same store (a kernel restart) asks one more.

Per request: the estimate the session made before sending (``total_tokens`` of the prompt
record), the provider's ``usage.prompt_tokens``, and what the former single-ratio calibration
(an EMA of provider/raw, reset on restart) would have estimated from the same raw counts.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import FakeOpenAIServer
from monad_notebook.testing.llama import LlamaServer, LlamaUnavailable

QUESTIONS = [
    "What is a good name for a cat?",
    "Give me three tips for writing clear Python functions, with a short example of each one.",
    "Summarise the plot of a detective story set in a lighthouse.",
    "List the planets of the solar system in order.",
    "Why do leaves change colour in autumn? Explain it to a ten year old, then to a botanist.",
    "Write a haiku about the sea.",
    "What should I check first when a CSV file loads with the wrong number of columns?",
]


def session_on(base_url: str, store: LanceStore, name: str) -> Session:
    main = {"model": "smollm2", "baseUrl": base_url, "contextWindow": 4096, "maxOutputTokens": 16}
    models = {"main": main, "fast": main, "embedding": {"provider": "none"}}
    config = Config.model_validate({"models": models, "tools": {"python": {"approval": "auto"}}})
    return Session(name, config=config, store=store, namespace={})


class FormerCalibration:
    """The single ratio the estimate used to apply: an EMA of provider/raw over the whole request.

    Half weight to the newest count, clamped to [0.25, 4]; kept here as the baseline it is.
    """

    def __init__(self) -> None:
        self.ratio = 1.0

    def estimate(self, raw: int) -> int:
        return round(raw * self.ratio)

    def observe(self, raw: int, real: int) -> None:
        if raw > 0 and real > 0:
            self.ratio = min(max(self.ratio + 0.5 * (min(max(real / raw, 0.25), 4.0) - self.ratio), 0.25), 4.0)


def ask(session: Session, question: str, fake: FakeOpenAIServer | None, former: FormerCalibration) -> dict:
    if fake is not None:
        fake.queue("A short answer: " + question.lower())
    session.ask(question)
    record = session.prompt_records[-1]
    raw = sum(session.cascade.meter.occupancy.last_parts)
    row = {"estimate": record["total_tokens"], "real": record["real_tokens"], "former": former.estimate(raw)}
    former.observe(raw, record["real_tokens"])
    return row


def run(base_url: str, fake: FakeOpenAIServer | None, turns: int) -> list[tuple[str, dict]]:
    rows: list[tuple[str, dict]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "db")
        former = FormerCalibration()
        session = session_on(base_url, store, "bench")
        for i in range(turns):
            rows.append((f"request {i + 1}", ask(session, QUESTIONS[i % len(QUESTIONS)], fake, former)))
        session.close()
        restarted = session_on(base_url, store, "bench")
        question = QUESTIONS[turns % len(QUESTIONS)]
        rows.append(("after restart", ask(restarted, question, fake, FormerCalibration())))
        restarted.close()
        store.close()
    return rows


def table(title: str, rows: list[tuple[str, dict]]) -> None:
    print(f"\n{title}\n")
    print("| request | provider count | estimate | error | former estimate | former error |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, r in rows:
        error, former = (r["estimate"] - r["real"]) / r["real"], (r["former"] - r["real"]) / r["real"]
        print(f"| {label} | {r['real']:,} | {r['estimate']:,} | {error:+.1%} | {r['former']:,} | {former:+.1%} |")
    settled = [abs(r["estimate"] - r["real"]) / r["real"] for _, r in rows[2:]]
    print(f"\nworst error from the third request on (restart included): {max(settled):.1%}")


@contextmanager
def llama() -> Iterator[LlamaServer | None]:
    try:
        server = LlamaServer(context=4096).start()
    except LlamaUnavailable as why:
        print(f"\n(llama-server skipped: {why})")
        yield None
        return
    try:
        yield server
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    print("## Occupancy against real provider counts\n")
    started = time.perf_counter()
    with llama() as server:
        if server is not None:
            rows = run(server.base_url, None, args.turns)
            table("llama-server (SmolLM2-135M; the tool schemas are left out of the prompt)", rows)
    with FakeOpenAIServer(count_tools=lambda tools: len(json.dumps(tools)) // 4) as fake:
        table("FakeOpenAIServer counting the tool schemas", run(fake.base_url, fake, args.turns))
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
