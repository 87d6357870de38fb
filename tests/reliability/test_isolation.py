"""No read path crosses sessions, and secrets from any input channel reach neither the store nor the model."""

from __future__ import annotations

import json
import random
import string
from typing import Any

import lancedb
import pandas as pd
import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.events import Event
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import FakeOpenAIServer, hash_vector, tool_call, tool_calls
from tests.conftest import isolate

_RNG = random.Random(7)


def github_token() -> str:
    return "ghp_" + "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(36))


SECRETS = {channel: github_token() for channel in ("user", "output", "file", "frame", "error")}
SECRETS["env"] = "".join(_RNG.choice(string.ascii_letters + string.digits) for _ in range(32))


def every_row(uri: str) -> str:
    """Every row of every table in the database, as one text to search."""
    db = lancedb.connect(uri)
    rows = [db.open_table(name).to_arrow().to_pylist() for name in db.list_tables(limit=1000).tables]
    return json.dumps(rows, default=str)


def config_for(server: FakeOpenAIServer, **context: Any) -> Config:
    return Config.model_validate(
        {
            "models": {
                "main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 0},
                "embedding": {"provider": "openai", "model": "emb", "baseUrl": server.base_url},
            },
            "tools": {"python": {"approval": "auto"}},
            "context": {"retrieval": {"enabled": True, "minScore": 0}, **context},
        }
    )


def test_secrets_planted_in_every_input_channel_reach_neither_store_nor_model(store, isolated_env, monkeypatch):
    monkeypatch.setenv("WAREHOUSE_API_TOKEN", SECRETS["env"])
    (isolated_env / "creds.txt").write_text(f"config\ngithub_token = {SECRETS['file']}\n")
    frame = pd.DataFrame({"user": ["ann", "bob"], "token": [SECRETS["frame"], "none"]})
    namespace = {"frame": frame, "shown": SECRETS["output"], "hidden": SECRETS["error"]}
    with FakeOpenAIServer() as server:
        server.queue(
            tool_calls(
                tool_call("python", {"code": "print('token:', shown)"}),
                tool_call("python", {"code": "import os; print(os.environ['WAREHOUSE_API_TOKEN'])"}),
                tool_call("python", {"code": "raise ValueError('bad token ' + hidden)"}),
                tool_call("read_file", {"path": "creds.txt"}),
                tool_call("describe", {"name": "frame"}),
            ),
            "all read",
            "second turn",
        )
        config = config_for(server, summarize={"keepRecent": 1})
        session = Session("leaky", config=config, store=store, namespace=namespace)
        session.ask(f"my token is {SECRETS['user']}, look at everything")
        session.ask("what did you find?")
        session.compact()
        session.close()
        sent = json.dumps(server.requests)
    stored = every_row(store.uri)
    assert {c for c, s in SECRETS.items() if s in stored} == set()
    assert {c for c, s in SECRETS.items() if s in sent} == set()
    assert (
        "token:" in sent and "bad token" in sent and "github_token" in sent and "ann" in sent
    )  # every channel was read
    assert server.embedding_requests and store.load_summary("leaky") is not None


def run_session(server: FakeOpenAIServer, store: LanceStore, name: str) -> Session:
    server.queue(tool_call("python", {"code": f"print('{name} private output ' * 3000)"}, id=f"{name}-call"), "ok")
    session = Session(name, config=config_for(server, summarize={"keepRecent": 1}), store=store, namespace={})
    session.ask(f"{name} private question")
    session.compact()
    session.emit("compaction_finished", note=f"{name} private event")
    session.flush_events()
    session.close()
    return session


@pytest.fixture(scope="module")
def neighbours(tmp_path_factory: pytest.TempPathFactory):
    """Four sessions written once for every reader below: the tests only read the store."""
    root = tmp_path_factory.mktemp("neighbours")
    store = LanceStore(root / "db")
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(root, monkeypatch)
        with FakeOpenAIServer() as server:
            for name in ("alice", "bob", "alice2", "alic"):
                run_session(server, store, name)
    yield store
    store.close()


@pytest.mark.parametrize(("reader", "other"), [("bob", "alice"), ("alice", "alice2"), ("alic", "alice")])
def test_no_read_path_returns_another_sessions_rows(neighbours: LanceStore, reader: str, other: str):
    store = neighbours
    leaked = f"{other} private"
    assert all(leaked not in m.content for m in store.load_messages(reader))
    assert store.get_raw_output(reader, f"{other}-call") is None
    assert store.has_raw_outputs(reader, [f"{other}-call"]) == set()
    assert store.search_raw_outputs(reader, leaked, 10) == []
    summary = store.load_summary(reader)
    assert summary is not None and leaked not in summary.text
    assert all(leaked not in json.dumps(e.data) for e in store.list_events(reader))
    assert [e for e in store.list_events(reader) if isinstance(e, Event)]
    others = {m.id for m in store.load_messages(other)}
    dims = FakeOpenAIServer().embedding_dims
    own = store.search.embedded_ids(reader, model="emb", dims=dims)
    assert own and not own & others
    for message in store.load_messages(other)[:3]:
        hits = store.search.search_embeddings(reader, hash_vector(message.content, dims), 10)
        assert hits and not {h.message_id for h in hits} & others
        assert all(leaked not in h.snippet for h in hits)
