// Memory suggestions with their Save and Dismiss buttons, the last click's receipt, and the facts in force.

import { h } from "./dom.js";

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
export function drawMemory(model, root, factsBox) {
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
