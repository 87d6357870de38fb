"""panel.js in a real browser: a fake anywidget model, the real ESM and CSS, DOM and messages asserted.

The state handed to the page comes from the Python PanelState, so both sides share one contract.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from monad_notebook import events as ev
from monad_notebook.agent.tools.code_view import approval_view
from monad_notebook.events import Event
from monad_notebook.widget.state import PanelState
from tests.e2e.browser import counting_server, launch, missing, serve
from tests.hostile import HIDDEN_CODE, MARKDOWN_LOADS, PAYLOAD, invisible_characters

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def require_browser():
    """playwright's sync API, or skip saying what to install."""
    reason = missing()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    return sync_playwright


WIDGET = Path(__file__).resolve().parents[2] / "monad_notebook" / "widget"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="panel.css"></head>
<body><div id="root" style="width: 760px"></div>
<script type="module">
import widget from "./panel.js";
class FakeModel {
  constructor(state) { this.state = state; this.listeners = new Map(); this.sent = []; }
  get(name) { return this.state[name]; }
  set(name, value) { this.state[name] = value; }
  save_changes() {}
  on(event, callback) {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event).add(callback);
  }
  off(event, callback) { this.listeners.get(event)?.delete(callback); }
  send(content) { this.sent.push(content); }
  update(name, value) {
    this.state[name] = value;
    for (const callback of this.listeners.get(`change:${name}`) ?? []) callback();
  }
  listenerCount() { let n = 0; for (const set of this.listeners.values()) n += set.size; return n; }
}
window.mount = (state) => {
  window.model = new FakeModel(state);
  window.cleanup = widget.render({ model: window.model, el: document.getElementById("root") });
};
window.ready = true;
</script></body></html>
"""


def panel_state() -> dict:
    """A session mid-way: two steps, an eviction between them, a handoff nudge, two suggestions."""
    state = PanelState("eda")
    state.set_thresholds({"evict": 0.5, "soft": 0.75, "hard": 0.9})
    usage = {"occupancy": 2400, "context_window": 3000, "exact": True, "reclaimed": 0}
    state.apply(Event(ev.USAGE, "eda", usage), turn=1, step=1)
    state.apply(Event(ev.EVICTED, "eda", {"reclaimed": 900, "count": 2}))
    state.apply(Event(ev.USAGE, "eda", {**usage, "occupancy": 1500, "reclaimed": 900}), turn=1, step=2)
    state.apply(Event(ev.HANDOFF_SUGGESTED, "eda", {"message": "This session is long: hand off."}))
    items = [{"id": "f1", "text": "fiscal year starts in April"}, {"id": "f2", "text": "revenue is in EUR"}]
    state.apply(Event(ev.MEMORY_SUGGESTION, "eda", {"items": items}))
    parts = [
        {"kind": "system", "role": "system", "tokens": 300, "text": "You are monad"},
        {"kind": "summary", "role": "user", "tokens": 400, "text": "<summary>earlier work</summary>"},
        {"kind": "message", "role": "user", "tokens": 500, "text": "which region grew?"},
        {"kind": "placeholder", "role": "tool", "tokens": 20, "text": "[cleared: read_tool_output('c1')]"},
        {"kind": "tool_result", "role": "tool", "tokens": 280, "text": "South +12%"},
    ]
    state.inspector_open = True
    state.set_records(
        [
            {"turn": 1, "step": 1, "total_tokens": 2400, "parts": parts[:3]},
            {"turn": 1, "step": 2, "total_tokens": 1500, "parts": parts},
        ]
    )
    return {"session_name": "eda", "approval": {}, **state.snapshot()}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("panel-page")
    shutil.copy(WIDGET / "panel.js", root / "panel.js")
    shutil.copy(WIDGET / "panel.css", root / "panel.css")
    (root / "index.html").write_text(PAGE)
    with serve(root) as base:
        yield f"{base}/index.html"


@pytest.fixture(scope="module")
def browser():
    sync_playwright = require_browser()
    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server):
    page = browser.new_page(viewport={"width": 820, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server)
    page.wait_for_function("window.ready === true")
    page.evaluate("state => window.mount(state)", panel_state())
    yield page
    assert errors == [], errors
    page.close()


def sent(page) -> list[dict]:
    return page.evaluate("window.model.sent")


def width_fraction(page, selector: str, parent: str) -> float:
    return page.evaluate(
        "([s, p]) => document.querySelector(s).getBoundingClientRect().width /"
        " document.querySelector(p).getBoundingClientRect().width",
        [selector, parent],
    )


def test_bar_fill_matches_occupancy_and_threshold_marks_sit_at_their_fractions(page):
    assert width_fraction(page, "[data-role=bar-fill]", "[data-role=bar]") == pytest.approx(0.5, abs=0.01)
    bar = page.locator("[data-role=bar]").bounding_box()
    for name, at in [("evict", 0.5), ("soft", 0.75), ("hard", 0.9)]:
        mark = page.locator(f"[data-role=mark-{name}]").bounding_box()
        assert (mark["x"] + mark["width"] / 2 - bar["x"]) / bar["width"] == pytest.approx(at, abs=0.01)
    numbers = page.locator("[data-role=numbers]").inner_text()
    assert "1,500" in numbers and "3,000" in numbers and "exact" in numbers
    assert "reclaimed 900 tokens" in page.locator("[data-role=reclaimed]").inner_text()


def test_composition_segments_split_the_fill_by_part_kind(page):
    kinds = page.eval_on_selector_all("[data-role=segment]", "els => els.map(e => e.dataset.kind)")
    assert kinds == ["system", "summary", "message", "tool_result", "placeholder"]
    share = width_fraction(page, "[data-role=segment][data-kind=message]", "[data-role=bar-fill]")
    assert share == pytest.approx(500 / 1500, abs=0.01)


def test_timeline_draws_a_point_per_step_and_an_eviction_marker_that_grow_live(page):
    assert page.locator("[data-role=point]").count() == 2
    assert page.eval_on_selector_all("[data-role=marker]", "els => els.map(e => e.dataset.kind)") == ["evicted"]
    page.evaluate(
        """() => {
        const t = window.model.get("timeline_tail");
        window.model.update("timeline_tail", [...t, {i: 2, turn: 2, step: 1, occ: 2900, win: 3000}]);
        window.model.update("markers", [...window.model.get("markers"), {i: 2, kind: "compaction", label: "c"}]);
        window.model.update("usage", {...window.model.get("usage"), occupancy: 2900});
    }"""
    )
    assert page.locator("[data-role=point]").count() == 3
    assert page.locator("[data-role=marker][data-kind=compaction]").count() == 1
    assert width_fraction(page, "[data-role=bar-fill]", "[data-role=bar]") == pytest.approx(2900 / 3000, abs=0.01)
    assert "monad-level-hard" in page.get_attribute("[data-role=bar-fill]", "class")


def test_save_and_dismiss_send_the_item_and_save_all_sends_all(page):
    assert "Remember these 2 things?" in page.locator("[data-role=memory]").inner_text()
    page.click("[data-role=save][data-id=f1]")
    page.click("[data-role=dismiss][data-id=f2]")
    page.click("[data-role=save-all]")
    assert sent(page) == [
        {"type": "memory.save", "id": "f1"},
        {"type": "memory.dismiss", "id": "f2"},
        {"type": "memory.save", "all": True},
    ]
    assert page.locator("[data-role=save][data-id=f1]").is_disabled()
    page.evaluate("window.model.update('suggestions', [])")
    assert page.locator("[data-role=suggestion]").count() == 0


def ask(page, approval_id: str, code: str) -> None:
    """Show ``code`` for approval exactly as the kernel would send it."""
    page.evaluate("a => window.model.update('approval', a)", {"id": approval_id, "code": code, **approval_view(code)})


def test_approval_shows_the_code_and_run_or_skip_answer_it(page):
    assert page.locator("[data-role=run]").count() == 0
    ask(page, "a1", "df.describe()")
    assert page.locator("[data-role=approval-code]").inner_text() == "df.describe()"
    page.click("[data-role=run]")
    ask(page, "a2", "import os")
    page.click("[data-role=skip]")
    assert sent(page) == [{"type": "approval", "id": "a1", "run": True}, {"type": "approval", "id": "a2", "run": False}]


def test_approval_draws_every_line_and_hidden_character_of_hostile_code_visibly(page):
    for number, form in enumerate(HIDDEN_CODE):
        ask(page, f"h{number}", form.code)
        rows = page.eval_on_selector_all("[data-role=approval-line]", "els => els.map(e => e.innerText)")
        shown = page.locator("[data-role=approval-code]").inner_text()
        assert invisible_characters(shown) == [], form.name
        assert len(rows) == len(form.code.splitlines()), form.name
        if form.row:
            assert any(row.startswith(form.row) for row in rows), (form.name, rows)
        if form.marker:
            assert form.marker in shown, form.name
        summary = page.locator("[data-role=approval-summary]").inner_text()
        assert f"({len(rows)} line" in summary, form.name


def test_a_very_long_first_line_is_folded_so_the_next_line_stays_in_view(page):
    ask(page, "long", f"x = '{'a' * 5000}'\n{PAYLOAD}")
    box = page.locator("[data-role=approval-code]").bounding_box()
    second = page.locator("[data-role=approval-line]").nth(1)
    assert second.inner_text() == PAYLOAD
    line = second.bounding_box()
    assert box["y"] <= line["y"] and line["y"] + line["height"] <= box["y"] + box["height"]
    assert line["x"] + line["width"] <= box["x"] + box["width"] + 1
    assert "4,706 more characters on line 1" in page.locator("[data-role=unfold]").inner_text()
    page.click("[data-role=unfold]")
    assert len(page.locator("[data-role=approval-line]").first.inner_text()) == 5006


def test_model_written_panel_text_loads_nothing(browser, server):
    """Memory suggestions, notices and the inspector show model text as text: no image or frame loads."""
    with counting_server() as (base, hits):
        hostile = [form.text.replace("HOST", base) for form in MARKDOWN_LOADS]
        state = panel_state()
        state["suggestions"] = [{"id": f"s{i}", "text": text} for i, text in enumerate(hostile)]
        state["notices"] = [{"id": f"n{i}", "kind": "error", "text": text} for i, text in enumerate(hostile)]
        part = {
            "kind": "message",
            "role": "assistant",
            "tokens": 5,
            "chars": 5,
            "injected": False,
            "placeholder": False,
        }
        state["inspected"] = {
            "turn": 1,
            "step": 1,
            "total_tokens": 5,
            "parts": [{**part, "preview": t} for t in hostile],
        }
        page = browser.new_page()
        page.goto(server)
        page.wait_for_function("window.ready === true")
        page.evaluate("state => window.mount(state)", state)
        page.wait_for_timeout(500)
        assert page.locator(".monad-panel img, .monad-panel iframe, .monad-panel video").count() == 0
        assert f"{base}/leak.png?d=secret" in page.locator("[data-role=memory]").inner_text()
        page.close()
        assert hits == []


def test_handoff_nudge_is_a_toast_and_eviction_is_not(page):
    toasts = page.locator("[data-role=notice]")
    assert toasts.count() == 1 and "hand off" in toasts.inner_text()
    page.click("[data-role=notice-dismiss]")
    assert toasts.count() == 0
    assert sent(page) == [{"type": "notice.dismiss", "id": page.evaluate("window.model.get('notices')[0].id")}]


def test_inspector_lists_steps_marks_placeholders_and_injected_parts_and_asks_for_a_step(page):
    page.click(".monad-inspector summary", position={"x": 5, "y": 5})
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "panel-fake-model.png"), full_page=True)
    kinds = page.eval_on_selector_all("[data-role=part]", "els => els.map(e => e.dataset.kind)")
    assert kinds == ["system", "summary", "message", "placeholder", "tool_result"]
    assert "cleared" in page.locator("[data-role=part][data-kind=placeholder]").inner_text()
    assert "injected" in page.locator("[data-role=part][data-kind=summary]").inner_text()
    page.select_option("[data-role=inspect-select]", "1:1")
    page.select_option("[data-role=inspect-select]", "latest")
    page.click(".monad-inspector summary", position={"x": 5, "y": 5})
    page.wait_for_function("window.model.sent.length >= 4")  # <details> fires "toggle" in a later task
    assert sent(page) == [
        {"type": "inspect", "open": True, "turn": None, "step": None},
        {"type": "inspect", "open": True, "turn": 1, "step": 1},
        {"type": "inspect", "open": True, "turn": None, "step": None},
        {"type": "inspect", "open": False},
    ]


def test_cleanup_removes_every_listener_and_stops_redrawing(page):
    assert page.evaluate("window.model.listenerCount()") > 0
    page.evaluate("window.cleanup()")
    assert page.evaluate("window.model.listenerCount()") == 0
    page.evaluate("window.model.update('usage', {occupancy: 100, context_window: 3000})")
    assert "1,500" in page.locator("[data-role=numbers]").inner_text()


# --- the whole thing in JupyterLab: real kernel, real session, real clicks ------------------------------------------

NOTEBOOK_CELLS = [
    "%load_ext monad_notebook",
    """from monad_notebook.widget import MonadPanel
monad = get_ipython().find_magic("monad").__self__
session = monad.session("lab")
MonadPanel.for_session(session)""",
    "%%monad --session lab\nLoad data/sales.csv and tell me what's in it.",
    "%%monad --session lab\nWhich region grew fastest last quarter?",
    "%%monad --session lab\nSave a per-region summary to region_summary.csv.",
    'session.memory.suggest(session.name, ["The fiscal year starts in April"]); print("suggested")',
    "panel = MonadPanel.for_session(session)\nprint(panel.busy_note)\n"
    'print("approved:", panel.approver(timeout=30)("print(1)"))',
]

AGENTS_JSON = {
    "models": {"main": {"model": "scripted-demo", "contextWindow": 3000}},
    "tools": {"python": {"approval": "auto"}},
    "context": {
        "eviction": {"atFraction": 0.3, "keepRecentRounds": 1, "clearAtLeast": 0, "minResultTokens": 10},
        "summarize": {"softFraction": 0.8, "hardFraction": 0.95},
    },
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_notebook(path: Path, sources: list[str] = NOTEBOOK_CELLS) -> None:
    cells = [
        {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
        for source in sources
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook))


APPS = {
    # app name -> (extra flags, where notebooks open)
    "lab": (["--LabApp.expose_app_in_browser=True"], "/lab/tree/"),
    "notebook": (["--JupyterNotebookApp.expose_app_in_browser=True"], "/notebooks/"),
}


@contextlib.contextmanager
def jupyter_server(app: str, workdir: Path, scratch: Path, notebook: str = "panel.ipynb") -> Iterator[str]:
    """A Jupyter server of our own on 127.0.0.1, isolated from the user's config; yields the notebook URL."""
    env = dict(os.environ)
    for name in (
        "XDG_CONFIG_HOME",
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_DATA_DIR",
        "JUPYTER_RUNTIME_DIR",
        "IPYTHONDIR",
        "JUPYTERLAB_SETTINGS_DIR",
        "JUPYTERLAB_WORKSPACES_DIR",
    ):
        env[name] = str(scratch / name.lower())
    flags, path = APPS[app]
    port, token = free_port(), "monad-e2e"
    command = [sys.executable, "-m", "jupyter", app, "--no-browser", "--allow-root", f"--ServerApp.token={token}"]
    command += ["--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0", *flags]
    command += [f"--ServerApp.root_dir={workdir}"]
    base = f"http://127.0.0.1:{port}"
    with (scratch / f"{app}.log").open("w") as log:
        server = subprocess.Popen(command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        pytest.fail(f"jupyter {app} did not start: " + (scratch / f"{app}.log").read_text()[-2000:])
                    time.sleep(0.2)
            yield f"{base}{path}{notebook}?token={token}"
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()


@pytest.fixture(params=["lab", "notebook"])
def notebook_url(request, isolated_env, tmp_path):
    """The scripted notebook, opened in JupyterLab and in Notebook 7."""
    app = request.param
    module = {"lab": "jupyterlab", "notebook": "notebook"}[app]
    pytest.importorskip(module, reason=f"{module} is not installed (pip install {module})")
    from monad_notebook.demo import dataset_path

    (isolated_env / "data").mkdir()
    shutil.copy(dataset_path(), isolated_env / "data" / "sales.csv")
    (isolated_env / "agents.json").write_text(json.dumps(AGENTS_JSON))
    write_notebook(isolated_env / "panel.ipynb")
    with jupyter_server(app, isolated_env, tmp_path) as url:
        yield url


@pytest.mark.slow
def test_panel_follows_a_scripted_session_answers_mid_cell_and_saves_a_memory(notebook_url, isolated_env, browser):
    from monad_notebook.store.lance import LanceStore

    page = browser.new_page(viewport={"width": 1200, "height": 1400})
    page.goto(notebook_url)
    page.wait_for_function(
        "window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel?.status === 'idle'",
        timeout=30_000,
    )
    # Not awaited: the command's promise settles only when every cell has run, and the last cell waits for a click.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    panel = page.locator(".monad-panel")
    panel.wait_for(timeout=30_000)

    # The last cell blocks on the panel's Run button: the click must reach the kernel while that cell runs.
    page.locator(".monad-panel [data-role=approval-code]").filter(has_text="print(1)").wait_for(timeout=45_000)
    page.click(".monad-panel [data-role=run]")
    page.get_by_text("approved: True").wait_for(timeout=10_000)
    assert page.locator(".monad-panel [data-role=suggestion]").count() == 1

    points = page.locator(".monad-panel [data-role=point]").count()
    assert points >= 5  # one per step, drawn live as the three turns ran
    assert page.locator(".monad-panel [data-role=marker][data-kind=evicted]").count() >= 1
    fill = page.get_attribute(".monad-panel [data-role=bar-fill]", "style")
    assert fill.startswith("width:") and not fill.startswith("width: 0%")
    assert "reclaimed" in page.locator(".monad-panel [data-role=reclaimed]").inner_text()
    assert "Remember this 1 thing?" in page.locator(".monad-panel [data-role=memory]").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    app = "jupyterlab" if "/lab/" in notebook_url else "notebook7"
    panel.screenshot(path=str(ARTIFACTS / f"panel-{app}.png"))

    page.click(".monad-panel [data-role=save]")
    page.locator(".monad-panel [data-role=suggestion]").wait_for(state="detached", timeout=15_000)
    page.locator(".monad-panel [data-role=notice]").filter(has_text="saved 1 fact").wait_for(timeout=5_000)
    page.close()
    store = LanceStore(isolated_env.parent / "monad-home" / "db")
    try:
        assert [f.text for f in store.list_facts()] == ["The fiscal year starts in April"]
    finally:
        store.close()
