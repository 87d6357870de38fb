// The monad context panel: plain ESM, one part per section, built into one module by scripts/panel.mjs.
// State arrives as synced traits; user actions go back as small custom messages.
// Colours come from panel.css (JupyterLab theme variables); sizes from the panel's real width.

import { drawApproval } from "./approval.js";
import { NARROW, h } from "./dom.js";
import { drawInspected, drawRecordChoices } from "./inspector.js";
import { drawMemory } from "./memory.js";
import { drawHeader, drawNotices, drawOccupancy, drawWindowGrid } from "./occupancy.js";
import { drawRewind, rewindLocal, showUndone } from "./rewind.js";
import { drawTimeline } from "./timeline.js";
import { drawWorkspace } from "./workspace.js";

/**
 * @param {{ model: Model, el: HTMLElement }} context
 * @returns {() => void} cleanup
 */
function render({ model, el }) {
  /** @type {Set<number>} */
  const timers = new Set();
  /** @type {Map<string, boolean>} */
  const answered = new Map();
  const header = h("div", { class: "monad-header" });
  const notices = h("div", { class: "monad-notices", "data-role": "notices" });
  const occupancy = h("div", { class: "monad-occupancy" });
  const windowGrid = h("div", { class: "monad-window", "data-role": "window" });
  const timeline = h("div", { class: "monad-timeline-box" });
  const rewind = h("div", { class: "monad-rewind", "data-role": "rewind" });
  const rewinding = rewindLocal();
  const approval = h("div", { class: "monad-approval", "data-role": "approval" });
  const memory = h("div", { class: "monad-memory", "data-role": "memory" });
  const factsBox = /** @type {HTMLDetailsElement} */ (h("details", { class: "monad-facts-box", "data-role": "facts-box" }));
  const workspace = h("div", { class: "monad-workspace", "data-role": "workspace-box" });
  const workspaceBox = /** @type {HTMLDetailsElement} */ (h("details", { class: "monad-facts-box", "data-role": "workspace-details" }));
  const select = /** @type {HTMLSelectElement} */ (h("select", { "data-role": "inspect-select", "aria-label": "step to inspect" }));
  const inspected = h("div", { "data-role": "inspected" });
  const inspector = h("details", { class: "monad-inspector" }, [
    h("summary", {}, ["Inspect what the model received"]),
    h("div", { class: "monad-inspector-body", "data-role": "inspector-body" }, [h("label", { class: "monad-dim" }, ["step ", select]), inspected]),
  ]);
  const panel = h("div", { class: "monad-panel" }, [header, notices, approval, occupancy, windowGrid, timeline, rewind, memory, workspace, inspector]);
  el.replaceChildren(panel);

  // The kernel sends the step list and the inspected parts only while an inspector is open.
  const onSelect = () => {
    const [turn, step] = select.value === "latest" ? [null, null] : select.value.split(":").map(Number);
    model.send({ type: "inspect", open: true, turn, step });
  };
  const onToggle = () => {
    if (inspector.open) onSelect();
    else model.send({ type: "inspect", open: false });
  };
  select.addEventListener("change", onSelect);
  inspector.addEventListener("toggle", onToggle);

  const drawTimelineNow = () => {
    drawTimeline(model, timeline);
    showUndone(timeline, rewinding.ask?.turn || rewinding.sent?.turn || 0);
  };
  /** @type {[string[], () => void][]} */
  const sections = [
    [["session_name", "activity"], () => drawHeader(model, header)],
    [["notices"], () => drawNotices(model, notices, timers)],
    [["usage", "thresholds", "composition", "compaction"], () => drawOccupancy(model, occupancy)],
    [["usage", "thresholds", "composition"], () => drawWindowGrid(model, windowGrid)],
    [["timeline_base", "timeline_tail", "markers", "thresholds"], drawTimelineNow],
    [["rewind"], () => drawRewind(model, rewind, timeline, rewinding)],
    [["approval", "decisions"], () => drawApproval(model, approval, answered)],
    [["suggestions", "facts", "receipt"], () => drawMemory(model, memory, factsBox)],
    [["workspace"], () => drawWorkspace(model, workspace, workspaceBox)],
    [["records"], () => drawRecordChoices(model, select)],
    [["inspected"], () => drawInspected(model, inspected)],
  ];
  // One state message fires a change per trait; draw each touched section once, after all of them.
  /** @type {Set<() => void>} */
  const dirty = new Set();
  let closed = false;
  const flush = () => {
    const draws = [...dirty];
    dirty.clear();
    if (!closed) for (const draw of draws) draw();
  };
  const schedule = (/** @type {() => void} */ draw) => {
    if (dirty.size === 0) queueMicrotask(flush);
    dirty.add(draw);
  };
  /** @type {[string, () => void][]} */
  const handlers = [];
  for (const [names, draw] of sections) {
    const onChange = () => schedule(draw);
    for (const name of names) {
      model.on(`change:${name}`, onChange);
      handlers.push([name, onChange]);
    }
    draw();
  }

  // Sizes follow the panel's real width: stacked below NARROW px, the timeline redrawn at 1:1.
  let drawnWidth = 0;
  const resized = () => {
    const width = panel.clientWidth;
    panel.classList.toggle("monad-narrow", width > 0 && width < NARROW);
    if (Math.abs(timeline.clientWidth - drawnWidth) >= 4) {
      drawnWidth = timeline.clientWidth;
      schedule(drawTimelineNow);
    }
  };
  const observer = typeof ResizeObserver === "function" ? new ResizeObserver(resized) : null;
  observer?.observe(panel);
  resized();

  return () => {
    closed = true;
    observer?.disconnect();
    for (const [name, handler] of handlers) model.off(`change:${name}`, handler);
    select.removeEventListener("change", onSelect);
    inspector.removeEventListener("toggle", onToggle);
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
  };
}

export default { render };
