"""What an exported session needs before its code: the user's own cells, carried in, or a one-line check."""

from __future__ import annotations

import json

import pytest

from monad_notebook.export import build_notebook, last_turn_code
from monad_notebook.export.code_names import names_of
from monad_notebook.export.user_cells import Run, needs_of
from monad_notebook.messages import ToolCall
from monad_notebook.store.base import WorkspaceEntry
from monad_notebook.testing import MemoryStore

LOADED = "sales = pd.DataFrame({'region': ['n', 's', 'n'], 'amount': [1, 2, 3]})"
HISTORY = [
    "",
    "import pandas as pd",
    "%load_ext monad_notebook",
    LOADED,
    "%%monad\nWhich region sold most?",
    "print('looking')",
    "growth = sales.amount.pct_change()",
    "%%monad\nAnd the growth?",
]
SALES = WorkspaceEntry("name", "sales", "DataFrame", "3 rows x 2 cols", ["region", "amount"], 2, made_by="")


def numbers(cells) -> list[int]:
    return [cell.number for cell in cells]


@pytest.mark.parametrize(
    ("code", "reads", "binds"),
    [
        ("sales = sales.dropna()", ("sales",), {"sales"}),
        ("for row in rows:\n    total += row", ("rows", "total"), {"row", "total"}),
        ("import numpy as np\nx = np.arange(n)", ("n",), {"np", "x"}),
        ("[a * k for a in items if a > limit]", ("items", "k", "limit"), set()),
        ("%matplotlib inline\nplt.plot(xs)", ("plt", "xs"), set()),
        ("print(len(df)); display(df)", ("df",), set()),
    ],
)
def test_the_names_a_cell_needs_are_read_in_the_order_python_runs_it(code, reads, binds):
    names = names_of(code)
    assert names is not None and names.reads == reads and names.binds == binds


def test_a_function_needs_the_globals_it_reads_when_it_is_called_not_when_defined():
    names = names_of("def scaled(x):\n    local = x * factor\n    return local\n")
    assert names is not None and names.reads == () and names.later == {"factor"}


def test_a_frame_the_users_cell_loaded_before_the_session_comes_first_with_the_import_it_needs():
    needs = needs_of([Run("c1", "sales.groupby('region').amount.sum()")], [SALES], HISTORY)
    assert numbers(needs.first) == [1, 3] and needs.missing == [] and needs.before_call == {}
    assert all(cell.before_session for cell in needs.first) and needs.first[1].source == LOADED


def test_a_cell_the_record_names_between_turns_goes_before_the_code_that_needs_it():
    growth = WorkspaceEntry("name", "growth", "Series", "len 3", made_by="cell 6", turn=1)
    runs = [Run("c1", "sales.head()"), Run("c2", "growth.max()")]
    needs = needs_of(runs, [SALES, growth], HISTORY)
    assert numbers(needs.first) == [1, 3] and numbers(needs.before_call["c2"]) == [6]


def test_what_the_sessions_own_code_made_earlier_is_not_asked_of_the_user():
    runs = [Run("c1", "top = sales.amount.max()"), Run("c2", "print(top)")]
    assert numbers(needs_of(runs, [SALES], HISTORY).cells) == [1, 3]


def test_a_name_no_cell_in_reach_makes_is_missing_with_what_the_record_knew():
    model = WorkspaceEntry("name", "model", "LinearRegression", made_by="")
    needs = needs_of([Run("c1", "model.predict(sales)")], [SALES, model], None)
    assert needs.cells == [] and needs.missing == [("model", model), ("sales", SALES)]


def test_a_cell_number_from_another_kernel_is_not_taken_when_its_code_does_not_make_the_name():
    elsewhere = WorkspaceEntry("name", "sales", made_by="cell 5")  # In [5] here prints: another kernel's number
    needs = needs_of([Run("c1", "sales.head()")], [elsewhere], HISTORY)
    assert numbers(needs.cells) == [1, 3]  # the cell that does make it here


def test_what_an_agents_call_made_with_code_the_export_leaves_out_is_missing():
    made = WorkspaceEntry("name", "cleaned", made_by="call_failed")
    assert needs_of([Run("c1", "cleaned.head()")], [made], [*HISTORY, "cleaned = 1"]).missing == [("cleaned", made)]


def test_a_carried_cell_is_redacted_before_it_is_written():
    history = ["", "token = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'\nclient = connect(token)"]
    needs = needs_of([Run("c1", "client.ping()")], [], history, lambda text: text.replace("ghp_", "[REDACTED:"))
    assert "ghp_" not in needs.first[0].source and needs.missing == [("connect", None)]


def session_that_used(store: MemoryStore, code: str, entries: list[WorkspaceEntry]) -> None:
    from monad_notebook.messages import Message

    call = ToolCall("call_1", "python", json.dumps({"code": code}))
    store.create_session("s")
    store.append_messages(
        [
            Message("user", "Which region sold most?", session="s", seq=0, turn=1),
            Message("assistant", "", session="s", seq=1, turn=1, tool_calls=[call]),
            Message("tool", "stdout:\nn", session="s", seq=2, turn=1, tool_call_id="call_1", name="python"),
            Message("assistant", "North.", session="s", seq=3, turn=1),
        ]
    )
    store.save_workspace("s", entries)


def test_the_notebook_opens_with_a_check_that_stops_it_in_one_line_naming_what_is_missing():
    store = MemoryStore()
    session_that_used(store, "print(sales.groupby('region').amount.sum().idxmax())", [SALES])
    cells = build_notebook(store, "s")["cells"]
    note, check = cells[1], cells[2]
    assert "- `sales`: DataFrame 3 rows x 2 cols [region, amount]" in "".join(note["source"])
    with pytest.raises(NameError) as stopped:
        exec("".join(check["source"]), {})
    told = "define sales before running this notebook: the session's code uses them and no cell here makes them"
    assert str(stopped.value) == told
    exec("".join(check["source"]), {"sales": object()})  # where it exists, the check passes


def test_the_users_cells_are_carried_marked_as_theirs_before_the_sessions_code():
    store = MemoryStore()
    session_that_used(store, "print(sales.groupby('region').amount.sum().idxmax())", [SALES])
    cells = build_notebook(store, "s", HISTORY)["cells"]
    code = [
        (c["metadata"].get("monad", {}).get("user_cell"), "".join(c["source"]))
        for c in cells
        if c["cell_type"] == "code"
    ]
    assert code == [
        (1, "import pandas as pd"),
        (3, LOADED),
        (None, "print(sales.groupby('region').amount.sum().idxmax())"),
    ]
    assert "**Your own cells** (In [1], In [3]), run in the kernel before the session" in "".join(cells[1]["source"])


def test_the_last_turns_code_says_where_what_it_reads_came_from():
    store = MemoryStore()
    session_that_used(store, "print(sales.amount.max() * factor)", [SALES])
    told = last_turn_code(store, "s", HISTORY).splitlines()[0]
    assert told == "# uses what it does not make: sales (your cell In [3]), factor (made outside the session)"
