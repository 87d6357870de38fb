"""Memory in the panel on a real Session and store: where a suggestion came from, a receipt that names
the fact with an undo, the facts in force, and the record of approval decisions."""

from __future__ import annotations

import threading
import time

import pytest

from monad_notebook.config import Config
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel
from monad_notebook.widget.panel import MonadPanel

FACT = "The fiscal year starts in April"


@pytest.fixture
def store(tmp_path):
    store = LanceStore(tmp_path / "db")
    yield store
    store.close()


@pytest.fixture
def session(store):
    config = Config.model_validate({"models": {"main": {"model": "scripted", "contextWindow": 4000}}})
    return Session("memo", config=config, store=store, model=ScriptedModel([]))


def suggested(session: Session, panel: MonadPanel) -> str:
    session.memory.suggest(session.name, [FACT], origin={"source": "compaction", "turns": [1, 2]})
    (item,) = panel.suggestions
    return item["id"]


def test_a_suggestion_says_it_came_from_compaction_of_which_turns(session, comms):
    panel = MonadPanel(session)
    suggested(session, panel)
    assert panel.suggestions[0]["origin"] == "from compaction of turns 1–2 · session memo"
    session.memory.suggest(session.name, ["Reports go to Ana Costa"])
    assert MonadPanel(session).suggestions[1]["origin"] == "suggested in session memo"


def test_save_leaves_a_receipt_naming_the_fact_and_lists_it_among_the_facts_in_force(session, store, comms):
    panel = MonadPanel(session)
    panel.comm.from_frontend({"type": "memory.save", "id": suggested(session, panel)})
    assert [f.text for f in store.list_facts()] == [FACT]
    assert panel.receipt["action"] == "saved" and panel.receipt["text"] == FACT and panel.receipt["undo"]
    assert panel.notices == [] and panel.suggestions == []
    (fact,) = panel.facts
    assert fact["text"] == FACT and fact["origin"] == "from compaction · global · session memo"


def test_undo_of_a_save_forgets_the_fact_and_brings_the_suggestion_back(session, store, comms):
    panel = MonadPanel(session)
    panel.comm.from_frontend({"type": "memory.save", "id": suggested(session, panel)})
    panel.comm.from_frontend({"type": "memory.undo", "id": panel.receipt["id"]})
    assert store.list_facts() == [] and panel.facts == []
    assert [s["text"] for s in session.memory.pending_suggestions("memo")] == [FACT]
    assert [s["text"] for s in panel.suggestions] == [FACT]
    assert panel.receipt["action"] == "undone" and not panel.receipt["undo"]
    panel.comm.from_frontend({"type": "memory.undo", "id": panel.receipt["id"]})  # nothing left to undo
    assert store.list_facts() == []


def test_dismiss_and_forget_can_be_undone_too(session, store, comms):
    session.memory.add("Reports go to Ana Costa", scope="global", source="manual")
    panel = MonadPanel(session)
    panel.comm.from_frontend({"type": "memory.dismiss", "id": suggested(session, panel)})
    assert panel.suggestions == [] and panel.receipt["action"] == "dismissed"
    panel.comm.from_frontend({"type": "memory.undo", "id": panel.receipt["id"]})
    assert [s["text"] for s in panel.suggestions] == [FACT]

    (kept,) = panel.facts
    assert kept["origin"] == "saved by you · global"
    panel.comm.from_frontend({"type": "memory.forget", "id": kept["id"]})
    assert store.list_facts() == [] and panel.receipt["text"] == "Reports go to Ana Costa"
    panel.comm.from_frontend({"type": "memory.undo", "id": panel.receipt["id"]})
    assert [(f.text, f.source) for f in store.list_facts()] == [("Reports go to Ana Costa", "manual")]


def test_each_approval_request_ends_in_a_listed_decision(session, comms):
    panel = MonadPanel(session)
    answers: list = []
    asking = threading.Thread(target=lambda: answers.append(panel.approver(timeout=5)("df.describe()\nprint(2)")))
    asking.start()
    deadline = time.monotonic() + 5
    while not panel.approval and time.monotonic() < deadline:
        time.sleep(0.01)
    panel.comm.from_frontend({"type": "approval", "id": panel.approval["id"], "run": True})
    asking.join(5)
    assert panel.approver(timeout=0.2)("import os") is None
    assert answers == [True]
    assert [(d["answer"], d["code"], d["lines"]) for d in panel.decisions] == [
        ("ran", "df.describe()", 2),
        ("no answer", "import os", 1),
    ]
