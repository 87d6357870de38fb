// A question inside the running cell: plain ESM for anywidget, no build step. Either "run this code?"
// (the kernel sends the code already escaped and highlighted, hidden characters as markers; Enter runs,
// Esc skips, while the question has focus) or a proposed notebook change (the diff, Accept / Reject;
// every line set as text). The answer goes back as one custom message. Once the question is on
// screen the view says so ("shown"): the kernel relies on it only then.

/**
 * @typedef {{id?: string, summary?: string, html?: string, limit?: string, action?: string, allow?: string,
 *   done?: Record<string, string>, title?: string, lines?: [string, string][]}} Request
 * @typedef {{
 *   get(name: string): any,
 *   on(event: string, callback: Function): void,
 *   off(event: string, callback: Function): void,
 *   send(content: object): void,
 * }} Model
 */

const DONE = {
  run: "Approved: the code ran.",
  skip: "Skipped: the code did not run.",
  "allow for session": "Approved, and python is allowed for the rest of this session.",
  "no answer": "No answer: the code did not run.",
  cancelled: "Interrupted: the code did not run.",
};

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

/** True while the user is typing somewhere: taking the focus then would eat their keystrokes. */
function typing() {
  const active = document.activeElement;
  if (!active || active === document.body) return false;
  return active.matches("input, textarea, select, [contenteditable], [contenteditable] *") || !!active.closest(".cm-editor");
}

/**
 * "Run this code?": the code (escaped and highlighted by the kernel), Run, Skip, "Allow ... for this session".
 * @param {Request} request
 */
function approvalView(request) {
  const run = h("button", { class: "monad-ask-btn monad-ask-primary", "data-role": "run" }, ["Run"]);
  const skip = h("button", { class: "monad-ask-btn", "data-role": "skip" }, ["Skip"]);
  const always = h("button", { class: "monad-ask-btn", "data-role": "allow-session" }, [
    `Allow ${request.allow || "python"} for this session`,
  ]);
  const allows = request.allow !== ""; // a call read from the model's text is asked about each time
  const limit = request.limit ? ` · no answer in ${request.limit}: not run` : "";
  const note = h("div", { class: "monad-ask-note", "data-role": "status" }, [`Enter runs · Esc skips${limit}`]);
  const code = h("div", { "data-role": "approval-code" });
  code.innerHTML = request.html || ""; // built and escaped by the kernel (code_html.py)
  const box = h("div", { class: "monad-ask", tabindex: "0", "data-role": "cell-approval", "data-id": request.id || "" }, [
    h("div", { class: "monad-ask-title" }, [
      h("span", { class: "monad-ask-flag" }, ["waiting for you"]),
      ` The agent wants to ${request.action || "run this code"} `,
      h("span", { class: "monad-ask-dim", "data-role": "approval-summary" }, [`(${request.summary || ""})`]),
    ]),
    code,
    h("div", { class: "monad-ask-actions" }, allows ? [run, skip, always] : [run, skip]),
    note,
  ]);
  /** @type {[HTMLElement, boolean, boolean][]} */
  const choices = [[run, true, false], [skip, false, false]];
  if (allows) choices.push([always, true, true]);
  return { box, note, choices, keys: true, done: DONE };
}

/**
 * A proposed notebook change: the diff, each line set as text (the model wrote it), Accept and Reject.
 * @param {Request} request
 */
function reviewView(request) {
  const accept = h("button", { class: "monad-ask-btn monad-ask-primary", type: "button", "data-role": "accept" }, ["Accept"]);
  const reject = h("button", { class: "monad-ask-btn", type: "button", "data-role": "reject" }, ["Reject"]);
  const diff = h("div", { class: "monad-review-diff", "data-role": "review-diff" });
  for (const [sign, text] of request.lines || []) {
    const kind = sign === "+" ? "add" : sign === "-" ? "del" : "same";
    diff.append(h("div", { class: `monad-review-line monad-review-${kind}` }, [
      h("span", { class: "monad-review-sign" }, [sign === "-" ? "\u2212" : sign]),
      h("span", { class: "monad-review-text" }, [text]),
    ]));
  }
  if (!(request.lines || []).length) diff.append(h("div", { class: "monad-review-line" }, ["(empty)"]));
  const limit = request.limit ? `no answer in ${request.limit}: nothing changes` : "";
  const note = h("div", { class: "monad-ask-note", "data-role": "status" }, [limit]);
  const box = h("div", { class: "monad-ask", "data-role": "cell-review", "data-id": request.id || "" }, [
    h("div", { class: "monad-ask-title" }, [
      h("span", { class: "monad-ask-flag" }, ["proposed"]),
      ` The agent proposes ${request.title || "a change"}: nothing changes until you accept`,
    ]),
    diff,
    h("div", { class: "monad-ask-actions" }, [accept, reject]),
    note,
  ]);
  /** @type {[HTMLElement, boolean, boolean][]} */
  const choices = [[accept, true, false], [reject, false, false]];
  return { box, note, choices, keys: false, done: {} };
}

/**
 * @param {{ model: Model, el: HTMLElement }} context
 * @returns {() => void} cleanup
 */
function render({ model, el }) {
  /** @type {Request} */
  const request = model.get("request") || {};
  const view = Array.isArray(request.lines) ? reviewView(request) : approvalView(request);
  const { box, note, choices } = view;
  const buttons = choices.map(([button]) => button);
  el.replaceChildren(box);

  let sent = false;
  const answer = (/** @type {boolean} */ yes, /** @type {boolean} */ forSession) => {
    if (sent || model.get("status") !== "waiting") return;
    sent = true;
    model.send({ type: "approval", id: request.id, run: yes, always: forSession });
    for (const button of buttons) button.setAttribute("disabled", "");
    note.textContent = "sending your answer…";
  };
  const clicks = choices.map(([button, yes, forSession]) => {
    const onClick = () => answer(yes, forSession);
    button.addEventListener("click", onClick);
    return () => button.removeEventListener("click", onClick);
  });
  const onKey = (/** @type {KeyboardEvent} */ event) => {
    if (event.target instanceof HTMLButtonElement && event.key === "Enter") return; // the button's own click
    if (event.key !== "Enter" && event.key !== "Escape") return;
    event.preventDefault();
    event.stopPropagation();
    answer(event.key === "Enter", false);
  };
  const onStatus = () => {
    const status = model.get("status");
    if (status === "waiting") return;
    box.classList.add("monad-ask-answered");
    box.setAttribute("data-status", status);
    for (const button of buttons) button.setAttribute("disabled", "");
    note.textContent = (request.done || view.done)[status] || status;
  };
  if (view.keys) box.addEventListener("keydown", onKey);
  model.on("change:status", onStatus);
  onStatus();
  // The view is drawn before the page attaches it: once it is in the document, say so (and, for a
  // question about code, take the focus so Enter and Esc answer it).
  let frames = 0;
  let frame = 0;
  const onScreen = () => {
    if (model.get("status") !== "waiting") return;
    if (!box.isConnected) {
      if (frames++ < 120) frame = requestAnimationFrame(onScreen);
      return;
    }
    model.send({ type: "shown", id: request.id });
    box.scrollIntoView({ block: "nearest" });
    if (view.keys && !typing()) box.focus({ preventScroll: true });
  };
  onScreen();

  return () => {
    cancelAnimationFrame(frame);
    model.off("change:status", onStatus);
    for (const release of clicks) release();
    box.removeEventListener("keydown", onKey);
  };
}

export default { render };
