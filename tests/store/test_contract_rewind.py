"""The rewind journal's contract: the same answers from LanceDB and the in-memory twin."""

from __future__ import annotations

import pytest

from monad_notebook.branching import clone_session
from monad_notebook.store.base import RewindRow, Store


@pytest.fixture
def store(each_store: Store) -> Store:
    return each_store


def kept(seq: int, digest: str, epoch: int = 1) -> RewindRow:
    return RewindRow("file", seq, epoch, 1, "call_1", "out/a.csv", "/nb", "kept", digest, 10, "1:10")


def test_rows_come_back_in_journal_order_once_and_a_branch_shares_them(store: Store) -> None:
    store.create_session("s")
    epoch = RewindRow("epoch", 1, 1, 1, "turn", at=1.0)
    store.rewind.save_rewind("s", [kept(3, "d3"), epoch])
    store.rewind.save_rewind("s", [kept(2, "d2"), kept(3, "d3")])  # a retried write
    assert [(r.kind, r.seq) for r in store.rewind.load_rewind("s")] == [("epoch", 1), ("file", 2), ("file", 3)]
    assert store.rewind.load_rewind("s")[1] == kept(2, "d2")

    clone_session(store, "s", "branch")
    store.reset_session("s")
    assert store.rewind.load_rewind("s") == [] and len(store.rewind.load_rewind("branch")) == 3
    assert store.rewind.kept_digests() == {"d2", "d3"}


def test_a_dropped_row_or_a_deleted_session_no_longer_keeps_its_bytes(store: Store) -> None:
    store.create_session("s")
    store.create_session("t")
    store.rewind.save_rewind("s", [kept(2, "d2"), kept(3, "d3"), RewindRow("dropped", 4, 2, digest="d2")])
    store.rewind.save_rewind("t", [RewindRow("file", 2, 1, key="***", before="absent", path_ref="ref")])
    assert store.rewind.kept_digests() == {"d3", "ref"}
    store.delete_session("s")
    assert store.rewind.kept_digests() == {"ref"}
