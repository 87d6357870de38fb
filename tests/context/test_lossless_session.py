"""The lossless stage inside a real session: what the model received, what was stored, what reads back."""

from __future__ import annotations

import json

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.context.prompt import own_text
from monad_notebook.testing import FakeOpenAIServer, tool_call

FAKE_KEY = "sk-proj-" + "Q7vR2mX9kL4pT8wZ3nB6yH1cF5jD0sAe"


@pytest.fixture
def server():
    with FakeOpenAIServer() as server:
        yield server


def session_for(server, store, name="lossless", **context) -> Session:
    config = Config.model_validate(
        {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "contextWindow": 20_000}},
            "tools": {"python": {"approval": "auto"}},
            "context": {"summarize": {"enabled": False}, **context},
        }
    )
    return Session(name, config=config, store=store, namespace={})


def tool_contents(request: dict) -> list[str]:
    """The tool results a request carried, without the blocks that end it (they ride on the last result)."""
    return [own_text(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def test_a_large_output_is_truncated_for_the_model_and_reads_back_byte_exact(server, store):
    session = session_for(server, store, toolOutput={"maxChars": 2000})
    code = "print('\\n'.join(f'row {i}: value={i * i}' for i in range(3000)))"
    server.queue(tool_call("python", {"code": code}, id="call_big"), "saw it")
    session.ask("print many rows")
    sent = tool_contents(server.chat_requests[1])[0]
    assert len(sent) < 2400 and 'read_tool_output({"id": "call_big"' in sent
    full = store.get_raw_output("lossless", "call_big")
    assert "row 2999: value=8994001" in full and "row 1500: value=2250000" in full

    pages, offset = [], 0
    while offset < len(full):
        server.queue(tool_call("read_tool_output", {"id": "call_big", "offset": offset, "limit": 1500}), "ok")
        session.ask("read the next page")
        page = tool_contents(server.chat_requests[-1])[-1]
        if offset == 0:  # the first page starts with the call that made the output
            assert page.startswith(f'[call id="call_big": python, turn 1]\n{code}\n[end of call]\n[read_tool_output')
        body = page[page.index("[read_tool_output") :].split("\n", 1)[1]  # after the header line
        chunk = full[offset : offset + 1500]
        assert body.startswith(chunk)
        pages.append(chunk)
        offset += 1500
    assert "".join(pages) == full


def test_eviction_changes_what_the_model_receives_and_keeps_the_originals(server, store):
    session = session_for(
        server,
        store,
        eviction={"atFraction": 0.3, "keepRecentRounds": 1, "clearAtLeast": 500, "minResultTokens": 50},
    )
    seen: list[ev.Event] = []
    session.events.subscribe(seen.append)
    for i in range(4):
        code = f"print('result {i}: ' + 'lorem ipsum dolor sit amet ' * 400)"
        server.queue(tool_call("python", {"code": code}, id=f"call_{i}"), f"answer {i}")
        session.ask(f"step {i}")
    last = tool_contents(server.chat_requests[-1])
    assert last[0].startswith("[context-cleared]") and 'read_tool_output({"id": "call_0"})' in last[0]
    assert last[-1].startswith("stdout:\nresult 3")  # the most recent round is sent whole
    evicted = [e for e in seen if e.kind == ev.EVICTED]
    assert evicted and session.usage_snapshot()["reclaimed"] == sum(e.data["reclaimed"] for e in evicted) > 0
    stored = {m.tool_call_id: m for m in store.load_messages("lossless") if m.role == "tool"}
    assert stored["call_0"].content.startswith("stdout:\nresult 0") and stored["call_0"].evicted
    assert store.get_raw_output("lossless", "call_0") == stored["call_0"].content
    assert [e.data for e in store.list_events("lossless", kind=ev.EVICTED)] == [e.data for e in evicted]


def test_a_new_session_object_sees_evictions_as_placeholders(server, store):
    session = session_for(
        server, store, eviction={"atFraction": 0.2, "keepRecentRounds": 1, "clearAtLeast": 500, "minResultTokens": 50}
    )
    for i in range(4):
        server.queue(tool_call("python", {"code": f"print('x{i} ' * 2000)"}, id=f"c{i}"), "ok")
        session.ask(f"go {i}")
    reopened = session_for(server, store)
    server.queue("resumed")
    reopened.ask("continue")
    assert tool_contents(server.chat_requests[-1])[0].startswith("[context-cleared]")


def test_a_secret_in_the_omitted_middle_never_reaches_store_events_or_model(server, store):
    session = session_for(server, store, toolOutput={"maxChars": 2000})
    seen: list[ev.Event] = []
    session.events.subscribe(seen.append)
    half = len(FAKE_KEY) // 2  # the code assembles the key, so the model's own arguments never hold it
    code = (
        f"k = {FAKE_KEY[:half]!r} + {FAKE_KEY[half:]!r}\n"
        "print('a' * 100000 + ' OPENAI_API_KEY=' + k + ' ' + 'b' * 100000)"
    )
    server.queue(tool_call("python", {"code": code}, id="call_secret"), "done")
    session.ask("leak nothing")
    assert FAKE_KEY not in json.dumps(server.requests)
    sent = tool_contents(server.chat_requests[1])[0]
    assert sent.startswith("stdout:\n" + "a" * 100) and "read_tool_output" not in sent
    assert store.get_raw_output("lossless", "call_secret") is None
    stored = [m for m in store.load_messages("lossless") if m.role == "tool"]
    assert stored[0].redacted and FAKE_KEY not in stored[0].content
    assert "read_tool_output" not in stored[0].content
    assert FAKE_KEY not in json.dumps([e.data for e in seen])
    assert FAKE_KEY not in json.dumps([e.data for e in store.list_events("lossless")])


def test_a_secret_typed_by_the_user_is_redacted_before_the_model_or_store(server, store):
    session = session_for(server, store)
    server.queue("noted")
    session.ask(f"my key is {FAKE_KEY}, keep it safe")
    assert FAKE_KEY not in json.dumps(server.requests)
    assert "[REDACTED:" in server.chat_requests[0]["messages"][-1]["content"]
    assert all(FAKE_KEY not in m.content for m in store.load_messages("lossless"))


def test_read_tool_output_is_scoped_to_the_session_and_follows_branches(server, store):
    session = session_for(server, store, name="parent", toolOutput={"maxChars": 1000})
    server.queue(tool_call("python", {"code": "print('P' * 5000)"}, id="call_p"), "ok")
    session.ask("make output")
    other = session_for(server, store, name="stranger")
    server.queue(tool_call("read_tool_output", {"id": "call_p"}), "ok")
    other.ask("peek")
    assert "No tool call or saved output" in tool_contents(server.chat_requests[-1])[-1]
    original = store.get_raw_output("parent", "call_p")
    assert "P" * 5000 in original
    session.branch("child")
    child = session_for(server, store, name="child")
    server.queue(tool_call("read_tool_output", {"id": "call_p", "limit": 200}), "ok")
    child.ask("read in the branch")
    assert "P" * 100 in tool_contents(server.chat_requests[-1])[-1]
    store.save_raw_outputs("child", {"call_p": "changed in the child"})
    assert store.get_raw_output("parent", "call_p") == original


def test_persist_raw_off_unregisters_read_tool_output(server, store):
    session = session_for(server, store, toolOutput={"persistRaw": False, "maxChars": 1000})
    server.queue(tool_call("python", {"code": "print('z' * 5000)"}, id="call_z"), "ok")
    session.ask("go")
    names = {t["function"]["name"] for t in server.chat_requests[0]["tools"]}
    assert "read_tool_output" not in names
    assert "read_tool_output" not in tool_contents(server.chat_requests[1])[0]
    assert store.get_raw_output("lossless", "call_z") is None


def test_search_tool_outputs_finds_an_identifier_in_a_forgotten_output(server, store):
    session = session_for(server, store, name="search", toolOutput={"maxChars": 1000})
    code = "print('\\n'.join(['filler line'] * 500 + ['column churn_flag_90d has 3% nulls'] + ['filler'] * 500))"
    server.queue(tool_call("python", {"code": code}, id="call_old"), "ok")
    session.ask("profile the table")
    assert "churn_flag_90d" not in tool_contents(server.chat_requests[-1])[0]  # cut from the middle
    other = session_for(server, store, name="elsewhere")
    server.queue(tool_call("search_tool_outputs", {"text": "churn_flag_90d"}), "none here")
    other.ask("search")
    assert "No saved tool output" in tool_contents(server.chat_requests[-1])[-1]
    server.queue(tool_call("search_tool_outputs", {"text": "churn_flag_90d"}), "found it")
    session.ask("which column had nulls?")
    found = tool_contents(server.chat_requests[-1])[-1]
    assert "id=call_old line 502: column churn_flag_90d has 3% nulls" in found


def test_a_result_the_tool_redacted_itself_gets_no_recovery_handle(server, store, tmp_path):
    log = tmp_path / "deploy.log"
    lines = [f"step {i}: ok" for i in range(150)]
    lines[75] = f"OPENAI_API_KEY={FAKE_KEY}"
    log.write_text("\n".join(lines) + "\n")
    config = Config.model_validate(
        {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "contextWindow": 20_000}},
            "context": {"summarize": {"enabled": False}, "toolOutput": {"maxChars": 1500}},
        }
    )
    session = Session("self-redacted", config=config, store=store, root=tmp_path)
    server.queue(tool_call("read_file", {"path": "deploy.log"}, id="call_log"), "read it")
    session.ask("read the deploy log")
    sent = tool_contents(server.chat_requests[1])[0]
    (stored,) = [m for m in store.load_messages("self-redacted") if m.role == "tool"]
    assert stored.redacted and FAKE_KEY not in sent and FAKE_KEY not in stored.content
    assert len(sent) < 2000 and "read_tool_output" not in sent  # cut, and no handle to page a secret back
    assert store.get_raw_output("self-redacted", "call_log") is None
