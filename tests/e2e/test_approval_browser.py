"""The approval flow as a user meets it, in a real browser: what the question names, what its keys do where the focus
is, what the kernel shows meanwhile, each way it ends, the times shown, and a page that goes away.

One JupyterLab page goes through four questions of one turn (timed, skipped, a cell to run, interrupted), then is
reloaded during the next turn's question.
"""

from __future__ import annotations

import re
import time

import pytest

from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.browser import ARTIFACTS
from tests.e2e.jupyter import NO_NEWS, jupyter_server, notebook_page, write_notebook
from tests.e2e.panel_page import AUDIT
from tests.e2e.test_asking_frontends import approvals, configure
from tests.e2e.test_cell_browser import QUESTION, printing, wait_for_question
from tests.e2e.test_notebook_browser import run_cell

pytestmark = pytest.mark.slow

KERNEL = "window.jupyterapp.shell.currentWidget.context.sessionContext.session.kernel"
ENDED = "[data-role=approval-decided]"
BAR = "el => getComputedStyle(el).borderLeftColor"
IDLE_AFTER_RELOAD = (
    "window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel?.status === 'idle'"
)
RUN_AGAIN = """(source) => {
  const panel = window.jupyterapp.shell.currentWidget;
  panel.content.widgets[3].model.sharedModel.setSource(source);
  panel.content.activeCellIndex = 3;
  window.jupyterapp.commands.execute('notebook:run-cell');
}"""


def question(page, words: str, first: bool = False):
    """The question that holds ``words``; the first of a kernel waits longer (the session opens its store)."""
    if first:
        page.locator(QUESTION).filter(has_text=words).wait_for(timeout=120_000)
    return wait_for_question(page, words)


def headers(page) -> list[str]:
    """Each tool block's summary line, as read."""
    return [" ".join(t.split()) for t in page.locator("[data-role=tool] > summary").all_inner_texts()]


def shoot(page, name: str, target) -> None:
    """Screenshots of ``target`` in light and dark, 1400 and 420 px wide; each readable (size and contrast)."""
    ARTIFACTS.mkdir(exist_ok=True)
    for theme in ("light", "dark"):
        page.evaluate(
            "async (t) => { await window.jupyterapp.commands.execute('apputils:change-theme', {theme: t}); }",
            "JupyterLab Dark" if theme == "dark" else "JupyterLab Light",
        )
        page.wait_for_function(f"document.body.dataset.jpThemeLight === '{'false' if theme == 'dark' else 'true'}'")
        for width in (1400, 420):
            page.set_viewport_size({"width": width, "height": 1000})
            page.wait_for_timeout(300)
            target.scroll_into_view_if_needed()
            target.screenshot(path=str(ARTIFACTS / f"approval-{name}-{theme}-{width}.png"))
            if name == "question":  # as wide as its output allows up to its max-width, never squeezed
                area = page.locator(".jp-OutputArea-output").filter(has=target).first
                assert target.bounding_box()["width"] >= min(0.9 * area.bounding_box()["width"], 900)
            texts = page.evaluate(AUDIT, f"{QUESTION}, {ENDED}, [data-role=tool] > summary")
            unreadable = [m for m in texts if m["contrast"] < m["need"] or m["size"] < 11]
            assert unreadable == [], (name, theme, width, unreadable)
            if name == "question":
                roles = {m["role"] for m in texts}
                assert {"run", "skip", "allow-session", "keys", "approval-summary"} <= roles, (theme, width, roles)
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_in_lab_each_question_says_what_runs_the_keys_that_work_and_each_ending_shows_its_own_look_and_time(
    browser, isolated_env, tmp_path
):
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install jupyterlab)")
    with FakeOpenAIServer() as model:
        model.queue(
            tool_call("python", {"code": "import time\ntime.sleep(1)\nprint('RAN-' + 'TIMED')"}),
            tool_call("python", printing("SKIPPED")),
            tool_call("execute_cell", {"cell_id": "cell-1"}),
            tool_call("python", printing("STOPPED")),
        )
        configure(isolated_env, model)
        cells = ["%load_ext monad_notebook", "print('CELL-' + 'TWO ran')", "%%monad --session ui\nDo four things."]
        write_notebook(isolated_env / "ui.ipynb", cells)
        with jupyter_server("lab", isolated_env, tmp_path, "ui.ipynb", settings=NO_NEWS, extension=True) as url:
            page = notebook_page(browser, url, width=1400, height=1000)
            run_cell(page, 0)
            page.locator(".jp-Cell").nth(2).locator(".cm-content").click()
            page.keyboard.press("Shift+Enter")  # runs the last cell: a new cell below, the cursor in it
            timed = question(page, "TIMED", first=True)
            asked = time.monotonic()
            typing_in = page.evaluate(
                "[...document.querySelectorAll('.jp-Cell')].indexOf(document.activeElement.closest('.jp-Cell'))"
            )
            keys_while_typing = timed.locator("[data-role=keys]").inner_text()
            page.keyboard.press("Enter")  # a newline in the next cell, not an answer
            page.wait_for_timeout(1000)
            kernel_while_asking = page.evaluate(f"{KERNEL}.status")
            status_bar = page.locator("#jp-main-statusbar").inner_text()
            next_cell = page.locator(".jp-Cell").nth(3).locator(".cm-content").inner_text()
            still = timed.locator("[data-role=status]").inner_text()
            page.wait_for_timeout(max(0, 3000 - int(1000 * (time.monotonic() - asked))))
            timed.locator("[data-role=run]").click()

            skipped = wait_for_question(page, "SKIPPED")
            asked = time.monotonic()
            skipped.locator("[data-role=approval-summary]").click()  # the question itself takes the focus
            keys_in_question = skipped.locator("[data-role=keys]").inner_text()
            shoot(page, "question", skipped)
            page.wait_for_timeout(max(0, 1500 - int(1000 * (time.monotonic() - asked))))
            skipped.locator("[data-role=approval-summary]").click()
            page.keyboard.press("Escape")

            cell = wait_for_question(page, "cell 2 (id cell-1")
            about_cell = " ".join(cell.inner_text().split())
            cell.locator("[data-role=run]").click()

            stopped = wait_for_question(page, "STOPPED")
            page.wait_for_timeout(1000)
            page.locator("jp-button[data-command='notebook:interrupt-kernel']").click()  # the toolbar's square
            ended = page.locator(ENDED)
            ended.filter(has_text="interrupted").wait_for(timeout=60_000)
            ran_after = page.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output")
            ran_after.filter(has_text="CELL-TWO ran").wait_for(timeout=60_000)
            records = ended.all_inner_texts()
            looks = [(el.get_attribute("data-status"), el.evaluate(BAR)) for el in ended.all()]
            tools = headers(page)
            assert stopped.count() == 0
            shoot(page, "ended", page.locator(".jp-Cell").nth(2).locator(".jp-OutputArea"))

            # the page is reloaded during a question: the reloaded page has not the running cell's outputs
            model.queue(tool_call("python", printing("RELOADED")), tool_call("python", printing("NEVER")), "Done.")
            page.evaluate(RUN_AGAIN, "%%monad --session ui\nTwo more.")
            wait_for_question(page, "RELOADED")
            reloaded = time.monotonic()
            page.reload()
            page.wait_for_function(IDLE_AFTER_RELOAD, timeout=60_000)
            held = time.monotonic() - reloaded
            page.close()
    stored = approvals(isolated_env, "ui")

    # the keys: after Shift+Enter the cursor is in the next cell, where Enter types a newline
    assert typing_in == 3 and keys_while_typing.startswith("Click Run or Skip")
    assert next_cell.count("\n") >= 1 and "sending" not in still
    assert keys_in_question == "Enter runs · Esc skips"
    # the kernel is busy while the cell waits for an answer, and the status bar says so
    assert kernel_while_asking == "busy" and "Busy" in status_bar, status_bar
    # the cell to run is named and placed, and runs once the turn ends
    assert "run cell 2 (id cell-1, just above this one) when this turn ends" in about_cell
    assert records[2] == "approved: cell 2 will run when this turn ends (answered in this cell)"
    # the times: the code's own, the wait apart; a skip says so; an interrupt never stays "running"
    done, skip, queued, interrupted = tools
    timed = re.fullmatch(r".* · done in ([\d.]+) s · waited ([\d.]+) s for you", done)
    took, waited = (float(n) for n in timed.groups())
    assert 1.0 <= took < 2.5 and waited >= 3 and abs(waited - stored[0]["waited"]) < 0.2, done  # sleep(1) took 1 s
    assert re.search(r" · skipped · waited [\d.]+ s for you$", skip) and "not run in" not in skip, skip
    assert "running" not in interrupted and " · interrupted · waited " in interrupted, interrupted
    assert queued.startswith("execute_cell") and " · done in 0." in queued
    # each ending its own look
    assert [status for status, _ in looks] == ["run", "skip", "run", "cancelled"]
    colors = {status: bar for status, bar in looks}
    assert len({colors["run"], colors["skip"], colors["cancelled"]}) == 3, looks
    assert records[3] == "interrupted: the code did not run"
    # the store keeps each decision and how long the user took
    assert [(d["decision"], d["via"]) for d in stored[:4]] == [
        ("run", "cell"),
        ("skip", "cell"),
        ("run", "cell"),
        ("skip", "interrupt"),
    ]
    assert stored[0]["waited"] >= 3 and stored[1]["waited"] >= 1.5
    assert stored[2]["subject"] == "cell:2:cell-1:just above this one"
    # a reloaded page gets no question it cannot see: the kernel is not held for the question's 10 minutes, and the
    # cell's next question is not even put
    assert held < 30, held
    assert [(d["decision"], d.get("why")) for d in stored[4:]] == [("no answer", "page gone")] * 2
    assert stored[4]["waited"] < 20 and stored[5]["waited"] < 1, stored[4:]
