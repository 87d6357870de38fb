"""A rewind in JupyterLab with the extension, a real kernel and a real browser: the cell the undone turn put in the
notebook is proposed for removal at the cell, every line shown, and is gone from the saved file once accepted."""

from __future__ import annotations

import pytest

from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.browser import ARTIFACTS
from tests.e2e.jupyter import NO_NEWS, jupyter_server, notebook_page, write_agents, write_notebook
from tests.e2e.panel_page import AUDIT
from tests.e2e.test_notebook_browser import diff_rows, on_disk, run_cell, save

CELLS = ["%load_ext monad_notebook", "x = 41", "%%monad\nAdd a cell that shows x.", "%monad rewind 1"]
ADDED = "print(x + 1)  # the agent's cell\nx"


@pytest.mark.slow
def test_a_rewind_proposes_removing_the_cell_the_undone_turn_put_in_and_the_save_holds_the_decision(
    browser, isolated_env, tmp_path
):
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install jupyterlab)")
    with FakeOpenAIServer() as model:
        model.queue(
            tool_call("insert_cell", {"cell_type": "code", "cell_source": ADDED, "cell_id": "cell-1"}), "Added."
        )
        write_agents(isolated_env, model.base_url, notebook={"approval": "auto"})
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
            ARTIFACTS.mkdir(exist_ok=True)
            measured = {}
            for width in (420, 1400):
                page.set_viewport_size({"width": width, "height": 1000})
                page.wait_for_timeout(300)
                removal.scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / f"rewind-removal-lab-light-{width}.png"))
                measured[width] = page.evaluate(AUDIT, ".monad-review")
            removal.get_by_role("button", name="Accept", exact=True).click()
            removal.wait_for(state="detached", timeout=10_000)
            save(page)
            after = on_disk(notebook)
            said_text = said.inner_text()
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
    assert errors == []
