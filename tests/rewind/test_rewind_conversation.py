"""The conversation rewound: a copy of the session as it was before a turn goes on, and the original keeps every turn.

Real IPython, real LanceDB, a scripted model: what the model receives after the rewind, what each
session holds in the store, and the summary, identifier ledger, workspace record, memory suggestions
and recall index of the copy, each as it was then.
"""

from __future__ import annotations

import pytest

from monad_notebook import Session
from monad_notebook.cell.rewind import rewind_session, rewind_turn, rewound_from, rewound_name, undo_lines
from monad_notebook.errors import UsageError
from monad_notebook.events import NOTEBOOK_DECIDED, NOTEBOOK_PROPOSED, Event
from monad_notebook.testing import ScriptedModel
from tests.rewind.session_kit import make, python, unhook

pytestmark = pytest.mark.lance


def said_to_model(model: ScriptedModel) -> str:
    return "\n".join(str(m.get("content")) for m in model.calls[-1].messages)


def test_a_rewound_conversation_goes_on_from_before_the_turn_with_what_was_in_force_then(store, shell, isolated_env):
    model = ScriptedModel(
        [
            *(python("alpha = 1\nopen('alpha_table.csv', 'w').write('a')", "call_alpha"), "made alpha_table.csv"),
            *(python("beta = 2\nopen('beta_table.csv', 'w').write('b')", "call_beta"), "made beta_table.csv"),
            *(python("gamma = 3", "call_gamma"), "made gamma"),
            "going on without beta",
        ]
    )
    session = make(store, shell, model)
    session.ask("make the alpha table")
    session.compact()  # the summary in force when turn 2 began
    then, ledger_then = store.load_summary("rw"), {(e.item, e.count) for e in store.load_ledger("rw")}
    session.memory.suggest(session.name, ["The alpha table is the reference."])
    session.ask("make the beta table")
    session.memory.suggest(session.name, ["The beta table replaces the alpha table."])
    store.append_events(
        [
            Event(
                NOTEBOOK_PROPOSED,
                "rw",
                {"proposal": "p1", "change": "insert", "cell_id": "c0", "new_id": "c-beta", "turn": 2},
            ),
            Event(NOTEBOOK_DECIDED, "rw", {"proposal": "p1", "decision": "accepted"}),
            Event(
                NOTEBOOK_PROPOSED,
                "rw",
                {"proposal": "p2", "change": "change", "cell_id": "c1", "new_id": "", "turn": 2},
            ),
            Event(NOTEBOOK_DECIDED, "rw", {"proposal": "p2", "decision": "rejected"}),
        ]
    )
    session.ask("make gamma")
    session.compact()  # folds beta's turn too
    assert "beta_table.csv" in {e.item for e in store.load_ledger("rw")}

    name, lines = rewind_session(session, 2)
    unhook(shell, session)
    copy = Session(name, config=session.config, store=store, model=model, shell=shell)

    assert name == "rw@turn2" and lines[0].startswith("rewound to before turn 2: the conversation goes on as session")
    assert lines[-1] == "cells the undone turns put in the notebook (new c-beta): the notebook is not open in a page"
    assert copy.ask("go on").text == "going on without beta"
    sent = said_to_model(model)
    assert "alpha" in sent and "beta" not in sent and "gamma" not in sent
    assert [m.content for m in store.load_messages("rw") if m.role == "user"] == [
        "make the alpha table",
        "make the beta table",
        "make gamma",
    ]
    assert then is not None and store.load_summary("rw").text != then.text
    assert copy.window.summary is not None and copy.window.summary.text == then.text
    assert {(e.item, e.count) for e in store.load_ledger(name)} == ledger_then  # rebuilt from what it folded
    recorded = {e.key for e in store.workspace.load_workspace(name)}
    assert "alpha" in recorded and not {"beta", "gamma"} & recorded
    assert [s["text"] for s in copy.memory.pending_suggestions(name)] == ["The alpha table is the reference."]
    assert not any("beta" in p.hit.snippet for p in copy.recall.search("the beta table"))
    assert shell.user_ns["alpha"] == 1 and "beta" not in shell.user_ns and "gamma" not in shell.user_ns


def test_the_undo_goes_back_to_every_turn_and_puts_the_kernel_back(store, shell, isolated_env):
    model = ScriptedModel([python("one = 1", "call_one"), "one", python("two = 2", "call_two"), "two", "all back"])
    session = make(store, shell, model)
    session.ask("first")
    session.ask("second")
    name, _ = rewind_session(session, 2)
    copy = Session(name, config=session.config, store=store, model=model, shell=shell)
    assert "two" not in shell.user_ns and shell.user_ns["one"] == 1

    said = undo_lines(copy, session, rewound_from(copy))

    assert said[0] == f"back in session 'rw' with every turn; the rewound copy stays as session {name!r}"
    assert said[1] == "the files and names are back as they were before the rewind"
    assert shell.user_ns["two"] == 2
    assert session.ask("third").text == "all back"
    assert "second" in said_to_model(model)
    unhook(shell, session)


def test_a_rewind_names_a_turn_the_session_has_and_an_undo_needs_a_rewind(store, shell, isolated_env):
    session = make(store, shell, ScriptedModel(["only answer"]))
    with pytest.raises(UsageError, match="no turn to rewind yet"):
        rewind_turn(session, [])
    session.ask("hello")
    for words, said in ((["2"], "no turn 2: this session's turns are 1 to 1"), (["x"], "usage: %monad rewind")):
        with pytest.raises(UsageError, match=said):
            rewind_turn(session, words)
    with pytest.raises(UsageError, match="no rewind to undo"):
        rewound_from(session)
    store.create_session("rw@turn1")
    assert rewound_name(store, "rw@turn1", 1) == "rw@turn1-2"
    unhook(shell, session)
