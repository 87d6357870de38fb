"""A rewind puts the notebook's cells back as diffs the user decides: a cell the undone turns inserted is proposed
for removal, a cell they changed gets its earlier source, and a cell the user edited since is shown from their edit.

The notebook is the extension's side played in Python (``tests/notebook/fake_extension.py``).
"""

from __future__ import annotations

from monad_notebook.cell.rewind import rewind_session
from monad_notebook.testing import ScriptedModel, tool_call
from tests.notebook.test_cell_tools import CELLS, FIXED, open_notebook

MINE = "df.sum()  # my own edit"


def test_the_cells_the_undone_turns_changed_come_back_only_as_the_user_accepts_them():
    model = ScriptedModel(
        [
            tool_call("read_cell", {"cell_id": "group"}),
            tool_call("overwrite_cell_source", {"cell_id": "group", "cell_source": FIXED}),
            "Fixed the groupby.",
            tool_call("insert_cell", {"cell_type": "code", "cell_source": "df.head()", "cell_id": "group"}),
            "Added a look at the head.",
            tool_call("overwrite_cell_source", {"cell_id": "group", "cell_source": "df.sum()"}),
            "Summed instead.",
        ]
    )
    session, notebook = open_notebook(model, approval="auto")
    session.ask("fix the groupby")
    session.ask("show me the head")
    (new_cell,) = [c["id"] for c in notebook.cells if c["id"] not in {cid for cid, _, _ in CELLS}]
    session.ask("sum it instead")
    notebook.type_into("group", MINE)

    _, lines = rewind_session(session, 2)

    back, removal = notebook.pending.values()  # the cell changed last first
    assert (removal["kind"], removal["cell_id"], removal["base"]) == ("remove", new_cell, "df.head()")
    assert (back["kind"], back["cell_id"], back["base"], back["source"]) == ("change", "group", MINE, FIXED)
    assert lines[-1] == (
        "proposed back at the cells, each to accept or reject: cell group back as it was before the undone turns "
        f"(+1 \u22121 lines; 1 line in all); removal of cell {new_cell}, which an undone turn put in (\u22121 lines)"
    )
    assert [c["source"] for c in notebook.cells if c["id"] == "group"] == [MINE]  # nothing changed unasked
    notebook.click(removal["id"], accept=True)
    notebook.click(back["id"], accept=False)
    assert [c["id"] for c in notebook.cells] == [cid for cid, _, _ in CELLS]
    assert [c["source"] for c in notebook.cells if c["id"] == "group"] == [MINE]  # rejected: the user's edit stays
    assert session.notebook.untold() == []  # what became of a rewind's proposals is the user's, not the agent's


def test_without_a_page_the_rewind_names_the_cells_to_look_at():
    model = ScriptedModel(
        [tool_call("insert_cell", {"cell_type": "code", "cell_source": "df.head()", "cell_id": "group"}), "Added."]
    )
    session, notebook = open_notebook(model, approval="auto")
    session.ask("show me the head")
    notebook.possible = False  # the page is gone
    session.notebook.kernel.execution += 1  # asked from the next cell

    _, lines = rewind_session(session, 1)

    assert lines[-1].startswith("cells the undone turns put in the notebook (new ")
    assert lines[-1].endswith("this frontend cannot show a change at a cell: put the cells back by hand")
