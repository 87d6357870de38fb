"""kill -9 at random moments, mid tool call, and several processes at once: acknowledged writes survive whole,
once, and a killed call is answered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monad_notebook.config import Config
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, tool_call
from tests.e2e.test_cell_kernel import run
from tests.reliability.crashes import batch_problems, finish, kill_at_random, kill_kernel_while, start
from tests.reliability.pairs import assert_paired
from tests.reliability.writer import BATCH_SIZE


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "db"


@pytest.mark.parametrize(("seed", "optimize_every"), [(1, 4), (2, 4), (4, 1), (5, 1), (6, 2)])
def test_a_killed_writer_leaves_every_acknowledged_batch_whole_and_once(db: Path, seed: int, optimize_every: int):
    """optimize_every=1 runs a background optimize after every write, so the kill often lands inside one."""
    outcome = kill_at_random("batches", db, "crash", seed, "100000", str(optimize_every))
    assert outcome.returncode == -9, outcome.stderr
    assert outcome.acks
    store = LanceStore(db)
    assert batch_problems(store, "crash", outcome.acked_ids, BATCH_SIZE) == []
    store.close()


def test_a_database_killed_mid_write_keeps_accepting_writes_from_new_processes(db: Path):
    acked = kill_at_random("batches", db, "again", 11, "100000", "1").acked_ids
    outcome = finish(start("batches", db, "again", 13, "3", "1"))
    assert outcome.returncode == 0, outcome.stderr
    store = LanceStore(db)
    assert batch_problems(store, "again", acked + outcome.acked_ids, BATCH_SIZE) == []
    assert {a["batch"] for a in outcome.acks} and store.count_messages("again") >= len(acked) + 3 * BATCH_SIZE
    store.close()


@pytest.mark.parametrize("seed", [22])
def test_a_compaction_killed_midway_leaves_a_summary_saved_whole_or_not_at_all(db: Path, seed: int):
    outcome = kill_at_random("compact", db, "folded", seed, "100", max_delay=3.0)
    assert outcome.returncode == -9, outcome.stderr
    store = LanceStore(db)
    summary = store.load_summary("folded")
    acked = [a["summary"] for a in outcome.acks]
    if summary is None:
        assert acked == []
    else:
        assert summary.text.strip() and summary.boundary_seq >= max(acked, default=-1)
        seqs = {m.seq for m in store.load_messages("folded")}
        assert set(range(summary.boundary_seq + 1)) <= seqs  # the folded span is still on record
    model = ScriptedModel(["still here"])
    config = Config.model_validate({"models": {"main": {"model": "scripted-demo"}}})
    session = Session("folded", config=config, store=store, model=model)
    assert session.ask("what did we note?").text == "still here"
    if summary is not None:
        sent = "\n".join(m["content"] or "" for m in model.calls[0].messages)
        assert summary.text.strip() in sent
    store.close()


def test_several_processes_appending_at_once_lose_and_duplicate_nothing(db: Path):
    """They also race to create the table, and their background optimizes commit over each other's appends."""
    children = {f"proc{i}": start("batches", db, f"proc{i}", 30 + i, "15", "2") for i in range(3)}
    outcomes = {name: finish(child) for name, child in children.items()}
    failures = {n: o.stderr.strip().splitlines()[-1:] for n, o in outcomes.items() if o.returncode != 0}
    assert failures == {}
    store = LanceStore(db)
    for name, outcome in outcomes.items():
        assert len(outcome.acks) == 15
        assert batch_problems(store, name, outcome.acked_ids, BATCH_SIZE) == []
    store.close()


@pytest.mark.slow
def test_a_kernel_killed_during_a_tool_call_answers_the_call_and_records_the_file_it_wrote(isolated_env: Path):
    """The next request holds the killed call and its result, and the workspace block names the file it wrote."""
    from jupyter_client.manager import start_new_kernel

    written = isolated_env / "made_by_the_killed_call.csv"
    code = f"open({written.name!r}, 'w').write('a,b\\n1,2\\n')\nimport time\ntime.sleep(120)"
    with FakeOpenAIServer() as server:
        agents = {
            "models": {"main": {"model": "m", "baseUrl": server.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(agents))
        server.queue(tool_call("python", {"code": code}, id="call_killed"), "it crashed; the file is there")
        kill_kernel_while(isolated_env, "%%monad --session crashy\nwrite the file", written.exists)

        km, kc = start_new_kernel(kernel_name="python3", cwd=str(isolated_env))
        try:
            run(kc, "%load_ext monad_notebook")
            run(kc, "%%monad --session crashy\nwhat happened?")
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        sent = server.chat_requests[-1]["messages"]
    assert_paired(sent)
    called = [m for m in sent if m["role"] == "assistant" and m.get("tool_calls")]
    assert [c["id"] for m in called for c in m["tool_calls"]] == ["call_killed"]
    answered = next(m for m in sent if m.get("tool_call_id") == "call_killed")
    assert answered["content"].startswith("interrupted by a crash")
    block = next(m["content"] for m in sent if "<workspace>" in str(m.get("content")))
    assert "- made_by_the_killed_call.csv: 8 bytes (call_killed, turn 1)" in block
