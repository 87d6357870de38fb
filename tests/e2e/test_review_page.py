"""The review of a proposed cell in the running cell's output (frontends without the extension), in a real browser.

The widget's own module and stylesheet on a page themed with JupyterLab's light and dark variables,
a fake anywidget model: every line of the diff is text (a model-written ``<img>`` loads nothing),
the buttons are named Accept and Reject, a click sends the answer, and every text is readable at
420 and 1400 px. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import pytest

from monad_notebook.approval.in_cell import HERE
from monad_notebook.notebook.proposals import Proposal, diff_lines
from monad_notebook.widget.cell_review import DONE, CellReview
from tests.e2e.browser import ARTIFACTS, counting_server, serve
from tests.e2e.panel_page import AUDIT, PAGE, THEMES, theme_css
from tests.hostile import MARKDOWN_LOADS


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("review-page")
    (root / "review.js").write_text((HERE / "in_cell.js").read_text(encoding="utf-8"), encoding="utf-8")
    (root / "review.css").write_text(CellReview._css, encoding="utf-8")
    page = PAGE.replace("panel.js", "review.js").replace("panel.css", "review.css")
    for theme in THEMES:
        css = theme_css(theme)
        if css is None:
            pytest.skip("jupyterlab is not installed: its theme stylesheets are what the review is checked against")
        (root / f"theme-{theme}.css").write_bytes(css.read_bytes())
        (root / f"{theme}.html").write_text(page.replace("THEME", f'<link rel="stylesheet" href="theme-{theme}.css">'))
    with serve(root) as base:
        yield base


@pytest.mark.parametrize("width", [420, 1400])
@pytest.mark.parametrize("theme", THEMES)
def test_the_review_in_the_cell_output_is_text_named_accept_and_reject_and_readable(browser, site, theme, width):
    with counting_server() as (host, hits):
        base = "rows = [3, 1, 2]\ntotal = sum(rows)"
        proposed = "rows = [3, 1, 2, 4]\ntotal = sum(rows)\n" + "\n".join(
            f"# {load.text.replace('HOST', host.removeprefix('http://'))}" for load in MARKDOWN_LOADS[13:20]
        )
        lines = diff_lines(base, proposed)
        state = {
            "request": {"id": "q1", "title": "change to cell data", "lines": lines, "limit": "10 min", "done": DONE},
            "status": "waiting",
        }
        page = browser.new_page(viewport={"width": width, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{site}/{theme}.html")
        page.wait_for_function("window.ready === true")
        page.evaluate("state => window.mount(state)", state)
        review = page.locator("[data-role=cell-review]")
        rows = review.locator(".monad-review-line").all_inner_texts()
        ARTIFACTS.mkdir(exist_ok=True)
        review.screenshot(path=str(ARTIFACTS / f"cell-review-{theme}-{width}.png"))
        measured = page.evaluate(AUDIT, "[data-role=cell-review]")
        accept = review.get_by_role("button", name="Accept", exact=True)
        assert review.get_by_role("button", name="Reject", exact=True).is_visible()
        assert review.bounding_box()["width"] >= min(width - 40, 880)
        accept.click()
        sent = page.evaluate("window.model.sent")
        page.wait_for_timeout(200)
        page.close()
    assert hits == [] and errors == []
    assert len(rows) == len(lines) and any("<img" in row for row in rows)  # shown as the text it is
    said = [{k: v for k, v in m.items() if k != "view"} for m in sent]  # each view names itself
    assert {"type": "shown", "id": "q1"} in said
    assert {"type": "approval", "id": "q1", "run": True, "always": False} in said
    assert [m for m in measured if m["contrast"] < m["need"] or m["size"] < 11] == []


LONG_LINE = "x = '" + "".join(chr(97 + i % 26) for i in range(2_990)) + "'  # END"  # 3,003 characters
SHOWN_WHOLE = """(selector) => {
  const diff = document.querySelector(selector);
  const texts = [...diff.querySelectorAll('.monad-review-text')];
  return {
    box: [diff.scrollHeight, diff.clientHeight, diff.scrollWidth, diff.clientWidth],
    clipped: texts.filter(t => t.scrollWidth > t.clientWidth + 1).length,
    rows: texts.map(t => t.textContent),
  };
}"""


@pytest.mark.parametrize("width", [420, 1400])
@pytest.mark.parametrize("theme", THEMES)
def test_a_proposed_cell_with_a_very_long_line_is_shown_whole_with_its_size(browser, site, theme, width):
    proposal = Proposal(
        id="p1", kind="insert", cell_id="c", source=f"{LONG_LINE}\nprint(x)", new_id="n", anchor_is_running=True
    )
    state = {
        "request": {"id": "q2", "title": proposal.summary(), "lines": proposal.lines, "limit": "10 min", "done": DONE},
        "status": "waiting",
    }
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(f"{site}/{theme}.html")
    page.wait_for_function("window.ready === true")
    page.evaluate("state => window.mount(state)", state)
    review = page.locator("[data-role=cell-review]")
    title = review.locator(".monad-ask-title").inner_text()
    shown = page.evaluate(SHOWN_WHOLE, "[data-role=review-diff]")
    ARTIFACTS.mkdir(exist_ok=True)
    review.screenshot(path=str(ARTIFACTS / f"cell-review-long-line-{theme}-{width}.png"))
    page.close()
    assert "2 lines, longest line 3,003 characters" in title
    assert shown["rows"] == [LONG_LINE, "print(x)"]
    scroll_height, height, scroll_width, box_width = shown["box"]
    assert scroll_height <= height + 1 and scroll_width <= box_width + 1  # nothing scrolled out of sight
    assert shown["clipped"] == 0
