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
export const NARROW = 500; // px: below this the panel stacks its columns
export const fmt = new Intl.NumberFormat("en-US");

/**
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, children = []) {
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
export function s(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** @param {number} fraction */
export function pct(fraction) {
  return `${Math.round(Math.max(0, fraction) * 1000) / 10}%`;
}
