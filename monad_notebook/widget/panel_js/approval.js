// Code the agent wants to run, shown line by line for the user's decision, and the decisions taken.

import { fmt, h } from "./dom.js";

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
export function drawApproval(model, root, answered) {
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
