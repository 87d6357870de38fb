"""A rewind in JupyterLab with the extension, a real kernel and a real browser, asked both ways.

From a cell: the cell the undone turn put in the notebook is proposed for removal at the cell, every line shown, and
is gone from the saved file once accepted. From the panel's timeline: in the copy the conversation went on in, a turn
writes a file, rebinds a name and adds a cell; its rewind button asks first (from the keyboard: the question opens
with Cancel focused, Escape closes it), then the file is moved aside, the name gets its earlier value, the cell is
proposed for removal, the panel says so and follows the new copy; its Undo brings the file back.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.browser import ARTIFACTS
from tests.e2e.jupyter import NO_NEWS, jupyter_server, notebook_page, write_agents, write_notebook
from tests.e2e.panel_page import AUDIT
from tests.e2e.test_notebook_browser import diff_rows, on_disk, run_cell, save

CELLS = [
    "%load_ext monad_notebook",
    "x = 41",
    "%%monad\nAdd a cell that shows x.",
    "%monad rewind 1",
    "%monad panel",
    "%%monad\nWrite the file, change x and add the cell again.",
]
ADDED = "print(x + 1)  # the agent's cell\nx"
WRITES = "x = 42\nwith open('made.txt', 'w') as f:\n    f.write('made by the agent')"
SHOTS = Path(os.environ.get("MONAD_SCREENSHOTS") or ARTIFACTS)
FOCUSED = "() => document.activeElement?.dataset?.role || ''"


@pytest.mark.slow
def test_a_rewind_from_a_cell_and_from_the_panels_timeline_puts_back_cells_files_and_names(
    browser, isolated_env, tmp_path
):
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install jupyterlab)")
    insert = tool_call("insert_cell", {"cell_type": "code", "cell_source": ADDED, "cell_id": "cell-1"})
    with FakeOpenAIServer() as model:
        model.queue(insert, "Added.", tool_call("python", {"code": WRITES}), insert, "Made.")
        write_agents(isolated_env, model.base_url, notebook={"approval": "auto"}, python={"approval": "auto"})
        notebook = isolated_env / "work.ipynb"
        write_notebook(notebook, CELLS)
        with jupyter_server("lab", isolated_env, tmp_path, "work.ipynb", settings=NO_NEWS, extension=True) as url:
            page = notebook_page(browser, url, width=1400, height=1000)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            for index in range(3):
                run_cell(page, index)
            page.get_by_text("Added.").wait_for(timeout=60_000)
            save(page)
            with_the_agents_cell = on_disk(notebook)
            run_cell(page, 4)  # the new cell went in below cell-1
            said = page.locator(".jp-OutputArea-output").filter(has_text="rewound to before turn 1")
            said.wait_for(timeout=30_000)
            removal = page.locator(".monad-review[data-kind=remove]")
            removal.wait_for(timeout=10_000)
            rows, shown = diff_rows(removal), removal.locator(".monad-review-what").inner_text()
            SHOTS.mkdir(parents=True, exist_ok=True)
            measured = {}
            for width in (420, 1400):
                page.set_viewport_size({"width": width, "height": 1000})
                page.wait_for_timeout(300)
                removal.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"rewind-removal-lab-light-{width}.png"))
                measured[width] = page.evaluate(AUDIT, ".monad-review")
            removal.get_by_role("button", name="Accept", exact=True).click()
            removal.wait_for(state="detached", timeout=10_000)
            save(page)
            after = on_disk(notebook)
            said_text = said.inner_text()

            # The panel of the copy, and a turn there that writes a file, rebinds x and adds the cell again.
            run_cell(page, 4)
            header = page.locator(".monad-panel .monad-session")
            header.filter(has_text="session work@turn1").wait_for(timeout=30_000)
            run_cell(page, 5)
            page.get_by_text("Made.", exact=True).wait_for(timeout=60_000)
            made = (isolated_env / "made.txt").read_text()
            turn = page.locator("[data-role=rewind-turn][data-turn='1']")
            turn.focus()
            page.keyboard.press("Enter")
            question = page.locator("[data-role=rewind-ask]")
            question.wait_for(timeout=5_000)
            focused_first = page.evaluate(FOCUSED)
            page.keyboard.press("Escape")
            question.wait_for(state="detached", timeout=5_000)
            focused_after = page.evaluate(FOCUSED)
            turn.click()
            asked = question.inner_text()
            for width in (420, 1400):
                page.set_viewport_size({"width": width, "height": 1000})
                page.wait_for_timeout(300)
                question.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"rewind-panel-ask-lab-light-{width}.png"))
            question.get_by_role("button", name="Rewind to before turn 1").click()
            result = page.locator("[data-role=rewind-result]")
            result.wait_for(timeout=30_000)
            header.filter(has_text="session work@turn1-2").wait_for(timeout=10_000)
            result_text = result.inner_text()
            removal.wait_for(timeout=10_000)
            result.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "rewind-panel-result-lab-light-1400.png"))
            panel_measured = page.evaluate(AUDIT, ".monad-rewind")
            removal.get_by_role("button", name="Accept", exact=True).click()
            removal.wait_for(state="detached", timeout=10_000)
            made_after_rewind = (isolated_env / "made.txt").exists()
            set_aside = [p.read_text() for p in (isolated_env / ".monad-rewind").glob("*/made.txt")]

            page.locator("[data-role=rewind-undo]").click()
            question.get_by_role("button", name="Undo the rewind").click()
            result.filter(has_text="Rewind undone").wait_for(timeout=30_000)
            header.filter(has_text="session work@turn1").wait_for(timeout=10_000)
            made_after_undo = (isolated_env / "made.txt").read_text()
            save(page)
            at_the_end = on_disk(notebook)
            page.close()

    assert [source for _, source in with_the_agents_cell].count(ADDED) == 1
    assert rows == [("del", line) for line in ADDED.splitlines()]
    assert (
        shown
        == "A rewind removes this cell, which an undone turn put in (\u22122 lines): the cell stays until you accept"
    )
    assert "the conversation goes on as session 'work@turn1'" in said_text
    assert "removal of cell" in said_text and "each to accept or reject" in said_text
    assert [source for _, source in after] == CELLS
    for width, found in measured.items():
        assert [m for m in found if m["contrast"] < m["need"] or m["size"] < 11] == [], width

    assert made == "made by the agent"
    assert (focused_first, focused_after) == ("rewind-cancel", "rewind-turn")
    assert asked.startswith("Rewind to before turn 1? Turn 1 is undone: the files and names they changed are put back")
    assert result_text.startswith("Rewound")
    assert "the conversation goes on as session 'work@turn1-2'" in result_text
    assert "made.txt" in result_text and "names given their earlier value: x" in result_text
    assert "removal of cell" in result_text
    assert [m for m in panel_measured if m["contrast"] < m["need"] or m["size"] < 11] == []
    assert (made_after_rewind, set_aside) == (False, ["made by the agent"])
    assert made_after_undo == "made by the agent"
    assert [source for _, source in at_the_end] == CELLS  # the removal accepted; an undo proposes no cell back
    assert errors == []
