// The workspace: what the kernel holds now and the files written, each with the call or cell that made it.

import { h } from "./dom.js";

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
export function drawWorkspace(model, root, box) {
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
