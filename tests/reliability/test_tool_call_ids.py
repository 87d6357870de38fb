"""Hostile tool-call ids from the model: repeated, reused, empty, overlong or odd, over real HTTP.

Every later request must carry ids that are unique, paired one to one with their results,
and acceptable to the strictest providers (OpenAI: at most 40 characters; Anthropic:
``[A-Za-z0-9_-]``); every saved output must stay readable under the id the model was shown.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.messages import ToolCall
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, tool_call, tool_calls

PORTABLE = re.compile(r"[A-Za-z0-9_-]{1,40}")
MAX_CHARS = 1_000


@pytest.fixture
def server():
    with FakeOpenAIServer() as server:
        yield server


def make_session(server: FakeOpenAIServer, store: LanceStore, **context: Any) -> Session:
    config = Config.model_validate(
        {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
            "context": {"toolOutput": {"maxChars": MAX_CHARS}, **context},
        }
    )
    return Session("ids", config=config, store=store, namespace={})


def python(code: str, call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="python", arguments=json.dumps({"code": code}))


def pairing_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What a strict provider would refuse: repeated or unportable ids, calls without exactly one result."""
    problems: list[str] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        ids = [call["id"] for call in message["tool_calls"]]
        following = messages[index + 1 : index + 1 + len(ids)]
        results = [m.get("tool_call_id") for m in following if m["role"] == "tool"]
        problems += [f"unportable id {i!r}" for i in ids if not PORTABLE.fullmatch(i)]
        problems += [f"repeated id {i!r}" for i in ids if i in seen or ids.count(i) > 1]
        if sorted(results) != sorted(ids):
            problems.append(f"calls {ids} answered by {results}")
        seen.update(ids)
    tool_ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    if len(tool_ids) != len(set(tool_ids)):
        problems.append(f"results share ids: {tool_ids}")
    return problems


def call_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]


def answers(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Each python call's code mapped to the result paired with its id: a swapped pairing shows."""
    paired = results(messages)
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    return {json.loads(c["function"]["arguments"])["code"]: paired[c["id"]] for c in calls}


def results(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


def test_ids_repeated_within_a_response_across_steps_and_across_turns_are_made_unique(server, store):
    server.queue(
        tool_calls(python("1 + 1", "call_same"), python("2 + 3", "call_same")),
        tool_call("python", {"code": "3 + 4"}, id="call_same"),
        "first answer",
        tool_calls(python("4 + 5", "call_same"), python("5 + 6", "")),
        "second answer",
        "third answer",
    )
    session = make_session(server, store)
    for question in ("first", "second", "third"):
        session.ask(question)
    assert server.pending == 0
    for request in server.chat_requests:
        assert pairing_problems(request["messages"]) == []
    last = server.chat_requests[-1]["messages"]
    assert len(set(call_ids(last))) == 5
    assert answers(last) == {code: f"value: {eval(code)}" for code in ("1 + 1", "2 + 3", "3 + 4", "4 + 5", "5 + 6")}
    assert "call_same" in call_ids(last)


HOSTILE_IDS = {
    "empty": "",
    "overlong_41": "c" * 41,
    "overlong_300": "call_" + "x" * 295,
    "space": "call 1",
    "quote_sql": "x' OR '1'='1",
    "non_ascii": "вызов_1",
    "newline": "call\n1",
    "nul": "call\x001",
    "path": "../call/1.json",
    "colon_dot": "functions.python:0",
}


@pytest.mark.parametrize("hostile", list(HOSTILE_IDS.values()), ids=list(HOSTILE_IDS))
def test_an_id_no_strict_provider_accepts_is_replaced_and_the_turn_completes(server, store, hostile):
    server.queue(
        tool_calls(python("6 * 7", hostile), python("6 * 8", hostile)),
        "answer",
        "next answer",
    )
    session = make_session(server, store)
    session.ask("compute")
    assert session.ask("again").text == "next answer"
    last = server.chat_requests[-1]["messages"]
    assert pairing_problems(last) == []
    assert answers(last) == {"6 * 7": "value: 42", "6 * 8": "value: 48"}
    stored = [m for m in store.load_messages("ids") if m.role == "tool"]
    assert sorted(m.tool_call_id for m in stored) == sorted(call_ids(last))


def test_an_id_every_provider_accepts_is_kept_as_the_model_sent_it(server, store):
    server.queue(tool_call("python", {"code": "1"}, id="toolu_01A-b_c"), "done", "again")
    session = make_session(server, store)
    session.ask("one")
    session.ask("two")
    assert call_ids(server.chat_requests[-1]["messages"]) == ["toolu_01A-b_c"]


def big(label: str) -> str:
    return f"print('\\n'.join('{label} line ' + str(i) for i in range(400)))"


def read_back(server: FakeOpenAIServer, session: Session, ids: list[str]) -> list[str]:
    """The model pages each id back with read_tool_output, in a turn of its own: the pages, in order."""
    server.queue(tool_calls(*(tool_call("read_tool_output", {"id": i, "limit": 200}) for i in ids)), "read")
    session.ask("read them back")
    last = server.chat_requests[-1]["messages"]
    pages = results(last)
    return [pages[i] for i in call_ids(last)[-len(ids) :]]


def test_two_big_outputs_under_one_id_are_both_read_back_by_the_id_the_model_saw(server, store):
    server.queue(tool_calls(python(big("FIRST"), "call_big"), python(big("SECOND"), "call_big")), "two outputs")
    session = make_session(server, store)
    session.ask("print twice")
    shown = server.chat_requests[-1]["messages"]
    ids = call_ids(shown)
    assert len(set(ids)) == 2 and all("read_tool_output" in results(shown)[i] for i in ids)
    pages = read_back(server, session, ids)
    for call_id, page, label in zip(ids, pages, ("FIRST", "SECOND"), strict=True):
        call, output = page.split("[end of call]\n")  # the call that made it, then its output
        assert call == f"[call id={json.dumps(call_id)}: python, turn 1]\n{big(label)}\n"
        assert output.startswith(f"[read_tool_output id={json.dumps(call_id)} chars 0..200 of ")
        assert f"{label} line 0\n{label} line 1\n" in output


def test_an_id_reused_after_its_turn_was_compacted_away_keeps_both_saved_outputs(server, store):
    summary = "\n".join(f"## {h}\nnotes" for h in ("Objective", "Decisions & Facts", "Files & State"))
    server.queue(tool_call("python", {"code": big("EARLY")}, id="call_big"), "early output")
    session = make_session(server, store, summarize={"keepRecent": 1, "background": False})
    session.ask("print early")
    server.queue(summary)
    assert session.compact()
    assert "call_big" not in call_ids([m.to_openai() for m in session.window])
    server.queue(tool_call("python", {"code": big("LATE")}, id="call_big"), "late output")
    session.ask("print late")
    late = call_ids(server.chat_requests[-1]["messages"])
    assert len(late) == 1 and late[0] != "call_big"
    early_raw, late_raw = store.get_raw_output("ids", "call_big"), store.get_raw_output("ids", late[0])
    assert "EARLY line 0\nEARLY line 1\n" in early_raw and "LATE" not in early_raw
    assert "LATE line 0\nLATE line 1\n" in late_raw and "EARLY" not in late_raw


def test_empty_ids_from_a_model_without_http_are_filled_in_distinct_and_stable(tmp_path):
    def run() -> list[str]:
        model = ScriptedModel([tool_calls(python("1", ""), python("2", "")), "done", "after"])
        config = Config.model_validate({"tools": {"python": {"approval": "auto"}}})
        session = Session("empty", config=config, store=LanceStore(tmp_path / f"db{len(runs)}"), model=model)
        session.ask("go")
        session.ask("more")
        assert pairing_problems(model.calls[-1].messages) == []
        return call_ids(model.calls[-1].messages)

    runs: list[list[str]] = []
    runs.append(run())
    runs.append(run())
    assert len(set(runs[0])) == 2 and runs[0] == runs[1]
