"""Every key of agents.json applies from the next turn: a file on disk edited between turns, real HTTP.

Each test edits the file a running session reads, then checks what the next request carried,
where it went, or what was stored.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.config import ConfigWatcher, deep_merge
from monad_notebook.context.compaction.summarize import SECTIONS
from monad_notebook.context.prompt import own_text
from monad_notebook.errors import AuthError, EndpointError
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.conversation import conversation
from tests.files import touch_later

SUMMARY = "\n\n".join(f"## {name}\n- noted" for name in SECTIONS)


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with FakeOpenAIServer() as first, FakeOpenAIServer() as second:
        yield first, second


class Agents:
    """agents.json in the working directory, edited the way a user saves it between cells."""

    def __init__(self, folder: Path, data: dict[str, Any]) -> None:
        self.path = folder / "agents.json"
        self.data = data
        self.saves = 0
        self.path.write_text(json.dumps(data), encoding="utf-8")

    def edit(self, change: dict[str, Any]) -> None:
        self.data = deep_merge(self.data, change)
        self.path.write_text(json.dumps(self.data), encoding="utf-8")
        self.saves += 1
        touch_later(self.path, 10 * self.saves)


def main_on(url: str, **keys: Any) -> dict[str, Any]:
    return {"models": {"main": {"model": "m", "baseUrl": url, "maxRetries": 0, **keys}}}


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def session_on(agents: Agents, store, name: str = "live") -> Session:
    return Session(name, config=ConfigWatcher(agents.path), store=store, namespace={})


# the main tier


@pytest.mark.parametrize(
    ("broken", "fix", "error", "message"),
    [
        pytest.param(
            lambda url: main_on(closed_port_url(), apiKeyEnv="NEW_KEY"),
            lambda url: main_on(url),
            EndpointError,
            "Cannot reach",
            id="base-url",
        ),
        pytest.param(
            lambda url: main_on(url, apiKeyEnv="OLD_KEY"),
            lambda url: {"models": {"main": {"apiKeyEnv": "NEW_KEY"}}},
            AuthError,
            "OLD_KEY",
            id="key-variable",
        ),
    ],
)
def test_a_setting_fixed_after_a_failed_turn_answers_the_next_turn(
    isolated_env, store, monkeypatch, broken, fix, error, message
):
    monkeypatch.setenv("OLD_KEY", "sk-old")
    monkeypatch.setenv("NEW_KEY", "sk-new")
    with FakeOpenAIServer(require_key="sk-new") as server:
        agents = Agents(isolated_env, broken(server.base_url))
        session = session_on(agents, store)
        with pytest.raises(error, match=message):
            session.ask("hi")
        agents.edit(fix(server.base_url))
        server.queue("reached")
        assert session.ask("hi again").text == "reached"
        assert conversation(server.chat_requests[-1]["messages"])[-1]["content"] == "hi again"
        assert server.log[-1].headers["authorization"] == "Bearer sk-new"


@pytest.mark.parametrize(
    ("edit", "observe", "before", "after"),
    [
        pytest.param(
            {"models": {"main": {"maxOutputTokens": 321}}},
            lambda server, store: server.chat_requests[-1].get("max_tokens"),
            None,
            321,
            id="output-cap",
        ),
        pytest.param(
            {"models": {"main": {"temperature": 0.25}}},
            lambda server, store: server.chat_requests[-1].get("temperature"),
            None,
            0.25,
            id="temperature",
        ),
        pytest.param(
            {"store": {"optimizeEveryWrites": 3}},
            lambda server, store: store.optimize_every,
            50,
            3,
            id="optimize-every",
        ),
    ],
)
def test_an_edited_setting_is_in_force_from_the_next_turn(isolated_env, servers, store, edit, observe, before, after):
    server, _ = servers
    agents = Agents(isolated_env, main_on(server.base_url))
    session = session_on(agents, store)
    server.queue("one", "two")
    session.ask("first")
    assert observe(server, store) == before
    agents.edit(edit)
    session.ask("second")
    assert observe(server, store) == after


def test_a_shorter_timeout_applies_to_the_next_request(isolated_env, servers, store):
    server, _ = servers
    agents = Agents(isolated_env, main_on(server.base_url, timeoutSeconds=30))
    session = session_on(agents, store)
    server.queue("slow but in time")
    server.delay(0.6)
    assert session.ask("first").text == "slow but in time"
    agents.edit({"models": {"main": {"timeoutSeconds": 0.2}}})
    server.queue("too slow")
    server.delay(0.6)
    with pytest.raises(EndpointError, match=r"timed out after 0\.2s"):
        session.ask("second")


# the fast tier: summaries and memory promotion


def compacting(url: str) -> dict[str, Any]:
    return {
        **main_on(url),
        "context": {"summarize": {"keepRecent": 1, "background": False}, "eviction": {"enabled": False}},
    }


def test_the_summarizer_uses_the_fast_tier_as_edited(isolated_env, servers, store):
    main, fast = servers
    agents = Agents(isolated_env, compacting(main.base_url))
    session = session_on(agents, store)
    main.queue("one", "two")
    session.ask("first")
    fast_tier = {"model": "f", "baseUrl": fast.base_url, "maxOutputTokens": 900, "temperature": 0.1, "maxRetries": 0}
    agents.edit({"models": {"fast": fast_tier}})
    session.ask("second")
    fast.queue(SUMMARY)
    assert session.compact()
    (request,) = fast.chat_requests
    assert (request["model"], request["max_tokens"], request["temperature"]) == ("f", 900, 0.1)
    assert len(main.chat_requests) == 2
    assert "- noted" in store.load_summary("live").text


def test_memory_promotion_switched_on_uses_the_fast_tier_as_edited(isolated_env, servers, store):
    main, fast = servers
    agents = Agents(isolated_env, compacting(main.base_url))
    session = session_on(agents, store)
    main.queue("one", "two")
    session.ask("my project is called Heron")
    agents.edit(
        {
            "models": {"fast": {"model": "f", "baseUrl": fast.base_url, "temperature": 0.3, "maxRetries": 0}},
            "context": {"memoryPromotion": {"mode": "auto"}},
        }
    )
    session.ask("second")
    fast.queue(SUMMARY, "- The user's project is called Heron")
    assert session.compact()
    summary_request, promotion_request = fast.chat_requests
    assert summary_request["temperature"] == 0.3
    assert promotion_request["temperature"] == 0.3 and "Heron" in json.dumps(promotion_request["messages"])
    assert [fact.text for fact in session.memory.list()] == ["The user's project is called Heron"]


# embeddings


def test_a_new_embedding_endpoint_embeds_the_next_turn_there(isolated_env, servers, store):
    old, new = servers
    main_server = old
    retrieval = {"context": {"retrieval": {"enabled": True}}}
    embedding = {"models": {"embedding": {"provider": "openai", "baseUrl": old.base_url}}}
    agents = Agents(isolated_env, deep_merge(deep_merge(main_on(main_server.base_url), retrieval), embedding))
    session = session_on(agents, store)
    main_server.queue("one", "two")
    session.ask("first")
    session.wait_for_background(10)
    embedded_before = len(old.embedding_requests)
    assert embedded_before > 0
    agents.edit({"models": {"embedding": {"baseUrl": new.base_url, "dimensions": 8}}})
    session.ask("second")
    session.wait_for_background(10)
    assert len(new.embedding_requests) > 0
    assert {request.get("dimensions") for request in new.embedding_requests} == {8}
    assert len(old.embedding_requests) == embedded_before


# the store


def test_a_new_store_uri_mid_session_is_one_warning_and_the_open_store_stays(isolated_env, servers, store, tmp_path):
    server, _ = servers
    agents = Agents(isolated_env, main_on(server.base_url))
    session = session_on(agents, store)
    shown: list[str] = []
    session.events.subscribe(lambda event: shown.append(event.data["message"]) if event.kind == ev.ERROR else None)
    server.queue("one", "two", "three")
    session.ask("first")
    elsewhere = tmp_path / "elsewhere-db"
    agents.edit({"store": {"uri": str(elsewhere)}, "agent": {"maxSteps": 7}})
    session.ask("second")
    session.ask("third")
    (warning,) = shown
    assert "\n" not in warning and "store.uri" in warning and "restart" in warning
    assert session.store is store and session.config.agent.max_steps == 7
    assert [m.content for m in store.load_messages("live") if m.role == "user"] == ["first", "second", "third"]
    assert not elsewhere.exists()


# tools


def test_a_python_time_limit_set_between_turns_stops_the_next_turns_code(isolated_env, servers, store, capsys):
    server, _ = servers
    agents = Agents(isolated_env, deep_merge(main_on(server.base_url), {"tools": {"python": {"approval": "auto"}}}))
    session = session_on(agents, store)
    nap = tool_call("python", {"code": "import time\ntime.sleep(1.5)\nprint('woke up')"})
    server.queue(nap, "slept")
    session.ask("first")
    agents.edit({"tools": {"python": {"timeoutSeconds": 0.5}}})
    server.queue(nap, "stopped")
    session.ask("second")
    results = [own_text(m["content"]) for m in server.chat_requests[-1]["messages"] if m["role"] == "tool"]
    stopped = "error: stopped after 0.5 s (tools.python.timeoutSeconds); the output it printed before that is kept"
    assert results == ["stdout:\nwoke up", f"{stopped} above"]
