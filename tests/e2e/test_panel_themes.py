"""The panel is readable in JupyterLab's light and dark themes at 420, 700 and 1400 px.

Every text node is measured in the browser: rendered font size (never under 11 px) and contrast
against what it is drawn on (4.5:1, or 3:1 for large text). Screenshots go to a temp dir
(``MONAD_SCREENSHOTS`` names another), never into the repository.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.browser import serve
from tests.e2e.jupyter import DARK_THEME, NO_NEWS, jupyter_server, write_notebook
from tests.e2e.panel_page import AUDIT, THEMES, rich_state, theme_css, write_pages

WIDTHS = (420, 700, 1400)
MIN_FONT = 11
INSPECTOR_MAX = 362  # the inspector's body is bounded (360 px in panel.css), whatever the step holds
BACKGROUNDS = {"light": "rgb(255, 255, 255)", "dark": "rgb(17, 17, 17)"}
MUST_MEASURE = {
    "run", "skip", "approval-title", "save", "dismiss", "receipt", "undo", "notice", "decision", "fact",
    "workspace-row", "threshold", "marker-key", "rewind-turn", "rewind-ask", "rewind-confirm", "rewind-cancel",
    "rewind-result", "rewound-from",
}  # fmt: skip
EXPLAINED = """() => [...document.querySelectorAll('[data-role=threshold], [data-role=marker-key]')].map(
  e => [e.dataset.name || e.dataset.kind, e.textContent])"""


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    target = os.environ.get("MONAD_SCREENSHOTS")
    path = Path(target) if target else tmp_path_factory.mktemp("panel-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if theme_css("dark") is None:
        pytest.skip("jupyterlab is not installed: its theme stylesheets are what the panel is checked against")
    root = tmp_path_factory.mktemp("panel-themes")
    write_pages(root)
    with serve(root) as base:
        yield base


def unreadable(measured: list[dict]) -> list[dict]:
    return [m for m in measured if m["size"] < MIN_FONT or m["contrast"] < m["need"]]


def box(page, selector: str) -> dict:
    return page.locator(selector).first.bounding_box()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("theme", THEMES)
def test_every_text_is_readable_and_the_layout_fits_the_width(browser, site, shots, theme, width):
    page = browser.new_page(viewport={"width": width, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{site}/{theme}.html")
    page.wait_for_function("window.ready === true")
    page.evaluate("state => window.mount(state)", rich_state())
    page.click(".monad-inspector summary", position={"x": 5, "y": 5})
    page.click("[data-role=facts-box] summary", position={"x": 5, "y": 5})
    page.click("[data-role=workspace-details] summary", position={"x": 5, "y": 5})
    page.click("[data-role=rewind-turn][data-turn='2']")  # the question a rewind asks first
    page.wait_for_timeout(200)  # the resize observer redraws the timeline at its real width
    page.screenshot(path=str(shots / f"panel-{theme}-{width}.png"), full_page=True)

    background = page.evaluate("getComputedStyle(document.querySelector('.monad-panel')).backgroundColor")
    assert background == BACKGROUNDS[theme]  # the theme's variables are in force, not the fallbacks
    measured = page.evaluate(AUDIT, ".monad-panel")
    assert len(measured) > 80 and {m["role"] for m in measured} >= MUST_MEASURE
    assert unreadable(measured) == []
    explained = dict(page.evaluate(EXPLAINED))  # each mark says what it means where it is drawn, at every width
    assert explained.keys() == {"evict", "soft", "hard", "evicted", "compaction", "reinjected", "notebook"}
    assert explained["evict"] == "evict 50%: old tool results are cleared (recoverable)"
    assert explained["hard"] == "hard 90%: requests wait for the summary"
    assert explained["evicted"] == "Eeviction: old tool results cleared (recoverable)"  # the badge, then its meaning
    assert explained["notebook"].startswith("Nnotebook: a cell proposed")
    print(
        f"{theme} {width}px: min font {min(m['size'] for m in measured)} px, min contrast "
        f"{min(m['contrast'] for m in measured)}:1 over {len(measured)} texts"
    )

    panel = box(page, ".monad-panel")
    assert panel["width"] >= min(980, width - 16) - 1  # the whole width (up to its max), never a thumbnail
    timeline = page.evaluate(
        "() => { const s = document.querySelector('[data-role=timeline]');"
        " return [s.getBoundingClientRect().width / s.viewBox.baseVal.width, s.getBoundingClientRect().height]; }"
    )
    assert timeline[0] == pytest.approx(1, abs=0.02) and timeline[1] >= 150
    assert box(page, "[data-role=inspector-body]")["height"] <= INSPECTOR_MAX
    preview = box(page, "[data-role=part] .monad-preview")
    assert preview["width"] >= 0.8 * box(page, "[data-role=inspector-body]")["width"]
    assert page.locator("[data-role=window-grid] .monad-kind-image").count() > 0  # images: a category of their own
    assert "images" in page.locator("[data-role=grid-legend]").inner_text()
    grid, legend = box(page, "[data-role=window-grid]"), box(page, "[data-role=grid-legend]")
    if width < 500:
        assert legend["y"] >= grid["y"] + grid["height"]  # stacked
    else:
        assert legend["x"] >= grid["x"] + grid["width"]  # side by side
    assert errors == []
    page.close()


THEME_CELLS = [
    "%load_ext monad_notebook",
    """import threading
from monad_notebook.cell.rewind import PanelRewinds
from monad_notebook.widget import MonadPanel
monad = get_ipython().find_magic("monad").__self__
session = monad.session("themes")
panel = MonadPanel.for_session(session)
panel.offer_rewinds(PanelRewinds(monad))""",
    "%%monad --session themes\nLoad data/sales.csv and tell me what's in it.",
    """session.memory.add("Reports go to Ana Costa", scope="global")
session.memory.suggest(session.name, ["The fiscal year starts in April"])
threading.Thread(target=panel.approver(timeout=300), args=("print(1)",), daemon=True).start()
panel""",
]


@pytest.mark.slow
@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_the_panel_in_jupyter_is_readable_in_its_light_and_dark_theme(
    browser, isolated_env, tmp_path, shots, app, theme
):
    module = {"lab": "jupyterlab", "notebook": "notebook"}[app]
    pytest.importorskip(module, reason=f"{module} is not installed (pip install {module})")
    from monad_notebook.demo import dataset_path

    (isolated_env / "data").mkdir()
    shutil.copy(dataset_path(), isolated_env / "data" / "sales.csv")
    agents = {
        "models": {"main": {"model": "scripted-demo", "contextWindow": 3000}},
        "tools": {"python": {"approval": "auto"}},
    }
    (isolated_env / "agents.json").write_text(json.dumps(agents))
    write_notebook(isolated_env / "themes.ipynb", THEME_CELLS)
    settings = DARK_THEME if theme == "dark" else NO_NEWS
    with jupyter_server(app, isolated_env, tmp_path, "themes.ipynb", settings=settings) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.goto(url)
        page.wait_for_function(
            "window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel?.status === 'idle'",
            timeout=60_000,
        )
        assert page.evaluate("document.body.dataset.jpThemeLight") == ("false" if theme == "dark" else "true")
        page.evaluate("() => { window.jupyterapp.shell.collapseLeft?.(); window.jupyterapp.shell.collapseRight?.(); }")
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        # The notebook renders cells below the fold lazily: keep the panel in view while it fills.
        page.wait_for_function(
            """() => {
                const p = document.querySelector('.monad-panel');
                p?.scrollIntoView();
                return !!p?.querySelector('[data-role=approval-request]') && !!p.querySelector('[data-role=fact]');
            }""",
            timeout=90_000,
        )
        panel = page.locator(".monad-panel")
        page.click(".monad-panel .monad-inspector summary", position={"x": 5, "y": 5})
        page.click(".monad-panel [data-role=facts-box] summary", position={"x": 5, "y": 5})
        page.locator(".monad-panel [data-role=part]").first.wait_for(timeout=30_000)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 1400})
            page.wait_for_timeout(400)
            panel.scroll_into_view_if_needed()
            panel.screenshot(path=str(shots / f"{module}-{theme}-{width}.png"))
            measured = page.evaluate(AUDIT, ".monad-panel")
            assert {"run", "skip", "approval-title", "save", "dismiss", "fact"} <= {m["role"] for m in measured}
            assert "rewind-turn" in {m["role"] for m in measured}
            assert unreadable(measured) == [], (theme, width)
            print(
                f"{module} {theme} {width}px: min font {min(m['size'] for m in measured)} px, "
                f"min contrast {min(m['contrast'] for m in measured)}:1 over {len(measured)} texts"
            )
            assert box(page, ".monad-panel [data-role=inspector-body]")["height"] <= INSPECTOR_MAX
        page.close()
