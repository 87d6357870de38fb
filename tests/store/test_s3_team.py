"""A team's shared history on S3-compatible object storage (moto's server on loopback).

Everything goes through the configuration a team would write in agents.json, real
processes write at the same time, and users of one hub share one bucket prefix.
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.config import Config, parse_config
from monad_notebook.messages import Message
from monad_notebook.store.lance import LanceStore, open_store
from monad_notebook.testing import ScriptedModel, tool_call

pytestmark = pytest.mark.slow

BUCKET = "notebooks"
WRITE_SECONDS = 3.0


def storage_options(endpoint: str) -> dict[str, str]:
    return {
        "aws_access_key_id": "team",
        "aws_secret_access_key": "team-secret",
        "aws_endpoint": endpoint,
        "aws_region": "us-east-1",
        "allow_http": "true",
    }


def team_config(endpoint: str, prefix: str, **sections: object) -> Config:
    """The configuration as it would be read from a team's agents.json."""
    return parse_config(
        {"store": {"uri": f"s3://{BUCKET}/{prefix}", "storageOptions": storage_options(endpoint)}, **sections}
    )


def test_a_session_configured_for_s3_keeps_messages_raw_outputs_summary_and_events_in_the_bucket(
    s3_endpoint: str,
) -> None:
    config = team_config(
        s3_endpoint,
        "turn",
        tools={"python": {"approval": "auto"}},
        context={"toolOutput": {"maxChars": 400}, "summarize": {"keepRecent": 1}},
    )
    model = ScriptedModel([tool_call("python", {"code": "'row,' * 500"}), "The table has 500 rows."])
    session = Session("eda", config=config, model=model)
    reply = session.ask("How many rows?")
    assert session.compact()
    session.close()

    reader = LanceStore(f"s3://{BUCKET}/turn", storage_options=storage_options(s3_endpoint))
    stored = reader.load_messages("eda")
    assert reply.text == "The table has 500 rows."
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    call_id = stored[2].tool_call_id
    assert reader.get_raw_output("eda", call_id) is not None
    assert reader.get_raw_output("eda", call_id).count("row,") == 500
    assert "How many rows?" in reader.load_summary("eda").text
    assert ev.TURN_FINISHED in {e.kind for e in reader.list_events("eda")}
    assert not any(Path(os.environ["MONAD_HOME"]).iterdir())
    reader.close()


def write_then_read(uri: str, options: str, me: str, other: str, seconds: str, flags: str) -> dict[str, Any]:
    """One kernel: once both are ready, append to a shared and an own session for ``seconds``, then read.

    Self-contained (imports inside), so a child process can run its source with ``python -c``.
    """
    import json
    import time
    from pathlib import Path

    from monad_notebook.messages import Message
    from monad_notebook.store.lance import LanceStore

    store = LanceStore(uri, storage_options=json.loads(options), optimize_every=8)
    board = Path(flags)

    def meet(stage: str) -> None:
        (board / f"{me}.{stage}").touch()
        given_up = time.monotonic() + 60
        while not (board / f"{other}.{stage}").exists():
            if time.monotonic() > given_up:
                raise TimeoutError(f"{other} never reached {stage}")
            time.sleep(0.02)

    meet("ready")
    written: list[str] = []
    seen_other_midway, batch = 0, 0
    deadline = time.monotonic() + float(seconds)
    patience = deadline + 30  # on a loaded machine, keep writing until the other's rows showed up once
    while time.monotonic() < deadline or (not seen_other_midway and time.monotonic() < patience):
        shared = [Message("user", f"{me} shared {batch}", session="team/shared", seq=batch * 10 + i) for i in range(2)]
        own = [Message("assistant", f"{me} own {batch}", session=f"{me}/notes", seq=batch)]
        store.append_messages(shared)
        store.append_messages(own)
        written += [m.id for m in shared + own]
        seen_other_midway = max(seen_other_midway, store.count_messages(f"{other}/notes"))
        batch += 1
    meet("done")
    result = {
        "written": written,
        "shared": [m.id for m in store.load_messages("team/shared")],
        "other": [m.id for m in store.load_messages(f"{other}/notes")],
        "midway": seen_other_midway,
    }
    store.close()
    return result


def test_two_processes_writing_at_once_lose_nothing_duplicate_nothing_and_see_each_other(
    s3_endpoint: str, tmp_path: Path
) -> None:
    """Appends only: the table exists before they start (test_s3_kernels.py creates a fresh database at once)."""
    uri, options = f"s3://{BUCKET}/concurrent", json.dumps(storage_options(s3_endpoint))
    setup = LanceStore(uri, storage_options=json.loads(options))
    setup.append_messages([Message("user", "the team database exists", session="team/setup", seq=0)])
    setup.close()
    args = [uri, options, "alice", "bob", str(WRITE_SECONDS), str(tmp_path)]
    call = "import faulthandler, json, signal, sys\nfaulthandler.register(signal.SIGUSR1)\n"
    call += "print(json.dumps(write_then_read(*sys.argv[1:])))"
    script = f"from __future__ import annotations\n{inspect.getsource(write_then_read)}\n{call}"
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    alice = subprocess.Popen([sys.executable, "-c", script, *args], **pipes)
    try:
        bob_result = write_then_read(uri, options, "bob", "alice", str(WRITE_SECONDS), str(tmp_path))
        out, err = alice.communicate(timeout=90)
    except Exception as exc:
        alice.send_signal(signal.SIGUSR1)
        time.sleep(1)
        alice.kill()
        pytest.fail(f"{exc!r}; the other kernel's stderr:\n{alice.communicate()[1][-4000:]}")
    assert alice.returncode == 0, err[-2000:]
    results = {"alice": json.loads(out.strip().splitlines()[-1]), "bob": bob_result}

    store = LanceStore(uri, storage_options=json.loads(options))
    everything = [m for name in ("team/shared", "alice/notes", "bob/notes") for m in store.load_messages(name)]
    written = results["alice"]["written"] + results["bob"]["written"]
    assert Counter(m.id for m in everything) == Counter(written)
    assert sum(store.count_messages(name) for name in ("team/shared", "alice/notes", "bob/notes")) == len(written)
    assert {m.content.split()[0] for m in store.load_messages("alice/notes")} == {"alice"}
    shared = sorted(m.id for m in everything if m.session == "team/shared")
    for me, other in (("alice", "bob"), ("bob", "alice")):
        assert sorted(results[me]["shared"]) == shared
        assert sorted(results[me]["other"]) == sorted(m.id for m in store.load_messages(f"{other}/notes"))
    assert results["alice"]["midway"] > 0 and results["bob"]["midway"] > 0
    store.close()


def hub_user(endpoint: str, user: str, notebook: str, answer: str) -> None:
    """A JupyterHub user's kernel: the team config, sessions named ``<user>/<notebook>``."""
    session = Session(f"{user}/{notebook}", config=team_config(endpoint, "hub"), model=ScriptedModel([answer]))
    session.ask(f"{user} asks about {notebook}")
    session.close()


def test_hub_users_share_one_prefix_and_each_reads_only_the_sessions_it_names(s3_endpoint: str) -> None:
    hub_user(s3_endpoint, "alice", "eda", "alice's answer")
    hub_user(s3_endpoint, "bob", "eda", "bob's answer")
    hub_user(s3_endpoint, "alice", "model-fit", "fitted")

    shared = open_store(team_config(s3_endpoint, "hub"))
    names = [s.name for s in shared.list_sessions()]
    assert sorted(names) == ["alice/eda", "alice/model-fit", "bob/eda"]
    assert [n for n in names if n.startswith("alice/")] == ["alice/eda", "alice/model-fit"]
    assert [m.content for m in shared.load_messages("alice/eda")] == ["alice asks about eda", "alice's answer"]
    assert [m.content for m in shared.load_messages("bob/eda")] == ["bob asks about eda", "bob's answer"]
    assert {e.session for e in shared.list_events("bob/eda")} == {"bob/eda"}

    model = ScriptedModel(["welcome back"])
    resumed = Session("alice/eda", config=team_config(s3_endpoint, "hub"), model=model)
    resumed.ask("where were we?")
    resumed.close()
    sent = [m["content"] for m in model.calls[0].messages[1:]]
    assert sent == ["alice asks about eda", "alice's answer", "where were we?"]
    shared.close()


def test_separate_prefixes_in_one_bucket_are_separate_databases(s3_endpoint: str) -> None:
    options = storage_options(s3_endpoint)
    private = {user: LanceStore(f"s3://{BUCKET}/users/{user}", storage_options=options) for user in ("alice", "bob")}
    private["alice"].create_session("eda")
    private["alice"].append_messages([Message("user", "alice only", session="eda", seq=0)])

    assert [s.name for s in private["bob"].list_sessions()] == []
    assert private["bob"].load_messages("eda") == []
    assert [m.content for m in private["alice"].load_messages("eda")] == ["alice only"]
    for store in private.values():
        store.close()
