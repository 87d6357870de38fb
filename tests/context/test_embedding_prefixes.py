"""Embedding prefixes and a change of embedding model: what the embedder received, what the store kept."""

from __future__ import annotations

import threading
import time

import pytest

from monad_notebook import Session
from monad_notebook.cell.status import status_sentences
from monad_notebook.config import Config, EmbeddingConfig
from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.messages import Message
from monad_notebook.provider.local_embedder import local_model_files, make_embedder
from monad_notebook.provider.prefixes import prefixes_for, vector_space
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, tool_call
from tests.context.embedders import VOCABULARY, KeywordEmbedder, index

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")

GEMMA = ("task: search result | query: ", "title: none | text: ")
BGE_QUERY = "Represent this sentence for searching relevant passages: "


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("embeddinggemma:300m", GEMMA),
        ("google/embeddinggemma-300m", GEMMA),
        ("embeddinggemma-300M-Q8_0.gguf", GEMMA),
        ("nomic-embed-text:v1.5", ("search_query: ", "search_document: ")),
        ("intfloat/e5-small-v2", ("query: ", "passage: ")),
        ("multilingual-e5-large", ("query: ", "passage: ")),
        ("intfloat/multilingual-e5-large-instruct", ("", "")),
        ("BAAI/bge-small-en-v1.5", (BGE_QUERY, "")),
        ("bge-m3", ("", "")),
        ("text-embedding-3-small", ("", "")),
        ("all-MiniLM-L6-v2", ("", "")),
    ],
)
def test_a_known_model_family_gets_the_prefixes_it_was_trained_with(model, expected):
    prefixes = prefixes_for(model)
    assert (prefixes.query, prefixes.document) == expected


def test_a_configured_prefix_wins_over_the_known_one_and_an_empty_one_turns_it_off():
    assert prefixes_for("embeddinggemma", "Q: ", None).query == "Q: "
    assert prefixes_for("embeddinggemma", "Q: ", None).document == GEMMA[1]
    assert prefixes_for("embeddinggemma", "", "") == prefixes_for("text-embedding-3-small")


@pytest.mark.parametrize(
    ("model", "configured", "question", "passage"),
    [
        ("embeddinggemma", {}, *GEMMA),
        ("text-embedding-3-small", {"queryPrefix": "Q: ", "documentPrefix": "D: "}, "Q: ", "D: "),
        ("nomic-embed-text", {"queryPrefix": "", "documentPrefix": ""}, "", ""),
    ],
)
def test_an_embeddings_endpoint_receives_questions_and_passages_with_their_prefixes(
    store, model, configured, question, passage
):
    with FakeOpenAIServer() as server:
        embedding = {"provider": "openai", "model": model, "baseUrl": server.base_url, **configured}
        config = Config.model_validate({"models": {"embedding": embedding}})
        asked = tool_call("recall", {"query": "churn raw extract"})
        model_ = ScriptedModel(["noted", asked, "done"], context_window=100_000)
        session = Session("s", config=config, store=store, model=model_)
        session.ask("the churn raw extract is data/raw/churn.parquet")
        session.wait_for_background(30)
        session.ask("where was it?")
        session.close()

    inputs = [text for request in server.embedding_requests for text in request["input"]]
    assert question + "churn raw extract" in inputs
    assert passage + "the churn raw extract is data/raw/churn.parquet" in inputs
    assert all(text.startswith((question, passage)) for text in inputs)
    if not question:
        assert not any(text.startswith(("search_query: ", "search_document: ")) for text in inputs)


@pytest.mark.lance
@pytest.mark.skipif(local_model_files() is None, reason="the offline embedding model is not installed")
def test_the_offline_model_embeds_passages_with_the_configured_prefix_and_keeps_their_vectors_apart(store):
    prefixed = make_embedder(EmbeddingConfig.model_validate({"queryPrefix": "query: ", "documentPrefix": "passage: "}))
    plain = make_embedder(EmbeddingConfig())
    assert prefixed is not None and plain is not None and prefixed.name != plain.name
    note = Message("user", "the churn raw extract is data/raw/churn.parquet", session="s", seq=0)
    store.append_messages([note])

    index(store, prefixed, "s", [note])

    with_prefix, without = plain.embed(["passage: " + note.content, note.content])
    assert store.search.search_embeddings("s", with_prefix, 1, model=prefixed.name)[0].score > 0.999
    assert store.search.search_embeddings("s", without, 1, model=prefixed.name)[0].score < 0.99
    assert store.search.search_embeddings("s", without, 1, model=plain.name) == []


class Prefixed(KeywordEmbedder):
    """The keyword model asked with a passage prefix: another vector space, so another name."""

    document_prefix = "passage: "
    name = vector_space(KeywordEmbedder.name, document_prefix)
    chunks_per_call = 1

    def __init__(self, calls_before_gate: int | None = None) -> None:
        super().__init__()
        self.calls_before_gate = calls_before_gate

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.calls_before_gate is not None and len(self.calls) >= self.calls_before_gate:
            self.gate = self.gate or threading.Event()
        return super().embed(texts)

    @staticmethod
    def _vector(text: str) -> list[float]:  # another space: each word on the next word's axis
        vector = KeywordEmbedder._vector(text)
        return [*vector[1 : len(VOCABULARY)], vector[0], vector[-1]]


def notes(store, count: int) -> list[Message]:
    said = [Message("user", f"{VOCABULARY[i % 2]} note {i}", session="s", seq=i) for i in range(count)]
    store.append_messages(said)
    return said


def test_a_new_passage_prefix_gives_the_history_new_vectors_made_with_it(store):
    earlier = notes(store, 4)
    index(store, KeywordEmbedder(), "s", earlier)
    prefixed = Prefixed()

    index(store, prefixed, "s", [])

    assert sorted(text for call in prefixed.calls for text in call) == sorted(f"passage: {m.content}" for m in earlier)
    assert store.search.embedded_ids("s", model=prefixed.name) == {m.id for m in earlier}


def wait_until(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_re_embedding_stopped_halfway_is_resumed_by_the_next_indexer_and_a_search_never_mixes_the_models(store):
    earlier = notes(store, 6)  # cat, revenue, cat, ...
    index(store, KeywordEmbedder(), "s", earlier)
    halfway = Prefixed(calls_before_gate=3)
    stopped = RecallIndexer(store, halfway, batch_size=1)
    stopped.meet("s")
    wait_until(lambda: len(halfway.calls) == 4)  # 3 notes have new vectors; the 4th waits on the gate
    stopped.stop(0)
    halfway.gate.set()
    assert stopped.flush(10)
    done = store.search.embedded_ids("s", model=Prefixed.name)
    assert 3 <= len(done) <= 4

    # The old model's cat notes lie on the axis the new one gives "revenue": mixed in, they would answer.
    revenue = Prefixed().embed(["passage: revenue"])[0]
    assert {hit.message_id for hit in store.search.search_embeddings("s", revenue, 6, model=Prefixed.name)} <= done
    resumed = Prefixed()
    index(store, resumed, "s", [])

    assert sorted(text for call in resumed.calls for text in call) == sorted(
        f"passage: {m.content}" for m in earlier if m.id not in done
    )
    assert store.search.embedded_ids("s", model=Prefixed.name) == {m.id for m in earlier}
    cat = Prefixed().embed(["passage: cat"])[0]
    nearest = store.search.search_embeddings("s", cat, 3, model=Prefixed.name)
    assert {hit.message_id for hit in nearest} == {m.id for m in earlier if m.content.startswith("cat")}


def test_after_the_embedding_model_changes_the_status_counts_what_is_re_embedded_until_it_is_done(store):
    model = ScriptedModel(["noted", "ok"], context_window=100_000)
    first = Session("s", config=Config(), store=store, model=model, embedder=KeywordEmbedder())
    first.ask("cat note: the churn raw extract is data/raw/churn.parquet")
    first.close()
    renamed = Prefixed(calls_before_gate=0)
    second = Session("s", config=Config(), store=store, model=model, embedder=renamed)

    assert renamed.entered.wait(10)
    waiting = status_sentences(second.status(), approval="ask", allowed_for_session=False)
    renamed.gate.set()
    second.ask("hello again")
    second.wait_for_background(30)
    settled = status_sentences(second.status(), approval="ask", allowed_for_session=False)
    second.close()

    assert "Recall finds 2 messages by their words only for now" in waiting
    assert "Recall" not in settled
    assert len(store.search.embedded_ids("s", model=renamed.name)) == 4
