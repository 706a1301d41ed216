// The traffic chart: records per bucket (bars) and bytes (a line) over the window shown, T and
// the archive's first and last record as marked lines whose labels never overlap, holes
// (red) and pruned ranges (grey) shaded. SVG in the theme's colours (CSS variables of the
// host's Chakra theme), so it follows light and dark mode.
import { Box, Button, HStack, Text } from "@chakra-ui/react";
import { useEffect, useRef } from "react";

import { count, duration, utc } from "./format.js";
import { layoutLabels, shadedSpans, tickLabel, ticks } from "./scale.js";

const W = 1100, PLOT_H = 200, AXIS_H = 22, ROW_H = 14, PAD_X = 8;
const C = {
  records: "var(--chakra-colors-blue-solid)",
  bytes: "var(--chakra-colors-orange-solid)",
  T: "var(--chakra-colors-red-solid)",
  archive: "var(--chakra-colors-fg-muted)",
  hole: "var(--chakra-colors-red-muted)",
  pruned: "var(--chakra-colors-gray-muted)",
  grid: "var(--chakra-colors-border)",
  text: "var(--chakra-colors-fg-muted)",
};

export function Chart({ win, bucket, buckets, T, first, last, holes, onZoom, onPick, onFit, note }) {
  const svg = useRef(null);
  const { from, to } = win;
  const x = (ms) => PAD_X + ((ms - from) / (to - from)) * (W - 2 * PAD_X);
  const markers = [];
  const inside = (ms) => ms != null && ms >= from && ms <= to;
  if (inside(first)) markers.push({ key: "first", x: x(first), text: "archive first", color: C.archive, dash: "5 4" });
  if (inside(last)) markers.push({ key: "last", x: x(last), text: "archive last", color: C.archive, dash: "5 4" });
  if (inside(T)) markers.push({ key: "T", x: x(T), text: `T ${utc(T).slice(11, 19)}`, color: C.T, dash: "" });
  const { labels, rows } = layoutLabels(markers, W);
  const top = Math.max(1, rows) * ROW_H + 4;
  const H = top + PLOT_H + AXIS_H;
  const maxR = Math.max(1, ...buckets.map((b) => b.records));
  const maxB = Math.max(1, ...buckets.map((b) => b.bytes));
  const y = (v, max) => top + PLOT_H - (PLOT_H * v) / max;
  const axis = ticks(from, to, W);
  const spans = shadedSpans(holes, from, to);
  const timeAt = (clientX) => {
    const r = svg.current.getBoundingClientRect();
    const px = ((clientX - r.left) * W) / r.width;
    return from + ((px - PAD_X) / (W - 2 * PAD_X)) * (to - from);
  };
  // the wheel zooms (and must not scroll Airflow's page): a listener that may preventDefault
  // (React's own wheel listeners are passive)
  const latest = useRef(null);
  latest.current = (e) => { e.preventDefault(); onZoom(e.deltaY < 0 ? 0.5 : 2, timeAt(e.clientX)); };
  useEffect(() => {
    const el = svg.current;
    const wheel = (e) => latest.current(e);
    el.addEventListener("wheel", wheel, { passive: false });
    return () => el.removeEventListener("wheel", wheel);
  }, []);
  const line = buckets
    .map((b, i) => `${i ? "L" : "M"}${x(b.start + b.width_ms / 2).toFixed(1)},${y(b.bytes, maxB).toFixed(1)}`)
    .join("");
  return (
    <Box>
      <HStack gap={2} mb={2} flexWrap="wrap">
        <Button size="xs" variant="outline" id="zoom-in" onClick={() => onZoom(0.5)} aria-label="zoom in">+</Button>
        <Button size="xs" variant="outline" id="zoom-out" onClick={() => onZoom(2)} aria-label="zoom out">&minus;</Button>
        <Button size="xs" variant="ghost" id="zoom-fit" onClick={onFit}>fit the archive</Button>
        <Text fontSize="sm" color="fg.muted" id="window">
          {utc(from)} .. {utc(to)}, {duration(bucket)} buckets, up to {count(maxR)} records a bucket
        </Text>
        {note ? <Text fontSize="sm" color="fg.warning" id="chart-note">{note}</Text> : null}
      </HStack>
      <HStack gap={4} fontSize="xs" color="fg.muted" mb={1} flexWrap="wrap" id="legend">
        <Legend color={C.records}>records in the log</Legend>
        <Legend color={C.bytes} line>bytes</Legend>
        <Legend color={C.T} line>T</Legend>
        <Legend color={C.archive} line>archive first / last record</Legend>
        <Legend color={C.hole}>hole</Legend>
        <Legend color={C.pruned}>pruned</Legend>
        <Text>click to move T there; wheel or +/&minus; to zoom (T stays in view)</Text>
      </HStack>
      <svg
        ref={svg} id="chart" viewBox={`0 0 ${W} ${H}`} width="100%" role="img"
        aria-label="records and bytes per bucket around T"
        style={{ maxWidth: `${W}px`, cursor: "crosshair", display: "block" }}
        onClick={(e) => onPick(Math.round(timeAt(e.clientX)))}
      >
        <rect x={0} y={top} width={W} height={PLOT_H} fill="none" stroke={C.grid} />
        {spans.map((s, i) => (
          <rect key={`s${i}`} className={`shade-${s.kind}`} x={x(s.start)} y={top}
            width={Math.max(3, x(s.end) - x(s.start))} height={PLOT_H} fill={s.kind === "pruned" ? C.pruned : C.hole}>
            <title>{`${s.kind} on partition ${s.partition}: ${utc(s.start)} .. ${utc(s.end)}`}</title>
          </rect>
        ))}
        {buckets.map((b) => {
          const x0 = x(b.start), x1 = x(b.start + b.width_ms);
          const h = (PLOT_H * b.records) / maxR;
          return b.records ? (
            <rect key={b.start} className="bar" x={x0} y={top + PLOT_H - h} width={Math.max(1, x1 - x0 - 1)} height={h} fill={C.records}>
              <title>{`${utc(b.start)}: ${count(b.records)} records, ${count(b.bytes)} bytes`}</title>
            </rect>
          ) : null;
        })}
        {buckets.length ? <path d={line} fill="none" stroke={C.bytes} strokeWidth={2} /> : null}
        {axis.times.map((t) => (
          <g key={t}>
            <line x1={x(t)} x2={x(t)} y1={top + PLOT_H} y2={top + PLOT_H + 4} stroke={C.grid} />
            <text x={x(t)} y={top + PLOT_H + 16} fontSize={11} textAnchor="middle" fill={C.text}>{tickLabel(t, axis.step)}</text>
          </g>
        ))}
        {labels.map((m) => (
          <g key={m.key} className={`marker-${m.key}`}>
            <line x1={m.x} x2={m.x} y1={m.row * ROW_H + ROW_H - 2} y2={top + PLOT_H} stroke={m.color} strokeWidth={2} strokeDasharray={m.dash} />
            <text x={m.left} y={m.row * ROW_H + 11} fontSize={11} fill={m.color} data-label={m.key}>{m.text}</text>
          </g>
        ))}
      </svg>
    </Box>
  );
}

function Legend({ color, line, children }) {
  return (
    <HStack gap={1}>
      <Box as="span" display="inline-block" width="12px" height={line ? "3px" : "10px"} style={{ background: color }} />
      <Text as="span">{children}</Text>
    </HStack>
  );
}
