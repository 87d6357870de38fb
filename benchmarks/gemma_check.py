"""The converted EmbeddingGemma checked for real: ranking with and without its prefixes, and its
vectors against the fp32 checkpoint's.

    python benchmarks/gemma_check.py [--no-reference]

Eight questions about notebook work, each with the one passage that answers it, among sixteen
passages (the other eight share words with the questions but answer none). For each question,
the rank of its passage among all sixteen: once with the model's prefixes (queries
``task: search result | query: ``, passages ``title: none | text: ``), once without.

Then the same texts embedded by ``gemma_reference.py`` (numpy, fp32, no torch): the cosine between
each served Q8_0 vector and its fp32 twin, whether llama-server split each text into the same
tokens as the checkpoint's tokenizer, and the ranking the fp32 vectors give.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fixture_check import PASSAGE_PREFIX, QUERY_PREFIX, post
from benchmarks.fixtures import FixtureError, embedding_server, fetch, fetch_gemma_weights, say

PAIRS = [
    ("which file did the sales data come from?", "df = pd.read_csv('data/sales_2023.csv') loaded 48,210 orders."),
    ("how do I undo my last commit but keep the changes?", "git reset --soft HEAD~1 keeps the work staged."),
    ("why was my figure empty?", "The chart was blank: plt.show() ran before ax.plot(), so nothing was drawn."),
    ("customers who stopped buying", "churned = users[users.last_order < cutoff]: 1,204 accounts idle for 90 days."),
    ("the column with the price", "unit_cost_eur holds what each item costs in euros, before tax."),
    ("out of memory reading a big file", "Reading the 12 GB log raised MemoryError; chunksize=100_000 streams it."),
    ("what cut-off did we pick for anomalies?", "Readings 3.5 standard deviations off the rolling mean are flagged."),
    ("how long does one training run take?", "One epoch over the full dataset takes about 41 minutes on the GPU."),
]
DISTRACTORS = [
    "The sales team meets every Monday to review the regional targets.",
    "git log --oneline lists the commits of the current branch.",
    "A figure of speech is not meant to be taken literally.",
    "New customers get ten percent off their first order.",
    "Column widths of the exported sheet were widened to fit the headers.",
    "The file server moved to a new rack last week.",
    "The shop's front door was repainted and the door mat replaced.",
    "Training for new hires takes two weeks.",
]
PASSAGES = [passage for _, passage in PAIRS] + DISTRACTORS
QUESTIONS = [question for question, _ in PAIRS]


def ranks(queries: np.ndarray, passages: np.ndarray) -> list[int]:
    """The 1-based rank of each question's own passage (passage i answers question i)."""
    scores = queries @ passages.T
    return [int((row > row[i]).sum()) + 1 for i, row in enumerate(scores)]


def summary(label: str, found: list[int]) -> str:
    mrr = statistics.fmean(1 / rank for rank in found)
    return f"{label}: first for {sum(rank == 1 for rank in found)}/{len(found)}, MRR {mrr:.2f}, ranks {found}"


def misses(queries: np.ndarray, passages: np.ndarray) -> list[str]:
    """For each question whose passage is not first: what came first instead."""
    scores = queries @ passages.T
    return [
        f"{QUESTIONS[i]!r} -> {PASSAGES[int(np.argmax(row))]!r}"
        for i, row in enumerate(scores)
        if int(np.argmax(row)) != i
    ]


def served(base_url: str, texts: list[str]) -> np.ndarray:
    data = post(base_url, "/embeddings", {"input": texts})["data"]
    vectors = np.asarray([row["embedding"] for row in sorted(data, key=lambda row: row["index"])])
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def served_tokens(base_url: str, text: str) -> list[int]:
    request = urllib.request.Request(
        base_url.removesuffix("/v1") + "/tokenize",
        json.dumps({"content": text, "add_special": True}).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["tokens"]


def compare_with_reference(base_url: str, queries: list[str], passages: list[str], vectors: np.ndarray) -> None:
    from benchmarks.gemma_reference import GemmaReference

    say("fp32 reference (numpy forward pass of the safetensors), one text at a time ...")
    reference = GemmaReference(fetch_gemma_weights())
    texts = queries + passages
    same_tokens = sum(reference.tokens(text) == served_tokens(base_url, text) for text in texts)
    exact = np.asarray([reference.embed(text) for text in texts])
    cosines = np.sum(exact * vectors, axis=1)
    say(f"  tokens: llama-server and the checkpoint's tokenizer agree on {same_tokens}/{len(texts)} texts")
    say(f"  cosine Q8_0 served vs fp32: min {cosines.min():.4f}, median {np.median(cosines):.4f} ({len(texts)} texts)")
    say("  " + summary("fp32 with prefixes", ranks(exact[: len(queries)], exact[len(queries) :])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-reference", action="store_true", help="skip the fp32 comparison (about a minute)")
    args = parser.parse_args(argv)
    try:
        with embedding_server(fetch("gemma")) as base_url:
            queries = [QUERY_PREFIX + question for question in QUESTIONS]
            passages = [PASSAGE_PREFIX + passage for passage in PASSAGES]
            with_prefixes = served(base_url, queries), served(base_url, passages)
            without = served(base_url, QUESTIONS), served(base_url, PASSAGES)
            say(f"{len(QUESTIONS)} questions, each with its passage among {len(PASSAGES)}")
            for label, (query_vectors, passage_vectors) in (("with", with_prefixes), ("without", without)):
                say("  " + summary(f"{label} prefixes", ranks(query_vectors, passage_vectors)))
                for miss in misses(query_vectors, passage_vectors):
                    say(f"    first instead: {miss}")
            if not args.no_reference:
                compare_with_reference(base_url, queries, passages, np.vstack(with_prefixes))
    except FixtureError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
