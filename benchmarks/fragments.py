"""What unmerged writes to the recall tables cost a search at scale, and what a pass over them costs.

    python benchmarks/fragments.py [--size 100000] [--writes 10 40]

Seeds a store as ``tails.py`` does (messages, their chunks under the full-text index, one
vector per chunk, one full optimize), then times the two recall searches alone (vector and
full-text, every question of ``tails.py`` three times) on the compacted tables, after each
number of single-row writes to both tables (one fragment each, as the recall indexer leaves
them), and after one pass over each table. The passes run in this process, so their CPU time
is measured; in a kernel they run in the helper process at the lowest priority.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.tails import QUESTIONS, SESSION, seed
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import LocalEmbedder
from monad_notebook.store.lance import LanceStore
from monad_notebook.store.rows import TEXT_TABLE, as_chunk, embeddings_table

ROUNDS = 3


def searches(store: LanceStore, embedder: LocalEmbedder, vectors: dict[str, list[float]]) -> str:
    """p50 / p95 ms of each search, every question ``ROUNDS`` times, and the fragments searched."""
    vector, words = [], []
    for _ in range(ROUNDS):
        for question in QUESTIONS:
            started = time.perf_counter()
            store.search.search_embeddings(SESSION, vectors[question], 6, model=embedder.name)
            vector.append(1000 * (time.perf_counter() - started))
            started = time.perf_counter()
            store.search.search_chunks(SESSION, question, 6)
            words.append(1000 * (time.perf_counter() - started))
    stats = store.tables.table_stats()
    fragments = f"{stats[embeddings_table(embedder.dims)]['fragments']}, {stats[TEXT_TABLE]['fragments']}"
    return f"{fragments} | {_p50_p95(vector)} | {_p50_p95(words)} |"


def _p50_p95(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{statistics.median(ordered):.1f} / {ordered[int(0.95 * len(ordered))]:.1f}"


def write_singly(store: LanceStore, embedder: LocalEmbedder, count: int, start: int) -> None:
    vector = embedder.embed(["a note about the churn extract"])[0]
    for n in range(start, start + count):
        message = Message("user", f"note {n} about the churn extract", session=SESSION, seq=10**7 + n)
        store.search.save_embeddings(SESSION, [(message, vector)], embedder.name)
        store.search.save_chunks(SESSION, [as_chunk(message)])


def one_pass(store: LanceStore, table: str) -> str:
    cpu, wall = time.process_time(), time.perf_counter()
    store.tables.passes.alone(table, timedelta(0))
    return f"{table}: {time.perf_counter() - wall:.2f} s wall, {time.process_time() - cpu:.2f} s CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="stored messages")
    parser.add_argument("--writes", type=int, nargs="+", default=[10, 40], help="single-row writes before each pass")
    args = parser.parse_args()
    embedder = LocalEmbedder()
    vectors = dict(zip(QUESTIONS, embedder.embed(QUESTIONS), strict=True))
    print(f"`python benchmarks/fragments.py --size {args.size}`: {len(QUESTIONS) * ROUNDS} searches per row\n")
    print("| state of the recall tables | fragments (vectors, chunks) | vector p50 / p95 ms | full-text p50 / p95 ms |")
    print("| --- | ---: | ---: | ---: |")
    passes = []
    with tempfile.TemporaryDirectory() as tmp:
        store = LanceStore(Path(tmp) / "db", optimize_every=0)
        seed(store, embedder, args.size)
        print(f"| compacted | {searches(store, embedder, vectors)}", flush=True)
        written = 0
        for count in args.writes:
            write_singly(store, embedder, count, written)
            written += count
            print(f"| {count} single-row writes later | {searches(store, embedder, vectors)}", flush=True)
            passes += [one_pass(store, embeddings_table(embedder.dims)), one_pass(store, TEXT_TABLE)]
            print(f"| after one pass of each | {searches(store, embedder, vectors)}", flush=True)
        store.close()
    print("\nOne pass after each row of writes: " + "; ".join(passes) + ".")


if __name__ == "__main__":
    main()
