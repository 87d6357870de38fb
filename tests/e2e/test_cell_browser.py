"""Approvals in the running cell, in JupyterLab and Notebook 7: a real kernel, a real browser, real keys and clicks."""

from __future__ import annotations

import json
import sys

import pytest

from monad_notebook import events as ev
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.e2e.browser import ARTIFACTS
from tests.e2e.jupyter import DARK_THEME, NO_NEWS, jupyter_server, notebook_page, write_notebook
from tests.e2e.panel_page import AUDIT, THEMES
from tests.mcp_probe import PROBE_SERVER

QUESTION = "[data-role=cell-approval]"
MCP_ECHO = "mcp__probe__echo"


def printing(word: str) -> dict:
    """Code whose output ("RAN-<WORD>") does not appear in its own source."""
    return {"code": f"print('RAN-' + '{word}')"}


def wait_for_question(page, word: str):
    question = page.locator(QUESTION).filter(has_text=word)
    try:
        question.wait_for(timeout=30_000)
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"cell-approval-missing-{word}.png"), full_page=True)
        raise
    return question


@pytest.mark.slow
@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_enter_runs_escape_skips_and_allow_for_session_stops_asking(browser, isolated_env, tmp_path, app):
    module = {"lab": "jupyterlab", "notebook": "notebook"}[app]
    pytest.importorskip(module, reason=f"{module} is not installed (pip install {module})")
    from monad_notebook.store.lance import LanceStore

    with FakeOpenAIServer() as model:
        model.queue(
            tool_call("python", printing("KEYRUN")),
            tool_call("python", printing("KEYSKIP")),
            "First answer.",
            tool_call("python", printing("SESSION1")),
            tool_call("python", printing("SESSION2")),
            "Second answer.",
        )
        config = {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": model.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "ask"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(config))
        cells = [
            "%load_ext monad_notebook",
            "%%monad --session lab\nRun two snippets.",
            "%%monad\nAnd two more.",
            "%monad status",
        ]
        write_notebook(isolated_env / "ask.ipynb", cells)
        with jupyter_server(app, isolated_env, tmp_path, "ask.ipynb") as url:
            page = browser.new_page(viewport={"width": 1200, "height": 1400})
            page.goto(url)
            page.wait_for_function(
                "window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel?.status === 'idle'",
                timeout=30_000,
            )
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")

            first = wait_for_question(page, "KEYRUN")
            assert "waiting for you" in first.inner_text()
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"cell-approval-{app}.png"), full_page=True)
            page.keyboard.press("Enter")
            wait_for_question(page, "KEYSKIP")
            page.keyboard.press("Escape")
            third = wait_for_question(page, "SESSION1")
            third.locator("[data-role=allow-session]").click()
            status = page.locator(".jp-OutputArea-output").filter(has_text="runs without asking for the rest")
            status.wait_for(timeout=60_000)

            outputs = page.locator(".jp-OutputArea-output")
            shown = "\n".join(outputs.all_inner_texts())
            page.screenshot(path=str(ARTIFACTS / f"cell-answered-{app}.png"), full_page=True)
            page.close()

    assert "RAN-KEYRUN" in shown and "RAN-SESSION1" in shown and "RAN-SESSION2" in shown
    assert "RAN-KEYSKIP" not in shown
    assert shown.count("answered in this cell") == 3
    assert "First answer." in shown and "Second answer." in shown
    store = LanceStore(isolated_env.parent / "monad-home" / "db")
    try:
        decided = [(e.data["decision"], e.data["via"]) for e in store.list_events("lab", kind=ev.APPROVAL)]
    finally:
        store.close()
    assert decided == [("run", "cell"), ("skip", "cell"), ("allow for session", "cell"), ("run", "session")]


@pytest.mark.slow
@pytest.mark.parametrize("asked", ["python", "mcp"])
@pytest.mark.parametrize("theme", THEMES)
def test_the_cell_question_is_readable_in_light_and_dark_at_narrow_and_wide_widths(
    browser,
    isolated_env,
    tmp_path,
    theme,
    asked,
):
    """The python tool's question, and the one before a call to the user's MCP server (its own words)."""
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install jupyterlab)")
    with FakeOpenAIServer() as model:
        call = tool_call("python", printing("THEMED")) if asked == "python" else tool_call(MCP_ECHO, {"text": "THEMED"})
        model.queue(call, "Skipped it.")
        config = {
            "models": {"main": {"model": "gpt-4.1-mini", "baseUrl": model.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "ask"}},
            "mcpServers": {"probe": {"command": sys.executable, "args": [PROBE_SERVER]}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(config))
        write_notebook(isolated_env / "themed.ipynb", ["%load_ext monad_notebook", "%%monad\nRun it."])
        settings = DARK_THEME if theme == "dark" else NO_NEWS
        with jupyter_server("lab", isolated_env, tmp_path, "themed.ipynb", settings=settings) as url:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            page.wait_for_function(
                "window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel?.status === 'idle'",
                timeout=30_000,
            )
            assert page.evaluate("document.body.dataset.jpThemeLight") == ("false" if theme == "dark" else "true")
            shell = "window.jupyterapp.shell"
            page.evaluate(f"() => {{ {shell}.collapseLeft?.(); {shell}.collapseRight?.(); }}")
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            question = wait_for_question(page, "THEMED")
            measured = {}
            for width in (420, 1400):
                page.set_viewport_size({"width": width, "height": 1000})
                page.wait_for_timeout(300)
                question.scroll_into_view_if_needed()
                ARTIFACTS.mkdir(exist_ok=True)
                question.screenshot(path=str(ARTIFACTS / f"cell-approval-{asked}-{theme}-{width}.png"))
                measured[width] = page.evaluate(AUDIT, QUESTION)
                area = page.locator(".jp-OutputArea-output").filter(has=page.locator(QUESTION)).first
                wide = min(0.9 * area.bounding_box()["width"], 900)  # up to its max-width, never squeezed
                assert question.bounding_box()["width"] >= wide
            words = question.inner_text()
            question.locator("[data-role=skip]").click()
            page.locator(".jp-OutputArea-output").filter(has_text="Skipped it.").wait_for(timeout=30_000)
            page.close()
    if asked == "mcp":
        assert "call a tool of the MCP server probe" in words and "Allow probe for this session" in words
        assert "MCP server probe, tool echo" in words and "python" not in words.lower()
    for width, texts in measured.items():
        roles = {m["role"] for m in texts}
        assert {"run", "skip", "allow-session", "status", "approval-summary"} <= roles, (width, roles)
        unreadable = [m for m in texts if m["contrast"] < m["need"] or m["size"] < 11]
        assert unreadable == [], (theme, width, unreadable)


@pytest.mark.slow
def test_a_python_call_read_from_the_models_text_is_asked_about_on_auto_saying_where_it_came_from(
    browser, isolated_env, tmp_path
):
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install jupyterlab)")
    with FakeOpenAIServer() as model:
        written = json.dumps({"name": "python", "arguments": printing("WRITTEN")})
        model.queue(f"```json\n{written}\n```", "Ran it.")
        config = {
            "models": {"main": {"model": "qwen2.5-coder-1.5b", "baseUrl": model.base_url, "maxRetries": 0}},
            "tools": {"python": {"approval": "auto"}},
        }
        (isolated_env / "agents.json").write_text(json.dumps(config))
        write_notebook(isolated_env / "written.ipynb", ["%load_ext monad_notebook", "%%monad\nRun it."])
        with jupyter_server("lab", isolated_env, tmp_path, "written.ipynb", settings=NO_NEWS) as url:
            page = notebook_page(browser, url, width=1200, height=1000)
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            question = wait_for_question(page, "WRITTEN")
            words = question.inner_text()
            buttons = question.get_by_role("button").all_inner_texts()
            ARTIFACTS.mkdir(exist_ok=True)
            question.screenshot(path=str(ARTIFACTS / "cell-approval-written.png"))
            question.locator("[data-role=run]").click()
            page.locator(".jp-OutputArea-output").filter(has_text="Ran it.").wait_for(timeout=30_000)
            shown = "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
            page.close()
    assert "run this code, a call read from the model's text rather than made through the API" in words
    assert buttons == ["Run", "Skip"]  # no "allow for this session": such a call is asked about each time
    assert "RAN-WRITTEN" in shown
