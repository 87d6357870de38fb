// Rewind from the timeline: a button per turn, a confirmation (a rewind changes files and names), what was done,
// and the undo. The kernel does the rewind exactly as `%monad rewind` does; everything shown here is text.

import { h } from "./dom.js";

const SHOWN = 12; // the latest turns get a button each; earlier ones are picked from a list

/**
 * @typedef {{from?: string, turn?: number}} RewoundFrom
 * @typedef {{id: string, ok: boolean, undo: boolean, lines: string[]}} RewindResult
 * @typedef {{turns?: number, undo?: RewoundFrom, result?: RewindResult}} RewindView
 * @typedef {{turn?: number, undo?: boolean}} RewindAsk
 * @typedef {{ask: RewindAsk | null, sent: RewindAsk | null, seen: string, hidden: string, focus: string}} RewindLocal
 */

/** @returns {RewindLocal} what this view asked, kept across redraws */
export function rewindLocal() {
  return { ask: null, sent: null, seen: "", hidden: "", focus: "" };
}

/**
 * Mark on the timeline the turns a rewind to before `turn` undoes (0: none).
 * @param {HTMLElement} timeline
 * @param {number} turn
 */
export function showUndone(timeline, turn) {
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
export function drawRewind(model, root, timeline, local) {
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
