"""The agent works in the notebook, in JupyterLab and Notebook 7 with the extension: a real kernel, a real browser.

The agent reads the notebook (a secret in a cell stays out of what the model receives), proposes a
new cell, a new source for one cell and an edit of another. While they wait the user adds a line to
the first cell (the change is offered on top of it, shown as it would land, and applied) and edits
the very line the other change touches (set aside with only Dismiss); the new cell is rejected in
one app and accepted in the other, where the notebook stays trusted and is saved signed. A
save while they wait writes none of them; a save after writes exactly what was accepted; the agent
is told every decision with the next message. A cell the agent runs is queued and has run by the
next turn. A code block of the answer keeps its lines whole at 420 px. The review is screenshotted
and its contrast measured at 420 and 1400 px, in the light theme in JupyterLab and the dark theme
in Notebook 7.
"""

from __future__ import annotations

import json

import pytest

from monad_notebook import events as ev
from monad_notebook.testing import FakeOpenAIServer, tool_call, tool_calls
from tests.conversation import conversation
from tests.e2e.browser import ARTIFACTS, counting_server
from tests.e2e.jupyter import (
    DARK_THEME,
    NO_NEWS,
    jupyter_server,
    notebook_page,
    sign,
    signed,
    write_agents,
    write_notebook,
)
from tests.e2e.panel_page import AUDIT

TOKEN = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"
CELLS = [
    "%load_ext monad_notebook",
    "rows = [3, 1, 2]\ntotal = sum(rows)",
    f"API_TOKEN = '{TOKEN}'",
    "label = 'old'",
    "%%monad\nTidy my notebook.",
    "%%monad\nThanks.",
    "%monad status",
]
NEW_ROWS = "rows = [3, 1, 2, 4]\ntotal = sum(rows)"
MY_LINE = "# rows as of today"
ON_TOP = f"{NEW_ROWS}\n{MY_LINE}"  # the agent's change on top of the line the user added
CODE_LINE = "region_summary_widget = SummaryWidget(sales, by='region', title='Revenue by region and quarter')"
ANSWER = f"I proposed three changes. To look at them:\n\n```python\n{CODE_LINE}\n```"
TRUST = ".jp-NotebookTrustedStatus"
NEW_CELL = 'ordered = sorted(rows)  # <img src="http://HOST/leak.png">\nordered'
BUTTONS = ("Accept", "Reject", "Apply on top", "Dismiss")
KERNEL_IDLE = "window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel?.status === 'idle'"


def on_disk(path) -> list[tuple[str, str]]:
    return [(c["id"], "".join(c["source"])) for c in json.loads(path.read_text())["cells"]]


def save(page) -> None:
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")


def run_cell(page, index: int) -> None:
    page.evaluate(
        """async (index) => {
            const panel = window.jupyterapp.shell.currentWidget;
            panel.content.activeCellIndex = index;
            await window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )


# How many lines a code block of the answer takes on screen, and whether it scrolls sideways instead of wrapping.
CODE_BLOCK = """(text) => {
  const pre = [...document.querySelectorAll('.jp-RenderedMarkdown pre')].find(p => p.textContent.includes(text));
  const range = document.createRange();
  range.selectNodeContents(pre);
  const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
  return {lines: tops.size, scrolls: pre.scrollWidth > pre.clientWidth};
}"""


def trust_shown(page) -> str:
    """What Notebook 7's toolbar says of the notebook's trust, once it has redrawn."""
    page.wait_for_timeout(300)
    return page.locator(TRUST).inner_text()


def type_at_the_end(page, index: int, text: str, *, new_line: bool) -> None:
    page.locator(".jp-Cell").nth(index).locator(".cm-content").click()
    page.keyboard.press("Control+End")
    if new_line:
        page.keyboard.press("Enter")
    page.keyboard.type(text)
    page.keyboard.press("Escape")


def diff_rows(review) -> list[tuple[str, str]]:
    """(kind, text) of each diff line as drawn: add, del or same."""
    rows = review.locator(".monad-review-line").evaluate_all(
        "rows => rows.map(r => [r.className.split('monad-review-').pop(), r.lastChild.textContent])"
    )
    return [(kind, text) for kind, text in rows]


@pytest.mark.slow
@pytest.mark.parametrize(("app", "theme"), [("lab", "light"), ("notebook", "dark")])
def test_the_agent_proposes_cells_the_user_decides_at_each_and_the_save_holds_what_was_accepted(
    browser, isolated_env, tmp_path, app, theme
):
    module = {"lab": "jupyterlab", "notebook": "notebook"}[app]
    pytest.importorskip(module, reason=f"{module} is not installed (pip install {module})")
    accept_insert = app == "notebook"  # each app accepts one kind of proposal and rejects the other
    with counting_server() as (host, hits), FakeOpenAIServer() as model:
        new_cell = NEW_CELL.replace("HOST", host.removeprefix("http://"))  # a model-written <img>: shown as text
        model.queue(
            tool_call("read_notebook", {}),
            tool_calls(
                tool_call("insert_cell", {"cell_type": "code", "cell_source": new_cell}),
                tool_call("overwrite_cell_source", {"cell_id": "cell-1", "cell_source": NEW_ROWS}),
                tool_call("edit_cell_source", {"cell_id": "cell-3", "old_string": "'old'", "new_string": "'new'"}),
                tool_call("execute_cell", {"cell_id": "cell-2"}),
            ),
            ANSWER,
            tool_call("read_cell", {"cell_id": "cell-2"}),
            "Noted.",
        )
        write_agents(isolated_env, model.base_url, python={"approval": "auto"})
        notebook = isolated_env / "work.ipynb"
        write_notebook(notebook, CELLS)
        sign(notebook, tmp_path)  # the user's own notebook: trusted when it opens
        settings = DARK_THEME if theme == "dark" else NO_NEWS
        with jupyter_server(app, isolated_env, tmp_path, "work.ipynb", settings=settings, extension=True) as url:
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(f"{exc} {exc.stack}"))
            page.goto(url)
            page.wait_for_function(KERNEL_IDLE, timeout=60_000)
            page.evaluate("() => { const s = window.jupyterapp.shell; s.collapseLeft?.(); s.collapseRight?.(); }")
            for index in range(5):
                run_cell(page, index)
            page.get_by_text("I proposed three changes.").wait_for(timeout=60_000)
            bar = page.locator(".monad-review-bar")
            bar.wait_for(timeout=10_000)
            assert bar.get_by_role("button", name="Accept all", exact=True).is_visible()
            assert bar.get_by_role("button", name="Reject all", exact=True).is_visible()
            inserted = page.locator(".monad-review[data-kind=insert]")
            changed, edited = (page.locator(".jp-Cell").nth(n).locator(".monad-review") for n in (1, 3))
            assert diff_rows(inserted) == [("add", line) for line in new_cell.splitlines()]  # every line added
            rows = [("del", "rows = [3, 1, 2]"), ("add", "rows = [3, 1, 2, 4]"), ("same", "total = sum(rows)")]
            assert diff_rows(changed) == rows

            save(page)
            pending_save = on_disk(notebook)

            type_at_the_end(page, 1, MY_LINE, new_line=True)  # a line the agent's change does not touch
            type_at_the_end(page, 3, "  # mine", new_line=False)  # the very line the agent's change rewrites
            on_top = changed.get_by_role("button", name="Apply on top", exact=True)
            on_top.wait_for(timeout=10_000)
            edited.get_by_text("You edited this cell").wait_for(timeout=10_000)
            edited.get_by_text("It cannot be applied on top: your edit and the agent").wait_for(timeout=10_000)
            merged_rows = diff_rows(changed)
            offered = {name: edited.get_by_role("button", name=name, exact=True).is_visible() for name in BUTTONS}
            ARTIFACTS.mkdir(exist_ok=True)
            measured, code_block = {}, {}
            for width in (420, 1400):
                page.set_viewport_size({"width": width, "height": 1200})
                page.wait_for_timeout(300)
                changed.scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / f"notebook-review-{app}-{theme}-{width}.png"))
                measured[width] = page.evaluate(AUDIT, ".monad-review, .monad-review-bar")
                assert changed.bounding_box()["width"] >= min(0.6 * width, 700)  # never squeezed to a sliver
                answer = page.locator(".jp-RenderedMarkdown pre").filter(has_text="SummaryWidget")
                answer.scroll_into_view_if_needed()
                page.screenshot(path=str(ARTIFACTS / f"notebook-answer-{app}-{theme}-{width}.png"))
                code_block[width] = page.evaluate(CODE_BLOCK, "SummaryWidget")

            on_top.click()
            edited.get_by_role("button", name="Dismiss", exact=True).click()
            trust = [trust_shown(page)] if app == "notebook" else []
            decision = "Accept" if accept_insert else "Reject"
            inserted.get_by_role("button", name=decision, exact=True).click()
            bar.wait_for(state="hidden", timeout=10_000)
            trust += [trust_shown(page)] if app == "notebook" else []
            save(page)
            after = on_disk(notebook)
            trust += [trust_shown(page)] if app == "notebook" else []

            run_cell(page, 6 if accept_insert else 5)
            page.get_by_text("Noted.").wait_for(timeout=60_000)
            run_cell(page, 7 if accept_insert else 6)
            status = page.locator(".jp-OutputArea-output").filter(has_text="The agent reads work.ipynb")
            status.wait_for(timeout=30_000)
            status_text = status.inner_text()
            save(page)  # with the turns' outputs: the server signs it only if every cell is trusted
            page.close()
        signed_on_disk = signed(notebook, tmp_path)
        requests = model.chat_requests
        loaded = list(hits)

    app_name = {"lab": "JupyterLab", "notebook": "Jupyter Notebook"}[app]
    assert f"The agent reads work.ipynb as open in {app_name} (unsaved edits included)" in status_text
    original = [(f"cell-{n}", source) for n, source in enumerate(CELLS)]
    assert pending_save == original  # a save while changes wait writes none of them
    assert merged_rows == [
        ("del", "rows = [3, 1, 2]"),
        ("add", "rows = [3, 1, 2, 4]"),
        ("same", "total = sum(rows)"),
        ("same", MY_LINE),
    ]  # what "Apply on top" puts in the cell, against the cell as the user left it
    assert offered == {"Accept": False, "Reject": False, "Apply on top": False, "Dismiss": True}
    sources = dict(after)
    assert sources["cell-1"] == ON_TOP  # the agent's change and the user's line, both
    assert sources["cell-3"] == "label = 'old'  # mine"  # the user's edit, not the agent's
    if accept_insert:
        assert [source for _, source in after].count(new_cell) == 1
        assert [cid for cid, _ in after].index("cell-4") + 1 == [source for _, source in after].index(new_cell)
        assert trust == ["Trusted"] * 3 and signed_on_disk  # before, accepted, saved; as it opens next time
    else:
        assert new_cell not in sources.values() and len(after) == len(CELLS)
    assert loaded == []  # the <img> in the proposed cell was drawn as text, in the review and in the cell
    for width, block in code_block.items():
        assert block == {"lines": 1, "scrolls": width == 420}, (width, block)  # whole, never "Widg / et"

    sent = json.dumps(requests)
    assert TOKEN not in sent and TOKEN[:12] not in sent  # the secret cell never reaches the model
    listing = next(m["content"] for m in requests[1]["messages"] if m["role"] == "tool")
    assert "[2] id cell-2 · code · ran as [3]" in listing and "API_TOKEN = '[REDACTED:" in listing
    queued = [m["content"] for m in requests[2]["messages"] if m["role"] == "tool"][-1]
    assert queued.startswith("queued: cell cell-2 runs when this turn ends")
    reread = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert reread.startswith("[2] id cell-2 · code · ran as [6]")  # the queued run came after the turn
    told = next(m["content"] for m in reversed(conversation(requests[-1]["messages"])) if m["role"] == "user")
    assert f"accepted; it is in the notebook now; the cell's new source:\n```\n{ON_TOP}\n```" in told
    assert ("accepted; it is in the notebook now" if accept_insert else "rejected by the user; nothing changed") in told
    assert "not applied: the user edited the cell while the change waited" in told and told.endswith("Thanks.")
    assert [e for e in errors if "extensions/monad-notebook/" in e] == []  # Notebook 7 has its own, unrelated
    for width, texts in measured.items():
        roles = {m["text"] for m in texts}
        expected = {"Accept", "Reject", "Accept all", "Reject all", "proposed", "Apply on top", "Dismiss"}
        assert expected | {"on top of your edit", "set aside"} <= roles, (width, roles)
        unreadable = [m for m in texts if m["contrast"] < m["need"] or m["size"] < 11]
        assert unreadable == [], (theme, width, unreadable)

    from monad_notebook.store.lance import LanceStore

    store = LanceStore(isolated_env.parent / "monad-home" / "db")
    try:
        decided = sorted(e.data["decision"] for e in store.list_events("work", kind=ev.NOTEBOOK_DECIDED))
        owner = store.get_session("work").meta["notebook"]
    finally:
        store.close()
    assert decided == (["accepted", "accepted", "outdated"] if accept_insert else ["accepted", "outdated", "rejected"])
    assert owner == str(notebook.resolve())  # the notebook's own session, found where the page says it is
    assert json.loads(notebook.read_text())["metadata"]["monad"] == {"session": "work"}  # saved with the file


LONG_LINE = "x = '" + "".join(chr(97 + i % 26) for i in range(2_990)) + "'  # END"  # 3,003 characters
SHOWN_WHOLE = """(review) => {
  const diff = review.querySelector('.monad-review-diff');
  const texts = [...diff.querySelectorAll('.monad-review-text')];
  return {
    box: [diff.scrollHeight, diff.clientHeight, diff.scrollWidth, diff.clientWidth],
    clipped: texts.filter(t => t.scrollWidth > t.clientWidth + 1).length,
    rows: texts.map(t => t.textContent),
    what: review.querySelector('.monad-review-what').textContent,
  };
}"""


@pytest.mark.slow
def test_a_proposed_cell_with_a_very_long_line_is_shown_whole_at_the_cell_with_its_size(
    browser, isolated_env, tmp_path
):
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install jupyterlab)")
    with FakeOpenAIServer() as model:
        model.queue(tool_call("insert_cell", {"cell_type": "code", "cell_source": f"{LONG_LINE}\nprint(x)"}), "Done.")
        write_agents(isolated_env, model.base_url)
        write_notebook(isolated_env / "long.ipynb", ["%load_ext monad_notebook", "%%monad\nAdd the cell."])
        with jupyter_server("lab", isolated_env, tmp_path, "long.ipynb", settings=NO_NEWS, extension=True) as url:
            page = notebook_page(browser, url, width=1400, height=1000)
            for index in range(2):
                run_cell(page, index)
            page.get_by_text("Done.").wait_for(timeout=60_000)
            review = page.locator(".monad-review[data-kind=insert]")
            ARTIFACTS.mkdir(exist_ok=True)
            shown = {}
            for theme in ("light", "dark"):
                if theme == "dark":
                    page.evaluate(
                        "() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})"
                    )
                    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=10_000)
                for width in (420, 1400):
                    page.set_viewport_size({"width": width, "height": 2400})  # the whole review in sight
                    page.wait_for_timeout(300)
                    review.scroll_into_view_if_needed()
                    review.screenshot(path=str(ARTIFACTS / f"notebook-review-long-line-{theme}-{width}.png"))
                    shown[(theme, width)] = review.evaluate(SHOWN_WHOLE)
            page.close()
    for (theme, width), seen in shown.items():
        assert "(2 lines, longest line 3,003 characters)" in seen["what"], (theme, width)
        assert seen["rows"] == [LONG_LINE, "print(x)"] and seen["clipped"] == 0, (theme, width)
        scroll_height, height, scroll_width, box_width = seen["box"]
        assert scroll_height <= height + 1 and scroll_width <= box_width + 1, (theme, width, seen["box"])
