"""Where no extension shows proposals at their cells: the review in the running cell, and what an Accept can apply."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.notebook.frontend import NotebookFrontend, open_notebook
from monad_notebook.notebook.proposals import diff_lines
from monad_notebook.testing import MemoryStore, ScriptedModel, tool_call, tool_calls
from tests.notebook.fake_extension import FakeKernel


class Shell:
    """The parts of IPython's shell the fallback uses: the namespace and ``set_next_input``."""

    def __init__(self, notebook_file) -> None:
        self.user_ns = {"__vsc_ipynb_file__": str(notebook_file)}
        self.next_inputs: list[str] = []

    def set_next_input(self, text: str, replace: bool = False) -> None:
        assert not replace
        self.next_inputs.append(text)


def saved(path, cells: list[tuple[str, str, str]]) -> None:
    nb = {
        "cells": [
            {"id": cid, "cell_type": kind, "source": source, "metadata": {}, "outputs": [], "execution_count": None}
            for cid, kind, source in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


@pytest.fixture
def vscode(tmp_path, monkeypatch):
    """A session in a kernel as VS Code runs it: no extension answers, input is allowed, the file is named."""
    notebook_file = tmp_path / "analysis.ipynb"
    saved(notebook_file, [("load", "code", "x = 1"), ("run", "code", "%%monad\nadd cells")])
    shell = Shell(notebook_file)
    kernel = FakeKernel(cell_id="vscode-notebook-cell:/analysis.ipynb#W1", code="%%monad\nadd cells")
    frontend = NotebookFrontend(shell, kernel)
    answers: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: answers.pop(0))

    def start(model: ScriptedModel, replies: list[str]) -> Session:
        answers.extend(replies)
        session = Session("vs", config=Config(), store=MemoryStore(), model=model, notebook=frontend)
        frontend.attach(emit=session.emit, config=lambda: session.config.tools.notebook, timeout=lambda: 5.0)
        return session

    return SimpleNamespace(start=start, shell=shell, file=notebook_file, frontend=frontend)


def results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]


def test_the_first_accepted_new_cell_is_inserted_after_the_turn_and_the_rest_shown_to_copy(vscode, capsys):
    model = ScriptedModel(
        [
            tool_calls(
                tool_call("insert_cell", {"cell_type": "code", "cell_source": "df.head()"}),
                tool_call("insert_cell", {"cell_type": "code", "cell_source": "df.tail()"}),
                tool_call("insert_cell", {"cell_type": "markdown", "cell_source": "# Notes"}),
                tool_call("insert_cell", {"cell_type": "code", "cell_source": "df.info()"}),
            ),
            "Done.",
        ]
    )
    session = vscode.start(model, ["y", "y", "y", "n"])
    session.ask("add cells")
    head, tail, notes, info = results(model)
    assert "accepted; it will be inserted below the %%monad cell when this turn ends" in head
    assert "accepted; this frontend cannot add more than one new cell per turn, so the source is shown" in tail
    assert "cannot add a markdown cell from the kernel" in notes
    assert "rejected by the user; nothing changed" in info
    assert vscode.shell.next_inputs == ["df.head()"]
    shown = capsys.readouterr().out
    assert "The agent proposes new code cell" in shown and "+ df.head()" in shown  # every line added
    assert "Accepted: copy this into a new code cell" in shown and "df.tail()" in shown


def test_the_saved_file_is_read_and_a_change_is_shown_to_copy_once_accepted(vscode, capsys):
    model = ScriptedModel(
        [
            tool_call("read_notebook", {}),
            tool_call("overwrite_cell_source", {"cell_id": "load", "cell_source": "x = 2"}),
            tool_call("execute_cell", {"cell_id": "load"}),
            "Done.",
        ]
    )
    session = vscode.start(model, ["y"])
    session.ask("change x")
    listing, changed, run = results(model)
    assert listing.startswith("notebook analysis.ipynb: 2 cells as last saved (unsaved edits not shown)")
    assert "[1] id run · code · not run · the running %%monad cell (this conversation)" in listing
    assert "accepted; this frontend cannot change cell load from the kernel, so the source is shown" in changed
    assert run.startswith("error: execute_cell: this frontend cannot run a cell for the agent")
    assert "- x = 1\n+ x = 2" in capsys.readouterr().out
    assert json.loads(vscode.file.read_text())["cells"][0]["source"] == "x = 1"  # the kernel never writes the file


def test_a_rejected_change_leaves_the_cell_free_for_the_next_proposal(vscode, capsys):
    change = {"cell_id": "load", "old_string": "x = 1", "new_string": "x = 3"}
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "load"}),
            tool_call("edit_cell_source", change),
            tool_call("edit_cell_source", change),
            "ok",
        ]
    )
    session = vscode.start(model, ["n", "y"])
    session.ask("change x")
    _, rejected, accepted = results(model)
    assert "rejected by the user" in rejected and "accepted; this frontend cannot change cell load" in accepted


def test_an_interrupt_during_the_review_ends_the_proposal_and_changes_nothing(vscode, monkeypatch):
    model = ScriptedModel([tool_call("insert_cell", {"cell_type": "code", "cell_source": "1 / 0"})])
    session = vscode.start(model, [])

    def interrupted(prompt):
        raise KeyboardInterrupt

    monkeypatch.setattr("builtins.input", interrupted)
    with pytest.raises(KeyboardInterrupt):
        session.ask("add a cell")
    assert vscode.shell.next_inputs == [] and vscode.frontend.proposals.pending_ids() == []
    decided = [e.data for e in session.store.list_events("vs") if e.kind == "notebook.decided"]
    assert [(d["decision"], d["via"]) for d in decided] == [("no answer", "interrupt")]


def test_a_cell_changed_in_the_saved_file_since_it_was_read_is_refused(vscode):
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "load"}),
            tool_call("overwrite_cell_source", {"cell_id": "load", "cell_source": "x = 2"}),
            "ok",
        ]
    )
    session = vscode.start(model, [])
    original = model.complete

    def user_saves_an_edit(messages, tools, on_text=None):
        if len(model.calls) == 1:
            saved(vscode.file, [("load", "code", "x = 5"), ("run", "code", "%%monad\nadd cells")])
        return original(messages, tools, on_text)

    model.complete = user_saves_an_edit
    session.ask("change x")
    assert results(model)[-1] == "error: overwrite_cell_source: cell load changed since you read it: read it again"


def test_nbclient_and_papermill_get_no_notebook():
    assert open_notebook(SimpleNamespace(kernel=FakeKernel(cell_id="", allow_stdin=False))) is None
    assert open_notebook(SimpleNamespace(kernel=None)) is None
    assert open_notebook(SimpleNamespace(kernel=FakeKernel(cell_id="abc", allow_stdin=True))) is not None


def test_a_new_cell_is_every_line_added_and_hidden_characters_show_as_markers():
    assert diff_lines("", "a = 1\nb = 2") == [("+", "a = 1"), ("+", "b = 2")]
    assert diff_lines("a = 1\nb = 2", "a = 1\nb = 3") == [(" ", "a = 1"), ("-", "b = 2"), ("+", "b = 3")]
    assert diff_lines("", "ok = 1\u202e  # x") == [("+", "ok = 1<U+202E>  # x")]


def test_a_change_that_copies_a_placeholder_back_is_refused_before_any_review_is_shown(vscode, capsys):
    token = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"
    saved(vscode.file, [("load", "code", f"x = 1\ntoken = '{token}'"), ("run", "code", "%%monad\nadd cells")])
    copied = {"cell_id": "load", "cell_source": "x = 2\ntoken = '[REDACTED:github]'"}
    new_cell = {"cell_type": "code", "cell_source": "t = '[REDACTED:github]'"}
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "load"}),
            tool_calls(tool_call("overwrite_cell_source", copied), tool_call("insert_cell", new_cell)),
            "ok",
        ]
    )
    session = vscode.start(model, [])  # no answer is scripted: a review that asked would fail the test
    session.ask("set x to 2")
    read, changed, inserted = results(model)
    assert "token = '[REDACTED:github]'" in read
    assert changed.startswith("error: ") and "holds [REDACTED:github]" in changed
    assert inserted.startswith("error: ") and "holds [REDACTED:github]" in inserted
    assert "The agent proposes" not in capsys.readouterr().out and vscode.shell.next_inputs == []
    assert token not in json.dumps([call.messages for call in model.calls])
