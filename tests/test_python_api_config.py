"""``Session("x")`` from Python reads agents.json exactly as the magic does; an explicit ``config=`` wins."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from monad_notebook import Session
from monad_notebook.config import Config, ConfigWatcher
from monad_notebook.errors import ConfigError
from monad_notebook.testing import FakeOpenAIServer
from tests.files import touch_later


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def agents(url: str, model: str = "from-file") -> str:
    return json.dumps({"models": {"main": {"model": model, "baseUrl": url, "maxRetries": 0}}})


def test_a_session_without_config_reads_the_file_monad_config_names(server, tmp_path, monkeypatch):
    path = tmp_path / "elsewhere" / "team.json"
    path.parent.mkdir()
    path.write_text(agents(server.base_url))
    monkeypatch.setenv("MONAD_CONFIG", str(path))
    server.queue("hello from the file's server")
    session = Session("x")
    try:
        assert session.ask("hi").text == "hello from the file's server"
        assert server.chat_requests[0]["model"] == "from-file"
        assert session.status()["config"] == str(path)
    finally:
        session.store.close()


def test_a_session_without_config_reads_agents_json_in_the_working_directory(server, isolated_env):
    (isolated_env / "agents.json").write_text(agents(server.base_url))
    server.queue("found it")
    session = Session("x")
    try:
        assert session.ask("hi").text == "found it"
    finally:
        session.store.close()


def test_a_session_without_config_follows_later_edits_of_the_file(server, isolated_env):
    path = isolated_env / "agents.json"
    path.write_text(agents(server.base_url))
    server.queue("one", "two")
    session = Session("x")
    try:
        session.ask("first")
        path.write_text(agents(server.base_url, model="edited"))
        touch_later(path)
        session.ask("second")
        assert [r["model"] for r in server.chat_requests] == ["from-file", "edited"]
    finally:
        session.store.close()


def test_an_explicit_config_wins_over_monad_config(server, tmp_path, monkeypatch, store):
    with FakeOpenAIServer() as ignored:
        path = tmp_path / "team.json"
        path.write_text(agents(ignored.base_url))
        monkeypatch.setenv("MONAD_CONFIG", str(path))
        given = Config.model_validate(json.loads(agents(server.base_url, model="given")))
        server.queue("from the given config")
        assert Session("x", config=given, store=store).ask("hi").text == "from the given config"
        assert server.chat_requests[0]["model"] == "given" and ignored.chat_requests == []


def test_an_explicit_config_path_is_read_and_watched(server, tmp_path, store):
    path = tmp_path / "mine.json"
    path.write_text(agents(server.base_url, model="from-path"))
    server.queue("ok")
    session = Session("x", config=path, store=store)
    assert isinstance(session.watcher, ConfigWatcher) and session.watcher.source == path
    session.ask("hi")
    assert server.chat_requests[0]["model"] == "from-path"


def test_a_broken_file_is_one_line_and_no_session(isolated_env, store):
    (isolated_env / "agents.json").write_text('{"agent": ')
    with pytest.raises(ConfigError, match=r"^agents\.json is not valid JSON") as caught:
        Session("x", store=store)
    assert "\n" not in str(caught.value)
    assert store.get_session("x") is None
