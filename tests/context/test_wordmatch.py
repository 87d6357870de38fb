"""Matching a question's words to a passage's by meaning: the ranking, the words the indexer learns, and recall."""

from __future__ import annotations

import random

import numpy as np
import pytest

from monad_notebook.config import Config
from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.context.recall.search import Recall
from monad_notebook.context.recall.wordmatch import WordVectors, rank_by_words
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import LocalEmbedder, local_model_files
from monad_notebook.session import Session
from monad_notebook.store.base import Chunk, EmbeddingHit
from monad_notebook.testing import ScriptedModel
from tests.context.embedders import KeywordEmbedder, index

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")


def unit(*values: float) -> list[float]:
    vector = np.array(values, dtype=np.float32)
    return (vector / np.linalg.norm(vector)).tolist()


def hit(text: str, number: int) -> EmbeddingHit:
    return EmbeddingHit(f"m{number}", 0.3, text, seq=number)


def test_each_question_word_counts_by_its_nearest_word_in_the_passage_and_numbers_alone_are_left_out():
    words = WordVectors("toy")
    words.learn(
        ["attrition", "churn", "dump", "extract", "weather", "report"],
        [unit(1, 0, 0), unit(0.8, 0.6, 0), unit(0, 0, 1), unit(0, 0.7, 0.71), unit(0, 1, 0), unit(0.1, 0.99, 0)],
    )
    terms = ["attrition", "dump"]
    passages = [hit("weather report", 0), hit("attrition weather", 1), hit("12 455.1 93.2", 2), hit("churn extract", 3)]

    ranked = rank_by_words(terms, words.matrix(terms, 3), passages, words)

    # churn ~ attrition 0.8, extract ~ dump 0.71: mean 0.76, above the exact word with nothing for "dump" (0.5).
    assert [h.snippet for h in ranked] == ["churn extract", "attrition weather", "weather report"]


def test_a_word_starting_with_the_term_matches_fully_and_a_word_not_learnt_matches_nothing_else():
    words = WordVectors("toy")
    words.learn(["churn"], [unit(1, 0)])
    terms = ["churn"]
    passages = [hit("customers left", 0), hit("customers churned", 1)]

    ranked = rank_by_words(terms, words.matrix(terms, 2), passages, words)

    assert [h.snippet for h in ranked] == ["customers churned", "customers left"]
    assert words.matrix(["churned"], 2).tolist() == [[0.0, 0.0]]


def test_word_vectors_stop_learning_at_their_limit():
    words = WordVectors("toy", limit=2)
    words.learn(["alpha", "beta", "gamma"], [unit(1, 0), unit(0, 1), unit(1, 1)])

    assert len(words) == 2 and words.full and words.unknown(["delta"]) == []


def test_the_indexer_learns_the_words_of_what_it_indexes_and_of_a_sessions_earlier_history(store):
    earlier = [Message("user", f"the churn extract landed {i}", session="s", seq=i) for i in range(3)]
    store.append_messages(earlier)
    first = RecallIndexer(store, KeywordEmbedder())  # an earlier kernel, indexing without word vectors
    first.add("s", earlier, {})
    assert first.flush(30)
    words = WordVectors("keywords")
    indexer = RecallIndexer(store, KeywordEmbedder(), words=words)
    indexer.meet("s")

    indexer.add("s", [Message("assistant", "the refund totals look right", session="s", seq=3)], {})
    assert indexer.flush(30) and indexer.last_error is None

    assert words.unknown(["churn", "extract", "landed", "refund", "totals", "look", "right"]) == []
    assert words.unknown(["the"]) == ["the"]  # stop words are never learnt


def test_with_words_only_nothing_is_embedded_for_words_either(store):
    embedder = KeywordEmbedder()
    words = WordVectors("keywords")
    indexer = RecallIndexer(store, embedder, embed_max_chars=0, words=words)

    indexer.add("s", [Message("user", "the churn extract landed", session="s", seq=0)], {})
    assert indexer.flush(30)

    assert len(words) == 0 and embedder.calls == []


def test_each_chunk_brings_several_chunks_of_one_message_where_the_default_brings_its_best(store):
    embedder = KeywordEmbedder()
    chunks = [Chunk("m1", 0, "cat cat", seq=1, role="tool"), Chunk("m1", 20, "cat pizza", seq=1, role="tool")]
    store.search.save_embeddings("s", [(c, embedder.embed([c.text])[0]) for c in chunks], embedder.name)
    question = embedder.embed(["cat"])[0]

    assert [h.snippet for h in store.search.search_embeddings("s", question, 5)] == ["cat cat"]
    assert [h.snippet for h in store.search.search_embeddings("s", question, 5, each_chunk=True)] == [
        "cat cat",
        "cat pizza",
    ]


def test_a_sessions_recall_tool_matches_words_with_what_its_indexer_learns_unless_it_searches_words_only(store):
    def recall_of(context: dict) -> Recall | None:
        config = Config.model_validate({"models": {"embedding": {"provider": "local"}}, "context": context})
        session = Session("w", config=config, store=store, model=ScriptedModel([]))
        stages = session.recall
        assert stages.indexer is not None and stages.recall is not None
        words, learner = stages.recall.words, stages.indexer.learner.words
        session.close()
        assert words is None or words is learner
        return words

    assert recall_of({}) is not None
    assert recall_of({"recall": {"embedMaxChars": 0}}) is None


def frame(rng: random.Random, rows: int) -> str:
    columns = ["order_id", "region", "qty", "unit_price", "margin", "status"]
    lines = ["  ".join(columns)] + ["  ".join(f"{rng.uniform(0, 900):.2f}" for _ in columns) for _ in range(rows)]
    return "\n".join(lines)


@pytest.mark.skipif(local_model_files() is None, reason="the local extra is not installed")
def test_a_question_in_other_words_finds_the_line_with_a_near_word_for_each_of_its_words(store):
    said = [
        "Compare this batch with the previous one. The review score is in column col_12x.",
        "The customer segment table was refreshed for region north.",
        "Load the next batch and check the schema.",
        "Check the data dictionary for anything new.",
        "The support ticket median came out at 41.",
        "Profile the numeric columns again. The refund amount in euros is in column col_77.",
    ]
    rng = random.Random(3)
    messages = []
    for n, text in enumerate(said * 3):
        messages.append(Message("user", text, session="s", seq=2 * n, turn=n))
        output = frame(rng, 8) + ("\nsaved review holdout sample -> s3_exports/x11_q18.parquet" if n == 7 else "")
        messages.append(Message("tool", output, session="s", seq=2 * n + 1, turn=n, tool_call_id=f"c{n}"))
    embedder = LocalEmbedder()
    words = WordVectors(embedder.name)
    index(store, embedder, "s", messages, timeout=600, words=words)
    question = "which file was the customer rating held-out set?"

    passages = Recall(store.search, embedder, words).search("s", question, 6)
    without = Recall(store.search, embedder).search("s", question, 6)

    # No word in common; by the question's vector, rows of numbers and "The review score ..." come first.
    assert "x11_q18" in passages[0].hit.snippet
    assert not any("x11_q18" in p.hit.snippet for p in without)
