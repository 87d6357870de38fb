from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from lancedb.index import IvfFlat, IvfSq
from lancedb.table import LanceTable

from monad_notebook.messages import Message
from monad_notebook.store.lance import LanceStore
from monad_notebook.store.search import LanceSearch
from monad_notebook.store.tables import LanceTables
from tests.store.sessions import MODEL, axis, stored

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")


def test_saving_a_batch_of_vectors_is_one_write(store: LanceStore) -> None:
    stored(store, "s", [axis(0)])
    before = store.tables.table_version("embeddings_4")

    stored(store, "s", [axis(i) for i in range(50)])

    assert store.tables.table_version("embeddings_4") == before + 1


def test_a_search_reads_two_rows_per_message_asked_for_when_they_hold_enough_messages(store: LanceStore) -> None:
    messages = stored(store, "s", [axis(0, lean=x / 10) for x in range(20)])
    before = store.tables.rows_read

    hits = store.search.search_embeddings("s", axis(0), 3, model=MODEL, exclude_ids=[messages[0].id])

    assert [h.message_id for h in hits] == [m.id for m in messages[1:4]]
    assert store.tables.rows_read - before == 6


def test_searching_a_fresh_database_finds_nothing_and_creates_nothing(store: LanceStore) -> None:
    assert store.search.search_embeddings("s", axis(0), 3) == []
    assert store.tables.table_stats() == {}


def test_deleting_a_session_deletes_its_vectors_even_from_another_process(tmp_path: Path) -> None:
    writer = LanceStore(tmp_path / "db")
    stored(writer, "gone", [axis(0)])
    kept = stored(writer, "kept", [axis(0)])

    fresh = LanceStore(tmp_path / "db")
    fresh.delete_session("gone")

    assert fresh.search.search_embeddings("gone", axis(0), 3) == []
    assert writer.search.search_embeddings("gone", axis(0), 3) == []
    assert [h.message_id for h in writer.search.search_embeddings("kept", axis(0), 3)] == [kept[0].id]


def test_optimize_keeps_the_vector_tables_compact(store: LanceStore) -> None:
    for round_ in range(2):
        for i in range(20):
            stored(store, f"s{round_}-{i}", [axis(i)])
        store.optimize()

    stats = store.tables.table_stats()["embeddings_4"]
    assert stats["rows"] == 40
    assert stats["fragments"] <= 2 and stats["versions"] <= 2  # the session index keeps its fragment apart
    assert len(store.search.search_embeddings("s1-3", axis(3), 3)) == 1


# the vector index: large sessions search it, small ones bypass it; both get exact results

ANN_DIMS = 16


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    points = rng.normal(size=(n, ANN_DIMS))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def exact_top(messages: list[Message], vectors: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    """The true nearest messages by cosine, computed outside LanceDB."""
    return [messages[i].id for i in np.argsort(-(vectors @ query))[:k]]


def search_modes(store: LanceStore, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, per search, whether it bypassed the vector index."""
    modes: list[bool] = []
    original = LanceSearch._vector_query

    def spy(handle: object, vector: list[float], where: str, *, exact: bool) -> object:
        modes.append(exact)
        return original(handle, vector, where, exact=exact)

    monkeypatch.setattr(LanceSearch, "_vector_query", staticmethod(spy))
    return modes


def counts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the table of every row count the store makes."""
    counted: list[str] = []
    original = LanceTables.count

    def spy(self: LanceTables, name: str, where: str | None) -> int:
        counted.append(name)
        return original(self, name, where)

    monkeypatch.setattr(LanceTables, "count", spy)
    return counted


@pytest.fixture
def big_store(tmp_path: Path) -> Iterator[LanceStore]:
    store = LanceStore(tmp_path / "db", ann_min_rows=400, optimize_every=0)
    yield store
    store.close()


def vector_indexes(store: LanceStore) -> list[str]:
    handle = store.tables.table(f"embeddings_{ANN_DIMS}", create=False)
    return [index.index_type for index in handle.list_indices() if index.columns == ["vector"]]


def test_a_large_session_searches_the_index_and_finds_every_needle(
    big_store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(0)
    vectors = unit_vectors(rng, 600)
    messages = stored(big_store, "big", vectors.tolist())
    big_store.optimize()
    assert vector_indexes(big_store) == ["IvfSq"]
    late_vector = unit_vectors(rng, 1)[0]
    late = Message(role="user", content="written after the index", session="big", seq=600, turn=600)
    big_store.search.save_embeddings("big", [(late, late_vector.tolist())], MODEL)
    everything, all_vectors = [*messages, late], np.vstack([vectors, late_vector])
    modes = search_modes(big_store, monkeypatch)

    for i in (0, 123, 599):
        query = vectors[i] + 0.05 * unit_vectors(rng, 1)[0]
        hits = big_store.search.search_embeddings("big", query.tolist(), 5, model=MODEL)
        assert hits[0].message_id == messages[i].id
        assert [h.message_id for h in hits] == exact_top(everything, all_vectors, query, 5)
        cosines = sorted(all_vectors @ query / np.linalg.norm(query), reverse=True)[:5]
        assert [h.score for h in hits] == pytest.approx(cosines, abs=1e-5)  # scores from the full vectors
    hits = big_store.search.search_embeddings("big", late_vector.tolist(), 3, model=MODEL)

    assert hits[0].message_id == late.id
    assert modes == [False] * 4


def test_a_small_session_in_an_indexed_table_gets_exact_results(
    big_store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(1)
    stored(big_store, "big", unit_vectors(rng, 600).tolist())
    small_vectors = unit_vectors(rng, 30)
    small = stored(big_store, "small", small_vectors.tolist())
    big_store.optimize()
    assert vector_indexes(big_store) == ["IvfSq"]
    modes = search_modes(big_store, monkeypatch)

    for query in unit_vectors(rng, 5):
        hits = big_store.search.search_embeddings("small", query.tolist(), 6, model=MODEL)
        assert [h.message_id for h in hits] == exact_top(small, small_vectors, query, 6)
    assert modes == [True] * 5


def test_a_large_session_is_counted_once_and_again_after_it_is_deleted(
    big_store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(2)
    stored(big_store, "big", unit_vectors(rng, 600).tolist())
    big_store.optimize()
    table = f"embeddings_{ANN_DIMS}"
    counted = counts(monkeypatch)
    modes = search_modes(big_store, monkeypatch)
    for query in unit_vectors(rng, 3):
        big_store.search.search_embeddings("big", query.tolist(), 5, model=MODEL)
    assert modes == [False] * 3
    assert counted.count(table) == 2  # the table and the session, on the first search only

    big_store.delete_session("big")
    small_vectors = unit_vectors(rng, 30)
    small = stored(big_store, "big", small_vectors.tolist())
    query = unit_vectors(rng, 1)[0]
    hits = big_store.search.search_embeddings("big", query.tolist(), 6, model=MODEL)

    assert modes[-1] is True
    assert [h.message_id for h in hits] == exact_top(small, small_vectors, query, 6)


def test_a_small_session_is_counted_again_only_once_this_store_has_added_the_rows_it_lacked(
    big_store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(5)
    stored(big_store, "grow", unit_vectors(rng, 300).tolist())
    table = f"embeddings_{ANN_DIMS}"
    counted = counts(monkeypatch)
    modes = search_modes(big_store, monkeypatch)
    query = unit_vectors(rng, 1)[0].tolist()
    for _ in range(3):
        big_store.search.search_embeddings("grow", query, 5, model=MODEL)
    assert counted.count(table) == 1  # the table, 300 rows of the 400 the index needs, on the first search only

    stored(big_store, "other", unit_vectors(rng, 99).tolist())
    big_store.search.search_embeddings("grow", query, 5, model=MODEL)
    assert counted.count(table) == 1  # 99 more rows cannot have taken the session from 300 to 400
    assert modes == [True] * 4

    later = [Message("user", f"later {i}", session="grow", seq=300 + i, turn=300 + i) for i in range(101)]
    later_vectors = unit_vectors(rng, 101)
    big_store.search.save_embeddings("grow", list(zip(later, later_vectors.tolist(), strict=True)), MODEL)
    big_store.optimize()
    hits = big_store.search.search_embeddings("grow", later_vectors[0].tolist(), 5, model=MODEL)

    assert counted.count(table) == 3  # counted again: the table and the session, now 401 rows
    assert modes[-1] is False
    assert hits[0].message_id == later[0].id


def test_a_small_session_is_also_counted_again_once_its_answer_is_old(
    big_store: LanceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process may have written to it meanwhile (a kernel that held it before this one)."""
    rng = np.random.default_rng(6)
    stored(big_store, "s", unit_vectors(rng, 30).tolist())
    monkeypatch.setattr(LanceSearch, "small_recount_seconds", 0.0)
    counted = counts(monkeypatch)

    for query in unit_vectors(rng, 3):
        big_store.search.search_embeddings("s", query.tolist(), 5, model=MODEL)

    assert counted == [f"embeddings_{ANN_DIMS}"] * 3


def test_near_ties_keep_their_exact_order_and_scores_through_the_index(big_store: LanceStore) -> None:
    """Vectors closer together than the index's 8-bit codes can tell apart: the full vectors decide."""
    rng = np.random.default_rng(4)
    centre = unit_vectors(rng, 1)[0]
    close = centre + 0.002 * rng.normal(size=(40, ANN_DIMS))
    vectors = np.vstack([unit_vectors(rng, 560), close / np.linalg.norm(close, axis=1, keepdims=True)])
    messages = stored(big_store, "big", vectors.tolist())
    big_store.optimize()
    assert vector_indexes(big_store) == ["IvfSq"]

    hits = big_store.search.search_embeddings("big", centre.tolist(), 8, model=MODEL)

    assert [h.message_id for h in hits] == exact_top(messages, vectors, centre, 8)
    assert [h.score for h in hits] == pytest.approx(sorted(vectors @ centre, reverse=True)[:8], abs=1e-6)


def test_an_index_from_an_earlier_version_is_replaced_once_and_search_stays_exact(big_store: LanceStore) -> None:
    rng = np.random.default_rng(3)
    vectors = unit_vectors(rng, 600)
    messages = stored(big_store, "big", vectors.tolist())
    handle = big_store.tables.table(f"embeddings_{ANN_DIMS}", create=False)
    handle.create_index("vector", config=IvfFlat(distance_type="cosine", num_partitions=8))
    query = vectors[7] + 0.05 * unit_vectors(rng, 1)[0]
    before = [h.message_id for h in big_store.search.search_embeddings("big", query.tolist(), 5, model=MODEL)]

    big_store.optimize()
    replaced = vector_indexes(big_store)
    big_store.optimize()

    assert replaced == ["IvfSq"] and vector_indexes(big_store) == ["IvfSq"]
    after = [h.message_id for h in big_store.search.search_embeddings("big", query.tolist(), 5, model=MODEL)]
    assert before == after == exact_top(messages, vectors, query, 5)


def test_a_failed_index_build_is_logged_and_search_stays_exact(
    big_store: LanceStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    original = LanceTable.create_index

    def broken(self: LanceTable, *args: object, **kwargs: object) -> object:
        if isinstance(kwargs.get("config"), IvfSq):
            raise RuntimeError("training failed")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LanceTable, "create_index", broken)
    rng = np.random.default_rng(2)
    vectors = unit_vectors(rng, 600)
    messages = stored(big_store, "big", vectors.tolist())

    with caplog.at_level(logging.WARNING, logger="monad_notebook.store.tables"):
        big_store.optimize()

    assert "cannot build the vector index" in caplog.text and "training failed" in caplog.text
    assert vector_indexes(big_store) == []
    hits = big_store.search.search_embeddings("big", vectors[42].tolist(), 5, model=MODEL)
    assert [h.message_id for h in hits] == exact_top(messages, vectors, vectors[42], 5)
