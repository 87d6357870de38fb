// The monad context panel: plain ESM for anywidget, no build step.
// State arrives as synced traits; user actions go back as small custom messages.

/**
 * @typedef {{occupancy?: number, context_window?: number, fraction?: number, exact?: boolean, reclaimed?: number, messages?: number}} Usage
 * @typedef {{i: number, turn: number, step: number, occ: number, win: number}} Point
 * @typedef {{i: number, kind: string, label: string}} Marker
 * @typedef {{kind: string, tokens: number}} Slice
 * @typedef {{id: string, kind: string, text: string}} Notice
 * @typedef {{id: string, text: string}} Suggestion
 * @typedef {{turn: number, step: number, total_tokens: number}} RecordRef
 * @typedef {{kind: string, role: string, tokens: number, preview: string, chars: number, injected: boolean, placeholder: boolean}} Part
 * @typedef {{
 *   get(name: string): any,
 *   on(event: string, callback: Function): void,
 *   off(event: string, callback: Function): void,
 *   send(content: object): void,
 * }} Model
 */

const SVG = "http://www.w3.org/2000/svg";
const KIND_LABELS = {
  system: "system",
  tools: "tool schemas",
  memory: "memory",
  summary: "summary",
  plan: "plan",
  related_context: "related context",
  message: "messages",
  tool_result: "tool results",
  placeholder: "cleared (placeholders)",
};
const MARKER_LETTERS = { evicted: "E", compaction: "C", reinjected: "R" };
const INFO_TOAST_MS = 5000;
const FOLD_AT = 400; // characters; a longer line shows its first FOLD_HEAD until unfolded
const FOLD_HEAD = 300;

const fmt = new Intl.NumberFormat("en-US");

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElement}
 */
function h(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}

/**
 * @param {string} tag
 * @param {Record<string, string | number>} attrs
 * @returns {SVGElement}
 */
function s(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

/** @param {number} fraction */
function pct(fraction) {
  return `${Math.round(Math.max(0, fraction) * 1000) / 10}%`;
}

/**
 * @param {Usage} usage
 * @returns {number}
 */
function fractionOf(usage) {
  const window = usage.context_window || 0;
  return window ? Math.min(1, (usage.occupancy || 0) / window) : 0;
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 */
function drawHeader(model, root) {
  root.replaceChildren(
    h("span", { class: "monad-title" }, ["monad"]),
    h("span", { class: "monad-session" }, [`session ${model.get("session_name")}`]),
    h("span", { class: "monad-activity", "data-role": "activity" }, [model.get("activity") || "idle"]),
  );
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 * @param {Set<number>} timers
 */
function drawNotices(model, root, timers) {
  /** @type {Notice[]} */
  const notices = model.get("notices") || [];
  root.replaceChildren(
    ...notices.map((notice) => {
      const close = h("button", { class: "monad-x", "data-role": "notice-dismiss", title: "Dismiss" }, ["×"]);
      const toast = h("div", { class: `monad-toast monad-toast-${notice.kind}`, "data-role": "notice" }, [
        h("span", {}, [notice.text]),
        close,
      ]);
      const dismiss = () => {
        toast.remove();
        model.send({ type: "notice.dismiss", id: notice.id });
      };
      close.addEventListener("click", dismiss);
      if (notice.kind === "info") timers.add(setTimeout(() => toast.remove(), INFO_TOAST_MS));
      return toast;
    }),
  );
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 */
function drawOccupancy(model, root) {
  /** @type {Usage} */
  const usage = model.get("usage") || {};
  /** @type {Record<string, number>} */
  const marks = model.get("thresholds") || {};
  /** @type {Slice[]} */
  const slices = model.get("composition") || [];
  const fraction = fractionOf(usage);
  const level = fraction >= (marks.hard ?? 2) ? "hard" : fraction >= (marks.soft ?? 2) ? "soft" : "ok";

  const sliceTotal = slices.reduce((sum, slice) => sum + slice.tokens, 0);
  const fill = h("div", { class: `monad-fill monad-level-${level}`, "data-role": "bar-fill", style: `width: ${pct(fraction)}` });
  for (const slice of slices) {
    const seg = h("div", {
      class: `monad-seg monad-kind-${slice.kind}`,
      "data-role": "segment",
      "data-kind": slice.kind,
      style: `width: ${pct(sliceTotal ? slice.tokens / sliceTotal : 0)}`,
      title: `${KIND_LABELS[slice.kind] || slice.kind}: ${fmt.format(slice.tokens)} tokens`,
    });
    fill.append(seg);
  }
  const bar = h("div", { class: "monad-bar", "data-role": "bar" }, [fill]);
  for (const [name, at] of Object.entries(marks)) {
    bar.append(
      h("div", { class: `monad-mark monad-mark-${name}`, "data-role": `mark-${name}`, style: `left: ${pct(at)}`, title: `${name} ${pct(at)}` }),
    );
  }

  const numbers = h("div", { class: "monad-numbers", "data-role": "numbers" }, [
    h("strong", {}, [fmt.format(usage.occupancy || 0)]),
    ` / ${fmt.format(usage.context_window || 0)} tokens · ${pct(fraction)}`,
    h("span", { class: "monad-dim" }, [usage.exact ? " · exact" : " · estimated"]),
  ]);
  const legend = h(
    "div",
    { class: "monad-legend" },
    slices.map((slice) =>
      h("span", { class: "monad-key" }, [
        h("i", { class: `monad-swatch monad-kind-${slice.kind}` }),
        `${KIND_LABELS[slice.kind] || slice.kind} ${fmt.format(slice.tokens)}`,
      ]),
    ),
  );
  const thresholds = h("div", { class: "monad-dim monad-thresholds" }, [
    Object.entries(marks)
      .map(([name, at]) => `${name} ${pct(at)}`)
      .join(" · "),
  ]);
  const children = [numbers, bar, thresholds, legend];
  if ((usage.reclaimed || 0) > 0) {
    children.push(
      h("div", { class: "monad-reclaimed", "data-role": "reclaimed" }, [
        `♻ reclaimed ${fmt.format(usage.reclaimed || 0)} tokens by clearing old tool results (recoverable)`,
      ]),
    );
  }
  children.push(...compactionLines(model.get("compaction") || {}));
  root.replaceChildren(...children);
}

/**
 * @param {{running?: boolean, reason?: string, tokens_before?: number, last?: {before: number, after: number, seconds: number, fallback: boolean} | null}} compaction
 * @returns {HTMLElement[]}
 */
function compactionLines(compaction) {
  const lines = [];
  if (compaction.running) {
    lines.push(
      h("div", { class: "monad-compaction monad-running", "data-role": "compaction-running" }, [
        h("span", { class: "monad-spinner" }),
        `summarizing in the background (${compaction.reason || "soft threshold"}, ${fmt.format(compaction.tokens_before || 0)} tokens)…`,
      ]),
    );
  }
  if (compaction.last) {
    const last = compaction.last;
    lines.push(
      h("div", { class: "monad-compaction", "data-role": "compaction-last" }, [
        `last compaction: ${fmt.format(last.before)} → ${fmt.format(last.after)} tokens in ${last.seconds} s`,
        last.fallback ? " (extractive fallback)" : "",
      ]),
    );
  }
  return lines;
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 */
function drawTimeline(model, root) {
  /** @type {Point[]} */
  const points = [...(model.get("timeline_base") || []), ...(model.get("timeline_tail") || [])];
  /** @type {Marker[]} */
  const markers = model.get("markers") || [];
  /** @type {Record<string, number>} */
  const marks = model.get("thresholds") || {};
  const width = 600;
  const height = 140;
  const pad = { left: 34, right: 12, top: 14, bottom: 20 };
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, class: "monad-timeline", "data-role": "timeline", role: "img" });
  const title = s("title", {});
  title.textContent = "context occupancy per step";
  svg.append(title);
  if (points.length === 0) {
    const empty = s("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "monad-axis" });
    empty.textContent = "the timeline starts with the first step";
    svg.append(empty);
    root.replaceChildren(svg);
    return;
  }
  const first = points[0].i;
  const last = Math.max(points[points.length - 1].i, ...markers.map((m) => m.i));
  const x = (/** @type {number} */ i) => pad.left + ((i - first) / Math.max(1, last - first)) * (width - pad.left - pad.right);
  const y = (/** @type {number} */ f) => pad.top + (1 - Math.min(1, f)) * (height - pad.top - pad.bottom);

  for (const tick of [0, 0.5, 1]) {
    svg.append(s("line", { x1: pad.left, x2: width - pad.right, y1: y(tick), y2: y(tick), class: "monad-grid" }));
    const label = s("text", { x: pad.left - 4, y: y(tick) + 4, "text-anchor": "end", class: "monad-axis" });
    label.textContent = `${tick * 100}%`;
    svg.append(label);
  }
  for (const [name, at] of Object.entries(marks)) {
    svg.append(s("line", { x1: pad.left, x2: width - pad.right, y1: y(at), y2: y(at), class: `monad-threshold monad-mark-${name}` }));
  }
  const coords = points.map((p) => `${x(p.i).toFixed(1)},${y(p.win ? p.occ / p.win : 0).toFixed(1)}`);
  svg.append(s("polyline", { points: coords.join(" "), class: "monad-line", "data-role": "line" }));
  // One readout for every dot: a <title> per dot would triple the cost of a redraw.
  const readout = s("text", { x: width - pad.right, y: height - 4, "text-anchor": "end", class: "monad-axis", "data-role": "readout" });
  for (const p of points) {
    const tip = `turn ${p.turn} · step ${p.step}: ${fmt.format(p.occ)} / ${fmt.format(p.win)} tokens`;
    svg.append(s("circle", { cx: x(p.i), cy: y(p.win ? p.occ / p.win : 0), r: 3, class: "monad-dot", "data-role": "point", "data-tip": tip }));
  }
  svg.append(readout);
  svg.addEventListener("mouseover", (event) => {
    const target = /** @type {SVGElement} */ (event.target);
    readout.textContent = target.dataset?.tip || "";
  });
  for (const marker of markers) {
    if (marker.i < first) continue;
    const mx = x(marker.i);
    const group = s("g", { class: `monad-marker monad-marker-${marker.kind}`, "data-role": "marker", "data-kind": marker.kind });
    group.append(s("line", { x1: mx, x2: mx, y1: pad.top, y2: height - pad.bottom, class: "monad-marker-line" }));
    group.append(s("circle", { cx: mx, cy: pad.top - 4, r: 7, class: "monad-marker-badge" }));
    const letter = s("text", { x: mx, y: pad.top - 1, "text-anchor": "middle", class: "monad-marker-letter" });
    letter.textContent = MARKER_LETTERS[marker.kind] || "•";
    const tip = s("title", {});
    tip.textContent = marker.label;
    group.append(letter, tip);
    svg.append(group);
  }
  const caption = h("div", { class: "monad-dim monad-caption" }, [
    "occupancy per step · E eviction · C compaction · R reinjection",
  ]);
  root.replaceChildren(svg, caption);
}

/**
 * One line of code to approve. The kernel already replaced hidden characters with markers; a
 * long line is folded so the lines after it stay in view, and unfolds on a click.
 * @param {string} text
 * @param {number} number
 * @returns {HTMLElement}
 */
function codeLine(text, number) {
  const row = h("div", { class: "monad-code-line", "data-role": "approval-line", "data-n": String(number) });
  if (text.length <= FOLD_AT) {
    row.append(text);
    return row;
  }
  const body = h("span", {}, [text.slice(0, FOLD_HEAD)]);
  const more = h("button", { class: "monad-unfold", "data-role": "unfold" }, [
    `… ${fmt.format(text.length - FOLD_HEAD)} more characters on line ${number}: show`,
  ]);
  more.addEventListener("click", () => {
    body.textContent = text;
    more.remove();
  });
  row.append(body, more);
  return row;
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 */
function drawApproval(model, root) {
  /** @type {{id?: string, lines?: string[], summary?: string}} */
  const approval = model.get("approval") || {};
  if (!approval.id) {
    root.replaceChildren();
    return;
  }
  const answer = (/** @type {boolean} */ run) => {
    model.send({ type: "approval", id: approval.id, run });
    root.querySelectorAll("button").forEach((b) => b.setAttribute("disabled", ""));
    root.classList.add("monad-answered");
  };
  const run = h("button", { class: "monad-btn monad-primary", "data-role": "run" }, ["Run"]);
  const skip = h("button", { class: "monad-btn", "data-role": "skip" }, ["Skip"]);
  run.addEventListener("click", () => answer(true));
  skip.addEventListener("click", () => answer(false));
  const lines = approval.lines || [];
  root.replaceChildren(
    h("div", { class: "monad-section-title" }, [
      "The agent wants to run this code ",
      h("span", { class: "monad-dim", "data-role": "approval-summary" }, [`(${approval.summary || `${lines.length} lines`})`]),
    ]),
    h("div", { class: "monad-code", "data-role": "approval-code" }, lines.map((line, i) => codeLine(line, i + 1))),
    h("div", { class: "monad-actions" }, [run, skip]),
  );
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 */
function drawMemory(model, root) {
  /** @type {Suggestion[]} */
  const items = model.get("suggestions") || [];
  if (items.length === 0) {
    root.replaceChildren();
    return;
  }
  const act = (/** @type {HTMLElement} */ button, /** @type {object} */ message) => {
    button.setAttribute("disabled", "");
    button.textContent = "…";
    model.send(message);
  };
  const rows = items.map((item) => {
    const save = h("button", { class: "monad-btn monad-primary", "data-role": "save", "data-id": item.id }, ["Save"]);
    const dismiss = h("button", { class: "monad-btn", "data-role": "dismiss", "data-id": item.id }, ["Dismiss"]);
    save.addEventListener("click", () => act(save, { type: "memory.save", id: item.id }));
    dismiss.addEventListener("click", () => act(dismiss, { type: "memory.dismiss", id: item.id }));
    return h("li", { "data-role": "suggestion" }, [h("span", {}, [item.text]), h("span", { class: "monad-actions" }, [save, dismiss])]);
  });
  const saveAll = h("button", { class: "monad-btn monad-primary", "data-role": "save-all" }, ["Save all"]);
  const dismissAll = h("button", { class: "monad-btn", "data-role": "dismiss-all" }, ["Dismiss all"]);
  saveAll.addEventListener("click", () => act(saveAll, { type: "memory.save", all: true }));
  dismissAll.addEventListener("click", () => act(dismissAll, { type: "memory.dismiss", all: true }));
  root.replaceChildren(
    h("div", { class: "monad-section-title" }, [items.length === 1 ? "Remember this 1 thing?" : `Remember these ${items.length} things?`]),
    h("ul", { class: "monad-suggestions" }, rows),
    h("div", { class: "monad-actions" }, [saveAll, dismissAll]),
  );
}

/**
 * @param {Model} model
 * @param {HTMLSelectElement} select
 */
function drawRecordChoices(model, select) {
  /** @type {RecordRef[]} */
  const records = model.get("records") || [];
  const chosen = select.value;
  const options = [h("option", { value: "latest" }, ["latest step"])];
  for (const r of [...records].reverse()) {
    options.push(h("option", { value: `${r.turn}:${r.step}` }, [`turn ${r.turn} · step ${r.step} · ${fmt.format(r.total_tokens)} tokens`]));
  }
  select.replaceChildren(...options);
  select.value = options.some((o) => o.getAttribute("value") === chosen) ? chosen : "latest";
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 */
function drawInspected(model, root) {
  /** @type {{turn?: number, step?: number, total_tokens?: number, parts?: Part[], more_parts?: number}} */
  const record = model.get("inspected") || {};
  const parts = record.parts || [];
  if (parts.length === 0) {
    root.replaceChildren(h("div", { class: "monad-dim" }, ["no step recorded yet"]));
    return;
  }
  const rows = parts.map((part) => {
    const flags = [part.placeholder ? "cleared" : "", part.injected ? "injected" : ""].filter(Boolean);
    return h("tr", { class: `monad-part ${flags.map((f) => `monad-${f}`).join(" ")}`, "data-role": "part", "data-kind": part.kind }, [
      h("td", {}, [h("i", { class: `monad-swatch monad-kind-${part.kind}` }), part.kind, ...flags.map((f) => h("span", { class: `monad-flag monad-flag-${f}` }, [f]))]),
      h("td", {}, [part.role]),
      h("td", { class: "monad-num" }, [fmt.format(part.tokens)]),
      h("td", { class: "monad-preview" }, [part.preview]),
    ]);
  });
  const head = h("tr", {}, ["kind", "role", "tokens", "text"].map((c) => h("th", {}, [c])));
  const more = record.more_parts ? [h("div", { class: "monad-dim" }, [`… and ${record.more_parts} more parts`])] : [];
  root.replaceChildren(
    h("div", { class: "monad-dim" }, [`turn ${record.turn} · step ${record.step} · ${fmt.format(record.total_tokens || 0)} tokens sent`]),
    h("table", { class: "monad-parts" }, [h("thead", {}, [head]), h("tbody", {}, rows)]),
    ...more,
  );
}

/**
 * @param {{ model: Model, el: HTMLElement }} context
 * @returns {() => void} cleanup
 */
function render({ model, el }) {
  /** @type {Set<number>} */
  const timers = new Set();
  const header = h("div", { class: "monad-header" });
  const notices = h("div", { class: "monad-notices", "data-role": "notices" });
  const occupancy = h("div", { class: "monad-occupancy" });
  const timeline = h("div", { class: "monad-timeline-box" });
  const approval = h("div", { class: "monad-approval", "data-role": "approval" });
  const memory = h("div", { class: "monad-memory", "data-role": "memory" });
  const select = /** @type {HTMLSelectElement} */ (h("select", { "data-role": "inspect-select" }));
  const inspected = h("div", { "data-role": "inspected" });
  const inspector = h("details", { class: "monad-inspector" }, [
    h("summary", {}, ["Inspect what the model received: ", select]),
    inspected,
  ]);
  const panel = h("div", { class: "monad-panel" }, [header, notices, approval, occupancy, timeline, memory, inspector]);
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

  /** @type {[string[], () => void][]} */
  const sections = [
    [["session_name", "activity"], () => drawHeader(model, header)],
    [["notices"], () => drawNotices(model, notices, timers)],
    [["usage", "thresholds", "composition", "compaction"], () => drawOccupancy(model, occupancy)],
    [["timeline_base", "timeline_tail", "markers", "thresholds"], () => drawTimeline(model, timeline)],
    [["approval"], () => drawApproval(model, approval)],
    [["suggestions"], () => drawMemory(model, memory)],
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
  /** @type {[string, () => void][]} */
  const handlers = [];
  for (const [names, draw] of sections) {
    const schedule = () => {
      if (dirty.size === 0) queueMicrotask(flush);
      dirty.add(draw);
    };
    for (const name of names) {
      model.on(`change:${name}`, schedule);
      handlers.push([name, schedule]);
    }
    draw();
  }

  return () => {
    closed = true;
    for (const [name, handler] of handlers) model.off(`change:${name}`, handler);
    select.removeEventListener("change", onSelect);
    inspector.removeEventListener("toggle", onToggle);
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
  };
}

export default { render };
