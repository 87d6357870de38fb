"""The notebook tools through a real Session: what the model received, what the notebook holds, what was stored.

The notebook is the extension's side played in Python (``fake_extension.py``); the real extension
in JupyterLab and Notebook 7 is driven in ``tests/e2e/test_notebook_browser.py``.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.agent.tools.consent import NOBODY_FOR_WRITTEN
from monad_notebook.agent.tools.python import DECLINED
from monad_notebook.approval.decided import said
from monad_notebook.approval.gate import Answer, ApprovalGate, wording
from monad_notebook.config import Config
from monad_notebook.events import Event
from monad_notebook.export import export_notebook
from monad_notebook.notebook.frontend import NotebookFrontend
from monad_notebook.testing import MemoryStore, ScriptedModel, tool_call, tool_calls
from monad_notebook.widget.report import render_text, state_from_session
from monad_notebook.widget.state import PanelState
from tests.notebook.fake_extension import FakeExtension, FakeKernel

FIXED = "df.groupby('region')['total'].sum()"
TOKEN = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"
CELLS = [
    ("load", "code", "import pandas as pd\ndf = pd.read_csv('sales.csv')"),
    ("notes", "markdown", "# Sales by region"),
    ("group", "code", "df.groupby('region').sum()"),
    ("monad", "code", "%%monad\nfix the groupby in the cell above"),
]


def open_notebook(
    model: ScriptedModel, cells=CELLS, *, approval: str = "ask", python: str = "ask", store=None
) -> tuple[Session, FakeExtension]:
    frontend = NotebookFrontend(SimpleNamespace(user_ns={}), FakeKernel())
    notebook = FakeExtension(frontend, list(cells))
    config = Config.model_validate({"tools": {"notebook": {"approval": approval}, "python": {"approval": python}}})
    session = Session("nb", config=config, store=store or MemoryStore(), model=model, notebook=frontend)
    return session, notebook  # the session ties the notebook to its events and its tools.notebook itself


def tool_results(model: ScriptedModel, call: int = -1) -> list[str]:
    return [m["content"] for m in model.calls[call].messages if m["role"] == "tool"]


def offered(model: ScriptedModel) -> set[str]:
    return {t["function"]["name"] for t in model.calls[0].tools}


def test_the_agent_reads_the_open_notebook_by_id_type_source_and_execution_count_with_its_own_cell_marked():
    model = ScriptedModel([tool_call("read_notebook", {}), "I see four cells."])
    session, notebook = open_notebook(model)
    notebook.cells[0]["execution_count"] = 3
    session.ask("what is in my notebook?")
    (read,) = tool_results(model)
    assert read.startswith("notebook work.ipynb: 4 cells as open now (unsaved edits included); cells 0-3:")
    assert "[0] id load · code · ran as [3]\nimport pandas as pd\ndf = pd.read_csv('sales.csv')" in read
    assert "[1] id notes · markdown\n# Sales by region" in read
    assert "[2] id group · code · not run\ndf.groupby('region').sum()" in read
    assert "[3] id monad · code · not run · the running %%monad cell (this conversation)" in read
    assert {"read_notebook", "read_cell", "insert_cell", "overwrite_cell_source", "edit_cell_source"} < offered(model)


def test_a_secret_in_a_cell_or_its_output_never_reaches_the_model():
    cells = [("key", "code", f"token = '{TOKEN}'\n" + "x = 1\n" * 2000), ("monad", "code", "%%monad\nhelp")]
    listing = tool_call("read_notebook", {"include_outputs": True})
    reads = tool_calls(listing, tool_call("read_cell", {"cell_id": "key"}))
    model = ScriptedModel([reads, "ok"])
    session, notebook = open_notebook(model, cells)
    notebook.cells[0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": f"using {TOKEN}\n"}]
    session.ask("look")
    sent = json.dumps([call.messages for call in model.calls])
    assert TOKEN not in sent and TOKEN[:20] not in sent
    listing, whole = tool_results(model)
    assert "[REDACTED:" in listing and "read_cell('key') shows the whole source" in listing
    assert whole.count("[REDACTED:") == 2 and "x = 1\n" * 1999 in whole  # read_cell: the whole source, redacted


def test_a_long_notebook_takes_the_path_of_every_result_truncated_with_a_handle_that_pages_the_rest_back():
    cells = [(f"c{n}", "code", f"# cell {n}\n" + "value = 1\n" * 300) for n in range(20)] + [CELLS[-1]]
    model = ScriptedModel([tool_call("read_notebook", {"limit": 30}), "long."])
    session, _ = open_notebook(model, cells)
    session.ask("read it all")
    (sent,) = tool_results(model)
    assert len(sent) < 30_000 and 'read_tool_output({"id": ' in sent and "# cell 10\n" not in sent
    (result,) = [m for m in session.history() if m.role == "tool"]
    kept = session.store.get_raw_output("nb", result.tool_call_id)
    assert "# cell 19" in kept and kept.count("value = 1") == 20 * 300


def test_outputs_are_read_as_text_and_images_take_the_images_path():
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    model = ScriptedModel([tool_call("read_cell", {"cell_id": "group"}), "ok"])
    session, notebook = open_notebook(model)
    notebook.cells[2]["outputs"] = [
        {"output_type": "execute_result", "data": {"text/plain": "region  total\nNorth   10"}},
        {"output_type": "display_data", "data": {"image/png": png, "text/plain": "<Figure>"}},
        {"output_type": "error", "ename": "KeyError", "evalue": "'regoin'", "traceback": ["\x1b[31mKeyError\x1b[0m"]},
    ]
    session.ask("what did it print?")
    (read,) = tool_results(model)
    assert "outputs:\nregion  total\nNorth   10\n[image img_" in read
    assert "KeyError: 'regoin'\nKeyError" in read and "\x1b" not in read
    (result,) = [m for m in session.history() if m.role == "tool"]
    (kept,) = session.store.load_images("nb", [result.tool_call_id])[result.tool_call_id]
    assert (kept.mime, kept.width, kept.height) == ("image/png", 1, 1)


def test_proposals_wait_for_the_user_and_each_decision_is_stored_and_told_with_the_next_message():
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "group"}),
            tool_calls(
                tool_call("insert_cell", {"cell_type": "code", "cell_source": "df.head()"}),
                tool_call("overwrite_cell_source", {"cell_id": "group", "cell_source": FIXED}),
            ),
            "Proposed two changes.",
            "Thanks.",
        ]
    )
    session, notebook = open_notebook(model)
    session.ask("fix the groupby")
    _, inserted, changed = tool_results(model)
    assert changed.startswith("proposed p") and "change to cell group (+1 \u22121 lines; 1 line in all)" in changed
    assert inserted.startswith("proposed p") and "not in the notebook unless they accept" in inserted
    assert [c["source"] for c in notebook.cells][2] == "df.groupby('region').sum()"  # nothing applied yet
    assert len(notebook.cells) == 4 and len(notebook.pending) == 2
    first, second = list(notebook.pending)
    notebook.click(first, accept=False)
    notebook.click(second, accept=True)
    assert len(notebook.cells) == 4 and notebook.cells[2]["source"] == FIXED

    session.ask("thanks")  # from Python as from a cell: the decisions come first
    told = model.calls[-1].messages[-1]["content"]
    assert f"{first} (new code cell" in told and "rejected by the user; nothing changed" in told
    assert f"{second} (change to cell group" in told and "accepted; it is in the notebook now" in told
    assert told.endswith("thanks")
    decided = [
        (e.data["proposal"], e.data["decision"], e.data["via"])
        for e in session.store.list_events("nb")
        if e.kind == ev.NOTEBOOK_DECIDED
    ]
    assert decided == [(first, "rejected", "cell"), (second, "accepted", "cell")]
    proposed = [e.data for e in session.store.list_events("nb", kind=ev.NOTEBOOK_PROPOSED)]
    assert [(p["change"], p["added"], p["removed"]) for p in proposed] == [("insert", 1, 0), ("change", 1, 1)]
    exported = json.loads(export_notebook(session.store, "nb", "exported.ipynb")[0].read_text())
    questions = ["".join(c["source"]) for c in exported["cells"] if "Question" in "".join(c["source"])]
    assert questions == ["**Question**\n\nfix the groupby", "**Question**\n\nthanks"]  # the user's words only
    notebook_events = [e.data for e in session.store.list_events("nb") if e.kind.startswith("notebook.")]
    assert "df.head()" not in json.dumps(notebook_events) and "total" not in json.dumps(notebook_events)


def test_the_panel_marks_each_proposal_and_its_decision_on_the_timeline_also_when_opened_later():
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "group"}),
            tool_call("overwrite_cell_source", {"cell_id": "group", "cell_source": FIXED}),
            "Proposed.",
        ]
    )
    session, notebook = open_notebook(model)
    session.ask("fix it")
    (proposal,) = notebook.pending
    notebook.click(proposal, accept=True)
    state = state_from_session(session)
    labels = [m["label"] for m in state.markers if m["kind"] == "notebook"]
    assert labels == [
        f"turn 1 · step 2: proposed {proposal}: change to cell group, +1 \u22121 lines",
        f"turn 1 · step 3: {proposal} accepted",
    ]
    assert f"N turn 1 · step 3: {proposal} accepted" in render_text(state)


def test_a_change_to_a_cell_edited_since_it_was_read_and_an_unknown_or_unread_cell_each_get_one_line():
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "group"}),
            tool_call("overwrite_cell_source", {"cell_id": "group", "cell_source": "df.sum()"}),
            tool_call("overwrite_cell_source", {"cell_id": "load", "cell_source": "import numpy"}),
            tool_call("insert_cell", {"cell_type": "code", "cell_source": "1", "cell_id": "nope"}),
            tool_call("edit_cell_source", {"cell_id": "monad", "old_string": "fix", "new_string": "break"}),
            "done",
        ]
    )
    session, notebook = open_notebook(model)
    original = model.complete

    def user_types_between_steps(messages, tools, on_text=None):
        if len(model.calls) == 1:
            notebook.type_into("group", "df.groupby('region').mean()  # my own fix")
        return original(messages, tools, on_text)

    model.complete = user_types_between_steps
    session.ask("fix it")
    _, stale, unread, unknown, running = tool_results(model)
    assert stale == "error: overwrite_cell_source: cell group changed since you read it: read it again"
    assert unread == "error: overwrite_cell_source: cell load was not read yet: read_cell('load') first"
    assert unknown == "error: insert_cell: no cell with id nope in the notebook"
    assert running.startswith("error: edit_cell_source: cell monad is the running %%monad cell")
    assert notebook.cells[2]["source"] == "df.groupby('region').mean()  # my own fix" and not notebook.pending


def test_a_change_whose_lines_the_user_edited_is_set_aside_with_only_dismiss_and_the_agent_is_told():
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "group"}),
            tool_call("edit_cell_source", {"cell_id": "group", "old_string": "sum()", "new_string": "mean()"}),
            "Proposed.",
            "ok",
        ]
    )
    session, notebook = open_notebook(model)
    session.ask("use the mean")
    (waiting,) = notebook.pending
    notebook.type_into("group", "df.groupby('region').median()")
    offer = notebook.offers[waiting]
    assert "source" not in offer and offer["overlap"].startswith("your edit and the agent's change touch the same")
    assert session.notebook.proposals.pending_ids() == [waiting]  # set aside, not decided: the user has not said
    notebook.dismiss(waiting)
    session.ask("I did it myself")
    assert notebook.cells[2]["source"] == "df.groupby('region').median()"
    told = model.calls[-1].messages[-1]["content"]
    assert "not applied: the user edited the cell while the change waited" in told


LOAD = "import pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.head()"
COMMENTED = "# the sales of 2026\nimport pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.head()"


def test_a_change_applied_on_top_of_the_users_comment_is_shown_as_it_lands_and_the_agent_is_told_the_new_source():
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "load"}),
            tool_call("edit_cell_source", {"cell_id": "load", "old_string": "head()", "new_string": "describe()"}),
            "Proposed.",
            tool_call("edit_cell_source", {"cell_id": "load", "old_string": "describe()", "new_string": "info()"}),
            "Proposed again.",
        ]
    )
    cells = [("load", "code", LOAD), *CELLS[1:]]
    session, notebook = open_notebook(model, cells)
    session.ask("describe the data")
    (waiting,) = notebook.pending
    notebook.type_into("load", COMMENTED)
    offer = notebook.offers[waiting]
    merged = COMMENTED.replace("head()", "describe()")
    assert offer["source"] == merged and offer["summary"].startswith("A change to this cell on top of your edit")
    assert [tuple(row) for row in offer["lines"]] == [
        (" ", "# the sales of 2026"),
        (" ", "import pandas as pd"),
        (" ", "df = pd.read_csv('sales.csv')"),
        ("-", "df.head()"),
        ("+", "df.describe()"),
    ]  # the diff the user accepts: from the cell as they left it to what it will hold
    notebook.apply_on_top(waiting)
    assert notebook.cells[0]["source"] == merged
    session.ask("and use info()")
    told = model.calls[3].messages[-1]["content"]
    assert f"{waiting} (change to cell load on top of the user's edit (+1 \u22121 lines" in told
    assert f"accepted; it is in the notebook now; the cell's new source:\n```\n{merged}\n```" in told
    assert notebook.pending  # the next change is made against the merged source: the agent needs no re-read
    decided = [e.data for e in session.store.list_events("nb", kind=ev.NOTEBOOK_DECIDED)]
    assert [(d["decision"], d.get("on_top")) for d in decided] == [("accepted", True)]
    assert "sales of 2026" not in json.dumps(decided)  # events never carry a cell's text
    panel = PanelState("nb")
    panel.apply(Event(ev.NOTEBOOK_DECIDED, "nb", decided[0]))
    assert panel.markers[-1]["label"].endswith(f": {waiting} accepted on top of your edit")  # the N marker says so


def test_a_proposal_lost_with_a_reloaded_page_is_told_as_not_applied_at_the_next_turn():
    model = ScriptedModel(
        [
            tool_call("insert_cell", {"cell_type": "code", "cell_source": "df.head()"}),
            "Proposed.",
            tool_call("read_notebook", {"limit": 1}),
            "ok",
        ]
    )
    session, notebook = open_notebook(model)
    session.ask("add a cell")
    notebook.pending.clear()  # the page was reloaded: its reviews are gone
    session.notebook.kernel.execution += 1  # the next %%monad cell
    session.ask("and now?")
    listing = tool_results(model)[-1]
    assert "not applied: the notebook page was reloaded before a decision" in listing
    assert not session.notebook.proposals.pending_ids()


def test_edit_cell_source_needs_one_exact_occurrence():
    cells = [("twice", "code", "a = 1\na = 1\nb = 2"), ("monad", "code", "%%monad\nx")]
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "twice"}),
            tool_call("edit_cell_source", {"cell_id": "twice", "old_string": "a = 1", "new_string": "a = 3"}),
            tool_call("edit_cell_source", {"cell_id": "twice", "old_string": "[REDACTED:x]", "new_string": "y"}),
            tool_call("edit_cell_source", {"cell_id": "twice", "old_string": "b = 2", "new_string": "b = 3"}),
            "done",
        ]
    )
    session, notebook = open_notebook(model, cells)
    session.ask("edit")
    _, twice, redacted, once = tool_results(model)
    assert twice == (
        "error: edit_cell_source: old_string occurs 2 times in cell twice: include more of the text around it"
    )
    assert "text shown redacted cannot be matched" in redacted
    assert once.startswith("proposed p")
    (proposal,) = notebook.pending.values()
    assert proposal["source"] == "a = 1\na = 1\nb = 3" and ["-", "b = 2"] in proposal["lines"]


KEYED = ("keyed", "code", f"client = Client(token='{TOKEN}')\nrows = client.fetch()")
REDACTED_SOURCE = "client = Client(token='[REDACTED:github]')\nrows = client.fetch()"


@pytest.mark.parametrize("approval", ["ask", "auto"])
def test_a_proposal_that_copies_a_placeholder_back_is_refused_and_the_real_key_stays_in_the_cell(approval):
    copied = REDACTED_SOURCE.replace("fetch()", "fetch(limit=10)")
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "keyed"}),
            tool_call("overwrite_cell_source", {"cell_id": "keyed", "cell_source": copied}),
            tool_call("insert_cell", {"cell_type": "code", "cell_source": "tok = 'backup_[REDACTED:github]'"}),
            tool_call(
                "edit_cell_source", {"cell_id": "keyed", "old_string": "rows", "new_string": "[REDACTED:github]"}
            ),
            tool_call(
                "edit_cell_source", {"cell_id": "keyed", "old_string": "fetch()", "new_string": "fetch(limit=10)"}
            ),
            "done",
        ]
    )
    session, notebook = open_notebook(model, [KEYED, CELLS[-1]], approval=approval)
    session.ask("fetch ten rows")
    read, overwrite, insert, edit, fine = tool_results(model)
    assert REDACTED_SOURCE in read
    for refused in (overwrite, insert, edit):
        assert refused.startswith("error: ") and "holds [REDACTED:github]" in refused and "\n" not in refused
    assert fine.startswith("proposed p") or ": applied; shown to the user as a diff" in fine
    if approval == "ask":
        (waiting,) = notebook.pending
        notebook.click(waiting, accept=True)
    assert notebook.cells[0]["source"] == f"client = Client(token='{TOKEN}')\nrows = client.fetch(limit=10)"
    assert len(notebook.cells) == 2
    assert TOKEN not in json.dumps([call.messages for call in model.calls])


def test_auto_applies_at_once_and_still_shows_the_diff():
    model = ScriptedModel(
        [tool_call("insert_cell", {"cell_type": "markdown", "cell_source": "## Findings", "cell_id": "group"}), "done"]
    )
    session, notebook = open_notebook(model, approval="auto")
    session.ask("add a heading")
    (result,) = tool_results(model)
    assert "applied; shown to the user as a diff at the cell" in result
    assert [c["source"] for c in notebook.cells][3] == "## Findings" and not notebook.pending
    assert notebook.requests[-1]["proposal"]["mode"] == "auto"


def test_execute_cell_asks_naming_the_cell_and_saying_it_runs_once_the_turn_ends_and_queues_the_run():
    model = ScriptedModel(
        [tool_call("execute_cell", {"cell_id": "group"}), tool_call("execute_cell", {"cell_id": "load"}), "done"]
    )
    session, notebook = open_notebook(model)
    answers = iter([Answer(True, via="cell"), Answer(False, via="cell")])
    asked: list[tuple[str, str]] = []
    session.approve = ApprovalGate(lambda code, subject: asked.append((code, subject)) or next(answers))
    session.ask("run them")
    queued, declined = tool_results(model)
    assert queued.startswith("queued: cell group runs when this turn ends")
    assert declined == DECLINED
    assert [code for code, _ in asked] == ["df.groupby('region').sum()", CELLS[0][2]]
    (group, group_words), (load, load_words) = ((s, wording(s)) for _, s in asked)
    assert group_words.action == "run cell 3 (id group, just above this one) when this turn ends"
    assert load_words.action == "run cell 1 (id load, 3 cells above this one) when this turn ends"
    assert said("run", group) == "approved: cell 3 will run when this turn ends"
    assert said("skip", load) == "skipped: cell 1 will not run"
    assert group_words.allow == "python"  # allowing python for the session allows running cells too
    assert [r["cell_id"] for r in notebook.requests if r["op"] == "run"] == ["group"]


def test_python_allowed_for_the_session_runs_a_cell_without_asking_and_a_cell_allowed_allows_python():
    model = ScriptedModel(
        [tool_call("execute_cell", {"cell_id": "group"}), tool_call("python", {"code": "x = 1"}), "done"]
    )
    session, _ = open_notebook(model)
    asked: list[str] = []
    session.approve = ApprovalGate(lambda code, subject: asked.append(code) or Answer(True, always=True, via="cell"))
    session.ask("run it, then more")
    assert asked == ["df.groupby('region').sum()"]  # the python call ran without a question
    assert session.approve.allowed_for_session


def test_execute_cell_refuses_the_running_cell_and_any_cell_that_calls_monad_in_one_line_and_queues_none():
    calls_monad = [
        ("again", "code", "%%monad\nsay it again"),
        ("timed", "code", "%%time\n%%monad --session x\nand again"),
        ("indirect", "code", "get_ipython().run_cell_magic('monad', '', 'once more')"),
        ("line", "code", "%monad reset"),
        ("api", "code", "from monad_notebook import Session\nSession('s').ask('go on')"),
    ]
    ids = ["monad"] + [cell_id for cell_id, _, _ in calls_monad]
    model = ScriptedModel([tool_calls(*(tool_call("execute_cell", {"cell_id": i}) for i in ids)), "done"])
    session, notebook = open_notebook(model, [*CELLS, *calls_monad], python="auto")
    asked: list[str] = []
    session.approve = lambda code, **_: asked.append(code) or True
    session.ask("run them")
    running, *others = tool_results(model)
    assert running == (
        "error: execute_cell: cell monad is the running %%monad cell (this conversation): it does not run itself"
    )
    assert len(others) == len(calls_monad)
    for (cell_id, _, _), told in zip(calls_monad, others, strict=True):
        assert told.startswith(f"error: execute_cell: cell {cell_id} calls monad itself (") and "\n" not in told
        assert told.endswith("ask the user to run it")
    assert [r for r in notebook.requests if r["op"] == "run"] == [] and asked == []


def test_a_cell_changed_after_it_was_read_for_execute_cell_is_not_queued():
    model = ScriptedModel([tool_call("execute_cell", {"cell_id": "group"}), "done"])
    session, notebook = open_notebook(model, python="auto")
    original = notebook.request

    def edited_meanwhile(op: str, **data):
        reply = original(op, **data)
        if op == "read":
            notebook.cells[2]["source"] = "%%monad\nagain"  # the user, or an applied change, edits it now
        return reply

    notebook.request = edited_meanwhile
    session.ask("run it")
    (told,) = tool_results(model)
    assert told == "error: execute_cell: cell group changed since it was read: read it again"


def test_a_cell_proposed_in_the_models_text_waits_for_the_user_even_where_changes_apply_at_once():
    written = '```json\n{"name": "insert_cell", "arguments": {"cell_type": "code", "cell_source": "df.head()"}}\n```'
    model = ScriptedModel([written, "Proposed."])
    session, notebook = open_notebook(model, approval="auto")
    session.ask("add a cell")
    (told,) = tool_results(model)
    assert told.startswith("proposed p") and "a call read from the model's text" in told
    assert len(notebook.cells) == len(CELLS)  # not applied
    (shown,) = notebook.pending.values()
    assert shown["mode"] == "ask" and "a call read from the model's text" in shown["summary"]


def test_a_cell_run_asked_for_in_the_models_text_is_refused_where_nobody_can_answer():
    written = '<tool_call>\n{"name": "execute_cell", "arguments": {"cell_id": "group"}}\n</tool_call>'
    model = ScriptedModel([written, "Not run."])
    session, notebook = open_notebook(model, python="auto")
    session.ask("run the groupby")
    assert tool_results(model) == [NOBODY_FOR_WRITTEN]
    assert [r for r in notebook.requests if r["op"] == "run"] == []


def test_a_decision_taken_while_the_turn_runs_rides_on_the_next_notebook_tool_result():
    model = ScriptedModel(
        [
            tool_call("insert_cell", {"cell_type": "code", "cell_source": "df.describe()"}),
            tool_call("read_notebook", {"limit": 1}),
            "done",
            "next",
        ]
    )
    session, notebook = open_notebook(model)
    original = model.complete

    def user_accepts_between_steps(messages, tools, on_text=None):
        if len(model.calls) == 1:
            notebook.click(next(iter(notebook.pending)), accept=True)
        return original(messages, tools, on_text)

    model.complete = user_accepts_between_steps
    session.ask("add a describe")
    _, listing = tool_results(model)
    assert "Meanwhile the user decided:\n- p" in listing and "accepted; it is in the notebook now" in listing
    session.ask("next")
    assert "notebook-decisions" not in model.calls[-1].messages[-1]["content"]  # told once


def test_without_a_notebook_the_tools_are_not_offered_and_a_call_gets_one_line():
    model = ScriptedModel([tool_call("read_notebook", {}), "ok"])
    session = Session("script", store=MemoryStore(), model=model)
    session.ask("read my notebook")
    assert not offered(model) & {"read_notebook", "insert_cell", "execute_cell"}
    assert tool_results(model) == [
        "error: read_notebook: no notebook is open here (a script, nbclient or papermill run): "
        "no cell can be read or changed"
    ]


def test_approval_off_offers_no_notebook_tool():
    model = ScriptedModel([tool_call("insert_cell", {"cell_type": "code", "cell_source": "1"}), "ok"])
    session, notebook = open_notebook(model, approval="off")
    session.ask("add a cell")
    assert "insert_cell" not in offered(model) and "read_notebook" not in offered(model)
    assert tool_results(model) == ['error: insert_cell: the notebook tools are off (tools.notebook.approval is "off")']
    assert not notebook.requests


def test_the_next_turn_is_told_once_which_cells_it_read_the_user_changed_or_deleted_since():
    model = ScriptedModel([tool_call("read_notebook", {}), "I read it.", "I see your edit.", "Fine."])
    session, notebook = open_notebook(model)
    session.ask("look at my notebook")
    notebook.type_into("group", "df.groupby('region').mean()\ndf.shape")
    del notebook.cells[1]  # the markdown cell

    session.ask("I changed a few things")
    session.ask("and now?")

    told = "\n".join(str(m["content"]) for m in model.calls[2].messages)
    assert "Cells you read that the user changed since (read_cell shows them as they are now):" in told
    assert "- cell notes: deleted\n- cell group: changed (+2 \u22121 lines)" in told  # in the notebook's order
    assert "df.shape" not in told  # what changed is for read_cell to show, not the block
    assert all("cell group: changed" not in str(m["content"]) for m in model.calls[3].messages)  # told once


def test_between_executions_the_notebook_holding_the_cell_that_ran_last_answers():
    """A click in the context panel reaches the kernel with no running cell: the hello names the cell that ran last,
    so the notebook holding it answers (a rewind from the panel proposes its cells back there)."""
    ran = SimpleNamespace(info=SimpleNamespace(cell_id="group"))
    frontend = NotebookFrontend(SimpleNamespace(user_ns={}, last_execution_result=ran), FakeKernel(cell_id=""))
    notebook = FakeExtension(frontend, list(CELLS))

    assert frontend.path() == "extension"
    assert notebook.requests[0] == {"op": "hello", "cell_id": "group"}
