"""The user's MCP server from a real kernel: configured in agents.json, called through ``%%monad``, asked first."""

from __future__ import annotations

import json
import sys
import time

import pytest

from monad_notebook import events as ev
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.kernel_frontend import Frontend
from tests.mcp_probe import PROBE_SERVER, alive

pytestmark = pytest.mark.slow


def test_a_kernel_asks_before_the_first_call_then_allows_the_server_and_leaves_no_process_behind(isolated_env):
    prompts: list[str] = []
    with FakeOpenAIServer() as server:
        agents = {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 0}},
            "mcpServers": {"probe": {"command": sys.executable, "args": [PROBE_SERVER]}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        server.queue(
            tool_call("mcp__probe__echo", {"text": "from the kernel"}),
            tool_call("mcp__probe__pid", {}),
            "Done.",
        )
        frontend = Frontend(isolated_env)
        try:
            frontend.run("%load_ext monad_notebook")

            def type_reply(msg: dict) -> None:
                prompts.append(msg["content"]["prompt"])
                frontend.kc.input("a")

            reply = frontend.run("%%monad\nUse the probe.", stdin=type_reply)
            shown = frontend.text()
            status = frontend.run("%monad status")
            listed = frontend.text()
        finally:
            frontend.close()
        results = [m["content"] for m in server.chat_requests[-1]["messages"] if m["role"] == "tool"]
        offered = [t["function"]["name"] for t in server.chat_requests[0]["tools"]]
    assert reply["status"] == "ok" and status["status"] == "ok"
    assert "mcp__probe__echo" in offered
    assert len(prompts) == 1 and "[y/N, a = allow probe for this session]" in prompts[0]
    assert "call a tool of the MCP server probe" in shown and '"text": "from the kernel"' in shown
    assert results[0] == "from the kernel" and "Done." in shown
    assert "MCP server probe: ready, tools echo, big, crash, pid. Its calls run without asking" in listed
    from monad_notebook.store.lance import LanceStore

    store = LanceStore(isolated_env.parent / "monad-home" / "db")
    try:
        events = store.list_events("default", kind=ev.APPROVAL)
        decided = [(e.data["decision"], e.data["via"], e.data["subject"]) for e in events]
    finally:
        store.close()
    assert decided == [("allow for session", "prompt", "mcp:probe"), ("run", "session", "mcp:probe")]
    pid = int(results[1])
    deadline = time.monotonic() + 15
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid), "the MCP server outlived its kernel"


def test_a_real_server_from_pypi_answers_from_a_kernel(isolated_env):
    """mcp-server-time (the MCP project's reference server, offline) as a user would list it."""
    with FakeOpenAIServer() as server:
        time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
        agents = {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 0}},
            "mcpServers": {"time": {**time_server, "approval": "auto"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        server.queue(tool_call("mcp__time__get_current_time", {"timezone": "Europe/Paris"}), "It is late.")
        frontend = Frontend(isolated_env)
        try:
            frontend.run("%load_ext monad_notebook")
            reply = frontend.run("%%monad --session clock\nWhat time is it in Paris?")
            shown = frontend.text()
        finally:
            frontend.close()
        (result,) = [m["content"] for m in server.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert reply["status"] == "ok" and "It is late." in shown
    answer = json.loads(result)
    assert answer["timezone"] == "Europe/Paris" and answer["datetime"].startswith("20")
