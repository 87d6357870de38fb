"""Recall storage on real LanceDB: chunks under the full-text index, raw outputs in one read, the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from monad_notebook.messages import Message
from monad_notebook.store.base import LedgerEntry
from monad_notebook.store.lance import LanceStore
from monad_notebook.store.rows import TEXT_TABLE, embeddings_table
from tests.store.sessions import chunk

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")


def test_chunks_written_after_the_index_was_built_are_found_at_once_and_after_optimize(store: LanceStore) -> None:
    store.search.save_chunks("s", [chunk("first", "an early note about revenue")])
    store.search.save_chunks("s", [chunk("later", "the holdout auc came out at 0.8731")])

    assert [h.message_id for h in store.search.search_chunks("s", "holdout auc", 5)] == ["later"]
    store.optimize()
    assert [h.message_id for h in store.search.search_chunks("s", "holdout auc", 5)] == ["later"]
    assert [h.message_id for h in store.search.search_chunks("s", "revenue", 5)] == ["first"]


def test_saving_a_batch_of_chunks_is_one_write(store: LanceStore) -> None:
    store.search.save_chunks("s", [chunk("m0", "one")])
    before = store.tables.table_version(TEXT_TABLE)

    store.search.save_chunks("s", [chunk(f"m{i}", f"chunk number {i}") for i in range(1, 200)])

    assert store.tables.table_version(TEXT_TABLE) == before + 1
    assert store.search.chunked_ids("s") == {f"m{i}" for i in range(200)}


def test_asking_which_of_some_ids_have_chunks_reads_only_their_rows(store: LanceStore) -> None:
    store.search.save_chunks("s", [chunk(f"m{i}", f"chunk number {i}") for i in range(600)])
    store.search.save_chunks("other", [chunk("m700", "another session's chunk")])
    before = store.tables.rows_read

    asked = [f"m{i}" for i in range(0, 1200, 2)] + ["m700", "x' OR '1'='1"]

    assert store.search.chunked_ids("s", among=asked) == {f"m{i}" for i in range(0, 600, 2)}
    assert store.tables.rows_read - before == 300
    assert store.search.chunked_ids("s", among=[]) == set()


def test_after_an_optimize_asking_which_ids_are_indexed_reads_through_an_index_and_still_sees_newer_rows(
    store: LanceStore,
) -> None:
    """A scan of every message id of a large session costs the turn its cores; the lookup reads an index."""
    store.search.save_chunks("s", [chunk(f"m{i}", f"chunk number {i}") for i in range(50)])
    store.search.save_embeddings(
        "s", [(chunk(f"m{i}", f"chunk number {i}"), [1.0, float(i)]) for i in range(50)], "test"
    )
    store.optimize()
    store.search.save_chunks("s", [chunk("m50", "written after the index")])
    store.search.save_embeddings("s", [(chunk("m50", "written after the index"), [1.0, 50.0])], "test")
    asked = ["m3", "m50", "m99"]

    assert store.search.chunked_ids("s", among=asked) == {"m3", "m50"}
    assert store.search.embedded_ids("s", model="test", dims=2, among=asked) == {"m3", "m50"}
    for table in (TEXT_TABLE, embeddings_table(2)):
        query = store.tables.db.open_table(table).search().where("session = 's' AND message_id IN ('m3', 'm50')")
        assert "message_id_idx(BTree)" in query.select(["message_id"]).explain_plan(True), table


def test_searching_before_anything_was_indexed_finds_nothing_and_creates_nothing(store: LanceStore) -> None:
    assert store.search.search_chunks("s", "churn", 5) == []
    assert store.tables.table_stats() == {}


def test_raw_outputs_are_read_back_in_one_query_only_for_this_session(store: LanceStore) -> None:
    store.save_raw_outputs("s", {"call_1": "one", "call_2": "two"})
    store.save_raw_outputs("other", {"call_3": "three"})
    before = store.tables.rows_read

    assert store.get_raw_outputs("s", ["call_1", "call_2", "call_3", "x' OR '1'='1"]) == {
        "call_1": "one",
        "call_2": "two",
    }
    assert store.tables.rows_read - before == 2
    assert store.get_raw_outputs("s", []) == {}


def test_the_ledger_upserts_by_item_in_one_write(store: LanceStore) -> None:
    store.save_ledger("s", [LedgerEntry("df_orders", "variable", 5.0, turn=1)])
    before = store.tables.table_version("ledger")

    store.save_ledger(
        "s",
        [LedgerEntry("df_orders", "variable", 7.5, count=2, turn=4), LedgerEntry("a.csv", "file", 3.0, turn=4)],
    )

    assert store.tables.table_version("ledger") == before + 1
    entries = sorted(store.load_ledger("s"), key=lambda e: e.item)
    assert [(e.item, e.score, e.count, e.turn) for e in entries] == [("a.csv", 3.0, 1, 4), ("df_orders", 7.5, 2, 4)]
    assert store.load_ledger("other") == []


def test_another_process_sees_chunks_searchable_at_once(tmp_path: Path) -> None:
    writer, reader = LanceStore(tmp_path / "db"), LanceStore(tmp_path / "db")
    writer.search.save_chunks("s", [chunk("m1", "first note")])
    assert reader.search.search_chunks("s", "first", 5)[0].message_id == "m1"

    writer.search.save_chunks("s", [chunk("m2", "second note about parquet")])

    assert [h.message_id for h in reader.search.search_chunks("s", "parquet", 5)] == ["m2"]
    writer.close()
    reader.close()


def test_a_burst_of_chunks_is_folded_into_the_index_without_waiting_for_fifty_writes(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=50)
    for batch in range(3):
        store.search.save_chunks("s", [chunk(f"m{batch}-{i}", f"row {i} of batch {batch}") for i in range(400)])
    store.tables.passes.wait()

    handle = store.tables.handle(TEXT_TABLE)
    stats = [handle.index_stats(index.name) for index in handle.list_indices()]
    (words,) = [s for s in stats if s.index_type == "FTS"]
    assert (words.num_indexed_rows, words.num_unindexed_rows) == (1200, 0)
    store.close()


def test_the_search_tables_are_merged_five_times_as_often_as_the_messages(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=20)
    store.create_session("s")
    for seq in range(4):
        message = Message("user", f"question {seq} about the churn extract", session="s", seq=seq)
        store.append_messages([message])
        store.search.save_chunks("s", [chunk(message.id, message.content, seq=seq)])
        store.search.save_embeddings("s", [(message, [1.0, float(seq)])], "test-model")
    store.tables.passes.wait()

    stats = store.tables.table_stats()
    assert stats["messages"]["fragments"] == 4
    assert stats[TEXT_TABLE]["fragments"] <= 2
    assert stats[embeddings_table(2)]["fragments"] <= 2
    assert [h.message_id for h in store.search.search_chunks("s", "question 3", 1)] == [message.id]
    store.close()


def test_a_busy_table_is_compacted_without_compacting_a_quiet_one(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=10)
    store.create_session("s")
    for seq in range(2):
        store.append_messages([Message("user", f"question {seq}", session="s", seq=seq)])
    for i in range(10):
        store.search.save_chunks("s", [chunk(f"m{i}", f"chunk {i}")])
    store.tables.passes.wait()

    stats = store.tables.table_stats()
    assert stats["messages"]["fragments"] == 2
    assert stats[TEXT_TABLE]["fragments"] <= 2
    store.close()
