"""The panel in a real browser: a fake anywidget model, the real ESM and CSS, DOM and messages asserted.

The state handed to the page comes from the Python PanelState, so both sides share one contract.
"""

from __future__ import annotations

import itertools
import json
import shutil

import pytest

from monad_notebook import events as ev
from monad_notebook.approval.code_view import approval_view
from monad_notebook.events import Event
from monad_notebook.widget.state import PanelState
from tests.e2e.browser import ARTIFACTS, counting_server, serve
from tests.e2e.jupyter import jupyter_server, write_notebook
from tests.e2e.panel_page import panel_state, write_pages
from tests.hostile import HIDDEN_CODE, MARKDOWN_LOADS, PAYLOAD, invisible_characters


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("panel-page")
    write_pages(root)
    with serve(root) as base:
        yield f"{base}/index.html"


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
    assert "Remember these 2?" in page.locator("[data-role=memory]").inner_text()
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


def test_a_single_suggestion_has_one_set_of_buttons_and_says_where_it_came_from(page):
    origin = "from compaction of turns 1–2 · session eda"
    page.evaluate(
        "o => window.model.update('suggestions', [{id: 'f1', text: 'The fiscal year starts in April', origin: o}])",
        origin,
    )
    assert page.locator("[data-role=save]").count() == 1 and page.locator("[data-role=dismiss]").count() == 1
    assert page.locator("[data-role=save-all], [data-role=dismiss-all]").count() == 0
    assert page.locator("[data-role=suggestion] [data-role=origin]").inner_text() == origin


def test_a_saved_fact_leaves_a_receipt_naming_it_with_an_undo_in_place_and_the_facts_in_force(page):
    page.evaluate("window.model.update('suggestions', [{id: 'f1', text: 'The fiscal year starts in April'}])")
    memory = page.locator("[data-role=memory]")
    panel_height = page.locator(".monad-panel").bounding_box()["height"]
    memory_top = memory.bounding_box()["y"]
    page.evaluate(
        """() => {
        window.model.update('suggestions', []);
        const text = 'The fiscal year starts in April';
        window.model.update('receipt', {id: 'r1', action: 'saved', text, undo: true});
        window.model.update('facts', [{id: 'x1', text: 'The fiscal year starts in April', scope: 'global',
                                       source: 'promotion', origin: 'from compaction · global'}]);
    }"""
    )
    assert page.locator("[data-role=receipt]").inner_text() == "Saved “The fiscal year starts in April” · Undo"
    assert memory.bounding_box()["y"] == memory_top  # no toast above the panel's sections
    assert page.locator(".monad-panel").bounding_box()["height"] <= panel_height + 30
    page.click("[data-role=facts-box] summary")
    assert page.locator("[data-role=fact]").inner_text().startswith("The fiscal year starts in April")
    page.click("[data-role=undo]")
    page.click("[data-role=forget][data-id=x1]")
    assert sent(page) == [{"type": "memory.undo", "id": "r1"}, {"type": "memory.forget", "id": "x1"}]


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
    ask(page, "a3", "print(1)")
    page.click("[data-role=always]")
    assert sent(page) == [
        {"type": "approval", "id": "a1", "run": True, "always": False},
        {"type": "approval", "id": "a2", "run": False, "always": False},
        {"type": "approval", "id": "a3", "run": True, "always": True},
    ]


def test_a_new_approval_request_after_an_answered_one_is_not_shown_as_answered_and_decisions_are_listed(page):
    ask(page, "a1", "df.describe()")
    page.click("[data-role=run]")
    assert "monad-answered" in page.get_attribute("[data-role=approval-request]", "class")
    assert page.locator("[data-role=run]").is_disabled()
    decision = {"id": "d1", "answer": "ran", "code": "df.describe()", "lines": 1, "at": "12:00:01"}
    page.evaluate("d => { window.model.update('approval', {}); window.model.update('decisions', [d]); }", decision)
    ask(page, "a2", "import os")
    request = page.locator("[data-role=approval-request]")
    assert "monad-answered" not in request.get_attribute("class")
    assert not page.locator("[data-role=run]").is_disabled() and not page.locator("[data-role=skip]").is_disabled()
    opacity = request.evaluate(
        "e => { let o = 1; for (; e; e = e.parentElement) o *= +getComputedStyle(e).opacity; return o; }"
    )
    assert opacity == 1
    assert page.locator("[data-role=decision]").inner_text().split() == ["ran", "df.describe()", "12:00:01"]


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
        hostile = [form.text.replace("HOST", base.removeprefix("http://")) for form in MARKDOWN_LOADS]
        state = panel_state()
        state["suggestions"] = [{"id": f"s{i}", "text": text} for i, text in enumerate(hostile)]
        state["notices"] = [{"id": f"n{i}", "kind": "error", "text": text} for i, text in enumerate(hostile)]
        result = {"id": "w1", "ok": True, "undo": False, "lines": hostile}  # file and session names are anyone's
        state["rewind"] = {"turns": 2, "undo": {"from": hostile[0], "turn": 1}, "result": result}
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
        assert f"{base}/leak.png?d=secret" in page.locator("[data-role=rewind-result]").inner_text()
        page.close()
        assert hits == []


def test_a_rewind_from_the_timeline_asks_first_then_sends_the_turn_and_shows_what_the_kernel_did(page):
    page.evaluate("() => window.model.update('rewind', {turns: 15, undo: {}})")
    turns = page.locator("[data-role=rewind-turn]")
    assert turns.evaluate_all("bs => bs.map(b => b.dataset.turn)") == [str(t) for t in range(4, 16)]
    assert turns.first.get_attribute("aria-label") == "Rewind to before turn 4"
    earlier = page.locator("[data-role=rewind-earlier]")
    assert earlier.locator("option").all_inner_texts() == ["earlier…", "1", "2", "3"]

    earlier.select_option("2")
    question = page.locator("[data-role=rewind-ask]")
    assert question.inner_text().startswith("Rewind to before turn 2? Turns 2 to 15 are undone")
    assert sent(page) == []  # nothing is asked of the kernel before the answer
    question.get_by_role("button", name="Rewind to before turn 2").click()

    assert sent(page) == [{"type": "rewind", "turn": 2}]
    assert page.locator("[data-role=rewind-status]").inner_text().startswith("Rewinding to before turn 2…")
    assert page.locator("[data-role=rewind-turn][disabled]").count() == 12  # one rewind at a time
    lines = ["rewound to before turn 2: the conversation goes on as session 'eda@turn2'", "names removed: df"]
    page.evaluate(
        "lines => window.model.update('rewind', {turns: 1, undo: {from: 'eda', turn: 2},"
        " result: {id: 'w1', ok: true, undo: false, lines}})",
        lines,
    )
    result = page.locator("[data-role=rewind-result]")
    assert result.locator("li").all_inner_texts() == lines
    assert page.locator("[data-role=rewound-from]").inner_text() == (
        "This session is “eda” rewound to before turn 2. Undo the rewind"
    )
    page.locator("[data-role=rewind-undo]").click()
    page.keyboard.press("Escape")  # the question closes, nothing sent
    assert page.locator("[data-role=rewind-ask]").count() == 0 and len(sent(page)) == 1
    page.locator("[data-role=rewind-undo]").click()
    page.locator("[data-role=rewind-confirm]").click()
    assert sent(page)[-1] == {"type": "rewind", "undo": True}


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


def test_timeline_shows_before_and_after_the_cascade_with_amounts_labelled_thresholds_and_a_turn_axis(page):
    assert page.locator("[data-role=line-before]").count() == 1 and page.locator("[data-role=cut]").count() == 1
    assert page.eval_on_selector_all("[data-role=marker-tag]", "els => els.map(e => e.textContent)") == ["\u2212900"]
    labels = page.eval_on_selector_all("[data-role=threshold-label]", "els => els.map(e => e.textContent)")
    assert sorted(labels) == ["evict 50%", "hard 90%", "soft 75%"]
    assert page.eval_on_selector_all("[data-role=turn-label]", "els => els.map(e => e.textContent)") == ["turn 1"]
    assert "before the cascade acted: 2,400" in page.locator("[data-role=readout]").inner_text()
    page.hover("[data-role=marker] .monad-marker-badge")
    assert "cleared 2 old tool result(s), \u2212900 tokens" in page.locator("[data-role=readout]").inner_text()


TURN_LABELS = """() => [...document.querySelectorAll('[data-role=turn-label]')].map(e => {
  const box = e.getBoundingClientRect();
  return [e.textContent, box.left, box.right];
})"""


def test_the_current_turn_is_labelled_on_the_axis_however_many_turns_and_no_two_labels_overlap(browser, server):
    state = PanelState("dense")
    state.set_thresholds({"evict": 0.5, "soft": 0.75, "hard": 0.9})
    for turn in range(1, 13):
        usage = {"occupancy": 300 * turn, "context_window": 8000, "exact": True, "reclaimed": 0}
        state.apply(Event(ev.USAGE, "dense", {**usage, "turn": turn, "step": 1}))
    page = browser.new_page(viewport={"width": 420, "height": 900})
    page.goto(server)
    page.wait_for_function("window.ready === true")
    page.evaluate("state => window.mount(state)", {"session_name": "dense", "approval": {}, **state.snapshot()})
    labels = {}
    for width in (420, 1400):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(200)  # the resize observer redraws the timeline at its real width
        labels[width] = page.evaluate(TURN_LABELS)
    page.close()
    for shown in labels.values():
        assert shown[0][0] == "turn 1" and shown[-1][0] == "turn 12"
        assert all(left[2] + 4 <= right[1] for left, right in itertools.pairwise(shown))  # [text, left, right] each
    assert len(labels[420]) < 12 and len(labels[1400]) == 12  # some dropped where narrow; room for every turn wide


def test_window_grid_has_a_cell_per_percent_coloured_by_category_with_free_space(page):
    cells = page.eval_on_selector_all("[data-role=cell]", "els => els.map(e => e.dataset.kind)")
    assert len(cells) == 100 and cells.count("free") == 50
    assert cells[:10] == ["system"] * 10  # 300 of 1,500 sent tokens = 10% of the 3,000-token window
    legend = page.eval_on_selector_all("[data-role=grid-key]", "els => els.map(e => e.innerText.split(/\\s+/))")
    assert legend[-1][-3:] == ["space", "1,500", "50%"]
    shown = sum(int(row[-2].replace(",", "")) for row in legend)
    assert shown == 3000  # whole-prompt tokens everywhere: the categories and free space add up to the window


def test_an_assistant_message_that_only_called_tools_shows_its_calls(page):
    part = {"kind": "message", "role": "assistant", "tokens": 40, "preview": "", "chars": 0, "injected": False}
    calls = [{"name": "python", "arguments": '{"code": "df.describe()"}'}, {"name": "read_file", "arguments": "{}"}]
    record = {"turn": 2, "step": 1, "total_tokens": 40, "parts": [{**part, "placeholder": False, "calls": calls}]}
    page.evaluate("r => window.model.update('inspected', r)", record)
    page.click(".monad-inspector summary", position={"x": 5, "y": 5})
    shown = page.eval_on_selector_all("[data-role=call]", "els => els.map(e => e.innerText)")
    assert shown == ['python({"code": "df.describe()"})', "read_file({})"]


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
    write_notebook(isolated_env / "panel.ipynb", NOTEBOOK_CELLS)
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
    assert "Remember this?" in page.locator(".monad-panel [data-role=memory]").inner_text()
    assert page.locator(".monad-panel [data-role=save-all]").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    app = "jupyterlab" if "/lab/" in notebook_url else "notebook7"
    panel.screenshot(path=str(ARTIFACTS / f"panel-{app}.png"))

    page.click(".monad-panel [data-role=save]")
    page.locator(".monad-panel [data-role=suggestion]").wait_for(state="detached", timeout=15_000)
    receipt = page.locator(".monad-panel [data-role=receipt]")
    receipt.filter(has_text="Saved “The fiscal year starts in April” · Undo").wait_for(timeout=5_000)
    assert page.locator(".monad-panel [data-role=notice]").count() == 0
    facts = page.locator(".monad-panel [data-role=fact]").filter(has_text="The fiscal year starts in April")
    facts.wait_for(state="attached")  # listed under "Facts in force", folded until opened
    page.close()
    store = LanceStore(isolated_env.parent / "monad-home" / "db")
    try:
        assert [f.text for f in store.list_facts()] == ["The fiscal year starts in April"]
    finally:
        store.close()
