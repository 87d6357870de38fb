"""kill -9 at random moments, and several processes at once: acknowledged writes survive whole, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from monad_notebook.config import Config
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel
from tests.reliability.crashes import batch_problems, finish, kill_at_random, start
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
