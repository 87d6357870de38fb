"""Semantic retrieval: search latency, offline embedder speed, and recall on buried facts.

Prints the markdown tables quoted in BENCHMARKS.md. Run from the repository root with the
``local`` extra installed: ``python benchmarks/retrieval.py [--sizes 10000 100000]``.

- Search latency goes through ``LanceStore.search_embeddings`` (session prefilter, window
  exclusions) on synthetic 384-d vectors: random points around 200 topic centres, unit
  length, so they cluster like sentence embeddings do. Three layouts: the whole table is one
  session, or the rows are spread over 5 or 100 sessions and one of them is searched. The
  same probes are searched again with the vector index bypassed: recall@5 against that
  exact search, and its latency. "optimize s" includes the vector index build.
- Needles at scale: the needle set's real embeddings among 100,000 distractors (real chatter
  embeddings plus small noise) in one session, through the index and exact.
- Throughput and recall use the real offline model (all-MiniLM-L6-v2 int8).
- Recall: facts stated once among notebook chatter, asked back in other words; and orders
  asked back by their id, which a sentence embedding cannot tell apart (the identifier lookup).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monad_notebook.config import RetrievalConfig
from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.context.recall.retrieval import Retrieval
from monad_notebook.context.recall.search import Recall
from monad_notebook.context.recall.wordmatch import WordVectors, words_of
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import LocalEmbedder
from monad_notebook.store.base import Chunk
from monad_notebook.store.lance import LanceStore
from monad_notebook.store.optimize_passes import OPTIMIZE_ROWS

DIMS = 384
MODEL = "synthetic"
MIN_SCORES = (0.25, 0.3, 0.35, 0.4, 0.45)

FACTS = [
    (
        "The warehouse in Rotterdam closes for inventory every last Friday.",
        "When is the Dutch depot shut for stock counts?",
    ),
    ("Our API rate limit is 600 requests per minute per key.", "How many calls can one token make each minute?"),
    ("Priya wrote the data cleaning pipeline last spring.", "Who built the preprocessing code?"),
    ("The loyalty programme gives 3 points per euro spent.", "How are rewards earned by members?"),
    (
        "We store raw clickstream data in the bucket named ev-raw-2024.",
        "Where does the unprocessed web tracking data live?",
    ),
    ("My cat Pixel knocks things off the desk during calls.", "Which pet interrupts my video meetings?"),
    (
        "The A/B test on the checkout button ended with no significant difference.",
        "Did the purchase page experiment win?",
    ),
    ("Customer ages above 99 in the CRM are placeholder values.", "Why do some clients look implausibly old?"),
    ("I will be on holiday in Japan from the 10th to the 24th.", "When am I away travelling?"),
    ("The GPU cluster is reserved for the vision team on Wednesdays.", "Which day can we not use the graphics cards?"),
    (
        "Invoices from the Berlin office are in the old SAP export format.",
        "What format do the German billing files use?",
    ),
    ("The survey had a response rate of 18 percent.", "How many people answered the questionnaire?"),
    ("Do not email the Henderson account before their audit ends.", "Which client should we avoid contacting for now?"),
    ("The dashboard refreshes every night at 2am.", "How often is the reporting view updated?"),
    ("Our discount codes expire after 45 days.", "How long are promo vouchers valid?"),
    ("The price column is in cents, not dollars.", "What unit are the cost values stored in?"),
    ("My manager, Olu, prefers a one-page summary over slides.", "How does my boss like to receive updates?"),
    ("Returns spiked in November because of a sizing chart error.", "Why did product returns jump late in the year?"),
    ("We deprecated the v1 endpoint; clients must move to v2 by June.", "When must integrations switch API versions?"),
    ("The seed for all experiments is 1234.", "Which random state do we use for reproducibility?"),
    ("The office coffee machine only takes oat milk pods.", "What kind of milk works in the kitchen appliance?"),
    ("Store 112 in Leeds has the highest footfall.", "Which shop gets the most visitors?"),
    ("Weekend orders are processed on Monday morning.", "When are Saturday purchases handled?"),
    ("The legal team must review any dataset containing health records.", "Who approves medical data use?"),
]
TOPICS = [
    "the sales dataframe",
    "the weekly cohort table",
    "the residual plot",
    "the null counts",
    "the join on order id",
    "the rolling average",
    "the seaborn heatmap",
    "the parquet reader",
    "the timezone conversion",
    "the bootstrap confidence interval",
    "the feature importance chart",
    "the cross validation loop",
    "the encoding of categorical columns",
    "the memory usage of the frame",
    "the SQL query",
    "the chart title and axis labels",
]
TEMPLATES = [
    "Could you check {t} once more?",
    "Running {t} gave me a SettingWithCopyWarning.",
    "Let's simplify {t} a bit.",
    "Show {t} as a bar chart, please.",
    "Output of {t}: 3,481 rows x 12 columns.",
    "Something is wrong with {t}, the totals don't add up.",
    "Explain {t} in plain words.",
    "Great, {t} is fixed. Next step?",
    "ValueError: could not convert string to float in {t}",
    "Write a short comment above {t}.",
    "How long does {t} take on the whole file?",
    "Export {t} to Excel for the team.",
    "I updated {t}; rerun everything below it.",
]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def timed_ms(action: Callable[[], object], runs: int) -> list[float]:
    """Milliseconds per run, after one untimed warm-up run."""
    action()
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        out.append((time.perf_counter() - start) * 1000)
    return out


def synthetic_vectors(rng: np.random.Generator, centres: np.ndarray, n: int) -> list[list[float]]:
    points = centres[rng.integers(0, len(centres), n)] + rng.normal(scale=0.8, size=(n, DIMS)).astype(np.float32)
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).tolist()


def fill(store: LanceStore, rng: np.random.Generator, centres: np.ndarray, total: int, sessions: int) -> float:
    """``total`` rows over ``sessions`` sessions, 5,000 rows per write, then one optimize: its seconds."""
    per = total // sessions
    for s in range(sessions):
        for start in range(0, per, 5000):
            n = min(5000, per - start)
            messages = [Message(role="user", content=f"message {start + i}", seq=start + i) for i in range(n)]
            store.search.save_embeddings(
                f"s{s}", list(zip(messages, synthetic_vectors(rng, centres, n), strict=True)), MODEL
            )
    start = time.perf_counter()
    store.optimize()
    return time.perf_counter() - start


def timed_searches(store: LanceStore, session: str, probes: list[list[float]], k: int) -> tuple[list[float], list]:
    """Milliseconds per search (the first dropped as warm-up) and each search's top-k ids."""
    window = [f"window-{i}" for i in range(100)]
    samples, found = [], []
    for probe in probes:
        start = time.perf_counter()
        hits = store.search.search_embeddings(session, probe, k, exclude_ids=window)
        samples.append((time.perf_counter() - start) * 1000)
        found.append([h.message_id for h in hits[:5]])
    return samples[1:], found


def overlap(found: list[list[str]], truth: list[list[str]]) -> float:
    return statistics.mean(len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(found, truth, strict=True))


def search_latency(sizes: list[int], queries: int) -> list[str]:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(200, DIMS)).astype(np.float32)
    rows = [
        "| stored vectors | layout | rows searched | path | p50 ms | p95 ms | recall@5 vs exact "
        "| exact p50 / p95 ms | optimize s |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        for sessions in (1, 5, 100):
            with tempfile.TemporaryDirectory() as tmp:
                store = LanceStore(Path(tmp) / "db", optimize_every=0)
                seconds = fill(store, rng, centres, size, sessions)
                probes = synthetic_vectors(rng, centres, queries)
                samples, found = timed_searches(store, "s0", probes, 6)
                threshold, store.tables.ann_min_rows = store.tables.ann_min_rows, sys.maxsize
                exact_samples, truth = timed_searches(store, "s0", probes, 6)
                store.close()
            p50, p95 = percentiles(samples)
            e50, e95 = percentiles(exact_samples)
            layout = "one session" if sessions == 1 else f"{sessions} sessions"
            path = "index" if size // sessions >= threshold else "exact"
            rows.append(
                f"| {size:,} | {layout} | {size // sessions:,} | {path} | {p50:.1f} | {p95:.1f} "
                f"| {overlap(found, truth):.3f} | {e50:.1f} / {e95:.1f} | {seconds:.1f} |"
            )
    return rows


def needles_at_scale(embedder: LocalEmbedder, total: int) -> list[str]:
    """Recall@1 / @5 of the needle set's questions with ``total`` distractors, through the index and exact."""
    rng = np.random.default_rng(4)
    messages, fact_ids = needle_messages("needles", 300)
    lines = chat_lines(random.Random(5), 1000)
    chatter = np.array(embedder.embed(lines), dtype=np.float32)
    questions = embedder.embed([q for _, q in FACTS])
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "db", optimize_every=0)
        vectors = embedder.embed([m.content for m in messages])
        store.search.save_embeddings("needles", list(zip(messages, vectors, strict=True)), MODEL)
        for start in range(0, total, 5000):
            picks = rng.integers(0, len(chatter), 5000)
            points = chatter[picks] + rng.normal(scale=0.02, size=(5000, chatter.shape[1]))
            points /= np.linalg.norm(points, axis=1, keepdims=True)
            noise = [Message(role="user", content=lines[p], seq=len(messages) + start + i) for i, p in enumerate(picks)]
            store.search.save_embeddings("needles", list(zip(noise, points.tolist(), strict=True)), MODEL)
        store.optimize()
        results = []
        for threshold in (store.tables.ann_min_rows, sys.maxsize):
            store.tables.ann_min_rows = threshold
            ids = [[h.message_id for h in store.search.search_embeddings("needles", q, 5)] for q in questions]
            results.append((sum(i[:1] == [f] for i, f in zip(ids, fact_ids, strict=True)), ids))
        lookup = timed_ms(lambda: store.search.search_chunks("needles", "ORD-48213", 5), 21)
        store.close()
    n = len(FACTS)
    (index_at1, index_ids), (exact_at1, exact_ids) = results
    index_at5 = sum(f in i for i, f in zip(index_ids, fact_ids, strict=True))
    exact_at5 = sum(f in i for i, f in zip(exact_ids, fact_ids, strict=True))
    return [
        f"| needle set: {n} facts among {total + len(messages):,} vectors in one session | index | exact |",
        "|---|---:|---:|",
        f"| recall@1 | {index_at1 / n:.2f} | {exact_at1 / n:.2f} |",
        f"| recall@5 | {index_at5 / n:.2f} | {exact_at5 / n:.2f} |",
        f"| top-5 overlap with exact | {overlap(index_ids, exact_ids):.3f} | 1.000 |",
        f"| full-text lookup of an id no chunk holds p50 / p95 ms | "
        f"{' / '.join(f'{v:.1f}' for v in percentiles(lookup[1:]))} | |",
    ]


def identifier_recall(embedder: LocalEmbedder, distractors: int) -> list[str]:
    """Orders asked back by id among chatter and other orders' notes: the vector alone, and the block."""
    rng = random.Random(8)
    ids = [f"ORD-{n}" for n in rng.sample(range(10_000, 99_999), 240)]
    notes = {
        i: f"Order {i} shipped to depot {n} with a damaged pallet; a refund is due." for n, i in enumerate(ids[:40])
    }
    texts = chat_lines(rng, distractors) + [f"Order {i} looks normal, nothing to report." for i in ids[40:]]
    texts += notes.values()
    rng.shuffle(texts)
    messages = [Message(role="user", content=t, session="orders", seq=n, turn=n // 2) for n, t in enumerate(texts)]
    by_text = {m.content: m.id for m in messages}
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "db")
        indexer = RecallIndexer(store, embedder)
        indexer.add("orders", messages, {})
        indexer.flush()
        finder = Retrieval(Recall(store.search, embedder), RetrievalConfig(enabled=True))
        at1 = at5 = in_block = 0
        latencies = []
        for order_id, note in notes.items():
            question = f"Where did {order_id} ship to?"
            hits = store.search.search_embeddings("orders", embedder.embed([question])[0], 5, model=embedder.name)
            found = [h.message_id for h in hits]
            at1 += found[:1] == [by_text[note]]
            at5 += by_text[note] in found
            start = time.perf_counter()
            in_block += note in (finder.related_context("orders", question, set()) or "")
            latencies.append((time.perf_counter() - start) * 1000)
        store.close()
    n = len(notes)
    p50, p95 = percentiles(latencies)
    return [
        f"| {n} orders asked back by id, among {len(messages) - n} other messages (200 other orders) | value |",
        "|---|---:|",
        f"| recall@1 / recall@5, vector search alone | {at1 / n:.2f} / {at5 / n:.2f} |",
        f"| the order's note in the related_context block (identifier lookup + vector) | {in_block / n:.2f} |",
        f"| related_context p50 / p95 ms (embedding the question included) | {p50:.1f} / {p95:.1f} |",
    ]


def recall_at_scale(embedder: LocalEmbedder, total: int, tail: int, queries: int) -> list[str]:
    """``Recall.search`` as the recall tool runs it, in one session of ``total`` chunks.

    Full-text and vectors fused with the word-by-word ranking (the question embedded each
    time, with those of its words not learnt yet; the session's words learnt beforehand, as
    the indexer does).

    Every stored message is one chunk: its text under the full-text index, its vector (the
    chatter's real embeddings plus small noise) in the vector table, then one optimize (which
    builds the vector index and folds the text into the full-text index). Measured again with
    ``tail`` more chunks written after the optimize: the most the background optimize lets
    accumulate (``OPTIMIZE_ROWS``) before it folds them in.
    """
    rng = np.random.default_rng(6)
    lines = chat_lines(random.Random(9), 1000)
    chatter = np.array(embedder.embed(lines), dtype=np.float32)
    facts = [fact for fact, _ in FACTS]
    questions = [q for _, q in FACTS] + [f"Where did order ORD-{40_000 + i} ship to?" for i in range(24)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "db", optimize_every=0)
        _fill_chunks(store, embedder, rng, chatter, lines, facts, 0, total)
        started = time.perf_counter()
        store.optimize()
        seconds = time.perf_counter() - started
        recall = Recall(store.search, embedder, learnt_words(embedder, [*lines, *facts]))  # as the recall tool searches
        for label, extra in (("after optimize", 0), (f"+{tail:,} chunks not yet optimized", tail)):
            if extra:
                _fill_chunks(store, embedder, rng, chatter, lines, [], total, extra)
            asked = [questions[i % len(questions)] for i in range(queries)]
            samples = timed_ms_each(lambda q: recall.search("big", q, 6), asked)
            p50, p95 = percentiles(samples)
            rows.append(f"| {total + extra:,} | {label} | {p50:.1f} | {p95:.1f} | {seconds:.1f} |")
        found = sum(any(f in p.hit.snippet for p in recall.search("big", q, 6)) for f, q in FACTS)
        plain = Recall(store.search, embedder)
        found_plain = sum(any(f in p.hit.snippet for p in plain.search("big", q, 6)) for f, q in FACTS)
        store.close()
    return [
        "| chunks in the session | index state | recall p50 ms | recall p95 ms | optimize s |",
        "|---:|---|---:|---:|---:|",
        *rows,
        "",
        f"Needle facts in recall's top 6 among {total:,} chunks: {found}/{len(FACTS)}"
        f" ({found_plain}/{len(FACTS)} without matching words by meaning).",
    ]


def learnt_words(embedder: LocalEmbedder, texts: list[str]) -> WordVectors:
    """The word vectors the recall indexer would have learnt from ``texts``."""
    words = WordVectors(embedder.name)
    unknown = words.unknown(w for text in texts for w in words_of(text))
    words.learn(unknown, embedder.embed(unknown))
    return words


def _fill_chunks(
    store: LanceStore,
    embedder: LocalEmbedder,
    rng: np.random.Generator,
    chatter: np.ndarray,
    lines: list[str],
    facts: list[str],
    start: int,
    count: int,
) -> None:
    """``count`` chunks (chatter, with ``facts`` among the first), 5,000 per write in each table."""
    for at in range(start, start + count, 5000):
        n = min(5000, start + count - at)
        picks = rng.integers(0, len(chatter), n)
        points = chatter[picks] + rng.normal(scale=0.02, size=(n, chatter.shape[1]))
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        texts = [lines[p] for p in picks]
        vectors = points.tolist()
        if at == start and facts:
            texts[: len(facts)] = facts
            vectors[: len(facts)] = embedder.embed(facts)
        chunks = [Chunk(f"m{at + i}", 0, t, seq=at + i, turn=(at + i) // 4, role="user") for i, t in enumerate(texts)]
        store.search.save_chunks("big", chunks)
        store.search.save_embeddings("big", list(zip(chunks, vectors, strict=True)), embedder.name)


def timed_ms_each(action: Callable[[str], object], inputs: list[str]) -> list[float]:
    """Milliseconds per call, after one untimed warm-up call."""
    action(inputs[0])
    out = []
    for item in inputs:
        started = time.perf_counter()
        action(item)
        out.append((time.perf_counter() - started) * 1000)
    return out


def chat_lines(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(TEMPLATES).format(t=rng.choice(TOPICS)) for _ in range(n)]


def table_dumps(rng: random.Random, n: int) -> list[str]:
    """Tool-output-like text long enough to hit the model's 256-token limit."""
    return [" ".join(f"row{rng.randrange(999)}={rng.random():.3f}" for _ in range(60)) for _ in range(n)]


def rate(embedder: LocalEmbedder, texts: list[str]) -> float:
    start = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - start)


def embedder_speed(embedder: LocalEmbedder) -> list[str]:
    start = time.perf_counter()
    embedder.embed(["warm up"])
    cold = time.perf_counter() - start
    rng = random.Random(1)
    short, long = chat_lines(rng, 256), table_dumps(rng, 32)
    mixed = short[:128] + long
    query_p50, query_p95 = percentiles(timed_ms(lambda: embedder.embed(["What breed is my dog?"]), 50))
    return [
        "| offline embedder (one inference thread) | value |",
        "|---|---:|",
        f"| first embed, model load included | {cold:.2f} s |",
        f"| short chat messages (~15 tokens) | {rate(embedder, short):.0f} sentences/s |",
        f"| long tool outputs (256 tokens, the cap) | {rate(embedder, long):.1f} texts/s |",
        f"| 4 short : 1 long mix | {rate(embedder, mixed):.0f} texts/s |",
        f"| one query, p50 / p95 | {query_p50:.1f} / {query_p95:.1f} ms |",
    ]


def needle_messages(session: str, distractors: int) -> tuple[list[Message], list[str]]:
    rng = random.Random(3)
    texts = [rng.choice(TEMPLATES).format(t=rng.choice(TOPICS)) for _ in range(distractors)]
    for fact, _ in FACTS:
        texts.insert(rng.randrange(len(texts) + 1), fact)
    messages = [
        Message(role="user" if i % 2 == 0 else "assistant", content=t, session=session, seq=i, turn=i // 2)
        for i, t in enumerate(texts)
    ]
    by_text = {m.content: m.id for m in messages}
    return messages, [by_text[fact] for fact, _ in FACTS]


def needle_recall(embedder: LocalEmbedder, distractors: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "db")
        messages, fact_ids = needle_messages("needles", distractors)
        indexer = RecallIndexer(store, embedder)
        start = time.perf_counter()
        indexer.add("needles", messages, {})
        indexer.flush()
        indexing = time.perf_counter() - start
        at1 = at5 = 0
        for (_, question), fact_id in zip(FACTS, fact_ids, strict=True):
            hits = store.search.search_embeddings("needles", embedder.embed([question])[0], 5, model=embedder.name)
            ids = [h.message_id for h in hits]
            at1 += ids[:1] == [fact_id]
            at5 += fact_id in ids
        sweep = [block_recall(store, embedder, min_score) for min_score in MIN_SCORES]
        store.close()
    n = len(FACTS)
    rows = [
        f"| needle set: {n} facts among {distractors} messages | value |",
        "|---|---:|",
        f"| indexing {len(messages)} messages (background indexer, flushed) | {indexing:.2f} s |",
        f"| recall@1 (vector search) | {at1 / n:.2f} |",
        f"| recall@5 (vector search) | {at5 / n:.2f} |",
        "",
        "| minScore | fact in the related_context block | other hits per block | related_context p50 / p95 ms |",
        "|---:|---:|---:|---:|",
    ]
    for min_score, (recall, noise, p50, p95) in zip(MIN_SCORES, sweep, strict=True):
        rows.append(f"| {min_score:.2f} | {recall:.2f} | {noise:.1f} | {p50:.1f} / {p95:.1f} |")
    return rows


def block_recall(store: LanceStore, embedder: LocalEmbedder, min_score: float) -> tuple[float, float, float, float]:
    """Share of facts that reach the block (maxResults 5), other hits per block, latency percentiles."""
    finder = Retrieval(Recall(store.search, embedder), RetrievalConfig(enabled=True, min_score=min_score))
    found, others, latencies = 0, 0, []
    for fact, question in FACTS:
        start = time.perf_counter()
        block = finder.related_context("needles", question, set())
        latencies.append((time.perf_counter() - start) * 1000)
        hits = (block or "").count("\n- ")
        hit = block is not None and fact in block
        found += hit
        others += hits - hit
    p50, p95 = percentiles(latencies)
    return found / len(FACTS), others / len(FACTS), p50, p95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--distractors", type=int, default=300)
    parser.add_argument("--needle-scale", type=int, default=100_000, help="distractor vectors; 0 skips")
    parser.add_argument("--recall-scale", type=int, default=100_000, help="chunks for the recall latency; 0 skips")
    args = parser.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} CPUs, load average {load} at start\n")
    print("\n".join(search_latency(args.sizes, args.queries)), end="\n\n")
    embedder = LocalEmbedder()
    print("\n".join(embedder_speed(embedder)), end="\n\n")
    print("\n".join(needle_recall(embedder, args.distractors)))
    print("\n" + "\n".join(identifier_recall(embedder, args.distractors)))
    if args.needle_scale:
        print("\n" + "\n".join(needles_at_scale(embedder, args.needle_scale)))
    if args.recall_scale:
        tail = min(OPTIMIZE_ROWS, max(1, args.recall_scale // 50))
        print("\n" + "\n".join(recall_at_scale(embedder, args.recall_scale, tail, args.queries)))


if __name__ == "__main__":
    main()
