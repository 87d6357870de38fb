"""The workspace record's contract: the same answers from LanceDB and the in-memory twin."""

from __future__ import annotations

import pytest

from monad_notebook.branching import clone_session
from monad_notebook.store.base import Store, WorkspaceEntry


@pytest.fixture
def store(each_store: Store) -> Store:
    return each_store


def _by_key(store: Store, session: str) -> dict[tuple[str, str], WorkspaceEntry]:
    return {(e.kind, e.key): e for e in store.workspace.load_workspace(session)}


def test_the_workspace_keeps_one_entry_per_name_or_path_the_latest(store: Store) -> None:
    store.create_session("s")
    frame = WorkspaceEntry("name", "df_orders", "DataFrame", "1,200 rows x 3 cols", ["id", "région", "total"], 3)
    store.workspace.save_workspace("s", [frame, WorkspaceEntry("file", "out/a.parquet", "file", "4,096 bytes", seq=2)])
    smaller = WorkspaceEntry("name", "df_orders", "DataFrame", "10 rows x 1 cols", ["id"], 1, "rebound", "call_7", 3, 3)
    store.workspace.save_workspace("s", [smaller])

    kept = _by_key(store, "s")
    assert set(kept) == {("name", "df_orders"), ("file", "out/a.parquet")}
    assert kept[("name", "df_orders")] == WorkspaceEntry(
        "name", "df_orders", "DataFrame", "10 rows x 1 cols", ["id"], 1, "rebound", "call_7", 3, 3
    )
    assert kept[("file", "out/a.parquet")].shape == "4,096 bytes"
    assert store.workspace.load_workspace("other") == []


def test_an_older_entry_written_late_does_not_replace_a_newer_one(store: Store) -> None:
    store.create_session("s")
    store.workspace.save_workspace("s", [WorkspaceEntry("name", "df", "DataFrame", "5 rows x 1 cols", seq=9)])
    store.workspace.save_workspace("s", [WorkspaceEntry("name", "df", "DataFrame", "2 rows x 1 cols", seq=4)])
    assert [e.shape for e in store.workspace.load_workspace("s")] == ["5 rows x 1 cols"]


def test_a_name_and_a_file_of_the_same_spelling_are_two_entries(store: Store) -> None:
    store.create_session("s")
    store.workspace.save_workspace("s", [WorkspaceEntry("name", "report"), WorkspaceEntry("file", "report")])
    assert sorted(e.kind for e in store.workspace.load_workspace("s")) == ["file", "name"]


def test_a_lone_surrogate_in_a_column_is_stored_as_a_replacement_character(store: Store) -> None:
    store.create_session("s")
    store.workspace.save_workspace(
        "s", [WorkspaceEntry("name", "df", "DataFrame", columns=["a\udcff"], columns_total=1)]
    )
    assert store.workspace.load_workspace("s")[0].columns == ["a\ufffd"]


def test_the_workspace_follows_branch_and_goes_with_reset_and_delete(store: Store) -> None:
    store.create_session("s")
    store.workspace.save_workspace("s", [WorkspaceEntry("name", "df", "DataFrame", made_by="call_1", turn=1, seq=1)])
    clone_session(store, "s", "copy")
    store.workspace.save_workspace("copy", [WorkspaceEntry("name", "only_in_copy", "int", seq=2)])

    assert [e.key for e in store.workspace.load_workspace("s")] == ["df"]
    assert sorted(e.key for e in store.workspace.load_workspace("copy")) == ["df", "only_in_copy"]
    assert _by_key(store, "copy")[("name", "df")].made_by == "call_1"

    store.reset_session("s")
    assert store.workspace.load_workspace("s") == []
    assert len(store.workspace.load_workspace("copy")) == 2
    store.delete_session("copy")
    assert store.workspace.load_workspace("copy") == []


def test_the_record_as_it_stood_before_a_turn_is_the_newest_entry_of_each_key_from_earlier_turns(store: Store) -> None:
    store.create_session("s")
    store.workspace.save_workspace("s", [WorkspaceEntry("name", "df", "DataFrame", "2 rows x 1 cols", turn=1, seq=1)])
    store.workspace.save_workspace("s", [WorkspaceEntry("name", "df", "DataFrame", "9 rows x 1 cols", turn=2, seq=2)])
    store.workspace.save_workspace("s", [WorkspaceEntry("name", "new", "int", turn=3, seq=3)])

    then = store.workspace.load_workspace("s", before_turn=2)

    assert [(e.key, e.shape) for e in then] == [("df", "2 rows x 1 cols")]
    assert {e.key for e in store.workspace.load_workspace("s")} == {"df", "new"}  # the record itself is unchanged
