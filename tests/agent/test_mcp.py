"""The user's MCP servers as the agent's tools: a real server (the SDK's, over stdio) in a real session."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from monad_notebook import Session
from monad_notebook.agent.tools.mcp import result_text, usable_tools
from monad_notebook.approval.gate import Answer, ApprovalGate
from monad_notebook.cell.status import mcp_sentence, status_sentences
from monad_notebook.config import Config
from monad_notebook.testing import MemoryStore, ScriptedModel, tool_call
from tests.mcp_probe import PROBE_SERVER, alive

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def config(approval: str = "auto", **server: object) -> Config:
    entry = {"command": sys.executable, "args": [PROBE_SERVER], "approval": approval, "timeoutSeconds": 20, **server}
    return Config.model_validate({"mcpServers": {"probe": entry}})


def session(cfg: Config, answers: list, **kwargs: object) -> tuple[Session, ScriptedModel]:
    model = ScriptedModel(answers, context_window=100_000)
    return Session("s", config=cfg, store=MemoryStore(), model=model, **kwargs), model


def results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]


def test_a_servers_tools_are_offered_under_their_own_names_and_answer_through_the_cascade():
    s, model = session(config(), [tool_call("mcp__probe__echo", {"text": f"token {SECRET} ok"}), "done"])
    try:
        reply = s.ask("echo something")
        offered = [t["function"]["name"] for t in model.calls[0].tools]
        status = {st.name: st for st in s.status()["mcp_servers"]}
        told = status_sentences(s.status(), approval="ask", allowed_for_session=False)
    finally:
        s.close()
    assert reply.text == "done"
    assert {"mcp__probe__echo", "mcp__probe__big", "mcp__probe__crash", "python"} <= set(offered)
    (answer,) = results(model)
    assert answer.startswith("token ") and answer.endswith(" ok") and SECRET not in answer  # redacted first
    assert SECRET not in str([m.content for m in s.store.load_messages("s")])
    assert status["probe"].state == "ready" and "echo" in status["probe"].tools
    assert "MCP server probe: ready, tools echo, big, crash, pid." in told


def test_asked_first_with_the_exact_call_shown_and_the_decision_recorded():
    asked: list[tuple[str, str]] = []

    def ask(text: str, subject: str = "python") -> Answer:
        asked.append((text, subject))
        return Answer(len(asked) == 1, via="cell")  # yes to the first call, no to the second

    gate = ApprovalGate(ask)
    calls = [tool_call("mcp__probe__echo", {"text": "first"}), tool_call("mcp__probe__echo", {"text": "second"})]
    s, model = session(config("ask"), [calls[0], calls[1], "done"], approve=gate)
    gate.emit = s.emit
    try:
        s.ask("echo twice")
    finally:
        s.close()
    assert asked[0][1] == "mcp:probe"
    assert "MCP server probe, tool echo" in asked[0][0] and '"text": "first"' in asked[0][0]
    assert results(model) == ["first", "not run: the user skipped this call"]
    decisions = [e.data for e in s.store.list_events("s", kind="tool.approval")]
    assert [(d["decision"], d["subject"]) for d in decisions] == [("run", "mcp:probe"), ("skip", "mcp:probe")]


def test_approval_off_and_nobody_to_ask_refuse_with_how_to_allow():
    s, model = session(config("off"), [tool_call("mcp__probe__echo", {"text": "x"}), "done"])
    try:
        s.ask("echo")
    finally:
        s.close()
    assert results(model) == ['not run: the MCP server probe is turned off (mcpServers.probe.approval is "off")']
    s, model = session(config("ask"), [tool_call("mcp__probe__echo", {"text": "x"}), "done"])
    try:
        s.ask("echo")
    finally:
        s.close()
    assert "nobody approved this call" in results(model)[0] and "mcpServers.probe.approval" in results(model)[0]


def offered_tools(model: ScriptedModel) -> set[str]:
    return {t["function"]["name"] for t in model.calls[0].tools}


def test_a_server_turned_off_is_never_started_and_its_tools_are_not_offered(tmp_path):
    started = tmp_path / "started"
    off = config("off", env={"PROBE_STARTED": str(started), "PATH": os.environ.get("PATH", "")})
    s, model = session(off, [tool_call("mcp__probe__echo", {"text": "x"}), "done"])
    try:
        s.ask("echo")
        (status,) = s.status()["mcp_servers"]
    finally:
        s.close()
    assert not started.exists() and status.state == "off"
    assert not [name for name in offered_tools(model) if name.startswith("mcp__")]
    assert results(model) == ['not run: the MCP server probe is turned off (mcpServers.probe.approval is "off")']


@pytest.mark.parametrize("approval", ["auto", "ask"])
def test_a_tool_turned_off_is_not_offered_and_a_call_of_it_names_the_tool(approval):
    cfg = config(approval, tools={"crash": {"approval": "off"}})
    s, model = session(cfg, [tool_call("mcp__probe__crash", {}), "done"])
    try:
        s.ask("crash it")
        (status,) = s.status()["mcp_servers"]
    finally:
        s.close()
    assert "mcp__probe__echo" in offered_tools(model) and "mcp__probe__crash" not in offered_tools(model)
    assert results(model) == [
        'not run: the tool crash of the MCP server probe is turned off (mcpServers.probe.tools.crash.approval is "off")'
    ]
    assert status.off == ("crash",) and 'Turned off (approval "off", not offered): crash.' in mcp_sentence(status)


def test_a_call_of_a_tool_turned_off_written_as_text_names_the_tool_too():
    s, model = session(
        config("auto", tools={"crash": {"approval": "off"}}), ['{"name": "mcp__probe__crash", "arguments": {}}', "ok"]
    )
    try:
        s.ask("crash it")
    finally:
        s.close()
    assert results(model) == [
        'not run: the tool crash of the MCP server probe is turned off (mcpServers.probe.tools.crash.approval is "off")'
    ]


def test_a_server_turned_off_but_for_one_tool_offers_that_tool_alone():
    cfg = config("off", tools={"echo": {"approval": "auto"}})
    s, model = session(cfg, [tool_call("mcp__probe__echo", {"text": "hi"}), tool_call("mcp__probe__pid", {}), "done"])
    try:
        s.ask("echo, then pid")
    finally:
        s.close()
    assert [name for name in offered_tools(model) if name.startswith("mcp__")] == ["mcp__probe__echo"]
    assert results(model) == [
        "hi",
        'not run: the MCP server probe is turned off (mcpServers.probe.approval is "off")',
    ]


def test_a_call_read_from_the_models_text_asks_first_even_on_an_auto_server():
    written = '{"name": "mcp__probe__echo", "arguments": {"text": "from the text"}}'
    asked: list[str] = []
    answers = [written, "declined", written, "done"]
    s, model = session(config("auto"), answers, approve=lambda text, **kw: bool(asked.append(kw["subject"])))
    try:
        s.ask("echo")
        declined = results(model)
        s.approve = None
        s.ask("echo again")
        nobody = results(model)[-1]
    finally:
        s.close()
    assert asked == ["text:mcp:probe"] and declined == ["not run: the user skipped this call"]
    assert nobody.startswith("not run: this call was read from the model's text")


GARBAGE = "import sys\nfor line in sys.stdin:\n    print('this is not JSON-RPC', flush=True)\n"


@pytest.mark.parametrize("fault", ["missing", "garbage"])
def test_a_server_that_does_not_start_is_reported_in_one_line_and_the_turn_goes_on(tmp_path, fault):
    """A command that does not exist, and a process that answers anything but JSON-RPC."""
    script = tmp_path / "garbage.py"
    script.write_text(GARBAGE)
    entry = (
        {"command": "/nonexistent/server"} if fault == "missing" else {"command": sys.executable, "args": [str(script)]}
    )
    broken = Config.model_validate({"mcpServers": {"gone": {**entry, "approval": "auto", "timeoutSeconds": 3}}})
    s, _ = session(broken, ["still here"])
    try:
        reply = s.ask("hello")
        (status,) = s.status()["mcp_servers"]
    finally:
        s.close()
    assert reply.text == "still here"
    assert status.state != "ready" and "did not start" in status.detail and "\n" not in status.detail


def test_a_server_that_hangs_at_start_is_given_up_on_after_its_timeout():
    hangs = config(env={"PROBE_HANG_AT_START": "1", "PATH": os.environ.get("PATH", "")}, timeoutSeconds=2)
    s, _ = session(hangs, ["ok"])
    started = time.monotonic()
    try:
        s.ask("hello")
        (status,) = s.status()["mcp_servers"]
    finally:
        s.close()
    assert time.monotonic() - started < 20
    assert "did not start within 2 s" in status.detail


def test_a_server_that_dies_mid_call_is_restarted_once_then_reported_down():
    crash = tool_call("mcp__probe__crash", {})
    s, model = session(config(), [crash, crash, crash, "done"])
    try:
        s.ask("crash it")
        (status,) = s.status()["mcp_servers"]
    finally:
        s.close()
    first, second, third = results(model)
    assert first.startswith("error: ") and "crash failed" in first
    assert second.startswith("error: ") and "crash failed" in second  # the one restart, and it died again
    assert "is down" in third
    assert status.state == "down"


def test_a_huge_answer_is_bounded_with_a_line_that_says_so():
    s, model = session(config(), [tool_call("mcp__probe__big", {"megabytes": 3}), "done"])
    try:
        s.ask("big")
        saved = s.store.get_raw_output("s", model.calls[-1].messages[-1]["tool_call_id"]) or ""
    finally:
        s.close()
    assert "the server answered 3,000,000 characters; the first 2,000,000 are kept" in saved
    assert len(saved) < 2_100_000


def test_a_removed_server_is_stopped_and_no_process_outlives_the_session(tmp_path):
    s, model = session(config(), [tool_call("mcp__probe__pid", {}), "done"])
    s.ask("pid")
    pid = int(results(model)[0])
    assert alive(pid)
    s.close()
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


@pytest.fixture
def http_server():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, PROBE_SERVER, "--http", str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as client:
            if client.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    yield url
    process.terminate()
    process.wait(10)


def test_a_server_over_streamable_http_answers_as_one_over_stdio(http_server):
    cfg = Config.model_validate({"mcpServers": {"web": {"url": http_server, "approval": "auto"}}})
    s, model = session(cfg, [tool_call("mcp__web__echo", {"text": "over http"}), "done"])
    try:
        s.ask("echo over http")
    finally:
        s.close()
    assert results(model) == ["over http"]


def test_an_edit_of_the_list_applies_from_the_next_turn_and_stops_a_removed_server(tmp_path):
    path = tmp_path / "agents.json"
    entry = {"command": sys.executable, "args": [PROBE_SERVER], "approval": "auto"}
    path.write_text(json.dumps({"mcpServers": {"probe": entry}}))
    model = ScriptedModel([tool_call("mcp__probe__pid", {}), "first", "second"], context_window=100_000)
    s = Session("s", config=path, store=MemoryStore(), model=model)
    try:
        s.ask("pid")
        pid = int(results(model)[0])
        path.write_text(json.dumps({"mcpServers": {}}))
        os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        s.ask("again")
        offered = [t["function"]["name"] for t in model.calls[-1].tools]
    finally:
        s.close()
    assert not [name for name in offered if name.startswith("mcp__")]
    assert s.status()["mcp_servers"] == []
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


def test_tools_with_a_schema_the_model_cannot_take_are_left_out_and_named():
    listed = [
        SimpleNamespace(name="good", input_schema={"type": "object", "properties": {"q": {"type": "string"}}}),
        SimpleNamespace(name="no_object", input_schema={"type": "string"}),
        SimpleNamespace(name="bad_properties", input_schema={"type": "object", "properties": ["q"]}),
        SimpleNamespace(name="", input_schema={"type": "object"}),
    ]
    good, broken = usable_tools(listed)
    assert [t.name for t in good] == ["good"] and broken == ["no_object", "bad_properties", "(unnamed)"]


def test_content_the_model_cannot_take_is_described_in_one_line():
    parts = [
        SimpleNamespace(type="text", text="rows: 3"),
        SimpleNamespace(type="image", data="aGVsbG8=" * 1000, mime_type="image/png"),
        SimpleNamespace(type="resource", resource=SimpleNamespace(uri="file:///x.bin", blob="AAAA")),
        SimpleNamespace(type="hologram"),
    ]
    text = result_text(SimpleNamespace(content=parts, structured_content=None, is_error=False))
    assert text.splitlines() == [
        "rows: 3",
        "(image/png from the server, about 6,000 bytes: not shown)",
        "(binary resource file:///x.bin: not shown)",
        "(hologram content: not shown)",
    ]
