"""A full disk, an unwritable table, a damaged manifest: clear errors, old data readable, recovery after."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import monad_notebook
from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.errors import StoreError
from monad_notebook.store.failures import reason
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel, tool_call

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


def test_a_write_failing_mid_turn_reports_the_first_error_and_keeps_the_turns_events(tmp_path: Path):
    db = tmp_path / "db"
    store = LanceStore(db, optimize_every=0)
    broken = contextlib.ExitStack()

    def break_db() -> None:
        broken.enter_context(unwritable_table(db, "messages"))
        broken.enter_context(unwritable_table(db, "events"))

    model = ScriptedModel(["first answer", tool_call("python", {"code": "break_db()"}), "after the repair"])
    session = Session("kept", config=CONFIG, store=store, model=model, namespace={"break_db": break_db})
    session.ask("first question")
    with pytest.raises(StoreError) as caught:
        session.ask("break it")
    assert "the messages table" in str(caught.value) and "events" not in str(caught.value)
    broken.close()
    assert session.ask("repaired").text == "after the repair"
    started = [e.data["text"] for e in LanceStore(db).list_events("kept", kind=ev.TURN_STARTED)]
    assert started == ["first question", "break it", "repaired"]
    assert len(LanceStore(db).list_events("kept", kind=ev.TOOL_FINISHED)) == 1
    stored = LanceStore(db).load_messages("kept")
    assert [(m.role, m.content) for m in stored if m.role == "user" or not m.tool_calls][:3] == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "break it"),
    ]
    call = next(m for m in stored if m.tool_calls).tool_calls[0]  # stored before it ran
    result = next(m for m in stored if m.role == "tool")  # its result, written when the next turn could write
    assert result.tool_call_id == call.id and "crash" not in result.content
    assert [m.role for m in stored][-2:] == ["user", "assistant"] and stored[-1].content == "after the repair"


ASK_WITHOUT_WRITE_ACCESS = """
import json, os, sys
from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.errors import StoreError
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel

if os.geteuid() == 0:  # root ignores file modes: run as nobody
    os.setgid(65534)
    os.setuid(65534)
store = LanceStore(sys.argv[1], optimize_every=0)
kept = [m.content for m in store.load_messages("kept")]
try:
    Session("kept", config=Config(), store=store, model=ScriptedModel([])).ask("without write access")
    error = None
except StoreError as exc:
    error = str(exc)
print(json.dumps({"kept": kept, "error": error}))
"""


@contextlib.contextmanager
def read_only_tree(root: Path) -> Iterator[None]:
    """Every directory and file under ``root`` without write permission, restored afterwards."""
    paths = [root, *root.rglob("*")]
    for path in paths:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield
    finally:
        for path in paths:
            path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user can reach (pytest's own temp root is private to its user)."""
    path = Path(tempfile.mkdtemp(prefix="monad-perm-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(not hasattr(os, "setuid"), reason="needs POSIX users and file modes")
def test_a_database_without_write_permission_is_a_one_line_error_that_says_what_to_do(shared_dir: Path):
    db = shared_dir / "db"
    store = LanceStore(db, optimize_every=0)
    started_session(store, "written once writable")
    source_root = str(Path(monad_notebook.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": source_root, "HOME": str(shared_dir)}
    with read_only_tree(db):
        child = subprocess.run(
            [sys.executable, "-c", ASK_WITHOUT_WRITE_ACCESS, str(db)], env=env, capture_output=True, text=True
        )
    assert child.returncode == 0, child.stderr[-2000:]
    outcome = json.loads(child.stdout.strip().splitlines()[-1])
    assert outcome["kept"] == ["first question", "first answer"]
    error = outcome["error"]
    assert error is not None and "\n" not in error and str(db) in error
    assert "permission denied" in error and "write access" in error and "MONAD_HOME" in error
    assert "os error" not in error and "LanceError" not in error
    resumed = Session("kept", config=CONFIG, store=LanceStore(db), model=ScriptedModel(["written once writable"]))
    assert resumed.ask("writable again").text == "written once writable"


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (errno.EACCES, "permission denied"),
        (errno.EPERM, "permission denied"),
        (errno.EROFS, "read-only file system"),
        (errno.ENOSPC, "out of disk space"),
        (errno.EDQUOT, "out of disk space"),
    ],
)
def test_an_os_error_under_the_database_becomes_advice_not_an_errno(code: int, said: str):
    raised = OSError(code, os.strerror(code), "/data/monad/db/messages.lance")
    lance_shaped = RuntimeError(f"lance error: LanceError(IO): {os.strerror(code)} (os error {code}) at path /x")
    for error in (raised, lance_shaped):
        advice = reason(error)
        assert advice.startswith(said) and "run the cell again" in advice and "errno" not in advice.lower()
