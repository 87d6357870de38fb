"""A static page that mounts the panel's module on a fake anywidget model, themed like JupyterLab, and the
in-browser audit the theme tests run on it (and on the real JupyterLab): font sizes and contrast.

The state handed to the page comes from the Python PanelState, so both sides share one contract.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from monad_notebook import events as ev
from monad_notebook.approval.code_view import approval_view
from monad_notebook.events import Event
from monad_notebook.widget.state import PanelState

WIDGET = Path(__file__).resolve().parents[2] / "monad_notebook" / "widget"
THEMES = ("light", "dark")

PAGE = """<!doctype html>
<html><head><meta charset="utf-8">THEME<link rel="stylesheet" href="panel.css">
<style>body { margin: 8px; background: var(--jp-layout-color0, #fff); font-family: sans-serif; }</style></head>
<body><div id="root"></div>
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

# Every text node in the panel: its rendered font size (SVG text scaled by its viewBox) and its
# contrast against the background it is drawn on (ancestor backgrounds and opacity composited).
AUDIT = """(selector) => {
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c || "");
    if (!m) return null;
    const v = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
  };
  const blend = (top, bottom) => [0, 1, 2].map((i) => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const channel = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = (c) => 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2]);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const background = (el) => {
    const layers = [];
    for (let n = el; n; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let color = [255, 255, 255, 1];
    for (const layer of layers.reverse()) color = blend(layer, color);
    return color;
  };
  const opacity = (el) => {
    let o = 1;
    for (let n = el; n; n = n.parentElement) o *= Number(getComputedStyle(n).opacity);
    return o;
  };
  const out = [];
  for (const root of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      const text = node.textContent.trim();
      const el = node.parentElement;
      if (!text || !el || el.closest("title")) continue;
      const rect = el.getBoundingClientRect();
      const style = getComputedStyle(el);
      if (!rect.width || !rect.height || style.visibility === "hidden") continue;
      const svg = el instanceof SVGElement ? el.ownerSVGElement : null;
      let size = parseFloat(style.fontSize);
      if (svg && svg.viewBox.baseVal && svg.viewBox.baseVal.width) {
        size *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      }
      const fg = parse(svg ? style.fill : style.color) || [0, 0, 0, 1];
      fg[3] *= opacity(el);
      const bg = background(el);
      const large = size >= 24 || (Number(style.fontWeight) >= 700 && size >= 18.66);
      out.push({
        text: text.slice(0, 40),
        role: el.closest("[data-role]")?.dataset.role || el.className?.baseVal || el.className || el.tagName,
        size: Math.round(size * 100) / 100,
        contrast: Math.round(ratio(blend(fg, bg), bg) * 100) / 100,
        need: large ? 3 : 4.5,
      });
    }
  }
  return out;
}"""


def theme_css(theme: str) -> Path | None:
    """JupyterLab's own theme stylesheet (its --jp-* variables), or None without jupyterlab."""
    try:
        import jupyterlab
    except ImportError:
        return None
    path = Path(jupyterlab.__file__).parent / "themes" / "@jupyterlab" / f"theme-{theme}-extension" / "index.css"
    return path if path.exists() else None


def write_pages(root: Path) -> None:
    """index.html (no theme: the fallbacks), light.html and dark.html (JupyterLab's variables)."""
    shutil.copy(WIDGET / "panel.js", root / "panel.js")
    shutil.copy(WIDGET / "panel.css", root / "panel.css")
    (root / "index.html").write_text(PAGE.replace("THEME", ""))
    for theme in THEMES:
        css = theme_css(theme)
        if css is not None:
            shutil.copy(css, root / f"theme-{theme}.css")
            link = f'<link rel="stylesheet" href="theme-{theme}.css">'
            (root / f"{theme}.html").write_text(PAGE.replace("THEME", link))


def panel_state() -> dict:
    """A session mid-way: two steps, an eviction between them, a handoff nudge, two suggestions."""
    state = PanelState("eda")
    state.set_thresholds({"evict": 0.5, "soft": 0.75, "hard": 0.9})
    usage = {"occupancy": 2400, "context_window": 3000, "exact": True, "reclaimed": 0}
    state.apply(Event(ev.USAGE, "eda", {**usage, "turn": 1, "step": 1}))
    state.apply(Event(ev.EVICTED, "eda", {"reclaimed": 900, "count": 2, "turn": 1, "step": 2}))
    after = {"occupancy": 1500, "reclaimed": 900, "before": 2400, "turn": 1, "step": 2}
    state.apply(Event(ev.USAGE, "eda", {**usage, **after}))
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


def rich_state() -> dict:
    """Every section at once: a pending approval after two decisions, a timeline over three turns with
    an eviction and a compaction, a suggestion with its origin, a receipt, facts in force, and an
    inspected step whose assistant message only called a tool."""
    state = PanelState("quarterly-sales-analysis")
    state.set_thresholds({"evict": 0.5, "soft": 0.75, "hard": 0.9})
    window = 8000
    steps = [(1, 1, 1900, None), (1, 2, 3300, None), (2, 1, 4500, None), (2, 2, 4300, 5922), (3, 1, 3100, 6500)]
    for turn, step, occupancy, before in steps:
        if (turn, step) == (2, 2):
            state.apply(Event(ev.EVICTED, "s", {"reclaimed": 1622, "count": 3, "turn": turn, "step": step}))
        if (turn, step) == (3, 1):
            state.apply(Event(ev.COMPACTION_STARTED, "s", {"reason": "soft threshold", "tokens_before": 5100}))
            done = {"tokens_before": 5100, "tokens_after": 1700, "seconds": 2.4, "turn": 3, "step": 1}
            state.apply(Event(ev.COMPACTION_FINISHED, "s", done))
        usage = {"occupancy": occupancy, "context_window": window, "exact": True, "reclaimed": 1622 if turn > 1 else 0}
        state.apply(Event(ev.USAGE, "s", {**usage, "before": before or occupancy, "turn": turn, "step": step}))
    state.apply(Event(ev.HANDOFF_SUGGESTED, "s", {"message": "This session is long: consider handing off."}))
    state.set_suggestions(
        [{"id": "s1", "text": "Revenue is reported in EUR", "origin": "from compaction of turns 1–2 · session sales"}]
    )
    state.set_receipt("saved", "The fiscal year starts in April", fact_id="f1", undo=True)
    state.set_facts(
        [
            {
                "id": "f1",
                "text": "The fiscal year starts in April",
                "scope": "global",
                "source": "promotion",
                "origin": "from compaction · global · session sales",
            },
            {
                "id": "f2",
                "text": "Reports go to Ana Costa",
                "scope": "global",
                "source": "manual",
                "origin": "saved by you · global",
            },
        ]
    )
    rows = [
        ("name", "model_fit", "LinearRegression", "made by call_9f2c41d0e7, turn 2", "lost"),
        ("name", "df_sales", "DataFrame 12,480 rows x 9 cols [region, month, +7 more]", "made by call_3ab8, turn 1"),
        ("name", "growth", "Series 4 values, float64 [revenue]", "made by cell 14, turn 2"),
        ("file", "out/growth_by_region.parquet", "18,204 bytes", "made by call_77d0e1b9aa, turn 3"),
    ]
    keys = ("kind", "key", "about", "origin", "state")
    state.set_workspace([dict(zip(keys, row if len(row) == 5 else (*row, "live"), strict=True)) for row in rows])
    state.add_decision(approval_view("df = pd.read_csv('data/sales.csv')"), True)
    state.add_decision(approval_view("import shutil\nshutil.rmtree('data')"), False)
    parts = [
        {"kind": "system", "role": "system", "tokens": 900, "text": "You are monad, a data analysis agent."},
        {"kind": "tools", "role": "tools", "tokens": 700, "text": "9 tool schemas"},
        {"kind": "memory", "role": "system", "tokens": 60, "text": "Remembered facts: the fiscal year starts in April"},
        {"kind": "summary", "role": "user", "tokens": 400, "text": "<summary>## Objective\nAudit sales</summary>"},
        {"kind": "message", "role": "user", "tokens": 30, "text": "Which region grew fastest last quarter? " * 4},
        {
            "kind": "message",
            "role": "assistant",
            "tokens": 40,
            "text": "",
            "calls": [{"name": "python", "arguments": '{"code": "df.groupby(\'region\').revenue.sum()"}'}],
        },
        {"kind": "placeholder", "role": "tool", "tokens": 20, "text": "[context-cleared] read_tool_output('c1')"},
        {"kind": "tool_result", "role": "tool", "tokens": 950, "text": "region  revenue\nNorth 1.2M\nSouth 1.5M\n" * 6},
        {
            "kind": "image",
            "role": "user",
            "tokens": 765,
            "text": "[image img_3f9a2c41d0: line chart 'Weekly churn by region' (x: week, y: churn) (1024x768 png)]",
        },
    ]
    state.inspector_open = True
    state.set_records([{"turn": 3, "step": 1, "total_tokens": 3100, "parts": parts}])
    code = "import pandas as pd\ndf = pd.read_csv('data/sales.csv')\ndf.groupby('region').revenue.sum()"
    approval = {"id": "a3", "code": code, **approval_view(code), "timeout": 600}
    lines = [
        "rewound to before turn 4: the conversation goes on as session 'quarterly-sales-analysis'; 'quarterly-sales' "
        "keeps every turn, and %monad rewind --undo goes back to it",
        "files and names as they were before turn 4 (everything put back)",
        "moved aside (in /home/ana/work/.monad-rewind/2026-12-07_13-09-34_r9): out/growth_by_region.parquet",
        "names given their earlier value: df_sales, growth",
    ]
    rewind = {
        "turns": 3,
        "undo": {"from": "quarterly-sales", "turn": 4},
        "result": {"id": "w1", "ok": True, "undo": False, "lines": lines},
    }
    return {"session_name": "quarterly-sales-analysis", "approval": approval, "rewind": rewind, **state.snapshot()}
