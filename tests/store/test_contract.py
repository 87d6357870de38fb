"""The Store contract: what every implementation answers, run against LanceDB and the in-memory twin.

A test here asks only what the protocol promises; what is LanceDB's own (versions, fragments,
other processes, object storage) stays in ``test_lance.py``.
"""

from __future__ import annotations

import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monad_notebook.branching import clone_session
from monad_notebook.errors import StoreError
from monad_notebook.events import EVICTED, HANDOFF_SUGGESTED, TURN_FINISHED, TURN_STARTED, Event
from monad_notebook.images.image import Image
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.base import Chunk, Claim, LedgerEntry, MemoryFact, Store, Summary
from monad_notebook.store.rows import sql_str
from tests.store.sessions import HOSTILE_NAMES, fill_session, turn

# any text, leaning on what SQL, LIKE and JSON treat specially
HOSTILE_TEXT = st.text(
    st.sampled_from("'\"\\;-=%_ \n") | st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]),
    min_size=1,
)


@pytest.fixture
def store(each_store: Store) -> Store:
    return each_store


def test_messages_round_trip_with_every_field(store: Store) -> None:
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


def test_sessions_round_trip_and_list_in_creation_order(store: Store) -> None:
    first = store.create_session("first", model="gpt-test")
    second = store.create_session("second", parent="first")

    assert store.get_session("first") == first
    assert store.get_session("second").parent == "first"
    assert [s.name for s in store.list_sessions()] == ["first", "second"]
    assert second.created_at >= first.created_at
    assert store.get_session("missing") is None


def test_creating_an_existing_session_says_to_pick_another_name(store: Store) -> None:
    store.create_session("s")

    with pytest.raises(StoreError, match="already exists"):
        store.create_session("s")
    assert len(store.list_sessions()) == 1


def test_images_keep_their_bytes_and_order_per_result_and_follow_branch_and_reset(store: Store) -> None:
    store.create_session("s")
    chart = Image("img_0000000001", "image/png", 3, 2, b"\x89PNG\r\n\x1a\n\x00\xff", "bar chart 'Sales'")
    photo = Image("img_0000000002", "image/jpeg", 640, 480, bytes(range(256)), "")
    store.save_images("s", {"c1": [chart, photo], "c2": []})
    store.save_images("s", {"v1": [chart]})  # shown again by view_image: the same image under another result
    assert store.load_images("s", ["c1", "c2", "v1", "none"]) == {"c1": [chart, photo], "v1": [chart]}
    assert store.get_image("s", "img_0000000002") == photo and store.get_image("s", "img_0000000009") is None
    assert store.get_image("other", "img_0000000001") is None  # never another session's
    clone_session(store, "s", "t")
    store.reset_session("s")
    assert store.load_images("s", ["c1"]) == {} and store.load_images("t", ["c1"]) == {"c1": [chart, photo]}
    store.delete_session("t")
    assert store.get_image("t", "img_0000000001") is None


def test_raw_outputs_upsert_per_tool_call_and_report_which_exist(store: Store) -> None:
    store.save_raw_outputs("s", {"c1": "first", "c2": "second"})
    store.save_raw_outputs("s", {"c1": "rewritten"})

    assert store.get_raw_output("s", "c1") == "rewritten"
    assert store.get_raw_output("s", "c2") == "second"
    assert store.get_raw_output("s", "c3") is None
    assert store.get_raw_output("other", "c1") is None
    assert store.has_raw_outputs("s", ["c1", "c3", "c2"]) == {"c1", "c2"}
    assert store.has_raw_outputs("s", []) == set()


def test_a_calls_messages_are_the_call_and_its_result_in_order(store: Store) -> None:
    def call(call_id: str, seq: int, session: str = "s") -> list[Message]:
        asked = Message("assistant", "", session=session, seq=seq, tool_calls=[ToolCall(call_id, "python", "{}")])
        return [asked, Message("tool", f"out {call_id}", session=session, seq=seq + 1, tool_call_id=call_id)]

    both = [ToolCall("c_a", "python", "{}"), ToolCall("c_b", "list_variables", "{}")]
    pair = Message("assistant", "", session="s", seq=5, tool_calls=both)
    store.append_messages([*call("c_1", 1), *call("c_10", 3), pair, *call("c_1", 1, session="other")])
    store.set_placeholders("s", {call("c_1", 1)[1].id: "[context-cleared]"})

    found = store.call_messages("s", "c_1")
    assert [(m.role, m.seq) for m in found] == [("assistant", 1), ("tool", 2)]
    assert found[0].tool_calls[0].id == "c_1" and found[1].content == "out c_1"  # not c_10, not the other session's
    assert store.call_messages("s", "c_b") == [pair]
    assert store.call_messages("s", "c_") == [] and store.call_messages("s", "missing") == []


def test_a_message_is_found_by_its_number_in_its_own_session_only_and_keeps_it_on_a_branch(store: Store) -> None:
    asked = Message("user", "the chillers come from Polar Freeze", session="s", seq=3, turn=1)
    store.append_messages([asked, Message("assistant", "noted", session="s", seq=4, turn=1)])
    store.append_messages([Message("user", "another session's", session="other", seq=3)])
    store.set_placeholders("s", {asked.id: "[context-cleared]"})
    store.create_session("s")
    clone_session(store, "s", "s-branch")

    assert store.message_at("s", 3).content == "the chillers come from Polar Freeze"
    assert store.message_at("s-branch", 3).content == "the chillers come from Polar Freeze"
    assert store.message_at("s", 5) is None and store.message_at("nobody", 3) is None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call_id=HOSTILE_TEXT)
def test_any_tool_call_id_finds_its_own_call_only(store: Store, call_id: str) -> None:
    session = f"ids-{uuid.uuid4().hex}"  # each example its own: an earlier decoy cannot match a later id
    asked = Message("assistant", "", session=session, tool_calls=[ToolCall(call_id, "python", '{"code": "x = 1"}')])
    decoy = Message("assistant", "", session=session, seq=2, tool_calls=[ToolCall(call_id + "x", "python", "{}")])
    store.append_messages([asked, decoy])
    assert [m.id for m in store.call_messages(session, call_id)] == [asked.id]


def test_load_summary_returns_the_newest(store: Store) -> None:
    assert store.load_summary("s") is None
    store.save_summary(Summary(session="s", text="old", boundary_seq=10, created_at=100.0, tokens=50))
    newest = Summary(session="s", text="new", boundary_seq=40, created_at=200.0, tokens=80, reflections=1)
    store.save_summary(newest)
    store.save_summary(Summary(session="s", text="reflected", boundary_seq=40, created_at=150.0))

    assert store.load_summary("s") == newest
    assert store.summary_head("s") == (200.0, 40)
    assert store.load_summary("s", before=160.0).text == "reflected"  # the one in force at 160
    assert store.load_summary("s", before=100.0) is None


def test_events_round_trip_in_time_order_and_drop_transient_kinds(store: Store) -> None:
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


def test_memory_facts_list_by_scope_and_remove(store: Store) -> None:
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


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_session_name_is_just_a_name(store: Store, name: str) -> None:
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


def test_hostile_tool_call_ids_and_scopes_are_just_values(store: Store) -> None:
    store.save_raw_outputs("s", {"c1": "mine"})
    store.add_facts([MemoryFact(id="keep", scope="global", text="kept", created_at=1.0)])

    assert store.get_raw_output("s", "x' OR '1'='1") is None
    assert store.has_raw_outputs("s", ["x' OR '1'='1", "c1') OR ('1'='1"]) == set()
    assert store.list_facts(["x' OR '1'='1"]) == []
    assert store.remove_fact("x' OR '1'='1") is False
    assert [f.id for f in store.list_facts()] == ["keep"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=HOSTILE_TEXT)
def test_any_session_name_loads_only_its_own_messages(store: Store, name: str) -> None:
    if store.get_session("bystander") is None:
        fill_session(store, "bystander")
    store.append_messages(turn(name, 1, 2))

    assert {m.session for m in store.load_messages(name)} == {name}
    assert {m.session for m in store.load_messages("bystander")} == {"bystander"}
    store.delete_session(name)
    assert store.count_messages("bystander") == 5


def test_text_with_lone_surrogates_is_stored_with_a_replacement_and_names_with_them_are_refused(
    store: Store,
) -> None:
    store.append_messages([Message("assistant", "bad \ud800 byte, emoji \ud83d\ude00", session="s", seq=0, turn=1)])
    store.save_raw_outputs("s", {"c1": "raw \udc80 output"})

    assert store.load_messages("s")[0].content == "bad \ufffd byte, emoji \U0001f600"
    assert store.get_raw_output("s", "c1") == "raw \ufffd output"
    with pytest.raises(StoreError, match="lone surrogate"):
        store.load_messages("a\udc80b")


def test_names_with_nul_characters_are_refused_with_a_message(store: Store) -> None:
    with pytest.raises(StoreError, match="NUL"):
        store.load_messages("a\x00b")
    with pytest.raises(StoreError, match="NUL"):
        store.append_messages(turn("a\x00b", 1))
    assert sql_str("it's") == "'it''s'"


def test_placeholders_only_touch_their_own_session(store: Store) -> None:
    [theirs] = turn("other", 1, 1)
    store.append_messages([theirs])

    store.set_placeholders("s", {theirs.id: "[cleared]"})

    assert store.load_messages("other")[0].placeholder == ""


def test_load_messages_dedupes_by_id_sorts_by_seq_and_starts_after_seq(store: Store) -> None:
    messages = turn("s", 1, 6)
    store.append_messages(list(reversed(messages[3:])))
    store.append_messages(messages[:4])

    assert store.load_messages("s") == messages
    assert [m.seq for m in store.load_messages("s", after_seq=4)] == [5, 6]


def test_clone_replaces_leftovers_of_an_interrupted_clone(store: Store) -> None:
    fill_session(store, "parent")
    store.append_messages(turn("child", 100, 2))
    store.save_raw_outputs("child", {"stale": "leftover"})

    clone_session(store, "parent", "child")

    assert [m.seq for m in store.load_messages("child")] == [1, 2, 3, 4, 5]
    assert store.get_raw_output("child", "stale") is None


def test_clone_copies_messages_summary_and_raw_outputs_independently(store: Store) -> None:
    parent = fill_session(store, "parent")
    store.set_placeholders("parent", {parent[2].id: "[context-cleared] use read_tool_output"})

    child = clone_session(store, "parent", "child")
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


def test_a_branch_lists_its_saved_outputs_newest_first_as_its_parent_does(store: Store) -> None:
    fill_session(store, "parent")
    for call in ("call-a", "call-b", "call-c"):  # one write each: saved one after the other
        store.save_raw_outputs("parent", {call: f"needle in {call}"})
        time.sleep(0.002)

    clone_session(store, "parent", "child")

    newest_first = [hit[0] for hit in store.search_raw_outputs("parent", "needle", 10)]
    assert newest_first == ["call-c", "call-b", "call-a"]
    assert [hit[0] for hit in store.search_raw_outputs("child", "needle", 10)] == newest_first


def test_images_load_for_the_results_asked_or_for_every_result(store: Store) -> None:
    chart = Image("img_0000000001", "image/png", 3, 2, b"\x89PNG", "chart")
    photo = Image("img_0000000002", "image/jpeg", 4, 4, b"\xff\xd8", "")
    store.save_images("s", {"c1": [chart]})
    store.save_images("s", {"c2": [photo, chart]})

    assert store.load_images("s") == {"c1": [chart], "c2": [photo, chart]}
    assert store.load_images("s", ["c2"]) == {"c2": [photo, chart]}
    assert store.load_images("s", []) == {} and store.load_images("other") == {}


def test_clone_refuses_a_missing_source_or_an_existing_target(store: Store) -> None:
    fill_session(store, "a")
    fill_session(store, "b")

    with pytest.raises(StoreError, match="no session named 'missing'"):
        clone_session(store, "missing", "c")
    with pytest.raises(StoreError, match="'b' already exists"):
        clone_session(store, "a", "b")
    assert store.count_messages("b") == 5


def test_delete_removes_the_session_from_every_table(store: Store) -> None:
    fill_session(store, "gone")
    kept = fill_session(store, "kept")

    store.delete_session("gone")

    assert store.get_session("gone") is None
    assert store.load_messages("gone") == []
    assert store.get_raw_output("gone", "call-2") is None
    assert store.load_summary("gone") is None
    assert store.list_events("gone") == []
    assert store.load_messages("kept") == kept
    assert [s.name for s in store.list_sessions()] == ["kept"]


def test_reset_keeps_the_session_record_and_drops_its_history(store: Store) -> None:
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


def test_a_session_without_one_gets_the_newest_another_session_saved_for_the_model(store: Store) -> None:
    assert store.load_calibration("new", "gpt-4o") is None
    store.save_calibration("old", "gpt-4o", {"observations": [[1, 0, 1]]})
    store.save_calibration("newer", "gpt-4o", {"observations": [[2, 0, 2]]})
    store.save_calibration("own", "gpt-4o", {"observations": [[3, 0, 3]]})
    store.save_calibration("newest", "gpt-4o", {"observations": [[4, 0, 4]]})
    assert store.load_calibration("fresh", "gpt-4o") == {"observations": [[4, 0, 4]]}
    assert store.load_calibration("own", "gpt-4o") == {"observations": [[3, 0, 3]]}
    assert store.load_calibration("fresh", "other-model") is None


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_calibrations_under_hostile_names_stay_apart(store: Store, name: str) -> None:
    store.save_calibration(name, name, {"observations": [[1, 2, 3]]})
    store.save_calibration("plain", name, {"observations": [[4, 5, 6]]})
    assert store.load_calibration(name, name) == {"observations": [[1, 2, 3]]}


def test_reset_keeps_what_was_learnt_of_the_provider_and_delete_drops_it(store: Store) -> None:
    store.create_session("eda")
    store.save_calibration("eda", "gpt-4o", {"observations": [[1, 0, 1]]})
    store.reset_session("eda")
    assert store.load_calibration("eda", "gpt-4o") == {"observations": [[1, 0, 1]]}
    store.delete_session("eda")
    assert store.load_calibration("eda", "gpt-4o") is None


def test_the_first_live_claim_holds_and_a_later_one_sees_it_until_released(store: Store) -> None:
    now = time.time()
    first = Claim("s", "c1", "host:1", "a", now, now + 60)
    assert store.claims.claim_session(first) == []
    second = Claim("s", "c2", "host:2", "b", now + 1, now + 61)
    assert store.claims.claim_session(second) == [first]
    store.claims.claim_session(Claim("other", "c3", "host:3", "c", now, now + 60))
    renewed = Claim("s", "c1", "host:1", "a", now, now + 600)
    store.claims.renew_claim(renewed)
    assert store.claims.live_claims("s") == [renewed, second]
    store.claims.release_claim(first)
    assert store.claims.live_claims("s") == [second]
    expired = Claim("x", "c4", "host:4", "d", now - 20, now - 10)
    store.claims.claim_session(expired)
    assert store.claims.live_claims("x") == []


def test_the_history_mark_moves_with_every_message_or_summary_write_only(store: Store) -> None:
    before = store.history_mark()
    store.append_events([Event(TURN_FINISHED, "s", {})])
    store.save_raw_outputs("s", {"c1": "text"})
    assert store.history_mark() == before
    store.append_messages(turn("s", 1, 1))
    after_messages = store.history_mark()
    store.save_summary(Summary(session="s", text="sum", boundary_seq=1, created_at=1.0))
    assert len({before, after_messages, store.history_mark()}) == 3


def test_saved_outputs_are_searched_line_by_line_newest_output_first_up_to_the_limit(store: Store) -> None:
    store.save_raw_outputs("s", {"old": "a\nchurn rate 3%\nb"})
    time.sleep(0.01)
    store.save_raw_outputs("s", {"new": "churn\nx\nchurn again"})
    store.save_raw_outputs("other", {"theirs": "churn"})
    assert store.search_raw_outputs("s", "churn", 10) == [
        ("new", 1, "churn"),
        ("new", 3, "churn again"),
        ("old", 2, "churn rate 3%"),
    ]
    assert store.search_raw_outputs("s", "churn", 2) == [("new", 1, "churn"), ("new", 3, "churn again")]
    assert store.search_raw_outputs("s", "Churn", 10) == []


def test_the_ledger_keeps_one_entry_per_item_the_latest(store: Store) -> None:
    store.save_ledger("s", [LedgerEntry("df_orders", "variable", 5.0, turn=1)])
    store.save_ledger(
        "s", [LedgerEntry("df_orders", "variable", 7.5, count=2, turn=4), LedgerEntry("a.csv", "file", 3.0)]
    )
    entries = sorted(store.load_ledger("s"), key=lambda e: e.item)
    assert [(e.item, e.score, e.count) for e in entries] == [("a.csv", 3.0, 1), ("df_orders", 7.5, 2)]
    assert store.load_ledger("other") == []


def test_chunk_texts_come_in_batches_and_only_the_sessions_own(store: Store) -> None:
    store.search.save_chunks("s", [Chunk(f"m{i}", 0, f"text {i}") for i in range(5)])
    store.search.save_chunks("other", [Chunk("x", 0, "theirs")])
    batches = list(store.search.chunk_texts("s", batch=2))
    assert sorted(t for b in batches for t in b) == [f"text {i}" for i in range(5)]
    assert all(len(b) <= 2 for b in batches)
