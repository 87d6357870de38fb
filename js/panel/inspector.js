// The prompt inspector: the parts the model received at one step.

import { fmt, h } from "./dom.js";

/**
 * @param {Model} model
 * @param {HTMLSelectElement} select
 */
export function drawRecordChoices(model, select) {
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
export function drawInspected(model, root) {
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
