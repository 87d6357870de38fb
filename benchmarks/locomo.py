"""LoCoMo: how much of a question's evidence recall brings back, on ten long conversations nobody here wrote.

    python benchmarks/locomo.py [--data PATH] [--k 5 10 25 50] [--split tuning held-out]
                                [--steps word_meaning names_first one_of_each] [--sides]
                                [--embedding-with gemma | BASE_URL MODEL] [--embedding-cache FILE] [--threads N]

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024)
is 10 conversations of 19 to 32 sessions between two people, 5,882 turns, and 1,986 questions, each
naming the turns that hold its answer (its evidence). The paper's Table 3 measures a retriever by
evidence recall@k: the share of a question's evidence turns among the k it returns. Here each
conversation is stored as a session would store it, through the product's own store and recall
service: speaker A's turns as the user's messages, B's as the assistant's, each "Name: text" (with
the caption of a shared photo, as the paper's retriever saw it), one write per LoCoMo session,
indexed by ``RecallService`` as a session indexes each step; then every question is asked of the
``recall`` tool's search (``RecallService.search``) as written, with nothing in the window.

The conversations are split once, by their order in the file: the first five are the tuning half
(every choice of recall's was made on them), the last five the held-out half. Both halves and all
ten are reported, with the paper's figures for its DRAGON retriever over dialog turns beside ours
("–" where it published none). A question whose evidence names no turn of its conversation (four
name none; a few ids are malformed, and are read as written where the turn exists) is left out.

``--sides`` also ranks each question by each search alone (the full-text side and the vector side,
as ``Recall`` gathers them) and counts the evidence turns one side had in its top 10 that recall's
top 10 lacks. ``--embedding-with`` indexes through an embeddings endpoint (``gemma``: the benchmark
fixture, ``fixtures.py``) instead of the offline model; ``--embedding-cache FILE`` answers the
passages it embedded in an earlier run from FILE (``embedding_cache.py``).

The data is not shipped: ``--data PATH``, or ``~/.cache/monad-notebook/locomo10.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monad_notebook.config import Config
from monad_notebook.context.recall.search import STEPS, Recall
from monad_notebook.context.recall.service import RecallService
from monad_notebook.context.recall.wordmatch import shared_word_vectors
from monad_notebook.context.window import Window
from monad_notebook.messages import Message
from monad_notebook.provider import local_embedder
from monad_notebook.provider.prefixes import as_question, prefixes_for
from monad_notebook.store.lance import LanceStore

SOURCE = "data/locomo10.json of the public GitHub repository snap-research/LoCoMo"
LICENSE = "Creative Commons Attribution-NonCommercial 4.0 International (CC BY-NC 4.0)"
SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
CACHED = Path.home() / ".cache" / "monad-notebook" / "locomo10.json"
TUNING = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")  # the first five in the file
HELD_OUT = ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50")  # the last five
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
COLUMNS = (*CATEGORIES.values(), "answerable 4", "all 5")
# The paper's Table 3, DRAGON over dialog turns: recall@10 per category and overall; at 5, 25 and 50 overall only.
PAPER = {
    5: {"all 5": 56.7},
    10: {
        "single-hop": 77.7,
        "multi-hop": 46.6,
        "temporal": 77.3,
        "open-domain": 40.8,
        "adversarial": 54.7,
        "all 5": 66.2,
    },
    25: {"all 5": 76.7},
    50: {"all 5": 82.7},
}
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")
WORDS, VECTORS = "words alone (full-text)", "vectors alone (nearest messages)"


@dataclass
class Question:
    conversation: str
    text: str
    category: str
    evidence: set[str]  # dialog ids, "D<session>:<turn>"
    # k -> the dialog ids recall returned, best first; a name -> those another ranking returned at k = 10
    found: dict[int | str, list[str]] = field(default_factory=dict)

    def recall(self, k: int, ranking: int | str | None = None) -> float:
        shown = self.found[k if ranking is None else ranking][:k]
        return len(self.evidence & set(shown)) / len(self.evidence)


@dataclass
class Conversation:
    name: str
    messages: list[list[Message]]  # one list per LoCoMo session, in order
    dialog_of: dict[str, str]  # message id -> dialog id
    questions: list[Question]
    left_out: int = 0  # questions whose evidence names no turn of this conversation


def load(path: Path | None) -> list[dict]:
    """The dataset, from ``path`` or the cache; a clear message (where it comes from, its license) when missing."""
    path = path or CACHED
    if not path.is_file():
        raise SystemExit(
            f"LoCoMo's data is not at {path}. It is {SOURCE}, under {LICENSE}: download that file and pass"
            f" --data PATH, or put it at {CACHED}. It is never needed to install or test monad-notebook."
        )
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != SHA256:
        print(f"note: {path} is not the pinned copy (sha256 {SHA256[:12]}...); figures may differ", file=sys.stderr)
    return json.loads(data)


def conversation(sample: dict, captions: bool = True) -> Conversation:
    """One sample as the messages a session would store, and its questions with their evidence."""
    talk, name = sample["conversation"], sample["sample_id"]
    sessions = sorted(int(k.split("_")[1]) for k in talk if re.fullmatch(r"session_\d+", k))
    messages: list[list[Message]] = []
    dialog_of: dict[str, str] = {}
    seq = turn = 0
    for number in sessions:
        started = _when(talk.get(f"session_{number}_date_time", ""))
        batch = []
        for at, dialog in enumerate(talk[f"session_{number}"]):
            role = "user" if dialog["speaker"] == talk["speaker_a"] else "assistant"
            turn += role == "user"
            text = f"{dialog['speaker']}: {dialog['text']}"
            if captions and dialog.get("blip_caption"):
                text += f"\n[shared a photo: {dialog['blip_caption']}]"
            message = Message(role, text, session=name, seq=seq, turn=turn, created_at=started + at)
            dialog_of[message.id] = dialog["dia_id"]
            batch.append(message)
            seq += 1
        messages.append(batch)
    known = set(dialog_of.values())
    result = Conversation(name, messages, dialog_of, [])
    for qa in sample["qa"]:
        evidence = {f"D{s}:{t}" for e in qa.get("evidence", []) for s, t in _EVIDENCE.findall(e)} & known
        if not evidence:
            result.left_out += 1
            continue
        result.questions.append(Question(name, qa["question"], CATEGORIES[qa["category"]], evidence))
    return result


def _when(stamp: str) -> float:
    """A LoCoMo session's date ("1:56 pm on 8 May, 2023") as a timestamp; 0 when it does not parse."""
    try:
        return datetime.strptime(stamp.strip(), "%I:%M %p on %d %B, %Y").timestamp()
    except ValueError:
        return 0.0


def config(steps: Sequence[str], endpoint: tuple[str, str] | None) -> Config:
    embedding = {"provider": "local"}
    if endpoint is not None:
        embedding = {"provider": "openai", "baseUrl": endpoint[0], "model": endpoint[1]}
    return Config.model_validate({"models": {"embedding": embedding}, "context": {"recall": {"steps": list(steps)}}})


def measure(conv: Conversation, args: argparse.Namespace, endpoint: tuple[str, str] | None, tmp: Path) -> list[float]:
    """Store and index ``conv`` as a session does, then ask every question at each k; the latencies at k = 10."""
    store = LanceStore(tmp / conv.name)
    store.create_session(conv.name)
    service = RecallService(Window(conv.name), store)
    service.reconfigure(config(args.steps, endpoint))
    started = time.perf_counter()
    for batch in conv.messages:
        store.append_messages(batch)
        service.index(batch, {})
    service.flush()
    store.optimize()
    indexed = time.perf_counter() - started
    latencies: list[float] = []
    for k in args.k:
        service.max_results = k
        for question in conv.questions:
            asked = time.perf_counter()
            passages = service.search(question.text)
            if k == 10:
                latencies.append((time.perf_counter() - asked) * 1000)
            question.found[k] = [conv.dialog_of[p.hit.message_id] for p in passages]
    if args.sides:
        sides(conv, store, service)
    if args.ablate:
        ablate(conv, store, service)
    turns = sum(len(b) for b in conv.messages)
    print(f"  {conv.name}: {turns} turns indexed in {indexed:.0f} s, {len(conv.questions)} questions", flush=True)
    service.close()
    store.close()
    return latencies


def sides(conv: Conversation, store: LanceStore, service: RecallService) -> None:
    """Each question's top 10 by the full-text side alone (recall without an embedder) and by the vector side
    alone (the nearest messages), kept on the question."""
    words = Recall(store.search, None)
    embedder = service.recall.embedder if service.recall is not None else None
    for question in conv.questions:
        by_words = words.search(conv.name, question.text, 10)
        question.found[WORDS] = [conv.dialog_of[p.hit.message_id] for p in by_words]
        if embedder is not None:
            vector = embedder.embed([as_question(embedder, question.text)])[0]
            hits = store.search.search_embeddings(conv.name, vector, 10, model=embedder.name)
            question.found[VECTORS] = [conv.dialog_of[h.message_id] for h in hits]


def ablate(conv: Conversation, store: LanceStore, service: RecallService) -> None:
    """Each question asked again at k = 10 with each rerank step left out, on the same index."""
    assert service.recall is not None
    embedder = service.recall.embedder
    words = shared_word_vectors(embedder.name) if embedder is not None else None
    for step in service.recall.steps:
        recall = Recall(store.search, embedder, words, [s for s in service.recall.steps if s != step])
        for question in conv.questions:
            passages = recall.search(conv.name, question.text, 10)
            question.found[f"without {step}"] = [conv.dialog_of[p.hit.message_id] for p in passages]


def table(questions: list[Question], ks: Iterable[int], label: str) -> list[str]:
    """Evidence recall@k per category (%), ours beside the paper's, one row pair per k."""
    lines = [
        f"| {label}: recall@k | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---:|" * len(COLUMNS),
    ]
    for k in ks:
        lines.append(f"| k = {k}, monad `recall` | " + " | ".join(_cell(questions, c, k) for c in COLUMNS) + " |")
        paper = PAPER.get(k, {})
        lines.append(f"| k = {k}, paper (DRAGON) | " + " | ".join(_paper(paper, c) for c in COLUMNS) + " |")
    counts = {c: sum(_in(q, c) for q in questions) for c in COLUMNS}
    lines.append("| questions | " + " | ".join(f"{counts[c]:,}" for c in COLUMNS) + " |")
    return lines


def _in(question: Question, column: str) -> bool:
    if column == "all 5":
        return True
    if column == "answerable 4":
        return question.category != "adversarial"
    return question.category == column


def _cell(questions: list[Question], column: str, k: int, ranking: str | None = None) -> str:
    chosen = [q for q in questions if _in(q, column)]
    if not chosen:
        return "–"
    return f"{100 * statistics.fmean(q.recall(k, ranking) for q in chosen):.1f}"


def _paper(paper: dict[str, float], column: str) -> str:
    return f"{paper[column]:.1f}" if column in paper else "–"


def other_rankings(questions: list[Question]) -> list[str]:
    """Each side alone and each step left out, at k = 10; with the sides, the evidence turns one side had in its
    top 10 that recall's top 10 lacks (fusion or a step pushed them out)."""
    names = [n for n in questions[0].found if isinstance(n, str)] if questions else []
    lines = ["| recall@10 | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    lines.append("| monad `recall` | " + " | ".join(_cell(questions, c, 10) for c in COLUMNS) + " |")
    lines += [f"| {name} | " + " | ".join(_cell(questions, c, 10, name) for c in COLUMNS) + " |" for name in names]
    if WORDS in names:
        had = lost = 0
        for q in questions:
            alone = q.evidence & (set(q.found[WORDS][:10]) | set(q.found.get(VECTORS, [])[:10]))
            had, lost = had + len(alone), lost + len(alone - set(q.found[10]))
        lines.append(f"\nEvidence turns in one side's top 10: {had:,}; of them not in recall's top 10: {lost:,}.")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help=f"locomo10.json ({SOURCE}); default {CACHED}")
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10, 25, 50])
    parser.add_argument("--split", nargs="+", default=["tuning", "held-out"], choices=["tuning", "held-out"])
    parser.add_argument("--steps", nargs="*", default=list(STEPS), choices=STEPS, help="recall's rerank steps")
    parser.add_argument("--no-captions", dest="captions", action="store_false", help="leave photo captions out")
    parser.add_argument("--sides", action="store_true", help="each search alone, and what fusion dropped")
    parser.add_argument("--ablate", action="store_true", help="ask again at k = 10 with each rerank step left out")
    parser.add_argument("--embedding-with", nargs="+", metavar="gemma | BASE_URL MODEL", help="an embeddings endpoint")
    parser.add_argument("--embedding-cache", type=Path, metavar="FILE", help="with --embedding-with")
    parser.add_argument("--threads", type=int, default=1, help="threads of the fixture's llama-server")
    parser.add_argument(
        "--endpoint-timeout",
        type=float,
        default=600.0,
        help="seconds an embedding call may take (the product's 10 s would drop passages on a busy machine)",
    )
    args = parser.parse_args()
    if 10 not in args.k:
        args.k.append(10)
    logging.getLogger("monad_notebook").setLevel(logging.ERROR)
    samples = {s["sample_id"]: s for s in load(args.data)}
    chosen = {"tuning": TUNING, "held-out": HELD_OUT}
    with ExitStack() as servers:
        endpoint = endpoint_of(servers, args) if args.embedding_with else None
        run(args, samples, chosen, endpoint)


def endpoint_of(servers: ExitStack, args: argparse.Namespace) -> tuple[str, str]:
    """The endpoint's (base URL, model): behind the cache with ``--embedding-cache`` (every passage and word kept,
    never a question, so a search's latency stays the endpoint's), with ``--endpoint-timeout`` per call."""
    from benchmarks.embedding_cache import cached_embeddings
    from benchmarks.fidelity import endpoint_of as started

    os.environ.setdefault("OPENAI_API_KEY", "benchmark")
    local_embedder.REMOTE_TIMEOUT_SECONDS = args.endpoint_timeout
    url, model = started(servers, args.embedding_with, "gemma", args.threads)
    if args.embedding_cache:
        question = prefixes_for(model).query
        url, _ = servers.enter_context(cached_embeddings(url, args.embedding_cache, min_chars=1, questions=question))
    return url, model


def report(questions: list[Question], label: str, args: argparse.Namespace) -> None:
    """The tables of one half (printed as soon as it is measured) or of all ten."""
    print("\n" + "\n".join(table(questions, sorted(set(args.k)), label)), flush=True)
    if args.sides or args.ablate:
        print("\n" + "\n".join(other_rankings(questions)), flush=True)


def run(args: argparse.Namespace, samples: dict, chosen: dict, endpoint: tuple[str, str] | None) -> None:
    print(f"embedder: {endpoint[1] if endpoint else 'all-MiniLM-L6-v2 (offline)'}; steps: {', '.join(args.steps)}")
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    halves: dict[str, list[Question]] = {}
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for half in args.split:
            halves[half] = []
            for name in chosen[half]:
                conv = conversation(samples[name], args.captions)
                latencies += measure(conv, args, endpoint, Path(tmp))
                halves[half] += conv.questions
                if conv.left_out:
                    print(f"    ({conv.left_out} question(s) left out: their evidence names no turn)")
            report(halves[half], half, args)
    if len(halves) == 2:
        report([q for qs in halves.values() for q in qs], "all ten", args)
    p50, p95 = statistics.median(latencies), statistics.quantiles(latencies, n=20)[18]
    print(f"\nrecall at k = 10: p50 {p50:.0f} ms, p95 {p95:.0f} ms per question ({len(latencies):,} questions)")
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
