// The traffic chart's arithmetic (pure: tested by test/scale.test.js): the bucket for a span,
// the window a zoom keeps T in, the time axis' ticks, and labels laid out so none overlaps.

const S = 1000, M = 60 * S, H = 60 * M, D = 24 * H;
/** Bucket widths the chart uses, smallest first (the catalog answers any whole second). */
export const BUCKETS = [
  S, 2 * S, 5 * S, 10 * S, 15 * S, 30 * S, M, 2 * M, 5 * M, 10 * M, 15 * M, 30 * M,
  H, 2 * H, 3 * H, 6 * H, 12 * H, D, 2 * D, 7 * D, 30 * D,
];
/** About this many bars across the chart. */
export const TARGET_BARS = 100;
/** The narrowest and the widest window a zoom reaches. */
export const MIN_SPAN = 20 * S;
export const MAX_SPAN = 3650 * D;

/** The smallest bucket that draws `span` ms in at most TARGET_BARS bars. */
export function bucketFor(span) {
  for (const b of BUCKETS) if (span / b <= TARGET_BARS) return b;
  return BUCKETS[BUCKETS.length - 1];
}

/** The first window to show around T: the archive's own extent (`first`..`last`, the topic's
 * oldest and newest record) with T, padded by a tenth, when it is narrower than `fallback`;
 * else `fallback` ms centred on T. `{from, to}` in whole seconds. */
export function initialWindow(T, first, last, fallback = 2 * H) {
  let from, to;
  if (first != null && last != null && first >= 0 && last >= first) {
    from = Math.min(first, T);
    to = Math.max(last, T);
    const pad = Math.max((to - from) / 10, 5 * S);
    from -= pad; to += pad;
    if (to - from > fallback) { from = T - fallback / 2; to = T + fallback / 2; }
  } else {
    from = T - fallback / 2; to = T + fallback / 2;
  }
  return clampWindow({ from, to }, T);
}

/** `{from, to}` made at least MIN_SPAN and at most MAX_SPAN wide, whole seconds, T inside. */
export function clampWindow({ from, to }, T) {
  let span = Math.min(Math.max(to - from, MIN_SPAN), MAX_SPAN);
  let mid = (from + to) / 2;
  const half = span / 2;
  // T stays in view with a margin of 5% of the window
  const margin = span * 0.05;
  if (T != null) {
    if (T < mid - half + margin) mid = T + half - margin;
    if (T > mid + half - margin) mid = T - half + margin;
  }
  from = Math.floor((mid - half) / S) * S;
  to = Math.ceil((mid + half) / S) * S;
  return { from: Math.max(0, from), to };
}

/** The window after zooming by `factor` (< 1: in) about `at` (a time in the window, default
 * its middle), moved as little as needed to keep T in view. */
export function zoomWindow(win, factor, T, at) {
  const pivot = at ?? (win.from + win.to) / 2;
  const from = pivot - (pivot - win.from) * factor;
  const to = pivot + (win.to - pivot) * factor;
  return clampWindow({ from, to }, T);
}

const TICK_STEPS = BUCKETS;

/** Tick times for an axis `width` px wide over [from, to]: at whole multiples of a step
 * chosen so that labels `labelPx` wide never touch. */
export function ticks(from, to, width, labelPx = 70) {
  const most = Math.max(1, Math.floor(width / (labelPx + 12)));
  const step = TICK_STEPS.find((s) => (to - from) / s <= most) ?? TICK_STEPS[TICK_STEPS.length - 1];
  const out = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) out.push(t);
  return { step, times: out };
}

/** A tick's label for ticks `step` apart: seconds shown only when steps are under a minute,
 * the date only when they are a day or more (UTC). */
export function tickLabel(t, step) {
  const iso = new Date(t).toISOString();
  if (step >= D) return iso.slice(0, 10);
  if (step >= M) return iso.slice(11, 16);
  return iso.slice(11, 19);
}

/** Approximate width in px of `text` in the chart's 11px label font. */
export function textWidth(text) {
  return Math.ceil(text.length * 7) + 8; // generous: the host's font, digits included
}

/**
 * Labels of vertical markers laid out so that none overlaps another: each marker `{x, text}`
 * (x in px within [0, width]) gets a `row` (0 is the top line, then downwards) and the `left`
 * px where its text starts; a label sits right of its marker unless that would leave the
 * chart, then left of it. Markers are taken in x order; each goes to the first row where it
 * overlaps no label already there. Returns the markers with `row`, `left`, `right`, and the
 * number of rows used.
 */
export function layoutLabels(markers, width) {
  const rows = []; // per row: [left, right] intervals taken
  const placed = [...markers].sort((a, b) => a.x - b.x).map((m) => {
    const w = textWidth(m.text);
    let left = m.x + 3;
    if (left + w > width) left = Math.max(0, m.x - 3 - w);
    const right = left + w;
    let row = 0;
    while (rows[row] && rows[row].some(([l, r]) => left < r + 4 && l < right + 4)) row += 1;
    (rows[row] ||= []).push([left, right]);
    return { ...m, row, left, right };
  });
  return { labels: placed, rows: rows.length };
}

/** The spans to shade: holes from the records around them (`time_span`), pruned ranges from
 * their own records' times. `[{kind, start, end, partition}]` within the window. */
export function shadedSpans(holes, from, to) {
  const out = [];
  for (const h of holes || []) {
    // shaded: records the archive lacks (a hole, a corrupt copy no sound one serves) and
    // pruned ranges; overlaps and divergent copies hold every record (listed in the table)
    const lacking = h.kind === "missing" || (h.severity === "error" && !h.served);
    if (!lacking && h.kind !== "pruned") continue;
    let a, b;
    if (h.kind === "pruned") { a = h.first_timestamp; b = h.max_timestamp; }
    else if (h.time_span) { a = h.time_span.start ?? h.time_span.end; b = h.time_span.end ?? h.time_span.start; }
    if (a == null || b == null || a < 0 || b < 0 || b < from || a > to) continue;
    out.push({ kind: h.kind === "pruned" ? "pruned" : "hole", start: Math.max(a, from), end: Math.min(b, to), partition: h.partition });
  }
  return out;
}
