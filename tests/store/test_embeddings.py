from __future__ import annotations

import logging
import math
import threading

import pytest

from monad_notebook.config import EmbeddingConfig
from monad_notebook.errors import ModelError
from monad_notebook.provider import local_embedder as embeddings
from monad_notebook.provider.local_embedder import (
    LOCAL_DIMS,
    LocalEmbedder,
    RemoteEmbedder,
    check_vectors,
    local_model_files,
    make_embedder,
)
from monad_notebook.testing import FakeOpenAIServer

needs_local = pytest.mark.skipif(local_model_files() is None, reason="the local extra is not installed")


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    return LocalEmbedder()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@needs_local
def test_local_embedder_gives_384_dimensional_unit_vectors(local: LocalEmbedder) -> None:
    vectors = local.embed(["The quarterly report is due on Friday.", "", "x" * 5000])

    assert local.dims == LOCAL_DIMS == 384
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-4) for v in vectors)


@needs_local
def test_local_embedder_ranks_a_paraphrase_above_unrelated_text(local: LocalEmbedder) -> None:
    query, paraphrase, unrelated = local.embed(
        [
            "What is my dog's name?",
            "Our puppy is called Biscuit.",
            "Revenue in the northern region rose by twelve percent.",
        ]
    )

    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.2


@needs_local
def test_local_embedder_keeps_input_order_and_ignores_batch_neighbours(local: LocalEmbedder) -> None:
    texts = [f"sentence {i} " + "padding words " * (i % 7) for i in range(40)]

    together = local.embed(texts)
    alone = [local.embed([t])[0] for t in (texts[0], texts[13], texts[39])]

    for vector, index in zip(alone, (0, 13, 39), strict=True):
        assert cosine(vector, together[index]) > 0.9999
    assert local.embed([]) == []


def test_check_vectors_rejects_a_wrong_width() -> None:
    with pytest.raises(ModelError, match="returned 3-dimensional vectors, expected 4"):
        check_vectors([[0.1, 0.2, 0.3]], count=1, dims=4, model="m")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_check_vectors_rejects_nan_and_infinite_values(bad: float) -> None:
    with pytest.raises(ModelError, match="NaN or infinite"):
        check_vectors([[0.1, bad]], count=1, dims=2, model="m")


def test_check_vectors_rejects_a_missing_vector() -> None:
    with pytest.raises(ModelError, match="returned 1 vectors for 2 texts"):
        check_vectors([[0.1, 0.2]], count=2, dims=2, model="m")


def test_make_embedder_returns_none_when_embeddings_are_off() -> None:
    assert make_embedder(EmbeddingConfig(provider="none")) is None


@needs_local
def test_make_embedder_defaults_to_the_offline_model() -> None:
    embedder = make_embedder(EmbeddingConfig())

    assert isinstance(embedder, LocalEmbedder)
    assert embedder.name == "all-MiniLM-L6-v2-int8"


def test_a_missing_local_extra_turns_retrieval_off_with_one_warning(monkeypatch, caplog) -> None:
    monkeypatch.setattr(embeddings, "local_model_files", lambda: None)
    monkeypatch.setattr(embeddings, "_warned_missing_local", False)

    with caplog.at_level(logging.WARNING, logger="monad_notebook.provider.local_embedder"):
        first = make_embedder(EmbeddingConfig(provider="local"))
        second = make_embedder(EmbeddingConfig(provider="local"))

    assert first is None and second is None
    assert [r.getMessage() for r in caplog.records] == [
        "offline embeddings are unavailable, so retrieval is off: pip install 'monad-notebook[local]'"
    ]


def test_local_embedder_without_its_files_says_how_to_install_them(monkeypatch) -> None:
    monkeypatch.setattr(embeddings, "local_model_files", lambda: None)

    with pytest.raises(ModelError, match=r"pip install 'monad-notebook\[local\]'"):
        LocalEmbedder()


def openai_embedder(server: FakeOpenAIServer, **cfg: object) -> RemoteEmbedder:
    embedder = make_embedder(EmbeddingConfig(provider="openai", base_url=server.base_url, **cfg))
    assert isinstance(embedder, RemoteEmbedder)
    return embedder


def test_openai_compatible_embedder_learns_the_width_from_the_first_answer() -> None:
    with FakeOpenAIServer(embedding_dims=24) as server:
        embedder = openai_embedder(server, model="nomic-embed-text")
        assert embedder.dims == 0

        vectors = embedder.embed(["alpha", "beta"])

    assert embedder.dims == 24
    assert [len(v) for v in vectors] == [24, 24]
    assert server.embedding_requests[0]["model"] == "nomic-embed-text"


def test_openai_compatible_embedder_sends_the_configured_dimensions() -> None:
    with FakeOpenAIServer() as server:
        embedder = openai_embedder(server, model="text-embedding-3-small", dimensions=8)

        vectors = embedder.embed(["alpha"])

    assert embedder.dims == 8 and len(vectors[0]) == 8
    assert server.embedding_requests[0]["dimensions"] == 8


def test_openai_compatible_embedder_rejects_nan_vectors() -> None:
    with FakeOpenAIServer(embed=lambda text: [0.5, math.nan, 0.1]) as server:
        embedder = openai_embedder(server, model="broken")

        with pytest.raises(ModelError, match="NaN"):
            embedder.embed(["alpha"])


def test_openai_compatible_embedder_rejects_a_width_change() -> None:
    widths = iter([4, 6])
    with FakeOpenAIServer(embed=lambda text: [0.5] * next(widths)) as server:
        embedder = openai_embedder(server, model="fickle")
        embedder.embed(["first"])

        with pytest.raises(ModelError, match="returned 6-dimensional vectors, expected 4"):
            embedder.embed(["second"])


@needs_local
def test_local_embedder_can_be_shared_between_threads(local: LocalEmbedder) -> None:
    texts = [f"message number {i} about the {('sales', 'weather', 'cat')[i % 3]}" for i in range(24)]
    expected = local.embed(texts)
    results: dict[int, list[list[float]]] = {}

    def work(worker: int) -> None:
        results[worker] = local.embed(texts)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(results) == [0, 1, 2, 3]
    for vectors in results.values():
        assert all(cosine(a, b) > 0.9999 for a, b in zip(vectors, expected, strict=True))


@needs_local
def test_local_embedder_loads_nothing_until_the_first_embed(tmp_path) -> None:
    missing = LocalEmbedder((tmp_path / "model.onnx", tmp_path / "tokenizer.json"))

    with pytest.raises(ModelError, match=r"cannot load the offline embedding model .*monad-notebook\[local\]"):
        missing.embed(["hello"])


@needs_local
def test_sessions_share_one_offline_model() -> None:
    assert make_embedder(EmbeddingConfig()) is make_embedder(EmbeddingConfig(provider="local"))
