"""How many session events per second the panel sustains, kernel side and browser side.

    python benchmarks/panel_latency.py [--events 2000] [--no-browser]

Kernel side: a MonadPanel on a minimal session whose comm only counts bytes (what ipykernel
would put on the wire), fed as fast as possible with
  - ``context.usage`` steps, each with a 40-part prompt record (usage, timeline point,
    step list, composition and inspector all change: the heaviest event),
  - ``tool.call.started`` (one small trait),
  - ``context.reinjected`` from 4 worker threads at once (the background-thread path).
Figures: events/s, per-event p50/p99 in ms, bytes sent per event at steady state (the
timeline is capped at 120 points, so this stops growing).

Browser side (needs /usr/bin/chromium and playwright): the panel's module rendered with a fake model
in headless chromium; each update is one state message the way the kernel sends it (timeline
tail, markers every 10th, usage), drawn once, then layout is forced. Figures: updates/s and per-update p50/p99 in ms.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import comm as comm_module
from comm.base_comm import BaseComm

from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.events import Event, EventBus
from tests.e2e.browser import launch, missing, serve

WIDGET = Path(__file__).resolve().parents[1] / "monad_notebook" / "widget"


class CountingComm(BaseComm):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.bytes = 0
        self.messages = 0
        super().__init__(*args, **kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any):
        self.bytes += len(json.dumps(data or {}, default=str))
        self.messages += 1


class BenchSession:
    def __init__(self) -> None:
        self.name = "bench"
        self.events = EventBus()
        self.config = Config()
        self.context_window = 128_000
        self.turn = 1
        self.step = 0
        self.prompt_records: list[dict[str, Any]] = []
        self.memory = None
        self.store = None

    def usage_snapshot(self) -> dict[str, Any]:
        return {"occupancy": 0, "context_window": self.context_window, "fraction": 0.0, "exact": True}


def record(step: int) -> dict[str, Any]:
    parts = [{"kind": "system", "role": "system", "tokens": 400, "text": "You are monad. " * 40}]
    parts += [
        {
            "kind": "tool_result" if i % 2 else "message",
            "role": "tool" if i % 2 else "user",
            "tokens": 300,
            "text": f"row {i}: " + "value, " * 120,
        }
        for i in range(39)
    ]
    return {"turn": 1, "step": step, "total_tokens": 400 + 39 * 300, "parts": parts}


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.99) - 1] * 1000


def kernel_side(count: int) -> None:
    from monad_notebook.widget.panel import MonadPanel

    comm_module.create_comm = CountingComm
    session = BenchSession()
    panel = MonadPanel(session)
    channel: CountingComm = panel.comm

    def measure(label: str, emit) -> None:
        before_bytes, samples = channel.bytes, []
        started = time.perf_counter()
        for i in range(count):
            t0 = time.perf_counter()
            emit(i)
            samples.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - started
        tail_bytes = channel.bytes
        emit(count)
        p50, p99 = percentiles(samples)
        print(
            f"{label:<34} {count / elapsed:>9,.0f} ev/s   p50 {p50:6.3f} ms   p99 {p99:6.3f} ms   "
            f"avg {(tail_bytes - before_bytes) / count / 1024:6.1f} KiB/ev   "
            f"last {(channel.bytes - tail_bytes) / 1024:5.1f} KiB"
        )

    def usage_step(i: int) -> None:
        session.step = i + 1
        session.prompt_records = [*session.prompt_records[-49:], record(i + 1)]
        occupancy = 20_000 + (i * 97) % 90_000
        session.events.emit(Event(ev.USAGE, "bench", {"occupancy": occupancy, "context_window": 128_000}))

    print(f"kernel side, {count} events each")
    measure("context.usage + 40-part record", usage_step)
    measure("tool.call.started", lambda i: session.events.emit(Event(ev.TOOL_STARTED, "bench", {"name": f"t{i}"})))

    threads, per_thread = 4, count // 4
    start = time.perf_counter()

    def burst() -> None:
        for _ in range(per_thread):
            session.events.emit(Event(ev.REINJECTED, "bench", {"hits": [1]}))

    workers = [threading.Thread(target=burst) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    print(f"{'context.reinjected, 4 threads':<34} {threads * per_thread / elapsed:>9,.0f} ev/s")
    panel.close()


PAGE = """<!doctype html><html><head><link rel="stylesheet" href="panel.css"></head><body><div id="root"></div>
<script type="module">
import widget from "./panel.js";
const listeners = new Map();
const state = {
  session_name: "bench", usage: {occupancy: 0, context_window: 128000},
  thresholds: {evict: 0.5, soft: 0.75, hard: 0.9},
  composition: [{kind: "system", tokens: 400}, {kind: "message", tokens: 6000}, {kind: "tool_result", tokens: 5700}],
  timeline_base: [], timeline_tail: [], markers: [], compaction: {}, notices: [], suggestions: [], records: [],
  inspected: {}, activity: "", approval: {},
};
const model = {
  get: (k) => state[k], set: (k, v) => { state[k] = v; }, save_changes() {}, send() {},
  on: (e, f) => { if (!listeners.has(e)) listeners.set(e, new Set()); listeners.get(e).add(f); },
  off: (e, f) => listeners.get(e)?.delete(f),
};
const update = (k, v) => { state[k] = v; for (const f of listeners.get(`change:${k}`) ?? []) f(); };
const el = document.getElementById("root");
widget.render({ model, el });
window.bench = async (n) => {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const point = {i, turn: 1, step: i, occ: 20000 + (i * 97) % 90000, win: 128000};
    if (state.timeline_tail.length + 1 >= 20) {
      update("timeline_base", [...state.timeline_base, ...state.timeline_tail, point].slice(-100));
      update("timeline_tail", []);
    } else {
      update("timeline_tail", [...state.timeline_tail, point]);
    }
    if (i % 10 === 0) update("markers", [...state.markers, {i, kind: "evicted", label: "e"}].slice(-60));
    update("usage", {occupancy: point.occ, context_window: 128000, reclaimed: i});
    await Promise.resolve();
    el.getBoundingClientRect();
    samples.push(performance.now() - t0);
  }
  return samples;
};
window.ready = true;
</script></body></html>"""


def browser_side(count: int) -> None:
    reason = missing()
    if reason:
        print(f"browser side skipped: {reason}")
        return
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copy(WIDGET / "panel.js", root / "panel.js")
        shutil.copy(WIDGET / "panel.css", root / "panel.css")
        (root / "index.html").write_text(PAGE)
        with serve(root) as base, sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page()
            page.goto(f"{base}/index.html")
            page.wait_for_function("window.ready === true")
            samples = [s / 1000 for s in page.evaluate("n => window.bench(n)", count)]
            browser.close()
    p50, p99 = percentiles(samples)
    print(f"\nbrowser side (panel.js in headless chromium), {count} updates")
    print(
        f"{'tail point + usage (+ marker /10)':<34} {count / sum(samples):>9,.0f} up/s   "
        f"p50 {p50:6.3f} ms   p99 {p99:6.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    kernel_side(args.events)
    if not args.no_browser:
        browser_side(args.events)


if __name__ == "__main__":
    main()
