"""The Store contract for recall's index: full-text and vector search, on LanceDB and the in-memory twin."""

from __future__ import annotations

import math

import pytest

from monad_notebook.branching import clone_session
from monad_notebook.errors import StoreError
from monad_notebook.messages import Message
from monad_notebook.store.base import Chunk, LedgerEntry, Store
from monad_notebook.store.rows import query_words
from tests.store.sessions import HOSTILE_NAMES, HOSTILE_QUERIES, MODEL, axis, chunk, stored


@pytest.fixture
def store(each_store: Store) -> Store:
    return each_store


def test_words_find_a_snake_case_identifier_by_its_parts_best_first(store: Store) -> None:
    store.search.save_chunks(
        "s",
        [
            chunk("m1", "loaded data/raw/churn_raw_extract_q3.parquet (48,213 rows)", seq=3, turn=1, role="tool"),
            chunk("m2", "the raw numbers look fine", seq=4, turn=1, role="assistant"),
            chunk("m3", "pizza on fridays", seq=5, turn=2, role="user"),
        ],
    )

    hits = store.search.search_chunks("s", "which file was the churn raw extract", 5)

    assert [h.message_id for h in hits] == ["m1", "m2"]
    assert (hits[0].snippet, hits[0].seq, hits[0].role) == (
        "loaded data/raw/churn_raw_extract_q3.parquet (48,213 rows)",
        3,
        "tool",
    )


def test_each_message_comes_back_once_with_its_best_chunk_and_where_it_starts(store: Store) -> None:
    store.search.save_chunks(
        "s",
        [
            chunk("out", "stage 1 wrote rows", 0, role="tool", tool_call_id="call_1"),
            chunk("out", "the tenure column is cust_tenure_days", 4800, role="tool", tool_call_id="call_1"),
            chunk("out", "stage 9 wrote rows", 9600, role="tool", tool_call_id="call_1"),
        ],
    )

    hits = store.search.search_chunks("s", "tenure column", 5)

    assert [(h.message_id, h.offset, h.tool_call_id) for h in hits] == [("out", 4800, "call_1")]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_words_never_find_another_sessions_chunks(store: Store, name: str) -> None:
    store.search.save_chunks(name, [chunk("mine", "the churn raw extract")])
    store.search.save_chunks("other", [chunk("theirs", "the churn raw extract")])

    assert [h.message_id for h in store.search.search_chunks(name, "churn extract", 5)] == ["mine"]
    assert store.search.chunked_ids(name) == {"mine"}


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_query_syntax_is_read_as_plain_words_and_never_breaks_the_search(store: Store, query: str) -> None:
    store.search.save_chunks("s", [chunk("m1", "the churn raw extract"), chunk("m2", "drop table text not")])

    hits = store.search.search_chunks("s", query, 5)

    words = set(query_words(query).lower().split())
    assert all(words & set(h.snippet.lower().split()) for h in hits)
    assert store.search.chunked_ids("s") == {"m1", "m2"}


def test_excluded_messages_are_skipped_and_the_next_best_fill_their_place(store: Store) -> None:
    store.search.save_chunks("s", [chunk(f"m{i}", "churn " * (5 - i) + "filler " * i) for i in range(5)])

    hits = store.search.search_chunks("s", "churn", 2, exclude_ids={"m0", "m1"})

    assert [h.message_id for h in hits] == ["m2", "m3"]


def test_delete_reset_and_branch_carry_chunks_and_ledger_with_the_session(store: Store) -> None:
    store.create_session("s")
    message = Message("user", "the churn raw extract", session="s", seq=0)
    store.append_messages([message])
    store.search.save_chunks("s", [chunk(message.id, message.content)])
    store.save_ledger("s", [LedgerEntry("churn.csv", "file", 9.0)])

    clone_session(store, "s", "branch")
    copied = store.search.search_chunks("branch", "churn", 5)
    assert [h.message_id for h in copied] == [store.load_messages("branch")[0].id]
    assert [e.item for e in store.load_ledger("branch")] == ["churn.csv"]

    store.reset_session("s")
    assert store.search.search_chunks("s", "churn", 5) == [] and store.load_ledger("s") == []
    store.delete_session("branch")
    assert store.search.search_chunks("branch", "churn", 5) == [] and store.load_ledger("branch") == []


def test_search_returns_the_nearest_messages_first_with_cosine_scores(store: Store) -> None:
    messages = stored(store, "s", [axis(0), axis(1), axis(0, lean=0.5), axis(2)])

    hits = store.search.search_embeddings("s", axis(0), 2, model=MODEL)

    assert [h.message_id for h in hits] == [messages[0].id, messages[2].id]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[1].score == pytest.approx(1 / math.sqrt(1.25), abs=1e-5)
    assert (hits[0].snippet, hits[0].role, hits[0].seq) == ("s message 0", "user", 0)


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_search_never_returns_another_sessions_vectors(store: Store, name: str) -> None:
    stored(store, "other", [axis(0)] * 3)
    mine = stored(store, name, [axis(1)])

    hits = store.search.search_embeddings(name, axis(0), 5, model=MODEL)

    assert [h.message_id for h in hits] == [mine[0].id]
    assert store.search.search_embeddings(name + "x", axis(0), 5) == []


def test_search_ignores_vectors_of_another_model_of_the_same_width(store: Store) -> None:
    stored(store, "s", [axis(0)], model="other-model")
    mine = stored(store, "s", [axis(1)])

    hits = store.search.search_embeddings("s", axis(0), 5, model=MODEL)

    assert [h.message_id for h in hits] == [mine[0].id]


def test_excluded_ids_are_skipped_and_the_next_best_fill_their_place(store: Store) -> None:
    messages = stored(store, "s", [axis(0, lean=x) for x in (0.0, 0.1, 0.2, 0.3, 0.4)])

    hits = store.search.search_embeddings("s", axis(0), 2, model=MODEL, exclude_ids=[messages[0].id, messages[1].id])

    assert [h.message_id for h in hits] == [messages[2].id, messages[3].id]


def test_a_chunk_the_window_shows_is_skipped_and_the_messages_next_best_chunk_stands_for_it(
    store: Store,
) -> None:
    """A truncated tool result: its head is in the window, its middle is not; the search skips only the head."""
    store.create_session("s")
    result = Message("tool", "head [... truncated ...] tail", session="s", seq=0, turn=0, tool_call_id="c1")
    other = Message("user", "something else", session="s", seq=1, turn=1)
    store.append_messages([result, other])
    head = Chunk(result.id, 0, "head", 0, 0, "tool", tool_call_id="c1")
    middle = Chunk(result.id, 4000, "the middle", 0, 0, "tool", tool_call_id="c1")
    store.search.save_embeddings("s", [(head, axis(0)), (middle, axis(0, lean=0.3)), (other, axis(0, lean=0.2))], MODEL)

    hits = store.search.search_embeddings("s", axis(0), 2, model=MODEL, shown={result.id: result.content})

    assert [(h.message_id, h.snippet) for h in hits] == [(other.id, "something else"), (result.id, "the middle")]
    assert store.search.search_embeddings("s", axis(0), 1, model=MODEL)[0].snippet == "head"


def test_a_vector_saved_twice_comes_back_once(store: Store) -> None:
    messages = stored(store, "s", [axis(0), axis(1)])
    store.search.save_embeddings("s", [(messages[0], axis(0))], MODEL)

    hits = store.search.search_embeddings("s", axis(0), 5, model=MODEL)

    assert [h.message_id for h in hits] == [messages[0].id, messages[1].id]


def test_chunks_of_one_message_and_excluded_ids_never_crowd_out_the_next_messages(store: Store) -> None:
    """The nearest rows are one message's chunks and excluded messages: the search reads further to fill k."""
    crowd, *rest = stored(store, "s", [axis(0, lean=x / 10) for x in range(12)])
    chunks = [Chunk(crowd.id, 100 * i, f"chunk {i}", crowd.seq, crowd.turn, "user") for i in range(1, 8)]
    store.search.save_embeddings("s", [(c, axis(0, lean=0.001 * i)) for i, c in enumerate(chunks)], MODEL)
    excluded = [m.id for m in rest[:4]]

    hits = store.search.search_embeddings("s", axis(0), 3, model=MODEL, exclude_ids=excluded)

    assert [h.message_id for h in hits] == [crowd.id, rest[4].id, rest[5].id]


def test_vectors_of_different_widths_live_side_by_side(store: Store) -> None:
    narrow = stored(store, "s", [axis(0)])
    wide = stored(store, "t", [axis(0, dims=6)], model="wide-model")

    assert [h.message_id for h in store.search.search_embeddings("s", axis(0), 3)] == [narrow[0].id]
    assert [h.message_id for h in store.search.search_embeddings("t", axis(0, dims=6), 3)] == [wide[0].id]
    assert store.search.search_embeddings("t", axis(0), 3) == []


@pytest.mark.parametrize("bad", [[0.1, math.nan, 0.2, 0.3], [0.1, 0.2, 0.3, math.inf]])
def test_nan_or_infinite_vectors_are_never_stored(store: Store, bad: list[float]) -> None:
    message = Message(role="user", content="hello", session="s")

    with pytest.raises(StoreError, match="NaN or infinite"):
        store.search.save_embeddings("s", [(message, axis(0)), (message, bad)], MODEL)

    assert store.search.embedded_ids("s", model=MODEL, dims=4) == set()
    with pytest.raises(StoreError, match="NaN or infinite"):
        store.search.search_embeddings("s", bad, 3)


def test_vectors_of_mixed_widths_in_one_write_are_rejected(store: Store) -> None:
    message = Message(role="user", content="hello", session="s")

    with pytest.raises(StoreError, match="one non-zero width"):
        store.search.save_embeddings("s", [(message, axis(0)), (message, axis(0, dims=5))], MODEL)


def test_embedded_ids_lists_what_this_model_has_embedded(store: Store) -> None:
    messages = stored(store, "s", [axis(0), axis(1)])
    stored(store, "s2", [axis(0)])

    assert store.search.embedded_ids("s", model=MODEL, dims=4) == {m.id for m in messages}
    assert store.search.embedded_ids("s", model="another", dims=4) == set()
    assert store.search.embedded_ids("s", model=MODEL, dims=8) == set()


def test_resetting_a_session_drops_its_vectors(store: Store) -> None:
    stored(store, "s", [axis(0), axis(1)])

    store.reset_session("s")

    assert store.search.search_embeddings("s", axis(0), 3) == []
    assert store.search.embedded_ids("s", model=MODEL, dims=4) == set()


@pytest.mark.parametrize("branch", ["branch", *HOSTILE_NAMES[:2]])
def test_a_branch_gets_its_own_copy_of_the_vectors_pointing_at_its_own_messages(store: Store, branch: str) -> None:
    stored(store, "main", [axis(0), axis(1)])

    clone_session(store, "main", branch)
    store.delete_session("main")

    hits = store.search.search_embeddings(branch, axis(0), 5, model=MODEL)
    branch_ids = {m.id: m.content for m in store.load_messages(branch)}
    assert [branch_ids[h.message_id] for h in hits] == ["main message 0", "main message 1"]
    assert store.search.embedded_ids(branch, model=MODEL, dims=4) == set(branch_ids)
