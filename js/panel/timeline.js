// The occupancy timeline: what was sent at each step, and where the cascade evicted, compacted or reinjected.

import { NARROW, fmt, h, pct, s } from "./dom.js";

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
export function drawTimeline(model, root) {
  /** @type {Point[]} */
  const points = [...(model.get("timeline_base") || []), ...(model.get("timeline_tail") || [])];
  /** @type {Marker[]} */
  const markers = model.get("markers") || [];
  /** @type {Record<string, number>} */
  const marks = model.get("thresholds") || {};
  const width = Math.max(240, Math.round(root.clientWidth || 600));
  const height = width < NARROW ? 170 : 190;
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
