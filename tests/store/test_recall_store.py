"""Recall storage on real LanceDB: chunks under the full-text index, raw outputs in one read, the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from monad_notebook.messages import Message
from monad_notebook.store.base import Chunk, LedgerEntry
from monad_notebook.store.lance import LanceStore
from monad_notebook.store.rows import TEXT_TABLE, embeddings_table
from monad_notebook.store.search import query_words

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")

HOSTILE_NAMES = ["x' OR '1'='1", "x'; DELETE FROM recall_text; --", "back\\'slash", "new\nline", "%", "_"]
HOSTILE_QUERIES = [
    '"churn" AND (text:raw) OR -x*',
    "text:churn",
    "'; DROP TABLE recall_text; --",
    "churn~2 raw^10",
    "~!@#$%^&*()[]{}",
    "NOT",
    "",
    "\x00churn",
]


def chunk(message_id: str, text: str, offset: int = 0, **fields: object) -> Chunk:
    return Chunk(message_id, offset, text, **fields)  # type: ignore[arg-type]


def test_words_find_a_snake_case_identifier_by_its_parts_best_first(store: LanceStore) -> None:
    store.save_chunks(
        "s",
        [
            chunk("m1", "loaded data/raw/churn_raw_extract_q3.parquet (48,213 rows)", seq=3, turn=1, role="tool"),
            chunk("m2", "the raw numbers look fine", seq=4, turn=1, role="assistant"),
            chunk("m3", "pizza on fridays", seq=5, turn=2, role="user"),
        ],
    )

    hits = store.search_chunks("s", "which file was the churn raw extract", 5)

    assert [h.message_id for h in hits] == ["m1", "m2"]
    assert (hits[0].snippet, hits[0].seq, hits[0].role) == (
        "loaded data/raw/churn_raw_extract_q3.parquet (48,213 rows)",
        3,
        "tool",
    )


def test_each_message_comes_back_once_with_its_best_chunk_and_where_it_starts(store: LanceStore) -> None:
    store.save_chunks(
        "s",
        [
            chunk("out", "stage 1 wrote rows", 0, role="tool", tool_call_id="call_1"),
            chunk("out", "the tenure column is cust_tenure_days", 4800, role="tool", tool_call_id="call_1"),
            chunk("out", "stage 9 wrote rows", 9600, role="tool", tool_call_id="call_1"),
        ],
    )

    hits = store.search_chunks("s", "tenure column", 5)

    assert [(h.message_id, h.offset, h.tool_call_id) for h in hits] == [("out", 4800, "call_1")]


def test_chunks_written_after_the_index_was_built_are_found_at_once_and_after_optimize(store: LanceStore) -> None:
    store.save_chunks("s", [chunk("first", "an early note about revenue")])
    store.save_chunks("s", [chunk("later", "the holdout auc came out at 0.8731")])

    assert [h.message_id for h in store.search_chunks("s", "holdout auc", 5)] == ["later"]
    store.optimize()
    assert [h.message_id for h in store.search_chunks("s", "holdout auc", 5)] == ["later"]
    assert [h.message_id for h in store.search_chunks("s", "revenue", 5)] == ["first"]


def test_saving_a_batch_of_chunks_is_one_write(store: LanceStore) -> None:
    store.save_chunks("s", [chunk("m0", "one")])
    before = store.table_version(TEXT_TABLE)

    store.save_chunks("s", [chunk(f"m{i}", f"chunk number {i}") for i in range(1, 200)])

    assert store.table_version(TEXT_TABLE) == before + 1
    assert store.chunked_ids("s") == {f"m{i}" for i in range(200)}


def test_asking_which_of_some_ids_have_chunks_reads_only_their_rows(store: LanceStore) -> None:
    store.save_chunks("s", [chunk(f"m{i}", f"chunk number {i}") for i in range(600)])
    store.save_chunks("other", [chunk("m700", "another session's chunk")])
    before = store.rows_read

    asked = [f"m{i}" for i in range(0, 1200, 2)] + ["m700", "x' OR '1'='1"]

    assert store.chunked_ids("s", among=asked) == {f"m{i}" for i in range(0, 600, 2)}
    assert store.rows_read - before == 300
    assert store.chunked_ids("s", among=[]) == set()


def test_after_an_optimize_asking_which_ids_are_indexed_reads_through_an_index_and_still_sees_newer_rows(
    store: LanceStore,
) -> None:
    """A scan of every message id of a large session costs the turn its cores; the lookup reads an index."""
    store.save_chunks("s", [chunk(f"m{i}", f"chunk number {i}") for i in range(50)])
    store.save_embeddings("s", [(chunk(f"m{i}", f"chunk number {i}"), [1.0, float(i)]) for i in range(50)], "test")
    store.optimize()
    store.save_chunks("s", [chunk("m50", "written after the index")])
    store.save_embeddings("s", [(chunk("m50", "written after the index"), [1.0, 50.0])], "test")
    asked = ["m3", "m50", "m99"]

    assert store.chunked_ids("s", among=asked) == {"m3", "m50"}
    assert store.embedded_ids("s", model="test", dims=2, among=asked) == {"m3", "m50"}
    for table in (TEXT_TABLE, embeddings_table(2)):
        query = store._db.open_table(table).search().where("session = 's' AND message_id IN ('m3', 'm50')")
        assert "message_id_idx(BTree)" in query.select(["message_id"]).explain_plan(True), table


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_words_never_find_another_sessions_chunks(store: LanceStore, name: str) -> None:
    store.save_chunks(name, [chunk("mine", "the churn raw extract")])
    store.save_chunks("other", [chunk("theirs", "the churn raw extract")])

    assert [h.message_id for h in store.search_chunks(name, "churn extract", 5)] == ["mine"]
    assert store.chunked_ids(name) == {"mine"}


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_query_syntax_is_read_as_plain_words_and_never_breaks_the_search(store: LanceStore, query: str) -> None:
    store.save_chunks("s", [chunk("m1", "the churn raw extract"), chunk("m2", "drop table text not")])

    hits = store.search_chunks("s", query, 5)

    words = set(query_words(query).lower().split())
    assert all(words & set(h.snippet.lower().split()) for h in hits)
    assert store.chunked_ids("s") == {"m1", "m2"}


def test_excluded_messages_are_skipped_and_the_next_best_fill_their_place(store: LanceStore) -> None:
    store.save_chunks("s", [chunk(f"m{i}", "churn " * (5 - i) + "filler " * i) for i in range(5)])

    hits = store.search_chunks("s", "churn", 2, exclude_ids={"m0", "m1"})

    assert [h.message_id for h in hits] == ["m2", "m3"]


def test_searching_before_anything_was_indexed_finds_nothing_and_creates_nothing(store: LanceStore) -> None:
    assert store.search_chunks("s", "churn", 5) == []
    assert store.table_stats() == {}


def test_raw_outputs_are_read_back_in_one_query_only_for_this_session(store: LanceStore) -> None:
    store.save_raw_outputs("s", {"call_1": "one", "call_2": "two"})
    store.save_raw_outputs("other", {"call_3": "three"})
    before = store.rows_read

    assert store.get_raw_outputs("s", ["call_1", "call_2", "call_3", "x' OR '1'='1"]) == {
        "call_1": "one",
        "call_2": "two",
    }
    assert store.rows_read - before == 2
    assert store.get_raw_outputs("s", []) == {}


def test_the_ledger_upserts_by_item_in_one_write(store: LanceStore) -> None:
    store.save_ledger("s", [LedgerEntry("df_orders", "variable", 5.0, turn=1)])
    before = store.table_version("ledger")

    store.save_ledger(
        "s",
        [LedgerEntry("df_orders", "variable", 7.5, count=2, turn=4), LedgerEntry("a.csv", "file", 3.0, turn=4)],
    )

    assert store.table_version("ledger") == before + 1
    entries = sorted(store.load_ledger("s"), key=lambda e: e.item)
    assert [(e.item, e.score, e.count, e.turn) for e in entries] == [("a.csv", 3.0, 1, 4), ("df_orders", 7.5, 2, 4)]
    assert store.load_ledger("other") == []


def test_delete_reset_and_branch_carry_chunks_and_ledger_with_the_session(store: LanceStore) -> None:
    store.create_session("s")
    message = Message("user", "the churn raw extract", session="s", seq=0)
    store.append_messages([message])
    store.save_chunks("s", [chunk(message.id, message.content)])
    store.save_ledger("s", [LedgerEntry("churn.csv", "file", 9.0)])

    store.clone_session("s", "branch")
    copied = store.search_chunks("branch", "churn", 5)
    assert [h.message_id for h in copied] == [store.load_messages("branch")[0].id]
    assert [e.item for e in store.load_ledger("branch")] == ["churn.csv"]

    store.reset_session("s")
    assert store.search_chunks("s", "churn", 5) == [] and store.load_ledger("s") == []
    store.delete_session("branch")
    assert store.search_chunks("branch", "churn", 5) == [] and store.load_ledger("branch") == []


def test_another_process_sees_chunks_searchable_at_once(tmp_path: Path) -> None:
    writer, reader = LanceStore(tmp_path / "db"), LanceStore(tmp_path / "db")
    writer.save_chunks("s", [chunk("m1", "first note")])
    assert reader.search_chunks("s", "first", 5)[0].message_id == "m1"

    writer.save_chunks("s", [chunk("m2", "second note about parquet")])

    assert [h.message_id for h in reader.search_chunks("s", "parquet", 5)] == ["m2"]
    writer.close()
    reader.close()


def test_a_burst_of_chunks_is_folded_into_the_index_without_waiting_for_fifty_writes(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=50)
    for batch in range(3):
        store.save_chunks("s", [chunk(f"m{batch}-{i}", f"row {i} of batch {batch}") for i in range(400)])
    store._wait_for_optimizer()

    handle = store._tables[TEXT_TABLE]
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
        store.save_chunks("s", [chunk(message.id, message.content, seq=seq)])
        store.save_embeddings("s", [(message, [1.0, float(seq)])], "test-model")
    store._wait_for_optimizer()

    stats = store.table_stats()
    assert stats["messages"]["fragments"] == 4
    assert stats[TEXT_TABLE]["fragments"] <= 2
    assert stats[embeddings_table(2)]["fragments"] <= 2
    assert [h.message_id for h in store.search_chunks("s", "question 3", 1)] == [message.id]
    store.close()


def test_a_busy_table_is_compacted_without_compacting_a_quiet_one(tmp_path: Path) -> None:
    store = LanceStore(tmp_path / "db", optimize_every=10)
    store.create_session("s")
    for seq in range(2):
        store.append_messages([Message("user", f"question {seq}", session="s", seq=seq)])
    for i in range(10):
        store.save_chunks("s", [chunk(f"m{i}", f"chunk {i}")])
    store._wait_for_optimizer()

    stats = store.table_stats()
    assert stats["messages"]["fragments"] == 2
    assert stats[TEXT_TABLE]["fragments"] <= 2
    store.close()
