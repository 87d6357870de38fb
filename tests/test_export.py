"""%monad export and %monad code: the session's work as a notebook, read back from the store."""

from __future__ import annotations

import json

import pytest

from monad_notebook.errors import UsageError
from monad_notebook.export import build_notebook, export_notebook, last_turn_code, parse_run
from tests.export_script import run_session
from tests.hostile import loading_elements, render


def code_cells(notebook: dict) -> list[str]:
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_the_notebook_keeps_the_code_that_ran_in_order_and_leaves_out_failed_and_declined_code(store):
    run_session(store)
    notebook = build_notebook(store, "work")
    assert code_cells(notebook) == [
        "import math\nradius = 3\nprint('area', round(math.pi * radius ** 2, 2))",
        "doubled = radius * 2\ndoubled",
        "import sys\nprint('checked', file=sys.stderr)\nwords = ['a', 'b']\nlen(words)",
    ]
    kinds = [cell["cell_type"] for cell in notebook["cells"]]
    assert kinds == ["markdown", "markdown", "code", "code", "markdown", "markdown", "code", "markdown"]
    first, second, third = (cell for cell in notebook["cells"] if cell["cell_type"] == "code")
    assert first["outputs"] == [{"output_type": "stream", "name": "stdout", "text": ["area 28.27\n"]}]
    assert second["outputs"][0]["data"] == {"text/plain": ["6"]}
    assert [o.get("name", o["output_type"]) for o in third["outputs"]] == ["stderr", "execute_result"]


def test_the_exported_notebook_is_valid_nbformat_and_its_markdown_loads_nothing(store, tmp_path):
    import nbformat

    run_session(store)
    path, count = export_notebook(store, "work", tmp_path / "work.ipynb")
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert count == 3
    markdown = [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]
    assert "**Question**\n\nWhat is the area of a circle of radius 3?" in markdown
    assert all(loading_elements(render(text)) == [] for text in markdown)
    assert "image not loaded: <http://127.0.0.1:9/leak.png?d=secret>" in markdown[-1]


@pytest.mark.parametrize(
    ("target", "message"),
    [("work.txt", "give a path ending in .ipynb"), ("nowhere/work.ipynb", "does not exist")],
)
def test_a_bad_export_path_is_one_clear_error_and_writes_nothing(store, tmp_path, target, message):
    run_session(store)
    with pytest.raises(UsageError, match=message):
        export_notebook(store, "work", tmp_path / target)
    assert list(tmp_path.glob("**/*.ipynb")) == [] and list(tmp_path.glob("*.tmp")) == []


def test_exporting_over_a_notebook_replaces_it_whole(store, tmp_path):
    run_session(store)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "work.ipynb").write_text("old")
    export_notebook(store, "work", folder / "work.ipynb")
    assert json.loads((folder / "work.ipynb").read_text())["nbformat"] == 4
    assert [p.name for p in folder.iterdir()] == ["work.ipynb"]


def test_the_last_turns_code_is_what_that_turn_ran_without_error(store):
    run_session(store)
    expected = "import sys\nprint('checked', file=sys.stderr)\nwords = ['a', 'b']\nlen(words)"
    assert last_turn_code(store, "work") == expected
    with pytest.raises(UsageError, match="no python code has run"):
        last_turn_code(store, "nobody")


@pytest.mark.parametrize(
    ("text", "sections"),
    [
        ("(no output)", {}),
        ("stdout:\nvalue: 3 is printed\nstderr:\nwarn", {"stdout": "value: 3 is printed", "stderr": "warn"}),
        ("value:\n   a\n0  1", {"value": "   a\n0  1"}),
        ("stdout:\nvalue: 3\nstderr:\nwarn\nvalue: 4", {"stdout": "value: 3", "stderr": "warn", "value": "4"}),
        ("displayed:\n<Figure> (image/png shown to the user)", {"displayed": "<Figure> (image/png shown to the user)"}),
        ("stdout:\nhi\nerror: ZeroDivisionError: division by zero", {"stdout": "hi", "error": "..."}),
    ],
)
def test_a_python_result_splits_back_into_its_sections(text, sections):
    parsed = parse_run(text)
    assert parsed is not None
    if "error" in sections:
        assert parsed.failed and parsed.sections["stdout"] == "hi"
    else:
        assert parsed.sections == sections


def test_a_refusal_is_not_a_run():
    assert parse_run("not run: nobody can approve Python code here") is None
    assert parse_run("the user declined to run this code") is None
