// Built from js/panel/ by `cd js && npm run build` (scripts/panel.mjs): edit the parts there, not this file.

;// ./panel/dom.js
// The panel's building blocks: the types its state arrives in, element makers and number formats.

/**
 * @typedef {{occupancy?: number, context_window?: number, fraction?: number, exact?: boolean, reclaimed?: number, messages?: number}} Usage
 * @typedef {{i: number, turn: number, step: number, occ: number, before: number, win: number}} Point
 * @typedef {{i: number, kind: string, label: string, tag: string, turn: number, step: number}} Marker
 * @typedef {{kind: string, tokens: number}} Slice
 * @typedef {{id: string, kind: string, text: string}} Notice
 * @typedef {{id: string, text: string, origin?: string}} Suggestion
 * @typedef {{id: string, text: string, scope: string, source: string, origin: string}} Fact
 * @typedef {{kind: string, key: string, about: string, origin: string, state: string}} WorkspaceRow
 * @typedef {{id?: string, action?: string, text?: string, undo?: boolean, was?: string}} Receipt
 * @typedef {{id: string, answer: string, code: string, lines: number, at: string}} Decision
 * @typedef {{turn: number, step: number, total_tokens: number}} RecordRef
 * @typedef {{name: string, arguments: string}} Call
 * @typedef {{kind: string, role: string, tokens: number, preview: string, chars: number, calls?: Call[], injected: boolean, placeholder: boolean}} Part
 * @typedef {{
 *   get(name: string): any,
 *   on(event: string, callback: Function): void,
 *   off(event: string, callback: Function): void,
 *   send(content: object): void,
 * }} Model
 */

const SVG = "http://www.w3.org/2000/svg";
const NARROW = 500; // px: below this the panel stacks its columns
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
 * @param {string} [text]
 * @returns {SVGElement}
 */
function s(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** @param {number} fraction */
function pct(fraction) {
  return `${Math.round(Math.max(0, fraction) * 1000) / 10}%`;
}

;// ./panel/approval.js
// Code the agent wants to run, shown line by line for the user's decision, and the decisions taken.



const FOLD_AT = 400; // characters; a longer line shows its first FOLD_HEAD until unfolded
const FOLD_HEAD = 300;

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
 * A pending request is drawn fresh (never in the answered style of an earlier one); the
 * decisions taken so far are listed under it.
 * @param {Model} model
 * @param {HTMLElement} root
 * @param {Map<string, boolean>} answered approval id -> the answer sent from this view
 */
function drawApproval(model, root, answered) {
  /** @type {{id?: string, lines?: string[], summary?: string, action?: string, allow?: string}} */
  const approval = model.get("approval") || {};
  /** @type {Decision[]} */
  const decisions = model.get("decisions") || [];
  const children = [];
  if (approval.id) {
    const id = approval.id;
    const run = h("button", { class: "monad-btn monad-primary", "data-role": "run" }, ["Run"]);
    const skip = h("button", { class: "monad-btn", "data-role": "skip" }, ["Skip"]);
    const always = h("button", { class: "monad-btn", "data-role": "always" }, [
      `Allow ${approval.allow || "python"} for this session`,
    ]);
    const status = h("span", { class: "monad-dim", "data-role": "approval-status", "aria-live": "polite" });
    const box = h("div", { class: "monad-request", "data-role": "approval-request" });
    const showAnswered = () => {
      box.classList.add("monad-answered");
      for (const button of [run, skip, always]) button.setAttribute("disabled", "");
      status.textContent = answered.get(id) ? "Run sent, waiting for the kernel…" : "Skip sent, waiting for the kernel…";
    };
    const answer = (/** @type {boolean} */ yes, allowForSession = false) => {
      answered.set(id, yes);
      model.send({ type: "approval", id, run: yes, always: allowForSession });
      showAnswered();
    };
    run.addEventListener("click", () => answer(true));
    skip.addEventListener("click", () => answer(false));
    always.addEventListener("click", () => answer(true, true));
    const allows = approval.allow !== ""; // a call read from the model's text is asked about each time
    const lines = approval.lines || [];
    box.append(
      h("div", { class: "monad-section-title", "data-role": "approval-title" }, [
        `The agent wants to ${approval.action || "run this code"} `,
        h("span", { class: "monad-dim", "data-role": "approval-summary" }, [`(${approval.summary || `${lines.length} lines`})`]),
      ]),
      h("div", { class: "monad-code", "data-role": "approval-code" }, lines.map((line, i) => codeLine(line, i + 1))),
      h("div", { class: "monad-actions" }, allows ? [run, skip, always, status] : [run, skip, status]),
    );
    if (answered.has(id)) showAnswered();
    children.push(box);
  }
  if (decisions.length > 0) {
    const items = [...decisions].reverse().map((d) =>
      h("li", { "data-role": "decision", "data-answer": d.answer }, [
        h("span", { class: `monad-verdict monad-verdict-${d.answer.replace(" ", "-")}` }, [d.answer]),
        h("code", {}, [d.code || "(empty)"]),
        h("span", { class: "monad-dim" }, [d.lines > 1 ? `${d.lines} lines · ${d.at}` : d.at]),
      ]),
    );
    children.push(h("div", { class: "monad-decisions", "data-role": "decisions" }, [h("div", { class: "monad-dim" }, ["Approval decisions"]), h("ul", {}, items)]));
  }
  root.replaceChildren(...children);
}

;// ./panel/inspector.js
// The prompt inspector: the parts the model received at one step.



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
 * @param {Part} part
 * @returns {HTMLElement}
 */
function partRow(part) {
  const flags = [part.placeholder ? "cleared" : "", part.injected ? "injected" : ""].filter(Boolean);
  const head = h("div", { class: "monad-part-head" }, [
    h("i", { class: `monad-swatch monad-kind-${part.kind}` }),
    h("span", { class: "monad-part-kind" }, [part.kind]),
    ...flags.map((f) => h("span", { class: `monad-flag monad-flag-${f}` }, [f])),
    h("span", { class: "monad-dim" }, [part.role]),
    h("span", { class: "monad-num monad-part-tokens" }, [`${fmt.format(part.tokens)} tokens`]),
  ]);
  const body = [head];
  if (part.preview) body.push(h("div", { class: "monad-preview" }, [part.preview]));
  const calls = part.calls || [];
  if (calls.length) {
    body.push(
      h(
        "ul",
        { class: "monad-calls", "data-role": "calls" },
        calls.map((call) => h("li", { "data-role": "call" }, [h("strong", {}, [call.name]), `(${call.arguments})`])),
      ),
    );
  }
  if (!part.preview && !calls.length) body.push(h("div", { class: "monad-preview monad-dim" }, ["(empty)"]));
  return h("li", { class: `monad-part ${flags.map((f) => `monad-${f}`).join(" ")}`, "data-role": "part", "data-kind": part.kind }, body);
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
  const more = record.more_parts ? [h("div", { class: "monad-dim" }, [`… and ${record.more_parts} more parts`])] : [];
  root.replaceChildren(
    h("div", { class: "monad-dim" }, [`turn ${record.turn} · step ${record.step} · ${fmt.format(record.total_tokens || 0)} tokens sent`]),
    h("ol", { class: "monad-parts" }, parts.map(partRow)),
    ...more,
  );
}

;// ./panel/memory.js
// Memory suggestions with their Save and Dismiss buttons, the last click's receipt, and the facts in force.



const RECEIPTS = { saved: "Saved", dismissed: "Dismissed", forgot: "Forgot", already: "Already remembered", undone: "Undone:" };

/**
 * @param {HTMLElement} button
 * @param {Model} model
 * @param {object} message
 */
function act(button, model, message) {
  button.setAttribute("disabled", "");
  model.send(message);
}

/**
 * @param {Model} model
 * @param {Receipt} receipt
 * @returns {HTMLElement[]}
 */
function receiptLine(model, receipt) {
  if (!receipt.id) return [];
  const verb = RECEIPTS[receipt.action || ""] || receipt.action || "";
  const quoted = receipt.action === "saved" && !receipt.undo ? receipt.text : `“${receipt.text}”`;
  const line = h("div", { class: "monad-receipt", "data-role": "receipt", role: "status" }, [`${verb} ${quoted}`]);
  if (receipt.undo) {
    const undo = h("button", { class: "monad-link", "data-role": "undo" }, ["Undo"]);
    undo.addEventListener("click", () => act(undo, model, { type: "memory.undo", id: receipt.id }));
    line.append(" · ", undo);
  }
  return [line];
}

/**
 * Suggestions (one set of buttons each, where each came from), the last click's receipt with
 * its undo, and the facts in force.
 * @param {Model} model
 * @param {HTMLElement} root
 * @param {HTMLDetailsElement} factsBox kept across redraws so its open state stays
 */
function drawMemory(model, root, factsBox) {
  /** @type {Suggestion[]} */
  const items = model.get("suggestions") || [];
  /** @type {Fact[]} */
  const facts = model.get("facts") || [];
  /** @type {Receipt} */
  const receipt = model.get("receipt") || {};
  if (items.length === 0 && facts.length === 0 && !receipt.id) {
    root.replaceChildren();
    return;
  }
  const children = [h("div", { class: "monad-section-title" }, [items.length ? (items.length === 1 ? "Remember this?" : `Remember these ${items.length}?`) : "Memory"])];
  if (items.length) {
    const rows = items.map((item) => {
      const save = h("button", { class: "monad-btn monad-primary", "data-role": "save", "data-id": item.id }, ["Save"]);
      const dismiss = h("button", { class: "monad-btn", "data-role": "dismiss", "data-id": item.id }, ["Dismiss"]);
      save.addEventListener("click", () => act(save, model, { type: "memory.save", id: item.id }));
      dismiss.addEventListener("click", () => act(dismiss, model, { type: "memory.dismiss", id: item.id }));
      return h("li", { "data-role": "suggestion", "data-id": item.id }, [
        h("div", { class: "monad-fact" }, [h("span", {}, [item.text]), h("span", { class: "monad-dim", "data-role": "origin" }, [item.origin || ""])]),
        h("span", { class: "monad-actions" }, [save, dismiss]),
      ]);
    });
    children.push(h("ul", { class: "monad-suggestions" }, rows));
    if (items.length > 1) {
      const saveAll = h("button", { class: "monad-btn", "data-role": "save-all" }, [`Save all ${items.length}`]);
      const dismissAll = h("button", { class: "monad-btn", "data-role": "dismiss-all" }, [`Dismiss all ${items.length}`]);
      saveAll.addEventListener("click", () => act(saveAll, model, { type: "memory.save", all: true }));
      dismissAll.addEventListener("click", () => act(dismissAll, model, { type: "memory.dismiss", all: true }));
      children.push(h("div", { class: "monad-actions" }, [saveAll, dismissAll]));
    }
  }
  children.push(...receiptLine(model, receipt));
  const rows = facts.map((fact) => {
    const forget = h("button", { class: "monad-link", "data-role": "forget", "data-id": fact.id }, ["Forget"]);
    forget.addEventListener("click", () => act(forget, model, { type: "memory.forget", id: fact.id }));
    return h("li", { "data-role": "fact", "data-id": fact.id }, [
      h("div", { class: "monad-fact" }, [h("span", {}, [fact.text]), h("span", { class: "monad-dim", "data-role": "origin" }, [fact.origin])]),
      forget,
    ]);
  });
  factsBox.replaceChildren(
    h("summary", {}, [`Facts in force (${facts.length})`]),
    facts.length ? h("ul", { class: "monad-facts", "data-role": "facts" }, rows) : h("div", { class: "monad-dim" }, ["no facts remembered yet"]),
  );
  children.push(factsBox);
  root.replaceChildren(...children);
}

;// ./panel/occupancy.js
// The header, notices, occupancy bar and the window grid: what the prompt holds now.



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
function drawOccupancy(model, root) {
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
function drawWindowGrid(model, root) {
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

;// ./panel/rewind.js
// Rewind from the timeline: a button per turn, a confirmation (a rewind changes files and names), what was done,
// and the undo. The kernel does the rewind exactly as `%monad rewind` does; everything shown here is text.



const SHOWN = 12; // the latest turns get a button each; earlier ones are picked from a list

/**
 * @typedef {{from?: string, turn?: number}} RewoundFrom
 * @typedef {{id: string, ok: boolean, undo: boolean, lines: string[]}} RewindResult
 * @typedef {{turns?: number, undo?: RewoundFrom, result?: RewindResult}} RewindView
 * @typedef {{turn?: number, undo?: boolean}} RewindAsk
 * @typedef {{ask: RewindAsk | null, sent: RewindAsk | null, seen: string, hidden: string, focus: string}} RewindLocal
 */

/** @returns {RewindLocal} what this view asked, kept across redraws */
function rewindLocal() {
  return { ask: null, sent: null, seen: "", hidden: "", focus: "" };
}

/**
 * Mark on the timeline the turns a rewind to before `turn` undoes (0: none).
 * @param {HTMLElement} timeline
 * @param {number} turn
 */
function showUndone(timeline, turn) {
  for (const node of timeline.querySelectorAll("[data-turn]")) {
    node.classList.toggle("monad-undone", turn > 0 && Number(node.getAttribute("data-turn")) >= turn);
  }
}

/**
 * @param {number} turn
 * @param {number} turns
 */
function undoneTurns(turn, turns) {
  return turn === turns ? `Turn ${turn} is undone` : `Turns ${turn} to ${turns} are undone`;
}

/**
 * The question before anything changes, with the button that does it and the one that does not (focused first).
 * @param {RewindAsk} ask
 * @param {RewindView} view
 * @param {(yes: boolean) => void} answer
 */
function question(ask, view, answer) {
  const from = view.undo || {};
  const text = ask.undo
    ? `Undo the rewind? The conversation goes back to session “${from.from}” with every turn, and the files and ` +
      "names the rewind put back return to how they were before it (unless this session's own turns changed them since)."
    : `Rewind to before turn ${ask.turn}? ${undoneTurns(ask.turn || 0, view.turns || 0)}: the files and names they ` +
      "changed are put back (files they made are moved aside into .monad-rewind/, never deleted), the cells they put " +
      "in the notebook are proposed back for you to accept or reject, and the conversation goes on as a copy. This " +
      "session keeps every turn, and Undo brings it all back.";
  const yes = h("button", { class: "monad-btn monad-primary", "data-role": "rewind-confirm" }, [
    ask.undo ? "Undo the rewind" : `Rewind to before turn ${ask.turn}`,
  ]);
  const no = h("button", { class: "monad-btn", "data-role": "rewind-cancel" }, ["Cancel"]);
  yes.addEventListener("click", () => answer(true));
  no.addEventListener("click", () => answer(false));
  const title = ask.undo ? "Undo the rewind" : `Rewind to before turn ${ask.turn}`;
  const box = h("div", { class: "monad-request monad-rewind-ask", role: "alertdialog", "aria-label": title, "data-role": "rewind-ask" }, [
    h("div", { class: "monad-rewind-text" }, [text]),
    h("div", { class: "monad-actions" }, [yes, no]),
  ]);
  box.addEventListener("keydown", (event) => {
    if (/** @type {KeyboardEvent} */ (event).key === "Escape") answer(false);
  });
  return { box, no };
}

/**
 * What the last rewind did, line by line, as the kernel said it.
 * @param {RewindResult} result
 * @param {() => void} hide
 */
function outcome(result, hide) {
  const title = result.ok ? (result.undo ? "Rewind undone" : "Rewound") : result.undo ? "Not undone" : "Not rewound";
  const close = h("button", { class: "monad-x", "data-role": "rewind-result-dismiss", title: "Dismiss", "aria-label": "Dismiss" }, ["×"]);
  close.addEventListener("click", hide);
  return h("div", { class: `monad-rewind-result${result.ok ? "" : " monad-rewind-failed"}`, role: "status", "data-role": "rewind-result" }, [
    h("div", { class: "monad-rewind-head" }, [h("span", { class: "monad-section-title" }, [title]), close]),
    h("ul", {}, (result.lines || []).map((line) => h("li", {}, [line]))),
  ]);
}

/**
 * The turn buttons (the latest SHOWN; a list for the earlier), each marking on the timeline what it would undo.
 * @param {number} turns
 * @param {boolean} busy
 * @param {HTMLElement} timeline
 * @param {(turn: number) => void} pick
 * @param {() => void} unmark
 */
function turnButtons(turns, busy, timeline, pick, unmark) {
  const first = Math.max(1, turns - SHOWN + 1);
  const controls = [];
  if (first > 1) {
    const earlier = /** @type {HTMLSelectElement} */ (h("select", { class: "monad-rewind-earlier", "data-role": "rewind-earlier", "aria-label": "Rewind to before an earlier turn" }));
    earlier.append(h("option", { value: "" }, ["earlier…"]));
    for (let turn = 1; turn < first; turn++) earlier.append(h("option", { value: String(turn) }, [String(turn)]));
    if (busy) earlier.setAttribute("disabled", "");
    earlier.addEventListener("change", () => earlier.value && pick(Number(earlier.value)));
    controls.push(earlier);
  }
  for (let turn = first; turn <= turns; turn++) {
    const label = `Rewind to before turn ${turn}`;
    const button = h("button", { class: "monad-turn-btn", "data-role": "rewind-turn", "data-turn": String(turn), "aria-label": label, title: `${label}: ${undoneTurns(turn, turns).toLowerCase()}` }, [`↶ ${turn}`]);
    if (busy) button.setAttribute("disabled", "");
    button.addEventListener("click", () => pick(turn));
    for (const name of ["mouseenter", "focus"]) button.addEventListener(name, () => showUndone(timeline, turn));
    for (const name of ["mouseleave", "blur"]) button.addEventListener(name, unmark);
    controls.push(button);
  }
  return h("div", { class: "monad-rewind-row", role: "group", "aria-label": "Rewind the session to before a turn" }, [
    h("span", { class: "monad-dim" }, ["Rewind to before turn"]),
    ...controls,
  ]);
}

/**
 * @param {Model} model
 * @param {HTMLElement} root
 * @param {HTMLElement} timeline the timeline's box, whose points a rewind would undo are marked
 * @param {RewindLocal} local
 */
function drawRewind(model, root, timeline, local) {
  /** @type {RewindView} */
  const view = model.get("rewind") || {};
  const result = view.result;
  if (result && result.id !== local.seen) {
    local.seen = result.id;
    local.sent = null;
    local.ask = null;
  }
  const turns = view.turns || 0;
  const from = view.undo || {};
  if (view.turns === undefined || (turns === 0 && !from.from && !result)) {
    root.replaceChildren();
    return;
  }
  const redraw = () => drawRewind(model, root, timeline, local);
  const unmark = () => showUndone(timeline, local.ask?.turn || local.sent?.turn || 0);
  const ask = (/** @type {RewindAsk} */ what) => {
    local.ask = what;
    local.focus = "rewind-cancel";
    redraw();
  };
  const busy = local.sent !== null;
  const children = [];
  if (turns > 0) children.push(turnButtons(turns, busy, timeline, (turn) => ask({ turn }), unmark));
  if (from.from) {
    const undo = h("button", { class: "monad-link", "data-role": "rewind-undo" }, ["Undo the rewind"]);
    if (busy) undo.setAttribute("disabled", "");
    undo.addEventListener("click", () => ask({ undo: true }));
    children.push(h("div", { class: "monad-dim", "data-role": "rewound-from" }, [`This session is “${from.from}” rewound to before turn ${from.turn}. `, undo]));
  }
  if (local.ask && !busy) {
    const asked = local.ask;
    const { box } = question(asked, view, (yes) => {
      local.ask = null;
      if (yes) {
        local.sent = asked;
        model.send({ type: "rewind", ...(asked.undo ? { undo: true } : { turn: asked.turn }) });
      }
      local.focus = yes ? "rewind-status" : asked.undo ? "rewind-undo" : `rewind-turn-${asked.turn}`;
      redraw();
    });
    children.push(box);
  }
  if (local.sent) {
    const doing = local.sent.undo ? "Undoing the rewind" : `Rewinding to before turn ${local.sent.turn}`;
    children.push(h("div", { class: "monad-dim", role: "status", tabindex: "-1", "data-role": "rewind-status" }, [`${doing}… (after the running cell, if one runs)`]));
  } else if (result && result.id !== local.hidden) {
    children.push(
      outcome(result, () => {
        local.hidden = result.id;
        redraw();
      }),
    );
  }
  root.replaceChildren(...children);
  unmark();
  const focus = local.focus;
  local.focus = "";
  const target = focus.startsWith("rewind-turn-")
    ? root.querySelector(`[data-role=rewind-turn][data-turn="${focus.slice(12)}"]`)
    : focus && root.querySelector(`[data-role=${focus}]`);
  /** @type {HTMLElement | null} */ (target || null)?.focus();
}

;// ./panel/timeline.js
// The occupancy timeline: what was sent at each step, and where the cascade evicted, compacted or reinjected.



/** Each marker's letter on the timeline, and what it says happened at that step. */
const MARKERS = {
  evicted: ["E", "eviction: old tool results cleared (recoverable)"],
  compaction: ["C", "compaction: older messages summarized"],
  reinjected: ["R", "reinjection: related earlier context brought back"],
  notebook: ["N", "notebook: a cell proposed, or your decision on one"],
};
const FONT = 11; // px: the smallest text the panel draws
const CHAR_WIDTH = 6.5; // px: about one character of the axis font

/**
 * Labels that keep at least `gap` px apart along one axis: later ones move down (or are dropped).
 * @param {{at: number}[]} items sorted by `at`
 * @param {number} gap
 */
function spread(items, gap) {
  let last = -Infinity;
  for (const item of items) {
    item.at = Math.max(item.at, last + gap);
    last = item.at;
  }
}

/**
 * @param {Point} p
 * @returns {string}
 */
function pointTip(p) {
  const cut = p.before > p.occ ? ` · before the cascade acted: ${fmt.format(p.before)}` : "";
  return `turn ${p.turn} · step ${p.step}: sent ${fmt.format(p.occ)} of ${fmt.format(p.win)} tokens (${pct(p.win ? p.occ / p.win : 0)})${cut}`;
}

/**
 * The occupancy timeline at the box's real pixel width, so its text keeps its size at every width.
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
  const width = Math.max(240, Math.round(root.clientWidth || 600));
  const height = width < (/* inlined export .NARROW */500) ? 170 : 190;
  const pad = { left: 40, right: 10, top: 34, bottom: 34 };
  const svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "monad-timeline", "data-role": "timeline", role: "img" });
  svg.append(s("title", {}, "occupancy per step: what was sent, and what the window held before the cascade acted"));
  const readout = h("div", { class: "monad-readout", "data-role": "readout" });
  if (points.length === 0) {
    svg.append(s("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "monad-axis" }, "the timeline starts with the first step"));
    root.replaceChildren(svg);
    return;
  }
  const first = points[0].i;
  const last = Math.max(points[points.length - 1].i, ...markers.map((m) => m.i));
  const plotW = width - pad.left - pad.right;
  const x = (/** @type {number} */ i) => pad.left + (last === first ? plotW / 2 : ((i - first) / (last - first)) * plotW);
  const y = (/** @type {number} */ f) => pad.top + (1 - Math.min(1, Math.max(0, f))) * (height - pad.top - pad.bottom);
  const share = (/** @type {number} */ tokens, /** @type {number} */ win) => (win ? tokens / win : 0);

  // A band per turn, behind everything: a rewind button marks the turns it would undo (rewind.js).
  const starts = points.filter((p, index) => index === 0 || points[index - 1].turn !== p.turn);
  const edges = starts.map((p) => {
    const index = points.indexOf(p);
    return index === 0 ? pad.left : (x(points[index - 1].i) + x(p.i)) / 2;
  });
  starts.forEach((p, n) => {
    const right = n + 1 < edges.length ? edges[n + 1] : width - pad.right;
    const band = { x: edges[n], y: pad.top, width: Math.max(0, right - edges[n]), height: height - pad.top - pad.bottom };
    svg.append(s("rect", { ...band, class: "monad-turn-band", "data-turn": p.turn, "data-role": "turn-band" }));
  });

  for (const tick of [0, 0.5, 1]) {
    svg.append(s("line", { x1: pad.left, x2: width - pad.right, y1: y(tick), y2: y(tick), class: "monad-gridline" }));
    svg.append(s("text", { x: pad.left - 5, y: y(tick) + 4, "text-anchor": "end", class: "monad-axis" }, `${tick * 100}%`));
  }
  const labels = Object.entries(marks)
    .map(([name, at]) => ({ name, value: at, at: y(at) }))
    .sort((a, b) => a.at - b.at);
  for (const mark of labels) {
    svg.append(s("line", { x1: pad.left, x2: width - pad.right, y1: mark.at, y2: mark.at, class: `monad-threshold monad-mark-${mark.name}`, "data-role": "threshold-line" }));
  }
  spread(labels, FONT + 2);
  for (const mark of labels) {
    // At the left, where a session starts low: markers gather at the recent (right) end.
    svg.append(s("text", { x: pad.left + 4, y: mark.at - 3, class: "monad-axis monad-halo", "data-role": "threshold-label" }, `${mark.name} ${pct(mark.value)}`));
  }

  // The turn axis: a tick where each turn starts, labelled while the labels fit; the current turn always is.
  const axisY = height - pad.bottom + 6;
  svg.append(s("line", { x1: pad.left, x2: width - pad.right, y1: axisY, y2: axisY, class: "monad-gridline" }));
  const turnLabels = starts.map((p) => {
    const text = `turn ${p.turn}`;
    const textWidth = text.length * CHAR_WIDTH;
    const left = Math.max(2, Math.min(x(p.i) - textWidth / 2, width - 2 - textWidth)); // centred on its tick
    return { px: x(p.i), text, textWidth, left };
  });
  const current = turnLabels[turnLabels.length - 1];
  let labelEnd = -Infinity;
  for (const label of turnLabels) {
    svg.append(s("line", { x1: label.px, x2: label.px, y1: axisY, y2: axisY + 5, class: "monad-tick" }));
    const clear = label.left > labelEnd + 6 && label.left + label.textWidth + 6 < current.left;
    if (label === current || clear) {
      svg.append(s("text", { x: label.left, y: axisY + 18, class: "monad-axis", "data-role": "turn-label" }, label.text));
      labelEnd = label.left + label.textWidth;
    }
  }

  // What the window held before the cascade acted (dashed), and what was sent (solid).
  if (points.some((p) => p.before > p.occ)) {
    const before = points.map((p) => `${x(p.i).toFixed(1)},${y(share(p.before, p.win)).toFixed(1)}`);
    svg.append(s("polyline", { points: before.join(" "), class: "monad-line-before", "data-role": "line-before" }));
    for (const p of points.filter((q) => q.before > q.occ)) {
      svg.append(s("line", { x1: x(p.i), x2: x(p.i), y1: y(share(p.before, p.win)), y2: y(share(p.occ, p.win)), class: "monad-cut", "data-role": "cut" }));
    }
  }
  const coords = points.map((p) => `${x(p.i).toFixed(1)},${y(share(p.occ, p.win)).toFixed(1)}`);
  svg.append(s("polyline", { points: coords.join(" "), class: "monad-line", "data-role": "line" }));
  for (const p of points) {
    svg.append(s("circle", { cx: x(p.i), cy: y(share(p.occ, p.win)), r: 3.5, class: "monad-dot", "data-role": "point", "data-turn": p.turn, "data-tip": pointTip(p) }));
  }

  let tagEnd = -Infinity;
  const stacked = new Map();
  for (const marker of markers) {
    if (marker.i < first) continue;
    const mx = x(marker.i);
    const row = stacked.get(marker.i) || 0;
    stacked.set(marker.i, row + 1);
    const bx = mx + row * 18;
    const group = s("g", { class: `monad-marker monad-marker-${marker.kind}`, "data-role": "marker", "data-kind": marker.kind, "data-tip": marker.label });
    group.append(s("line", { x1: mx, x2: mx, y1: pad.top - 8, y2: height - pad.bottom, class: "monad-marker-line" }));
    group.append(s("circle", { cx: bx, cy: pad.top - 18, r: 8, class: "monad-marker-badge" }));
    group.append(s("text", { x: bx, y: pad.top - 14, "text-anchor": "middle", class: "monad-marker-letter" }, MARKERS[marker.kind]?.[0] || "•"));
    // The amount beside the badge: right of it, else left, else just under it, inside the plot.
    const tag = marker.tag || "";
    const tagWidth = tag.length * CHAR_WIDTH;
    const right = bx + 11;
    const left = bx - 11 - tagWidth;
    if (tag && right > tagEnd + 4 && right + tagWidth <= width) {
      group.append(s("text", { x: right, y: pad.top - 14, class: "monad-marker-tag", "data-role": "marker-tag" }, tag));
      tagEnd = right + tagWidth;
    } else if (tag && left > tagEnd + 4) {
      group.append(s("text", { x: left, y: pad.top - 14, class: "monad-marker-tag", "data-role": "marker-tag" }, tag));
      tagEnd = bx + 8;
    } else if (tag) {
      const below = { x: Math.min(bx + 4, width - tagWidth - 2), y: pad.top + 12, class: "monad-marker-tag monad-halo", "data-role": "marker-tag" };
      group.append(s("text", below, tag));
      tagEnd = bx + 8;
    }
    group.append(s("title", {}, marker.label));
    svg.append(group);
  }
  const latest = points[points.length - 1];
  readout.textContent = pointTip(latest);
  svg.addEventListener("mouseover", (event) => {
    const target = /** @type {Element} */ (event.target);
    const tip = target.closest?.("[data-tip]")?.getAttribute("data-tip");
    readout.textContent = tip || pointTip(latest);
  });
  const key = h("div", { class: "monad-dim monad-caption", "data-role": "timeline-key" }, [
    h("span", { class: "monad-key" }, [h("i", { class: "monad-dash monad-dash-sent" }), "sent"]),
    h("span", { class: "monad-key" }, [h("i", { class: "monad-dash monad-dash-before" }), "before eviction / compaction"]),
    ...Object.entries(MARKERS).map(([kind, [letter, meaning]]) =>
      h("span", { class: "monad-key", "data-role": "marker-key", "data-kind": kind }, [
        h("b", { class: `monad-key-badge monad-marker-${kind}` }, [letter]),
        meaning,
      ]),
    ),
  ]);
  root.replaceChildren(svg, readout, key);
}

;// ./panel/workspace.js
// The workspace: what the kernel holds now and the files written, each with the call or cell that made it.



/**
 * One row: the name or path, its type and size, what made it; a name a restart lost is marked so.
 * @param {WorkspaceRow} row
 * @returns {HTMLElement}
 */
function rowOf(row) {
  const lost = row.state === "lost";
  return h("li", { class: lost ? "monad-ws-lost" : "", "data-role": "workspace-row", "data-kind": row.kind }, [
    h("code", { class: "monad-ws-key" }, [row.key]),
    h("span", {}, [row.about]),
    h("span", { class: "monad-dim", "data-role": "origin" }, [lost ? `not in the kernel now · ${row.origin}` : row.origin]),
  ]);
}

/**
 * The workspace list in a collapsible box (kept across redraws so its open state stays), names first,
 * then the files written, then what a restart lost.
 * @param {Model} model
 * @param {HTMLElement} root
 * @param {HTMLDetailsElement} box
 */
function drawWorkspace(model, root, box) {
  /** @type {WorkspaceRow[]} */
  const rows = model.get("workspace") || [];
  if (rows.length === 0) {
    root.replaceChildren();
    return;
  }
  const names = rows.filter((r) => r.kind === "name" && r.state !== "lost");
  const files = rows.filter((r) => r.kind === "file");
  const lost = rows.filter((r) => r.state === "lost");
  const counts = [`${names.length} ${names.length === 1 ? "name" : "names"}`, `${files.length} ${files.length === 1 ? "file" : "files"}`];
  if (lost.length) counts.push(`${lost.length} lost in a restart`);
  box.replaceChildren(
    h("summary", {}, [`Workspace: ${counts.join(" · ")}`]),
    h("ul", { class: "monad-ws", "data-role": "workspace" }, [...names, ...files, ...lost].map(rowOf)),
  );
  root.replaceChildren(box);
}

;// ./panel/index.js
// The monad context panel: plain ESM, one part per section, built into one module by scripts/panel.mjs.
// State arrives as synced traits; user actions go back as small custom messages.
// Colours come from panel.css (JupyterLab theme variables); sizes from the panel's real width.










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
    panel.classList.toggle("monad-narrow", width > 0 && width < (/* inlined export .NARROW */500));
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

/* harmony default export */ const panel = ({ render });

export { panel as default };
