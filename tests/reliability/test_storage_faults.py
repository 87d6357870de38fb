"""A full disk, an unwritable table, a damaged manifest: clear errors, old data readable, recovery after."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.errors import StoreError
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel

CONFIG = Config.model_validate({"tools": {"python": {"approval": "auto"}}})


@contextlib.contextmanager
def file_size_limit(max_bytes: int) -> Iterator[None]:
    """No file of this process may grow past ``max_bytes``: writes fail as on a full disk (EFBIG), no root needed."""
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous_handler)


@contextlib.contextmanager
def unwritable_table(db: Path, table: str) -> Iterator[None]:
    """A file where the table's ``_transactions`` directory belongs: reads work, every commit fails.

    Root ignores chmod, so a read-only directory cannot be simulated that way here.
    """
    transactions = db / f"{table}.lance" / "_transactions"
    aside = transactions.with_name("_transactions.aside")
    transactions.rename(aside)
    transactions.write_text("not a directory")
    try:
        yield
    finally:
        transactions.unlink()
        aside.rename(transactions)


def started_session(store: LanceStore, *answers: str) -> Session:
    session = Session("kept", config=CONFIG, store=store, model=ScriptedModel(["first answer", *answers]))
    session.ask("first question")
    return session


def assert_one_line_naming(error: StoreError, db: Path) -> None:
    assert "\n" not in str(error) and str(db) in str(error)


def test_a_full_disk_is_a_one_line_store_error_and_the_session_recovers(tmp_path: Path):
    db = tmp_path / "db"
    store = LanceStore(db, optimize_every=0)
    session = started_session(store, "after the disk was freed")
    with file_size_limit(64 * 1024), pytest.raises(StoreError) as caught:
        session.ask("big " + "payload " * 100_000)
    assert_one_line_naming(caught.value, db)
    assert [m.content for m in store.load_messages("kept")] == ["first question", "first answer"]
    assert session.ask("small again").text == "after the disk was freed"
    contents = [m.content for m in LanceStore(db).load_messages("kept")]
    assert contents == ["first question", "first answer", "small again", "after the disk was freed"]


def test_a_full_disk_error_says_what_to_do(tmp_path: Path):
    store = LanceStore(tmp_path / "db", optimize_every=0)
    session = started_session(store)
    with file_size_limit(64 * 1024), pytest.raises(StoreError) as caught:
        session.ask("big " + "payload " * 100_000)
    assert "free" in str(caught.value) or "space" in str(caught.value)
    assert ".cargo" not in str(caught.value)


def test_an_unwritable_table_is_a_one_line_store_error_and_writes_resume_when_fixed(tmp_path: Path):
    db = tmp_path / "db"
    store = LanceStore(db, optimize_every=0)
    session = started_session(store, "writable again")
    with unwritable_table(db, "messages"), pytest.raises(StoreError) as caught:
        session.ask("while read-only")
    assert_one_line_naming(caught.value, db)
    with unwritable_table(db, "messages"):
        assert [m.content for m in LanceStore(db).load_messages("kept")] == ["first question", "first answer"]
    assert session.ask("fixed").text == "writable again"
    assert [m.content for m in LanceStore(db).load_messages("kept")][-2:] == ["fixed", "writable again"]


def test_a_monad_home_that_is_a_file_stops_the_session_with_what_to_set(tmp_path: Path, monkeypatch):
    (tmp_path / "blocker").write_text("a file where a directory should be")
    monkeypatch.setenv("MONAD_HOME", str(tmp_path / "blocker"))
    with pytest.raises(StoreError) as caught:
        Session("x", config=CONFIG, model=ScriptedModel([]))
    assert "\n" not in str(caught.value) and "MONAD_HOME" in str(caught.value)


def damaged_newest_manifest(tmp_path: Path, damage: str) -> tuple[Path, Path]:
    """A database of two turns whose messages table's newest manifest is truncated or zeroed."""
    db = tmp_path / "db"
    store = LanceStore(db, optimize_every=0)
    session = started_session(store, "second answer")
    session.ask("second question")
    store.close()
    versions = db / "messages.lance" / "_versions"
    newest = max(versions.glob("*.manifest"), key=lambda p: p.stat().st_mtime_ns)
    data = newest.read_bytes()
    newest.write_bytes(data[: len(data) // 2] if damage == "truncated" else bytes(len(data)))
    return db, newest


@pytest.mark.parametrize("damage", ["truncated", "zeroed"])
def test_a_damaged_newest_manifest_fails_loudly_in_one_line_not_with_a_traceback(tmp_path: Path, damage: str):
    db, _ = damaged_newest_manifest(tmp_path, damage)
    with pytest.raises(StoreError) as caught:
        LanceStore(db).load_messages("kept")
    assert_one_line_naming(caught.value, db)
    assert "messages" in str(caught.value)


@pytest.mark.parametrize("damage", ["truncated", "zeroed"])
def test_removing_the_damaged_manifest_brings_back_the_last_good_version(tmp_path: Path, damage: str):
    db, newest = damaged_newest_manifest(tmp_path, damage)
    newest.unlink()
    contents = [m.content for m in LanceStore(db).load_messages("kept")]
    assert contents[:2] == ["first question", "first answer"] and len(contents) == 3


@pytest.mark.parametrize("damage", ["truncated", "zeroed"])
def test_a_damaged_newest_manifest_names_the_repair_and_the_repair_works(tmp_path: Path, damage: str):
    db, newest = damaged_newest_manifest(tmp_path, damage)
    with pytest.raises(StoreError) as caught:
        LanceStore(db).load_messages("kept")
    message = str(caught.value)
    assert f"repair: mv {newest} {newest}.damaged" in message and "\n" not in message
    newest.rename(f"{newest}.damaged")  # exactly what the message says to run
    contents = [m.content for m in LanceStore(db).load_messages("kept")]
    assert contents[:2] == ["first question", "first answer"]


def test_a_session_on_a_damaged_table_can_start_over_in_a_fresh_database(tmp_path: Path, monkeypatch):
    damaged_newest_manifest(tmp_path, "zeroed")
    monkeypatch.setenv("MONAD_HOME", str(tmp_path / "fresh"))
    session = Session("kept", config=CONFIG, model=ScriptedModel(["fresh start"]))
    assert session.ask("hello").text == "fresh start"
    assert os.path.isdir(tmp_path / "fresh" / "db")
