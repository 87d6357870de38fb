from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import lancedb
import pyarrow as pa
import pytest

from monad_notebook.branching import clone_session
from monad_notebook.errors import StoreError
from monad_notebook.images.image import Image
from monad_notebook.store.base import Chunk, LedgerEntry, MemoryFact, Summary, WorkspaceEntry
from monad_notebook.store.lance import LanceStore, default_db_uri
from tests.store.sessions import fill_session, turn

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "db"


@pytest.fixture
def store(db: Path):
    s = LanceStore(db)
    yield s
    s.close()


# round trips


# hostile names


def test_every_summary_is_kept_as_history_and_a_delete_leaves_no_row_of_the_session(store: LanceStore) -> None:
    store.save_summary(Summary(session="s", text="old", boundary_seq=10, created_at=100.0))
    store.save_summary(Summary(session="s", text="new", boundary_seq=40, created_at=200.0))
    assert store.tables.table_stats()["summaries"]["rows"] == 2
    fill_session(store, "gone")
    fill_session(store, "kept")
    store.delete_session("gone")
    store.delete_session("s")
    assert sum(t["rows"] for t in store.tables.table_stats().values()) == 1 + 5 + 1 + 1 + 1


# batching


def test_one_append_of_fifty_messages_is_one_new_version(store: LanceStore) -> None:
    store.append_messages(turn("s", 1, 2))
    before = store.tables.table_version("messages")

    store.append_messages(turn("s", 10, 50))

    assert store.tables.table_version("messages") == before + 1
    assert store.count_messages("s") == 52


def test_placeholders_and_raw_outputs_are_one_write_each(store: LanceStore) -> None:
    messages = turn("s", 1, 20)
    store.append_messages(messages)
    store.save_raw_outputs("s", {"seed": "x"})
    messages_before, raw_before = store.tables.table_version("messages"), store.tables.table_version("tool_raw_outputs")

    store.set_placeholders("s", {m.id: f"[cleared {m.seq}]" for m in messages if m.role == "tool"})
    store.save_raw_outputs("s", {f"c{i}": f"text {i}" for i in range(30)} | {"seed": "y"})

    assert store.tables.table_version("messages") == messages_before + 1
    assert store.tables.table_version("tool_raw_outputs") == raw_before + 1
    loaded = store.load_messages("s")
    assert [m.placeholder for m in loaded if m.role == "tool"] == [
        f"[cleared {m.seq}]" for m in loaded if m.role == "tool"
    ]
    assert [m.content for m in loaded] == [m.content for m in messages]
    assert store.get_raw_output("s", "seed") == "y"


# reads


def test_rows_read_counts_the_rows_each_read_returns(store: LanceStore) -> None:
    store.append_messages(turn("s", 1, 10))
    store.append_messages(turn("other", 1, 40))
    start = store.tables.rows_read

    store.load_messages("s", after_seq=7)

    assert store.tables.rows_read - start == 3


def test_reading_an_empty_database_creates_nothing(store: LanceStore, db: Path) -> None:
    assert store.load_messages("s") == []
    assert store.list_sessions() == []
    assert store.list_facts() == []
    assert lancedb.connect(db).list_tables().tables == []


# persistence and sharing


def test_a_new_store_on_the_same_directory_sees_everything(db: Path) -> None:
    first = LanceStore(db)
    messages = fill_session(first, "s")
    first.add_facts([MemoryFact(id="f", scope="global", text="t", created_at=1.0)])
    first.close()

    again = LanceStore(db)

    assert again.load_messages("s") == messages
    assert again.get_session("s").model == "gpt-test"
    assert again.get_raw_output("s", "call-2") == "full output of s"
    assert again.load_summary("s").text == "summary of s"
    assert [f.id for f in again.list_facts()] == ["f"]


def test_two_stores_on_one_directory_see_each_others_writes(db: Path) -> None:
    kernel_a, kernel_b = LanceStore(db), LanceStore(db)
    assert kernel_b.load_messages("s") == []

    kernel_a.append_messages(turn("s", 1, 2))
    assert len(kernel_b.load_messages("s")) == 2
    kernel_b.append_messages(turn("s", 3, 2))
    assert [m.seq for m in kernel_a.load_messages("s")] == [1, 2, 3, 4]

    kernel_b.save_raw_outputs("s", {"c": "from b"})
    assert kernel_a.get_raw_output("s", "c") == "from b"


def test_without_read_consistency_a_store_keeps_its_snapshot(db: Path) -> None:
    writer, snapshot = LanceStore(db), LanceStore(db, read_consistency_interval=None)
    writer.append_messages(turn("s", 1, 2))
    assert len(snapshot.load_messages("s")) == 2

    writer.append_messages(turn("s", 3, 2))

    assert len(snapshot.load_messages("s")) == 2
    assert len(LanceStore(db).load_messages("s")) == 4


def test_a_store_whose_version_another_kernel_cleaned_up_reads_the_latest(db: Path) -> None:
    stale = LanceStore(db, read_consistency_interval=None)
    stale.append_messages(turn("s", 1, 2))
    other = LanceStore(db)
    other.append_messages(turn("s", 3, 2))
    other.optimize()

    assert [m.seq for m in stale.load_messages("s")] == [1, 2, 3, 4]
    stale.append_messages(turn("s", 5, 1))
    assert [m.seq for m in other.load_messages("s")] == [1, 2, 3, 4, 5]


@pytest.mark.slow
def test_another_process_sees_writes_and_its_writes_are_seen(store: LanceStore, db: Path) -> None:
    store.append_messages(turn("s", 1, 2))
    script = (
        "import sys\n"
        "from monad_notebook.messages import Message\n"
        "from monad_notebook.store.lance import LanceStore\n"
        "s = LanceStore(sys.argv[1])\n"
        "n = len(s.load_messages('s'))\n"
        "s.append_messages([Message(role='user', content=f'saw {n}', session='s', seq=3)])\n"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", script, str(db)], check=True, cwd=root, timeout=60)

    assert store.load_messages("s")[-1].content == "saw 2"


# branching, delete, reset


def test_a_branch_writes_each_table_once_whatever_the_sessions_length(store: LanceStore) -> None:
    """LanceDB keeps a version per write: the copy is one write per table, not one per message or output."""
    fill_session(store, "s")
    store.append_messages(turn("s", 6, 200, turn_no=2))
    store.search.save_chunks("s", [Chunk(m.id, 0, m.content, seq=m.seq) for m in store.load_messages("s")])
    store.search.save_embeddings("s", [(m, [1.0, 0.0]) for m in store.load_messages("s")], "test")
    store.save_raw_outputs("s", {f"call-{i}": f"output {i}" for i in range(100)})
    store.save_images("s", {f"call-{i}": [Image(f"img_{i:010d}", "image/png", 1, 1, b"png", "")] for i in range(20)})
    store.save_ledger("s", [LedgerEntry(f"file{i}.csv", "file", 1.0) for i in range(30)])
    store.workspace.save_workspace("s", [WorkspaceEntry("name", f"v{i}", "int", seq=i) for i in range(30)])
    before = {name: stats["versions"] for name, stats in store.tables.table_stats().items()}

    clone_session(store, "s", "branch")

    after = {name: stats["versions"] for name, stats in store.tables.table_stats().items()}
    assert {name: after[name] - before.get(name, 0) for name in after} == {
        **dict.fromkeys(after, 1),
        "events": 0,  # a branch starts without the parent's events
    }
    assert store.count_messages("branch") == store.count_messages("s") == 205


# housekeeping


def test_background_optimize_keeps_versions_and_fragments_bounded(db: Path) -> None:
    # One writer, so no grace period is needed for other kernels' uncommitted files.
    store = LanceStore(db, optimize_every=50, cleanup_grace=timedelta(0), optimize_quiet=0)
    for seq in range(300):
        store.append_messages(turn("s", seq, 1))
    store.tables.passes.wait()  # the passes that came due, however slowly the helper ran them
    store.close()

    stats = store.tables.table_stats()["messages"]
    assert stats["versions"] <= 60
    assert stats["fragments"] <= 60
    assert [m.seq for m in store.load_messages("s")] == list(range(300))
    assert store.tables.passes.last_error is None


def test_messages_load_by_id_across_batches_and_their_ids_read_without_their_texts(store: LanceStore) -> None:
    messages = turn("s", 0, 1200) + turn("other", 0, 3)
    store.append_messages(messages)
    wanted = [m.id for m in messages[::2] if m.session == "s"]

    loaded = store.load_messages("s", ids=[*wanted, "no-such-id"])

    assert [m.id for m in loaded] == wanted
    assert store.message_ids("s") == {m.id for m in messages if m.session == "s"}
    assert store.load_messages("s", ids=[]) == []


def test_after_a_background_optimize_a_turns_catch_up_read_uses_indexes_and_still_sees_newer_rows(db: Path) -> None:
    store = LanceStore(db, optimize_every=5, optimize_quiet=0)
    for seq in range(0, 150, 30):
        store.append_messages(turn("s", seq, 30) + turn("other", seq, 30))
    deadline = time.monotonic() + 20
    while store.tables.passes.runs == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    store.append_messages(turn("s", 150, 3))
    handle = store.tables.table("messages", create=False)
    handle.checkout_latest()

    plan = handle.search().where("session = 's' AND seq > 140").explain_plan()

    assert "ScalarIndexQuery" in plan and "seq_idx" in plan and "session_idx" in plan
    assert [m.seq for m in store.load_messages("s", after_seq=140)] == list(range(141, 153))
    store.close()


def test_without_optimize_every_write_leaves_a_version(db: Path) -> None:
    store = LanceStore(db, optimize_every=0)
    for seq in range(60):
        store.append_messages(turn("s", seq, 1))

    assert store.tables.table_stats()["messages"]["versions"] == 61

    store.optimize()

    assert store.tables.table_stats()["messages"] == {"versions": 1, "fragments": 1, "rows": 60}


def test_writers_on_many_threads_never_race_the_optimizer(db: Path) -> None:
    store = LanceStore(db, optimize_every=10)
    errors: list[BaseException] = []

    def write(session: str) -> None:
        try:
            for seq in range(25):
                store.append_messages(turn(session, seq, 1))
                store.save_raw_outputs(session, {f"c{seq % 5}": str(seq)})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(f"t{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()

    assert errors == []
    for i in range(3):
        assert [m.seq for m in store.load_messages(f"t{i}")] == list(range(25))
        assert store.get_raw_output(f"t{i}", "c4") == "24"


def test_an_old_table_gains_new_columns_and_reads_them_as_empty(db: Path) -> None:
    old = pa.schema([pa.field("id", pa.string()), pa.field("scope", pa.string()), pa.field("text", pa.string())])
    lancedb.connect(db).create_table(
        "memory_facts", data=pa.table({"id": ["f"], "scope": ["global"], "text": ["t"]}, old)
    )

    store = LanceStore(db)

    assert store.list_facts() == [MemoryFact(id="f", scope="global", text="t", created_at=0.0, source="manual")]
    store.add_facts([MemoryFact(id="g", scope="global", text="u", created_at=5.0, source="tool")])
    assert [f.source for f in store.list_facts()] == ["manual", "tool"]


# errors and location


def test_an_unusable_path_raises_store_error_naming_the_uri(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")

    with pytest.raises(StoreError) as caught:
        LanceStore(blocker / "db")

    assert str(blocker / "db") in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_failed_write_raises_store_error_naming_the_uri(store: LanceStore, db: Path) -> None:
    store.append_messages(turn("s", 1))
    shutil.rmtree(db)
    db.write_text("the database directory was replaced by a file")

    with pytest.raises(StoreError) as caught:
        store.append_messages(turn("s", 5))

    assert str(db) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_default_uri_lives_under_monad_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_db_uri() == str(tmp_path / "monad-home" / "db")
    monkeypatch.delenv("MONAD_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))

    assert default_db_uri() == str(tmp_path / "user" / ".monad" / "db")
    assert LanceStore("~/elsewhere").uri == str(tmp_path / "user" / "elsewhere")


@pytest.mark.slow
def test_object_storage_uri_is_passed_through_with_storage_options(s3_endpoint: str) -> None:
    options = {
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
        "aws_endpoint": s3_endpoint,
        "aws_region": "us-east-1",
        "allow_http": "true",
    }
    alice = LanceStore("s3://team-bucket/monad", storage_options=options)
    messages = fill_session(alice, "shared")

    bob = LanceStore("s3://team-bucket/monad", storage_options=options)

    assert bob.uri == "s3://team-bucket/monad"
    assert bob.load_messages("shared") == messages
    assert bob.get_raw_output("shared", "call-2") == "full output of shared"


# calibration


def test_a_calibration_is_kept_per_session_and_model_and_replaced_in_one_write(store: LanceStore) -> None:
    store.save_calibration("eda", "gpt-4o", {"observations": [[100, 10, 90]]})
    store.save_calibration("eda", "local-model", {"observations": [[100, 10, 300]]})
    version = store.tables.table_version("calibrations")
    store.save_calibration("eda", "gpt-4o", {"observations": [[100, 10, 95]]})
    assert store.tables.table_version("calibrations") == version + 1
    assert store.load_calibration("eda", "gpt-4o") == {"observations": [[100, 10, 95]]}
    assert store.load_calibration("eda", "local-model") == {"observations": [[100, 10, 300]]}
    assert store.tables.table_stats()["calibrations"]["rows"] == 2
