// The header, notices, occupancy bar and the window grid: what the prompt holds now.

import { fmt, h, pct } from "./dom.js";

const KIND_LABELS = {
  system: "system prompt",
  tools: "tool schemas",
  memory: "memory",
  summary: "summary",
  plan: "plan",
  related_context: "related context",
  workspace: "workspace",
  message: "messages",
  tool_result: "tool results",
  image: "images",
  placeholder: "cleared (placeholders)",
};
/** What the cascade does once the window crosses each threshold. */
const THRESHOLD_MEANINGS = {
  evict: "old tool results are cleared (recoverable)",
  soft: "a summary starts in the background",
  hard: "requests wait for the summary",
};
const INFO_TOAST_MS = 5000;
const GRID_CELLS = 100; // the window grid: one cell per 1% of the context window

/**
 * @param {Usage} usage
 * @returns {number}
 */
function fractionOf(usage) {
  const window = usage.context_window || 0;
  return window ? Math.min(1, (usage.occupancy || 0) / window) : 0;
}

/**
 * The composition in whole-prompt tokens: each category's share of the headline figure.
 * @param {Slice[]} slices
 * @param {number} total
 * @returns {Slice[]}
 */
function scaled(slices, total) {
  const counted = slices.reduce((sum, slice) => sum + slice.tokens, 0);
  if (!counted || total <= 0) return slices;
  let given = 0;
  return slices.map((slice, index) => {
    const share = index === slices.length - 1 ? total - given : Math.round((slice.tokens * total) / counted);
    given += share;
    return { kind: slice.kind, tokens: Math.max(0, share) };
  });
}

/**
 * Whole cells per category out of `cells`, largest remainder first, so the grid adds up.
 * @param {Slice[]} slices
 * @param {number} window
 * @param {number} cells
 * @returns {{kind: string, count: number}[]}
 */
function cellsOf(slices, window, cells) {
  if (!window) return [];
  const exact = slices.map((slice) => ({ kind: slice.kind, value: (slice.tokens / window) * cells }));
  const used = Math.min(cells, Math.round(exact.reduce((sum, e) => sum + e.value, 0)));
  const counts = exact.map((e) => ({ kind: e.kind, count: Math.floor(e.value), rest: e.value - Math.floor(e.value) }));
  let left = used - counts.reduce((sum, c) => sum + c.count, 0);
  for (const c of [...counts].sort((a, b) => b.rest - a.rest)) {
    if (left <= 0) break;
    c.count += 1;
    left -= 1;
  }
  let over = counts.reduce((sum, c) => sum + c.count, 0) - cells;
  for (const c of [...counts].sort((a, b) => b.count - a.count)) {
    if (over <= 0) break;
    const cut = Math.min(over, c.count);
    c.count -= cut;
    over -= cut;
  }
  return counts.filter((c) => c.count > 0);
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 */
export function drawHeader(model, root) {
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
export function drawNotices(model, root, timers) {
  /** @type {Notice[]} */
  const notices = model.get("notices") || [];
  root.replaceChildren(
    ...notices.map((notice) => {
      const close = h("button", { class: "monad-x", "data-role": "notice-dismiss", title: "Dismiss", "aria-label": "Dismiss" }, ["×"]);
      const toast = h("div", { class: `monad-toast monad-toast-${notice.kind}`, "data-role": "notice", role: "status" }, [
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
 * @param {Record<string, number>} marks
 * @returns {HTMLElement}
 */
function thresholdKey(marks) {
  return h(
    "div",
    { class: "monad-threshold-key", "data-role": "threshold-key" },
    Object.entries(marks).map(([name, at]) =>
      h("span", { class: "monad-key", "data-role": "threshold", "data-name": name }, [
        h("i", { class: `monad-dash monad-mark-${name}` }),
        h("span", {}, [`${name} ${pct(at)}`, h("span", { class: "monad-key-meaning" }, [`: ${THRESHOLD_MEANINGS[name] || "a threshold"}`])]),
      ]),
    ),
  );
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 */
export function drawOccupancy(model, root) {
  /** @type {Usage} */
  const usage = model.get("usage") || {};
  /** @type {Record<string, number>} */
  const marks = model.get("thresholds") || {};
  const slices = scaled(model.get("composition") || [], usage.occupancy || 0);
  const fraction = fractionOf(usage);
  const level = fraction >= (marks.hard ?? 2) ? "hard" : fraction >= (marks.soft ?? 2) ? "soft" : "ok";

  const sliceTotal = slices.reduce((sum, slice) => sum + slice.tokens, 0);
  const fill = h("div", { class: `monad-fill monad-level-${level}`, "data-role": "bar-fill", style: `width: ${pct(fraction)}` });
  for (const slice of slices) {
    fill.append(
      h("div", {
        class: `monad-seg monad-kind-${slice.kind}`,
        "data-role": "segment",
        "data-kind": slice.kind,
        style: `width: ${pct(sliceTotal ? slice.tokens / sliceTotal : 0)}`,
        title: `${KIND_LABELS[slice.kind] || slice.kind}: ${fmt.format(slice.tokens)} tokens`,
      }),
    );
  }
  const bar = h("div", { class: "monad-bar", "data-role": "bar" }, [fill]);
  for (const [name, at] of Object.entries(marks)) {
    const title = `${name} ${pct(at)}: ${THRESHOLD_MEANINGS[name] || "a threshold"}`;
    bar.append(h("div", { class: `monad-mark monad-mark-${name}`, "data-role": `mark-${name}`, style: `left: ${pct(at)}`, title }));
  }
  const numbers = h("div", { class: "monad-numbers", "data-role": "numbers" }, [
    h("strong", {}, [fmt.format(usage.occupancy || 0)]),
    ` / ${fmt.format(usage.context_window || 0)} tokens in the prompt · ${pct(fraction)}`,
    h("span", { class: "monad-dim" }, [usage.exact ? " · exact" : " · estimated"]),
  ]);
  const children = [numbers, bar, thresholdKey(marks)];
  if ((usage.reclaimed || 0) > 0) {
    children.push(
      h("div", { class: "monad-reclaimed", "data-role": "reclaimed" }, [
        `reclaimed ${fmt.format(usage.reclaimed || 0)} tokens by clearing old tool results (recoverable)`,
      ]),
    );
  }
  children.push(...compactionLines(model.get("compaction") || {}));
  root.replaceChildren(...children);
}

/**
 * @param {{running?: boolean, reason?: string, tokens_before?: number, last?: {before: number, after: number, seconds: number, fallback: boolean, replaced?: string, turn?: number, step?: number} | null}} compaction
 * @returns {HTMLElement[]}
 */
function compactionLines(compaction) {
  const lines = [];
  if (compaction.running) {
    lines.push(
      h("div", { class: "monad-compaction monad-running", "data-role": "compaction-running" }, [
        h("span", { class: "monad-spinner" }),
        `summarizing in the background (${compaction.reason || "soft threshold"}; ${fmt.format(compaction.tokens_before || 0)} tokens of messages)…`,
      ]),
    );
  }
  if (compaction.last) {
    const last = compaction.last;
    const where = last.turn ? ` at turn ${last.turn}` : "";
    const how = last.replaced
      ? `, extractive fallback, the fast model's was not kept: ${last.replaced}`
      : last.fallback ? ", extractive fallback" : "";
    lines.push(
      h("div", { class: "monad-compaction", "data-role": "compaction-last" }, [
        `last compaction${where}: −${fmt.format(Math.max(0, last.before - last.after))} tokens `,
        h("span", { class: "monad-dim" }, [`(messages only: ${fmt.format(last.before)} → ${fmt.format(last.after)}, ${last.seconds} s${how})`]),
      ]),
    );
  }
  return lines;
}

/**
 * The window as a grid of cells, one per 1% of the context window, coloured by category, free space included.
 * @param {Model} model
 * @param {HTMLElement} root
 */
export function drawWindowGrid(model, root) {
  /** @type {Usage} */
  const usage = model.get("usage") || {};
  /** @type {Record<string, number>} */
  const marks = model.get("thresholds") || {};
  const window = usage.context_window || 0;
  const slices = scaled(model.get("composition") || [], usage.occupancy || 0);
  const grid = h("div", { class: "monad-cells", "data-role": "window-grid", role: "img" });
  const lines = Object.fromEntries(Object.entries(marks).map(([name, at]) => [Math.round(at * GRID_CELLS), name]));
  let n = 0;
  const cell = (/** @type {string} */ kind) => {
    const line = lines[n];
    const classes = [`monad-cell monad-kind-${kind}`, line ? `monad-from-${line}` : ""].filter(Boolean).join(" ");
    n += 1;
    return h("i", { class: classes, "data-role": "cell", "data-kind": kind });
  };
  for (const { kind, count } of cellsOf(slices, window, GRID_CELLS)) for (let k = 0; k < count; k++) grid.append(cell(kind));
  while (n < GRID_CELLS) grid.append(cell("free"));
  const free = Math.max(0, window - (usage.occupancy || 0));
  grid.setAttribute("aria-label", `context window: ${pct(fractionOf(usage))} used, ${fmt.format(free)} tokens free`);
  const rows = [...slices.filter((slice) => slice.tokens > 0), { kind: "free", tokens: free }].map((slice) =>
    h("li", { "data-role": "grid-key", "data-kind": slice.kind }, [
      h("i", { class: `monad-swatch monad-kind-${slice.kind}` }),
      h("span", { class: "monad-key-name" }, [slice.kind === "free" ? "free space" : KIND_LABELS[slice.kind] || slice.kind]),
      h("span", { class: "monad-num" }, [fmt.format(slice.tokens)]),
      h("span", { class: "monad-num monad-dim" }, [window ? pct(slice.tokens / window) : "–"]),
    ]),
  );
  root.replaceChildren(
    grid,
    h("div", { class: "monad-grid-side" }, [
      h("ul", { class: "monad-grid-legend", "data-role": "grid-legend" }, rows),
      h("div", { class: "monad-dim" }, [`one cell = 1% of the window (${fmt.format(Math.round(window / GRID_CELLS))} tokens); whole-prompt tokens`]),
    ]),
  );
}
