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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monad_notebook.errors import StoreError
from monad_notebook.events import EVICTED, HANDOFF_SUGGESTED, TURN_FINISHED, TURN_STARTED, Event
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.base import MemoryFact, Summary
from monad_notebook.store.lance import LanceStore, default_db_uri
from monad_notebook.store.rows import sql_str

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")

HOSTILE_NAMES = [
    "x' OR '1'='1",
    "x'; DELETE FROM messages; --",
    'it\'s "quoted"',
    "back\\slash\\",
    "back\\'slash",
    "new\nline\r\n",
    "emoji 🦄 ünïcödé 中文",
    "%",
    "_",
    "   ",
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "db"


@pytest.fixture
def store(db: Path):
    s = LanceStore(db)
    yield s
    s.close()


def turn(session: str, start: int, n: int = 3, *, turn_no: int = 1) -> list[Message]:
    """n messages in seq order: a user message, an assistant tool call, tool results."""
    out = [Message(role="user", content=f"question {start}", session=session, seq=start, turn=turn_no)]
    for i in range(1, n):
        seq = start + i
        if i % 2:
            call = ToolCall(id=f"call-{seq}", name="run_python", arguments='{"code": "1+1"}')
            out.append(Message(role="assistant", content="", session=session, seq=seq, turn=turn_no, tool_calls=[call]))
        else:
            out.append(
                Message(
                    role="tool",
                    content=f"result {seq}",
                    session=session,
                    seq=seq,
                    turn=turn_no,
                    tool_call_id=f"call-{seq - 1}",
                    name="run_python",
                )
            )
    return out


def fill_session(store: LanceStore, name: str) -> list[Message]:
    """A session with rows in every session-keyed table."""
    store.create_session(name, model="gpt-test")
    messages = turn(name, 1, 5)
    store.append_messages(messages)
    store.save_raw_outputs(name, {"call-2": f"full output of {name}"})
    store.save_summary(Summary(session=name, text=f"summary of {name}", boundary_seq=2, created_at=time.time()))
    store.append_events([Event(TURN_FINISHED, name, {"who": name})])
    return messages


# round trips


def test_messages_round_trip_with_every_field(store: LanceStore) -> None:
    original = Message(
        role="assistant",
        content="thinking…\nwith 'quotes' and \\ backslashes",
        session="s",
        seq=7,
        turn=2,
        step=3,
        tool_calls=[ToolCall(id="c1", name="read_file", arguments='{"path": "a.csv"}')],
        tool_call_id="",
        name="",
        placeholder="[context-cleared] …",
        redacted=True,
        created_at=123.5,
    )
    store.append_messages([original])

    assert store.load_messages("s") == [original]


def test_sessions_round_trip_and_list_in_creation_order(store: LanceStore) -> None:
    first = store.create_session("first", model="gpt-test")
    second = store.create_session("second", parent="first")

    assert store.get_session("first") == first
    assert store.get_session("second").parent == "first"
    assert [s.name for s in store.list_sessions()] == ["first", "second"]
    assert second.created_at >= first.created_at
    assert store.get_session("missing") is None


def test_creating_an_existing_session_says_to_pick_another_name(store: LanceStore) -> None:
    store.create_session("s")

    with pytest.raises(StoreError, match="already exists"):
        store.create_session("s")
    assert len(store.list_sessions()) == 1


def test_raw_outputs_upsert_per_tool_call_and_report_which_exist(store: LanceStore) -> None:
    store.save_raw_outputs("s", {"c1": "first", "c2": "second"})
    store.save_raw_outputs("s", {"c1": "rewritten"})

    assert store.get_raw_output("s", "c1") == "rewritten"
    assert store.get_raw_output("s", "c2") == "second"
    assert store.get_raw_output("s", "c3") is None
    assert store.get_raw_output("other", "c1") is None
    assert store.has_raw_outputs("s", ["c1", "c3", "c2"]) == {"c1", "c2"}
    assert store.has_raw_outputs("s", []) == set()


def test_load_summary_returns_the_newest_and_keeps_history(store: LanceStore) -> None:
    assert store.load_summary("s") is None
    store.save_summary(Summary(session="s", text="old", boundary_seq=10, created_at=100.0, tokens=50))
    newest = Summary(session="s", text="new", boundary_seq=40, created_at=200.0, tokens=80, reflections=1)
    store.save_summary(newest)
    store.save_summary(Summary(session="s", text="reflected", boundary_seq=40, created_at=150.0))

    assert store.load_summary("s") == newest
    assert store.table_stats()["summaries"]["rows"] == 3


def test_events_round_trip_in_time_order_and_drop_transient_kinds(store: LanceStore) -> None:
    store.append_events(
        [
            Event(TURN_FINISHED, "s", {"tokens": 12}, ts=2.0),
            Event(TURN_STARTED, "s", {"prompt": "hi"}, ts=1.0),
            Event(HANDOFF_SUGGESTED, "s", {"message": "h"}, ts=1.5),
            Event(EVICTED, "s", {"ids": ["a"]}, ts=1.6),
        ]
    )

    assert store.list_events("s") == [
        Event(TURN_STARTED, "s", {"prompt": "hi"}, ts=1.0),
        Event(EVICTED, "s", {"ids": ["a"]}, ts=1.6),
        Event(TURN_FINISHED, "s", {"tokens": 12}, ts=2.0),
    ]
    assert [e.kind for e in store.list_events("s", kind=TURN_FINISHED)] == [TURN_FINISHED]
    assert store.list_events("other") == []


def test_memory_facts_list_by_scope_and_remove(store: LanceStore) -> None:
    facts = [
        MemoryFact(id="f1", scope="global", text="prefers polars", created_at=1.0),
        MemoryFact(id="f2", scope="agent:analyst", text="fiscal year starts in April", created_at=2.0, source="tool"),
        MemoryFact(id="f3", scope="agent:other", text="unrelated", created_at=3.0, source="promotion"),
    ]
    store.add_facts(facts)

    assert store.list_facts() == facts
    assert store.list_facts(["global", "agent:analyst"]) == facts[:2]
    assert store.list_facts([]) == []
    assert store.remove_fact("f2") is True
    assert store.remove_fact("f2") is False
    assert [f.id for f in store.list_facts()] == ["f1", "f3"]


# hostile names


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_session_name_is_just_a_name(store: LanceStore, name: str) -> None:
    victim = fill_session(store, "victim")
    mine = fill_session(store, name)

    assert store.load_messages(name) == mine
    assert store.count_messages(name) == len(mine)
    assert store.get_raw_output(name, "call-2") == f"full output of {name}"
    assert store.load_summary(name).text == f"summary of {name}"
    assert [e.data for e in store.list_events(name)] == [{"who": name}]
    assert store.get_session(name).name == name

    store.set_placeholders(name, {m.id: "[cleared]" for m in mine})
    store.delete_session(name)

    assert store.load_messages("victim") == victim
    assert store.get_raw_output("victim", "call-2") == "full output of victim"
    assert store.load_summary("victim").text == "summary of victim"
    assert [s.name for s in store.list_sessions()] == ["victim"]
    assert store.load_messages(name) == []


def test_hostile_tool_call_ids_and_scopes_are_just_values(store: LanceStore) -> None:
    store.save_raw_outputs("s", {"c1": "mine"})
    store.add_facts([MemoryFact(id="keep", scope="global", text="kept", created_at=1.0)])

    assert store.get_raw_output("s", "x' OR '1'='1") is None
    assert store.has_raw_outputs("s", ["x' OR '1'='1", "c1') OR ('1'='1"]) == set()
    assert store.list_facts(["x' OR '1'='1"]) == []
    assert store.remove_fact("x' OR '1'='1") is False
    assert [f.id for f in store.list_facts()] == ["keep"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.text(
        st.sampled_from("'\"\\;-=%_ \n") | st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]),
        min_size=1,
    )
)
def test_any_session_name_loads_only_its_own_messages(store: LanceStore, name: str) -> None:
    if store.get_session("bystander") is None:
        fill_session(store, "bystander")
    store.append_messages(turn(name, 1, 2))

    assert {m.session for m in store.load_messages(name)} == {name}
    assert {m.session for m in store.load_messages("bystander")} == {"bystander"}
    store.delete_session(name)
    assert store.count_messages("bystander") == 5


def test_text_with_lone_surrogates_is_stored_with_a_replacement_and_names_with_them_are_refused(
    store: LanceStore,
) -> None:
    store.append_messages([Message("assistant", "bad \ud800 byte, emoji \ud83d\ude00", session="s", seq=0, turn=1)])
    store.save_raw_outputs("s", {"c1": "raw \udc80 output"})

    assert store.load_messages("s")[0].content == "bad \ufffd byte, emoji \U0001f600"
    assert store.get_raw_output("s", "c1") == "raw \ufffd output"
    with pytest.raises(StoreError, match="lone surrogate"):
        store.load_messages("a\udc80b")


def test_names_with_nul_characters_are_refused_with_a_message(store: LanceStore) -> None:
    with pytest.raises(StoreError, match="NUL"):
        store.load_messages("a\x00b")
    with pytest.raises(StoreError, match="NUL"):
        store.append_messages(turn("a\x00b", 1))
    assert sql_str("it's") == "'it''s'"


# batching


def test_one_append_of_fifty_messages_is_one_new_version(store: LanceStore) -> None:
    store.append_messages(turn("s", 1, 2))
    before = store.table_version("messages")

    store.append_messages(turn("s", 10, 50))

    assert store.table_version("messages") == before + 1
    assert store.count_messages("s") == 52


def test_placeholders_and_raw_outputs_are_one_write_each(store: LanceStore) -> None:
    messages = turn("s", 1, 20)
    store.append_messages(messages)
    store.save_raw_outputs("s", {"seed": "x"})
    messages_before, raw_before = store.table_version("messages"), store.table_version("tool_raw_outputs")

    store.set_placeholders("s", {m.id: f"[cleared {m.seq}]" for m in messages if m.role == "tool"})
    store.save_raw_outputs("s", {f"c{i}": f"text {i}" for i in range(30)} | {"seed": "y"})

    assert store.table_version("messages") == messages_before + 1
    assert store.table_version("tool_raw_outputs") == raw_before + 1
    loaded = store.load_messages("s")
    assert [m.placeholder for m in loaded if m.role == "tool"] == [
        f"[cleared {m.seq}]" for m in loaded if m.role == "tool"
    ]
    assert [m.content for m in loaded] == [m.content for m in messages]
    assert store.get_raw_output("s", "seed") == "y"


def test_placeholders_only_touch_their_own_session(store: LanceStore) -> None:
    [theirs] = turn("other", 1, 1)
    store.append_messages([theirs])

    store.set_placeholders("s", {theirs.id: "[cleared]"})

    assert store.load_messages("other")[0].placeholder == ""


# reads


def test_load_messages_dedupes_by_id_sorts_by_seq_and_starts_after_seq(store: LanceStore) -> None:
    messages = turn("s", 1, 6)
    store.append_messages(list(reversed(messages[3:])))
    store.append_messages(messages[:4])

    assert store.load_messages("s") == messages
    assert [m.seq for m in store.load_messages("s", after_seq=4)] == [5, 6]


def test_rows_read_counts_the_rows_each_read_returns(store: LanceStore) -> None:
    store.append_messages(turn("s", 1, 10))
    store.append_messages(turn("other", 1, 40))
    start = store.rows_read

    store.load_messages("s", after_seq=7)

    assert store.rows_read - start == 3


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


def test_clone_replaces_leftovers_of_an_interrupted_clone(store: LanceStore) -> None:
    fill_session(store, "parent")
    store.append_messages(turn("child", 100, 2))
    store.save_raw_outputs("child", {"stale": "leftover"})

    store.clone_session("parent", "child")

    assert [m.seq for m in store.load_messages("child")] == [1, 2, 3, 4, 5]
    assert store.get_raw_output("child", "stale") is None


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


def test_clone_copies_messages_summary_and_raw_outputs_independently(store: LanceStore) -> None:
    parent = fill_session(store, "parent")
    store.set_placeholders("parent", {parent[2].id: "[context-cleared] use read_tool_output"})

    child = store.clone_session("parent", "child")
    store.save_raw_outputs("child", {"call-2": "overwritten in the child"})
    store.append_messages(turn("child", 6, 1))

    assert child.parent == "parent"
    assert child.model == "gpt-test"
    copied = store.load_messages("child")[:5]
    assert [(m.seq, m.content, m.placeholder) for m in copied] == [
        (m.seq, m.content, m.placeholder) for m in store.load_messages("parent")
    ]
    assert {m.id for m in copied}.isdisjoint(m.id for m in parent)
    assert store.load_summary("child").text == "summary of parent"
    assert store.get_raw_output("child", "call-2") == "overwritten in the child"
    assert store.get_raw_output("parent", "call-2") == "full output of parent"
    assert store.count_messages("parent") == 5
    assert store.list_events("child") == []


def test_clone_refuses_a_missing_source_or_an_existing_target(store: LanceStore) -> None:
    fill_session(store, "a")
    fill_session(store, "b")

    with pytest.raises(StoreError, match="no session named 'missing'"):
        store.clone_session("missing", "c")
    with pytest.raises(StoreError, match="'b' already exists"):
        store.clone_session("a", "b")
    assert store.count_messages("b") == 5


def test_delete_removes_the_session_from_every_table(store: LanceStore) -> None:
    fill_session(store, "gone")
    kept = fill_session(store, "kept")

    store.delete_session("gone")

    assert store.get_session("gone") is None
    assert store.load_messages("gone") == []
    assert store.get_raw_output("gone", "call-2") is None
    assert store.load_summary("gone") is None
    assert store.list_events("gone") == []
    assert store.load_messages("kept") == kept
    assert sum(t["rows"] for t in store.table_stats().values()) == 1 + 5 + 1 + 1 + 1


def test_reset_keeps_the_session_record_and_drops_its_history(store: LanceStore) -> None:
    record = fill_session(store, "s") and store.get_session("s")
    kept = fill_session(store, "other")

    store.reset_session("s")

    after = store.get_session("s")
    assert (after.name, after.created_at, after.model) == (record.name, record.created_at, record.model)
    assert after.updated_at >= record.updated_at
    assert store.load_messages("s") == []
    assert store.get_raw_output("s", "call-2") is None
    assert store.load_summary("s") is None
    assert store.list_events("s") == []
    assert store.load_messages("other") == kept


# housekeeping


def test_background_optimize_keeps_versions_and_fragments_bounded(db: Path) -> None:
    # One writer, so no grace period is needed for other kernels' uncommitted files.
    store = LanceStore(db, optimize_every=50, cleanup_grace=timedelta(0), optimize_quiet=0)
    for seq in range(300):
        store.append_messages(turn("s", seq, 1))
    store._wait_for_optimizer()  # the passes that came due, however slowly the helper ran them
    store.close()

    stats = store.table_stats()["messages"]
    assert stats["versions"] <= 60
    assert stats["fragments"] <= 60
    assert [m.seq for m in store.load_messages("s")] == list(range(300))
    assert store.last_optimize_error is None


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
    while store.optimize_runs == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    store.append_messages(turn("s", 150, 3))
    handle = store._table("messages", create=False)
    handle.checkout_latest()

    plan = handle.search().where("session = 's' AND seq > 140").explain_plan()

    assert "ScalarIndexQuery" in plan and "seq_idx" in plan and "session_idx" in plan
    assert [m.seq for m in store.load_messages("s", after_seq=140)] == list(range(141, 153))
    store.close()


def test_without_optimize_every_write_leaves_a_version(db: Path) -> None:
    store = LanceStore(db, optimize_every=0)
    for seq in range(60):
        store.append_messages(turn("s", seq, 1))

    assert store.table_stats()["messages"]["versions"] == 61

    store.optimize()

    assert store.table_stats()["messages"] == {"versions": 1, "fragments": 1, "rows": 60}


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
    version = store.table_version("calibrations")
    store.save_calibration("eda", "gpt-4o", {"observations": [[100, 10, 95]]})
    assert store.table_version("calibrations") == version + 1
    assert store.load_calibration("eda", "gpt-4o") == {"observations": [[100, 10, 95]]}
    assert store.load_calibration("eda", "local-model") == {"observations": [[100, 10, 300]]}
    assert store.table_stats()["calibrations"]["rows"] == 2


def test_a_session_without_one_gets_the_newest_another_session_saved_for_the_model(store: LanceStore) -> None:
    assert store.load_calibration("new", "gpt-4o") is None
    store.save_calibration("old", "gpt-4o", {"observations": [[1, 0, 1]]})
    store.save_calibration("newer", "gpt-4o", {"observations": [[2, 0, 2]]})
    store.save_calibration("own", "gpt-4o", {"observations": [[3, 0, 3]]})
    store.save_calibration("newest", "gpt-4o", {"observations": [[4, 0, 4]]})
    assert store.load_calibration("fresh", "gpt-4o") == {"observations": [[4, 0, 4]]}
    assert store.load_calibration("own", "gpt-4o") == {"observations": [[3, 0, 3]]}
    assert store.load_calibration("fresh", "other-model") is None


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_calibrations_under_hostile_names_stay_apart(store: LanceStore, name: str) -> None:
    store.save_calibration(name, name, {"observations": [[1, 2, 3]]})
    store.save_calibration("plain", name, {"observations": [[4, 5, 6]]})
    assert store.load_calibration(name, name) == {"observations": [[1, 2, 3]]}


def test_reset_keeps_what_was_learnt_of_the_provider_and_delete_drops_it(store: LanceStore) -> None:
    store.create_session("eda")
    store.save_calibration("eda", "gpt-4o", {"observations": [[1, 0, 1]]})
    store.reset_session("eda")
    assert store.load_calibration("eda", "gpt-4o") == {"observations": [[1, 0, 1]]}
    store.delete_session("eda")
    assert store.load_calibration("eda", "gpt-4o") is None
