"""One session, two kernels: taking turns works, at the same time is refused, and no request is ever broken."""

from __future__ import annotations

import copy
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.context.prompt import own_text
from monad_notebook.context.window import Window
from monad_notebook.errors import SessionBusyError
from monad_notebook.messages import Message, ToolCall
from monad_notebook.session import Session
from monad_notebook.store.base import Summary
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel
from tests.conftest import isolate
from tests.reliability.sharing import (
    KernelProcess,
    at_once,
    orphan_results,
    problems,
    saw_the_other_kernels_turns,
    take_turns,
)

CONFIG = Config.model_validate({"models": {"main": {"model": "scripted-demo"}}})


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "db"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory):
    """Kernel processes ``a`` and ``b`` on one store, started once: each test below opens a session of its own
    in both, as a notebook opens another session, and reads it once both kernels have left it."""
    root = tmp_path_factory.mktemp("pair")
    db = root / "db"
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(root, monkeypatch)
        kernels = [KernelProcess(db, "started", name) for name in ("a", "b")]
    try:
        for process in kernels:
            process.expect("ready")
        yield db, kernels
    finally:
        for process in kernels:
            process.quit()
        for process in kernels:
            process.close()


def kernel(db: Path, model: ScriptedModel, name: str = "shared") -> Session:
    """A Session on its own store handle, as each notebook kernel has."""
    return Session(name, config=CONFIG, store=LanceStore(db), model=model)


def sent(model: ScriptedModel, call: int = 0) -> list[dict]:
    """What the model received at one call, in the form kernel.py reports it (the blocks that end it left out)."""
    return [
        {
            "role": m["role"],
            "content": own_text(str(m.get("content") or "")),
            "tool_call_id": m.get("tool_call_id"),
            "calls": [c["id"] for c in m.get("tool_calls") or []],
        }
        for m in model.calls[call].messages
    ]


def test_a_kernel_sees_the_turns_another_kernel_took_since_it_opened_the_session(db: Path):
    alice_model = ScriptedModel(["revenue is 12", "margin is 3"])
    bob_model = ScriptedModel(["noted both"])
    alice, bob = kernel(db, alice_model), kernel(db, bob_model)  # both open before either writes
    alice.ask("what is the revenue?")
    alice.ask("and the margin?")
    bob.ask("summarize what alice found")
    contents = [m["content"] for m in sent(bob_model)]
    assert contents[1:] == [
        "what is the revenue?",
        "revenue is 12",
        "and the margin?",
        "margin is 3",
        "summarize what alice found",
    ]
    stored = LanceStore(db).load_messages("shared")
    assert [m.seq for m in stored] == list(range(6))
    assert [m.turn for m in stored] == [1, 1, 2, 2, 3, 3]


def test_a_turn_while_another_kernel_holds_the_session_is_refused_and_writes_nothing(db: Path):
    alice, bob = kernel(db, ScriptedModel(["first"])), kernel(db, ScriptedModel([]))
    alice.ask("hello")
    alice.lease.acquire()  # alice's next turn is running
    with pytest.raises(SessionBusyError, match=r"session 'shared' is busy in another kernel .* --session NAME"):
        bob.ask("me too")
    alice.lease.release()
    assert [m.content for m in LanceStore(db).load_messages("shared")] == ["hello", "first"]


def test_a_window_cut_between_a_call_and_its_result_never_sends_the_orphan_result(db: Path):
    store = LanceStore(db)
    store.create_session("cut")
    call = ToolCall(id="call-behind", name="list_variables", arguments="{}")
    history = [
        Message("user", "look at the data", session="cut"),
        Message("assistant", "", session="cut", tool_calls=[call]),
        Message("tool", "df: DataFrame", session="cut", tool_call_id=call.id, name="list_variables"),
        Message("assistant", "there is a DataFrame df", session="cut"),
    ]
    for seq, message in enumerate(history):
        message.seq = seq
    store.append_messages(history)
    store.save_summary(Summary("cut", "the user asked to look at the data", boundary_seq=1, created_at=time.time()))
    model = ScriptedModel(["ok"])
    Session("cut", config=CONFIG, store=store, model=model).ask("go on")
    assert orphan_results(sent(model)) == []
    assert [m["content"] for m in sent(model)][-2:] == ["there is a DataFrame df", "go on"]


def folded_window(db: Path, name: str, answers: int) -> tuple[Session, ScriptedModel]:
    model = ScriptedModel([f"answer {i}" for i in range(answers)] + ["later"] * 4)
    session = kernel(db, model, name)
    for i in range(answers):
        session.ask(f"question {i}")
    return session, model


def test_a_compaction_another_kernel_overtook_saves_nothing_and_keeps_its_summary(db: Path):
    alice, _ = folded_window(db, "shared", 6)
    bob = kernel(db, ScriptedModel(["ok"]))
    snapshot, previous = list(alice.window), alice.summary  # alice's background compaction starts here
    assert bob.compact()
    overtaken = copy.deepcopy(bob.summary)
    errors: list[str] = []
    alice.events.subscribe(lambda e: errors.append(e.data["message"]) if e.kind == ev.ERROR else None)
    assert alice.cascade.compaction.compact(snapshot, previous, 2, "soft threshold") is None
    assert LanceStore(db).load_summary("shared") == overtaken
    assert errors == [
        "Compaction skipped, the previous summary is kept: another kernel changed this session meanwhile; "
        "it is compacted again when needed"
    ]


def test_a_compaction_never_folds_a_message_written_behind_its_window(db: Path):
    alice, _ = folded_window(db, "shared", 6)
    snapshot = list(alice.window)
    unseen = Message("user", "written by a kernel that did not take the lease", session="shared", seq=3)
    LanceStore(db).append_messages([unseen])
    assert alice.cascade.compaction.compact(snapshot, None, 2, "soft threshold") is None
    assert LanceStore(db).load_summary("shared") is None


def test_a_kernel_resumes_after_the_other_kernel_compacted_with_one_summary_and_one_numbering(db: Path):
    alice, _ = folded_window(db, "shared", 6)
    bob_model = ScriptedModel(["bob 1", "bob 2"])
    bob = kernel(db, bob_model)
    bob.ask("bob asks")
    assert alice.compact()
    bob.ask("bob again")
    prompt = sent(bob_model, 1)
    assert prompt[1]["content"].startswith("<summary>") and prompt[-1]["content"] == "bob again"
    assert not any(m["content"] == "question 0" for m in prompt)  # folded by alice, not sent twice
    stored = LanceStore(db).load_messages("shared")
    assert max(Counter(m.seq for m in stored).values()) == 1


def test_two_kernels_taking_turns_share_one_numbering_and_each_model_sees_the_others_turns(pair):
    db, kernels = pair
    run = take_turns(db, "taking-turns", 12, kernels)
    store = LanceStore(db)
    assert len(run.order) == 12 and run.answers("refused") == []
    assert problems(run, store, "taking-turns") == []
    assert saw_the_other_kernels_turns(run) == []
    assert run.answers("summary"), "the window is small enough that the kernels compact"


def test_two_kernels_at_once_for_ten_seconds_are_refused_cleanly_and_never_corrupt_the_session(pair):
    db, kernels = pair
    run = at_once(db, "at-once", 10, kernels)
    store = LanceStore(db)
    assert problems(run, store, "at-once") == []
    assert run.answers("refused"), "the kernels did contend"
    assert {name for name, _ in run.order} <= {"a", "b"} and len(run.answers("turn")) >= 4
    model = ScriptedModel(["a fresh kernel answers"])
    Session("at-once", config=CONFIG, store=store, model=model).ask("where are we?")
    assert orphan_results(sent(model)) == []
    stored = store.load_messages("at-once")
    last_question = max((m for m in stored if m.role == "user"), key=lambda m: m.seq).content
    assert any(m["role"] == "user" and last_question in m["content"] for m in sent(model))


def test_a_kernel_alone_on_its_session_does_not_read_its_turns_back_and_still_sees_a_later_writer(db: Path):
    alice_model = ScriptedModel(["one", "two", "three", "five"])
    alice = kernel(db, alice_model)
    alice.ask("first")
    alice.ask("second")  # the first turn created the table: this one reads once more
    reads: list[int] = []
    load = alice.store.load_messages

    def counted(session: str, **kwargs: Any) -> list[Message]:
        reads.append(kwargs.get("after_seq", -1))
        return load(session, **kwargs)

    alice.store.load_messages = counted  # type: ignore[method-assign]
    alice.ask("third")
    assert reads == [], "nobody else wrote: the window is current without reading the session back"
    kernel(db, ScriptedModel(["four"])).ask("bob's turn")
    alice.ask("fifth")
    assert reads, "another kernel wrote: the next turn reads what it added"
    assert [m["content"] for m in sent(alice_model, 3)][1:] == [
        "first",
        "one",
        "second",
        "two",
        "third",
        "three",
        "bob's turn",
        "four",
        "fifth",
    ]


def test_two_sessions_of_one_name_on_one_store_each_see_the_others_turns(db: Path):
    store = LanceStore(db)
    first_model, second_model = ScriptedModel(["a1", "a2"]), ScriptedModel(["b1"])
    first = Session("shared", config=CONFIG, store=store, model=first_model)
    second = Session("shared", config=CONFIG, store=store, model=second_model)
    first.ask("q1")
    second.ask("q2")
    first.ask("q3")
    assert [m["content"] for m in sent(second_model)][1:] == ["q1", "a1", "q2"]
    assert [m["content"] for m in sent(first_model, 1)][1:] == ["q1", "a1", "q2", "b1", "q3"]


def test_a_write_another_store_committed_between_the_windows_look_and_its_own_write_is_read_next_time(db: Path):
    """No other kernel holds the session during this turn, but a writer that skips the lease is not missed."""
    mine, theirs = LanceStore(db), LanceStore(db)

    def message(seq: int, text: str) -> Message:
        m = Message(role="user", content=text)
        m.session, m.seq, m.turn, m.step = "shared", seq, seq + 1, 1
        return m

    window = Window("shared")
    mine.append_messages([message(0, "mine 0")])
    window.load(mine)
    window.catch_up(mine)  # looked: marked current
    theirs.append_messages([message(1, "theirs 1")])
    own = message(2, "mine 2")
    window.wrote(mine.append_messages([own]))
    window.extend([own])
    assert window.catch_up(mine), "the other store's commit came between: the window reads again"
    assert [m.content for m in window.messages] == ["mine 0", "theirs 1", "mine 2"]
    assert not window.catch_up(mine)
