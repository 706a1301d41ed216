// node --test: the chart's arithmetic (frontend/src/scale.js).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  bucketFor, clampWindow, initialWindow, layoutLabels, MIN_SPAN, shadedSpans, ticks, tickLabel,
  zoomWindow,
} from "../src/scale.js";

const S = 1000, M = 60e3, H = 3600e3;

test("buckets follow the span down to seconds", () => {
  assert.equal(bucketFor(40 * S), S);
  assert.equal(bucketFor(3 * M), 2 * S);
  assert.equal(bucketFor(2 * H), 2 * M);
  assert.equal(bucketFor(30 * 24 * H), 12 * H);
  for (const span of [20 * S, 7 * M, 5 * H, 90 * 24 * H]) assert.ok(span / bucketFor(span) <= 100);
});

test("data spanning seconds: the first window is seconds wide with T in it", () => {
  const T = 1_700_000_010_000;
  const w = initialWindow(T, T - 8 * S, T + 30 * S);
  assert.ok(w.from <= T - 8 * S && w.to >= T + 30 * S);
  assert.ok(w.to - w.from < 2 * M, w);
  assert.ok(bucketFor(w.to - w.from) <= 2 * S);
});

test("an archive far wider than the fallback: 2 h around T", () => {
  const T = 1_700_000_000_000;
  const w = initialWindow(T, T - 30 * 24 * H, T + H);
  assert.equal(w.to - w.from, 2 * H);
  assert.ok(w.from < T && T < w.to);
});

test("zoom keeps T in view wherever the pivot is", () => {
  const T = 1_700_000_000_000;
  let w = { from: T - H, to: T + H };
  for (let i = 0; i < 12; i++) {
    w = zoomWindow(w, 0.5, T, w.from + 0.01 * (w.to - w.from)); // zooming in at the far left
    assert.ok(w.from <= T && T <= w.to, JSON.stringify(w));
  }
  assert.ok(w.to - w.from >= MIN_SPAN);
  const out = zoomWindow({ from: T - M, to: T + M }, 2, T);
  assert.equal(out.to - out.from, 4 * M);
  assert.deepEqual(clampWindow({ from: T + H, to: T + 2 * H }, T).from <= T, true);
});

test("labels of close markers never overlap", () => {
  const markers = [
    { x: 500, text: "T 2026-11-29T08:20:00.000Z" },
    { x: 503, text: "archive first" },
    { x: 506, text: "archive last" },
    { x: 1095, text: "archive last" },
  ];
  const { labels, rows } = layoutLabels(markers, 1100);
  assert.ok(rows >= 2);
  for (const a of labels) {
    assert.ok(a.left >= 0 && a.right <= 1100, a);
    for (const b of labels) {
      if (a !== b && a.row === b.row) assert.ok(a.right <= b.left || b.right <= a.left, [a, b]);
    }
  }
});

test("ticks are spaced for their labels and labelled at their step", () => {
  const from = Date.UTC(2026, 10, 29, 8, 0, 0), to = from + 90 * S;
  const { step, times } = ticks(from, to, 1000);
  assert.ok(times.length <= Math.floor(1000 / 82));
  assert.ok(step < M);
  assert.equal(tickLabel(times[0], step), "08:00:00");
  assert.equal(tickLabel(from, H), "08:00");
});

test("holes and pruned ranges are shaded, overlaps and served copies are not", () => {
  const holes = [
    { kind: "missing", severity: "error", partition: 0, time_span: { start: 100, end: 200 } },
    { kind: "missing", severity: "error", partition: 1, time_span: { start: null, end: 300 } },
    { kind: "overlap", severity: "info", partition: 0, time_span: { start: 100, end: 200 } },
    { kind: "corrupt", severity: "error", served: true, partition: 2, time_span: { start: 1, end: 2 } },
    { kind: "pruned", severity: "info", partition: 2, first_timestamp: 50, max_timestamp: 400 },
    { kind: "missing", severity: "error", partition: 2, time_span: { start: 5000, end: 6000 } },
  ];
  assert.deepEqual(shadedSpans(holes, 0, 1000), [
    { kind: "hole", start: 100, end: 200, partition: 0 },
    { kind: "hole", start: 300, end: 300, partition: 1 },
    { kind: "pruned", start: 50, end: 400, partition: 2 },
  ]);
});
