(function(global, factory) {
  typeof exports === "object" && typeof module !== "undefined" ? module.exports = factory(require("react/jsx-runtime"), require("@chakra-ui/react"), require("react"), require("react-router-dom")) : typeof define === "function" && define.amd ? define(["react/jsx-runtime", "@chakra-ui/react", "react", "react-router-dom"], factory) : (global = typeof globalThis !== "undefined" ? globalThis : global || self, global.AirflowPlugin = factory(global.ReactJSXRuntime, global.ChakraUI, global.React, global.ReactRouterDOM));
})(this, (function(jsxRuntime, react$1, react, reactRouterDom) {
  "use strict";
  const CSRF = { "X-Kafka-Archive-Request": "1" };
  function apiBase(baseURI = document.baseURI) {
    return new URL("kafka-archive/api/v1", baseURI).href.replace(/\/+$/, "");
  }
  class ApiError extends Error {
    constructor(status, body) {
      const text = body && body.message || `the server answered ${status}`;
      super(body && body.hint ? `${text} - ${body.hint}` : text);
      this.status = status;
      this.code = body && body.error || "http_error";
      this.field = body && body.field || null;
    }
  }
  async function api(path, { body, base = apiBase() } = {}) {
    const init = { credentials: "same-origin", headers: { Accept: "application/json" } };
    if (body !== void 0) {
      init.method = "POST";
      init.headers = { ...init.headers, ...CSRF, "Content-Type": "application/json" };
      init.body = JSON.stringify(body);
    }
    let answer;
    try {
      answer = await fetch(base + path, init);
    } catch (e) {
      throw new Error(`the on-call API cannot be reached (${e.message}): is Airflow's API server up?`);
    }
    let data = null;
    try {
      data = await answer.json();
    } catch (e) {
      data = { message: answer.statusText };
    }
    if (!answer.ok) throw new ApiError(answer.status, data);
    return data;
  }
  function qs(params) {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
      if (Array.isArray(v)) v.forEach((x) => u.append(k, String(x)));
      else if (v !== null && v !== void 0 && v !== "") u.append(k, String(v));
    }
    const s = u.toString();
    return s ? `?${s}` : "";
  }
  const enc = encodeURIComponent;
  function topicPath(cluster, topic) {
    return `/clusters/${enc(cluster)}/topics/${enc(topic)}`;
  }
  function utc(ms) {
    return ms == null || ms < 0 ? "-" : new Date(ms).toISOString();
  }
  function count(n) {
    return n == null ? "-" : Number(n).toLocaleString("en-US");
  }
  function bytes(n) {
    if (n == null) return "-";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let v = Number(n), i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i += 1;
    }
    return `${i ? v.toFixed(1) : v} ${units[i]}`;
  }
  function duration(ms) {
    if (ms < 1e3) return `${ms} ms`;
    if (ms < 6e4) return `${+(ms / 1e3).toFixed(1)} s`;
    if (ms < 36e5) return `${+(ms / 6e4).toFixed(1)} min`;
    if (ms < 864e5) return `${+(ms / 36e5).toFixed(1)} h`;
    return `${+(ms / 864e5).toFixed(1)} d`;
  }
  const WORDS = {
    bootstrap_servers: "bootstrap servers",
    cluster_id: "cluster id",
    topic_exists: "topic exists",
    partitions: "partitions",
    name: "name",
    reachable: "reachable"
  };
  function words(key) {
    return WORDS[key] || String(key).replace(/_/g, " ");
  }
  function readable(v) {
    if (v === null || v === void 0) return "-";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (Array.isArray(v)) return v.length ? v.map(readable).join(", ") : "none";
    if (typeof v === "object") {
      const parts = Object.entries(v).map(([k, x]) => `${words(k)}: ${readable(x)}`);
      return parts.length ? parts.join("; ") : "-";
    }
    return String(v);
  }
  const S = 1e3, M = 60 * S, H = 60 * M, D = 24 * H;
  const BUCKETS = [
    S,
    2 * S,
    5 * S,
    10 * S,
    15 * S,
    30 * S,
    M,
    2 * M,
    5 * M,
    10 * M,
    15 * M,
    30 * M,
    H,
    2 * H,
    3 * H,
    6 * H,
    12 * H,
    D,
    2 * D,
    7 * D,
    30 * D
  ];
  const TARGET_BARS = 100;
  const MIN_SPAN = 20 * S;
  const MAX_SPAN = 3650 * D;
  function bucketFor(span) {
    for (const b of BUCKETS) if (span / b <= TARGET_BARS) return b;
    return BUCKETS[BUCKETS.length - 1];
  }
  function initialWindow(T, first, last, fallback = 2 * H) {
    let from, to;
    if (first != null && last != null && first >= 0 && last >= first) {
      from = Math.min(first, T);
      to = Math.max(last, T);
      const pad = Math.max((to - from) / 10, 5 * S);
      from -= pad;
      to += pad;
      if (to - from > fallback) {
        from = T - fallback / 2;
        to = T + fallback / 2;
      }
    } else {
      from = T - fallback / 2;
      to = T + fallback / 2;
    }
    return clampWindow({ from, to }, T);
  }
  function clampWindow({ from, to }, T) {
    let span = Math.min(Math.max(to - from, MIN_SPAN), MAX_SPAN);
    let mid = (from + to) / 2;
    const half = span / 2;
    const margin = span * 0.05;
    if (T != null) {
      if (T < mid - half + margin) mid = T + half - margin;
      if (T > mid + half - margin) mid = T - half + margin;
    }
    from = Math.floor((mid - half) / S) * S;
    to = Math.ceil((mid + half) / S) * S;
    return { from: Math.max(0, from), to };
  }
  function zoomWindow(win, factor, T, at) {
    const pivot = at ?? (win.from + win.to) / 2;
    const from = pivot - (pivot - win.from) * factor;
    const to = pivot + (win.to - pivot) * factor;
    return clampWindow({ from, to }, T);
  }
  const TICK_STEPS = BUCKETS;
  function ticks(from, to, width, labelPx = 70) {
    const most = Math.max(1, Math.floor(width / (labelPx + 12)));
    const step = TICK_STEPS.find((s) => (to - from) / s <= most) ?? TICK_STEPS[TICK_STEPS.length - 1];
    const out = [];
    for (let t = Math.ceil(from / step) * step; t <= to; t += step) out.push(t);
    return { step, times: out };
  }
  function tickLabel(t, step) {
    const iso = new Date(t).toISOString();
    if (step >= D) return iso.slice(0, 10);
    if (step >= M) return iso.slice(11, 16);
    return iso.slice(11, 19);
  }
  function textWidth(text) {
    return Math.ceil(text.length * 7) + 8;
  }
  function layoutLabels(markers, width) {
    const rows = [];
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
  function shadedSpans(holes, from, to) {
    const out = [];
    for (const h of holes || []) {
      const lacking = h.kind === "missing" || h.severity === "error" && !h.served;
      if (!lacking && h.kind !== "pruned") continue;
      let a, b;
      if (h.kind === "pruned") {
        a = h.first_timestamp;
        b = h.max_timestamp;
      } else if (h.time_span) {
        a = h.time_span.start ?? h.time_span.end;
        b = h.time_span.end ?? h.time_span.start;
      }
      if (a == null || b == null || a < 0 || b < 0 || b < from || a > to) continue;
      out.push({ kind: h.kind === "pruned" ? "pruned" : "hole", start: Math.max(a, from), end: Math.min(b, to), partition: h.partition });
    }
    return out;
  }
  const W = 1100, PLOT_H = 200, AXIS_H = 22, ROW_H = 14, PAD_X = 8;
  const C = {
    records: "var(--chakra-colors-blue-solid)",
    bytes: "var(--chakra-colors-orange-solid)",
    T: "var(--chakra-colors-red-solid)",
    archive: "var(--chakra-colors-fg-muted)",
    hole: "var(--chakra-colors-red-muted)",
    pruned: "var(--chakra-colors-gray-muted)",
    grid: "var(--chakra-colors-border)",
    text: "var(--chakra-colors-fg-muted)"
  };
  function Chart({ win, bucket, buckets, T, first, last, holes, onZoom, onPick, onFit, note }) {
    const svg = react.useRef(null);
    const { from, to } = win;
    const x = (ms) => PAD_X + (ms - from) / (to - from) * (W - 2 * PAD_X);
    const markers = [];
    const inside = (ms) => ms != null && ms >= from && ms <= to;
    if (inside(first)) markers.push({ key: "first", x: x(first), text: "archive first", color: C.archive, dash: "5 4" });
    if (inside(last)) markers.push({ key: "last", x: x(last), text: "archive last", color: C.archive, dash: "5 4" });
    if (inside(T)) markers.push({ key: "T", x: x(T), text: `T ${utc(T).slice(11, 19)}`, color: C.T, dash: "" });
    const { labels, rows } = layoutLabels(markers, W);
    const top = Math.max(1, rows) * ROW_H + 4;
    const H2 = top + PLOT_H + AXIS_H;
    const maxR = Math.max(1, ...buckets.map((b) => b.records));
    const maxB = Math.max(1, ...buckets.map((b) => b.bytes));
    const y = (v, max) => top + PLOT_H - PLOT_H * v / max;
    const axis = ticks(from, to, W);
    const spans = shadedSpans(holes, from, to);
    const timeAt = (clientX) => {
      const r = svg.current.getBoundingClientRect();
      const px = (clientX - r.left) * W / r.width;
      return from + (px - PAD_X) / (W - 2 * PAD_X) * (to - from);
    };
    const latest = react.useRef(null);
    latest.current = (e) => {
      e.preventDefault();
      onZoom(e.deltaY < 0 ? 0.5 : 2, timeAt(e.clientX));
    };
    react.useEffect(() => {
      const el = svg.current;
      const wheel = (e) => latest.current(e);
      el.addEventListener("wheel", wheel, { passive: false });
      return () => el.removeEventListener("wheel", wheel);
    }, []);
    const line = buckets.map((b, i) => `${i ? "L" : "M"}${x(b.start + b.width_ms / 2).toFixed(1)},${y(b.bytes, maxB).toFixed(1)}`).join("");
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { children: [
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { gap: 2, mb: 2, flexWrap: "wrap", children: [
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "xs", variant: "outline", id: "zoom-in", onClick: () => onZoom(0.5), "aria-label": "zoom in", children: "+" }),
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "xs", variant: "outline", id: "zoom-out", onClick: () => onZoom(2), "aria-label": "zoom out", children: "−" }),
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "xs", variant: "ghost", id: "zoom-fit", onClick: onFit, children: "fit the archive" }),
        /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: "fg.muted", id: "window", children: [
          utc(from),
          " .. ",
          utc(to),
          ", ",
          duration(bucket),
          " buckets, up to ",
          count(maxR),
          " records a bucket"
        ] }),
        note ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { fontSize: "sm", color: "fg.warning", id: "chart-note", children: note }) : null
      ] }),
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { gap: 4, fontSize: "xs", color: "fg.muted", mb: 1, flexWrap: "wrap", id: "legend", children: [
        /* @__PURE__ */ jsxRuntime.jsx(Legend, { color: C.records, children: "records in the log" }),
        /* @__PURE__ */ jsxRuntime.jsx(Legend, { color: C.bytes, line: true, children: "bytes" }),
        /* @__PURE__ */ jsxRuntime.jsx(Legend, { color: C.T, line: true, children: "T" }),
        /* @__PURE__ */ jsxRuntime.jsx(Legend, { color: C.archive, line: true, children: "archive first / last record" }),
        /* @__PURE__ */ jsxRuntime.jsx(Legend, { color: C.hole, children: "hole" }),
        /* @__PURE__ */ jsxRuntime.jsx(Legend, { color: C.pruned, children: "pruned" }),
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { children: "click to move T there; wheel or +/− to zoom (T stays in view)" })
      ] }),
      /* @__PURE__ */ jsxRuntime.jsxs(
        "svg",
        {
          ref: svg,
          id: "chart",
          viewBox: `0 0 ${W} ${H2}`,
          width: "100%",
          role: "img",
          "aria-label": "records and bytes per bucket around T",
          style: { maxWidth: `${W}px`, cursor: "crosshair", display: "block" },
          onClick: (e) => onPick(Math.round(timeAt(e.clientX))),
          children: [
            /* @__PURE__ */ jsxRuntime.jsx("rect", { x: 0, y: top, width: W, height: PLOT_H, fill: "none", stroke: C.grid }),
            spans.map((s, i) => /* @__PURE__ */ jsxRuntime.jsx(
              "rect",
              {
                className: `shade-${s.kind}`,
                x: x(s.start),
                y: top,
                width: Math.max(3, x(s.end) - x(s.start)),
                height: PLOT_H,
                fill: s.kind === "pruned" ? C.pruned : C.hole,
                children: /* @__PURE__ */ jsxRuntime.jsx("title", { children: `${s.kind} on partition ${s.partition}: ${utc(s.start)} .. ${utc(s.end)}` })
              },
              `s${i}`
            )),
            buckets.map((b) => {
              const x0 = x(b.start), x1 = x(b.start + b.width_ms);
              const h = PLOT_H * b.records / maxR;
              return b.records ? /* @__PURE__ */ jsxRuntime.jsx("rect", { className: "bar", x: x0, y: top + PLOT_H - h, width: Math.max(1, x1 - x0 - 1), height: h, fill: C.records, children: /* @__PURE__ */ jsxRuntime.jsx("title", { children: `${utc(b.start)}: ${count(b.records)} records, ${count(b.bytes)} bytes` }) }, b.start) : null;
            }),
            buckets.length ? /* @__PURE__ */ jsxRuntime.jsx("path", { d: line, fill: "none", stroke: C.bytes, strokeWidth: 2 }) : null,
            axis.times.map((t) => /* @__PURE__ */ jsxRuntime.jsxs("g", { children: [
              /* @__PURE__ */ jsxRuntime.jsx("line", { x1: x(t), x2: x(t), y1: top + PLOT_H, y2: top + PLOT_H + 4, stroke: C.grid }),
              /* @__PURE__ */ jsxRuntime.jsx("text", { x: x(t), y: top + PLOT_H + 16, fontSize: 11, textAnchor: "middle", fill: C.text, children: tickLabel(t, axis.step) })
            ] }, t)),
            labels.map((m) => /* @__PURE__ */ jsxRuntime.jsxs("g", { className: `marker-${m.key}`, children: [
              /* @__PURE__ */ jsxRuntime.jsx("line", { x1: m.x, x2: m.x, y1: m.row * ROW_H + ROW_H - 2, y2: top + PLOT_H, stroke: m.color, strokeWidth: 2, strokeDasharray: m.dash }),
              /* @__PURE__ */ jsxRuntime.jsx("text", { x: m.left, y: m.row * ROW_H + 11, fontSize: 11, fill: m.color, "data-label": m.key, children: m.text })
            ] }, m.key))
          ]
        }
      )
    ] });
  }
  function Legend({ color, line, children }) {
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { gap: 1, children: [
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Box, { as: "span", display: "inline-block", width: "12px", height: line ? "3px" : "10px", style: { background: color } }),
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { as: "span", children })
    ] });
  }
  function usePoll(runId, ask, onRun, onError) {
    const timer = react.useRef(null);
    react.useEffect(() => {
      if (!runId) return void 0;
      let alive = true;
      const tick = async () => {
        let r = null;
        try {
          r = await ask(runId);
        } catch (e) {
          if (alive) onError(e.message);
        }
        if (!alive) return;
        if (r) onRun(r);
        if (!r || !["success", "failed"].includes(r.state)) timer.current = setTimeout(tick, 3e3);
      };
      timer.current = setTimeout(tick, 3e3);
      return () => {
        alive = false;
        clearTimeout(timer.current);
      };
    }, [runId]);
  }
  function RunLine({ id, run, children }) {
    if (!run) return null;
    const color = run.state === "success" ? "fg.success" : run.state === "failed" ? "fg.error" : "fg.muted";
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { id, fontSize: "sm", children: [
      "DAG run",
      " ",
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Link, { asChild: true, color: "fg.info", textDecoration: "underline", children: /* @__PURE__ */ jsxRuntime.jsx(reactRouterDom.Link, { to: run.url, children: run.run_id }) }),
      ":",
      " ",
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { as: "span", fontWeight: "semibold", color, id: `${id}-state`, children: run.state }),
      children,
      run.dag_paused && run.state === "queued" ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { as: "span", display: "block", color: "fg.warning", children: [
        "the ",
        run.dag_id,
        " DAG is paused: the run waits until it is unpaused in Airflow"
      ] }) : null
    ] });
  }
  function errorField(err, fields, fallback, values = {}) {
    if (err && err.field && fields.includes(err.field)) return err.field;
    const text = err && err.message || "";
    const m = /^([a-z_]+)(?:\.[\w.]+)?(?::| \d)/.exec(text);
    if (m && fields.includes(m[1])) return m[1];
    for (const f of fields) {
      const v = values[f];
      if (v !== null && v !== void 0 && String(v) !== "" && typeof v !== "object" && text.includes(`'${v}'`)) return f;
    }
    return fallback;
  }
  function useTickets() {
    const last = react.useRef({});
    return (kind) => {
      const n = last.current[kind] = (last.current[kind] || 0) + 1;
      return () => last.current[kind] === n;
    };
  }
  function FormField({ label, error, helper, name, children, width, flex }) {
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.Field.Root, { invalid: Boolean(error), width, flex, "data-field": name, children: [
      label ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Field.Label, { fontSize: "sm", children: label }) : null,
      children,
      error ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Field.ErrorText, { "data-testid": `error-${name}`, role: "alert", children: error }) : helper ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Field.HelperText, { fontSize: "xs", children: helper }) : null
    ] });
  }
  function InlineError({ name, error }) {
    if (!error) return null;
    return /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { color: "fg.error", fontSize: "sm", "data-testid": `error-${name}`, role: "alert", children: error });
  }
  function Check({ id, checked, onChange, children }) {
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.Checkbox.Root, { size: "sm", "data-testid": id, checked, onCheckedChange: (e) => onChange(Boolean(e.checked)), children: [
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Checkbox.HiddenInput, { name: id }),
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Checkbox.Control, {}),
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Checkbox.Label, { children })
    ] });
  }
  function Select({ name, value, onChange, options, width = "14em", disabled }) {
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.NativeSelect.Root, { size: "sm", width, disabled, children: [
      /* @__PURE__ */ jsxRuntime.jsx(react$1.NativeSelect.Field, { name, value, onChange: (e) => onChange(e.target.value), children: options.map((o) => {
        const [v, l] = Array.isArray(o) ? o : [o, o];
        return /* @__PURE__ */ jsxRuntime.jsx("option", { value: v, children: l }, v);
      }) }),
      /* @__PURE__ */ jsxRuntime.jsx(react$1.NativeSelect.Indicator, {})
    ] });
  }
  function SimpleTable({ id, heads, rows, numeric = [], caption }) {
    return /* @__PURE__ */ jsxRuntime.jsx(react$1.Box, { overflowX: "auto", children: /* @__PURE__ */ jsxRuntime.jsxs(react$1.Table.Root, { size: "sm", variant: "outline", id, width: "auto", minWidth: "50%", children: [
      caption ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Table.Caption, { children: caption }) : null,
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Table.Header, { children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Table.Row, { children: heads.map((h, i) => /* @__PURE__ */ jsxRuntime.jsx(react$1.Table.ColumnHeader, { textAlign: numeric[i] ? "end" : "start", children: h }, h)) }) }),
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Table.Body, { children: rows.map((r, j) => /* @__PURE__ */ jsxRuntime.jsx(react$1.Table.Row, { children: r.map((c, i) => /* @__PURE__ */ jsxRuntime.jsx(react$1.Table.Cell, { textAlign: numeric[i] ? "end" : "start", children: c }, i)) }, j)) })
    ] }) });
  }
  function Fields({ id, items }) {
    return /* @__PURE__ */ jsxRuntime.jsx(react$1.DataList.Root, { orientation: "horizontal", size: "sm", id, gap: 1, children: items.map(([label, value]) => /* @__PURE__ */ jsxRuntime.jsxs(react$1.DataList.Item, { children: [
      /* @__PURE__ */ jsxRuntime.jsx(react$1.DataList.ItemLabel, { minWidth: "14em", children: label }),
      /* @__PURE__ */ jsxRuntime.jsx(react$1.DataList.ItemValue, { children: value })
    ] }, label)) });
  }
  function Section({ id, title, right, children }) {
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { as: "section", id, borderWidth: "1px", borderColor: "border", borderRadius: "md", p: 4, bg: "bg", children: [
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { display: "flex", alignItems: "center", gap: 3, mb: 3, flexWrap: "wrap", children: [
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Heading, { size: "md", children: title }),
        right
      ] }),
      children
    ] });
  }
  function GroupSection({ cluster, shown, group, setGroup, autoShow }) {
    const tickets = useTickets();
    const [answer, setAnswer] = react.useState(null);
    const [error, setError] = react.useState("");
    const [asked, setAsked] = react.useState(autoShow);
    async function load(g = group) {
      const current = tickets("group");
      setAnswer(null);
      setError("");
      if (!g.trim()) {
        setError("name a consumer group");
        return;
      }
      if (!shown) {
        setError("show a topic at a time T first");
        return;
      }
      setAsked(true);
      try {
        const r = await api(`/clusters/${enc(shown.cluster)}/groups/${enc(g.trim())}/offsets` + qs({ at: String(shown.T) }));
        if (current()) setAnswer(r);
      } catch (e) {
        if (current()) setError(e.message);
      }
    }
    react.useEffect(() => {
      tickets("group");
      setAnswer(null);
      if (shown && asked && group.trim()) load();
    }, [shown]);
    const behind = answer ? Object.fromEntries(answer.behind.map((b) => [`${b.topic}/${b.partition}`, b])) : {};
    return /* @__PURE__ */ jsxRuntime.jsxs(Section, { id: "group-section", title: "Consumer group at T", children: [
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", as: "form", onSubmit: (e) => {
        e.preventDefault();
        load();
      }, children: [
        /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Group", name: "group", error, width: "18em", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "group", value: group, onChange: (e) => setGroup(e.target.value) }) }),
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "sm", variant: "outline", mt: 6, type: "submit", id: "group-go", children: "Committed position at T" })
      ] }),
      answer ? answer.items.length ? /* @__PURE__ */ jsxRuntime.jsx(
        SimpleTable,
        {
          id: "group-table",
          numeric: [false, true, true, false, true, true],
          heads: ["topic", "partition", "committed offset", "commit time (UTC)", "archive offset at T", "records behind"],
          rows: answer.items.map((o) => {
            const b = behind[`${o.topic}/${o.partition}`] || {};
            return [o.topic, o.partition, o.offset, utc(o.commit_timestamp), b.end_offset ?? "-", b.lag ?? "-"];
          })
        }
      ) : /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { color: "fg.muted", id: "group-none", children: [
        group,
        " had committed nothing by T (",
        cluster,
        ")"
      ] }) : null
    ] });
  }
  const TG_FIELDS = ["group", "at", "commits_at", "replay_id", "target_topic", "target"];
  function StartGroupSection({ shown, conns, who, group }) {
    const tickets = useTickets();
    const [form, setForm] = react.useState({ group: "", basis: "at", replay_id: "", target_topic: "", target: "" });
    const [errors, setErrors] = react.useState({});
    const [preview, setPreview] = react.useState(null);
    const [applied, setApplied] = react.useState(null);
    const [confirming, setConfirming] = react.useState(false);
    const [run, setRun] = react.useState(null);
    const [typed, setTyped] = react.useState(false);
    const set = (k) => (v) => {
      setForm((f) => ({ ...f, [k]: v }));
      setPreview(null);
      setConfirming(false);
    };
    react.useEffect(() => {
      if (!typed) setForm((f) => ({ ...f, group }));
    }, [group]);
    react.useEffect(() => {
      tickets("tg");
      setPreview(null);
      setApplied(null);
      setConfirming(false);
      setErrors({});
    }, [shown]);
    usePoll(run && run.run_id, (id) => api("/groups/translate/runs/" + enc(id)), (r) => {
      setRun(r);
      if (r.applied) setApplied(r.applied);
    }, (m) => setErrors({ apply: m }));
    function body() {
      const at = utc(shown.T);
      const byCommits = form.basis === "commits";
      return {
        cluster: shown.cluster,
        topic: shown.topic,
        group: form.group.trim(),
        at: byCommits ? null : at,
        commits_at: byCommits ? at : null,
        replay_id: form.replay_id.trim() || null,
        target_topic: form.target_topic.trim() || null,
        target: form.target || null
      };
    }
    async function doPreview() {
      const current = tickets("tg");
      setPreview(null);
      setApplied(null);
      setRun(null);
      setConfirming(false);
      setErrors({});
      if (!shown) {
        setErrors({ preview: "show a topic at a time T first" });
        return;
      }
      if (!form.group.trim()) {
        setErrors({ group: "name the group to start on the target" });
        return;
      }
      const b = body();
      try {
        const r = await api("/groups/translate/preview", { body: b });
        if (current()) setPreview({ body: JSON.stringify(b), answer: r });
      } catch (e) {
        if (current()) setErrors({ [errorField(e, TG_FIELDS, "preview", b)]: e.message });
      }
    }
    async function commit() {
      setConfirming(false);
      const b = body();
      if (!preview || JSON.stringify(b) !== preview.body) {
        setErrors({ apply: "the form changed: preview it again" });
        return;
      }
      const was = preview;
      setPreview({ ...preview, used: true });
      try {
        const r = await api("/groups/translate/apply", { body: b });
        setRun(r);
      } catch (e) {
        setPreview(was);
        setErrors({ [errorField(e, TG_FIELDS, "apply", b)]: e.message });
      }
    }
    const shownAnswer = applied || preview && preview.answer;
    const t = shownAnswer && shownAnswer.target || {};
    const named = t.name && t.name !== t.bootstrap_servers;
    return /* @__PURE__ */ jsxRuntime.jsxs(Section, { id: "start-group-section", title: "Start group G at T on the target", children: [
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", children: [
        /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Group", name: "tg-group", error: errors.group, width: "16em", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "tg-group", value: form.group, onChange: (e) => {
          setTyped(true);
          set("group")(e.target.value);
        } }) }),
        /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Start at", name: "tg-basis", error: errors.at || errors.commits_at, width: "auto", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.RadioGroup.Root, { size: "sm", value: form.basis, onValueChange: (e) => set("basis")(e.value), name: "tg-basis", children: /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { gap: 4, pt: 1, children: [
          /* @__PURE__ */ jsxRuntime.jsxs(react$1.RadioGroup.Item, { value: "at", "data-testid": "tg-basis-at", children: [
            /* @__PURE__ */ jsxRuntime.jsx(react$1.RadioGroup.ItemHiddenInput, {}),
            /* @__PURE__ */ jsxRuntime.jsx(react$1.RadioGroup.ItemIndicator, {}),
            /* @__PURE__ */ jsxRuntime.jsx(react$1.RadioGroup.ItemText, { children: "the records at T" })
          ] }),
          /* @__PURE__ */ jsxRuntime.jsxs(react$1.RadioGroup.Item, { value: "commits", "data-testid": "tg-basis-commits", children: [
            /* @__PURE__ */ jsxRuntime.jsx(react$1.RadioGroup.ItemHiddenInput, {}),
            /* @__PURE__ */ jsxRuntime.jsx(react$1.RadioGroup.ItemIndicator, {}),
            /* @__PURE__ */ jsxRuntime.jsx(react$1.RadioGroup.ItemText, { children: "its archived commits at T" })
          ] })
        ] }) }) }),
        /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Replay id", name: "tg-replay", error: errors.replay_id, width: "14em", helper: "default: the topic's latest replay", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "tg-replay", value: form.replay_id, onChange: (e) => set("replay_id")(e.target.value) }) }),
        /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Target topic", name: "tg-target-topic", error: errors.target_topic, width: "12em", helper: "default: any", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "tg-target-topic", value: form.target_topic, onChange: (e) => set("target_topic")(e.target.value) }) }),
        /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Target's credentials from", name: "tg-conn", error: errors.target, width: "auto", helper: "an Airflow connection (optional)", children: /* @__PURE__ */ jsxRuntime.jsx(Select, { name: "tg-conn", value: form.target, options: [["", "(the replay's target)"], ...conns], onChange: set("target") }) })
      ] }),
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { gap: 2, mt: 3, flexWrap: "wrap", children: [
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "sm", variant: "outline", id: "tg-preview", onClick: doPreview, children: "Preview" }),
        /* @__PURE__ */ jsxRuntime.jsx(
          react$1.Button,
          {
            size: "sm",
            id: "tg-apply",
            disabled: !preview || preview.used || !(who && who.can_apply_groups) || confirming,
            onClick: () => setConfirming(true),
            children: "Apply on the target"
          }
        ),
        confirming ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { id: "tg-confirm", gap: 2, borderWidth: "1px", borderColor: "border.warning", borderRadius: "md", px: 2, py: 1, children: [
          /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", children: [
            "Commit these offsets for group ",
            form.group.trim(),
            " on the target?"
          ] }),
          /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "xs", colorPalette: "red", id: "tg-commit", onClick: commit, children: "Commit" }),
          /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "xs", variant: "outline", id: "tg-cancel", onClick: () => setConfirming(false), children: "Cancel" })
        ] }) : null
      ] }),
      /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "tg-preview", error: errors.preview }),
      /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "tg-apply", error: errors.apply }),
      who && !who.can_apply_groups ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: "fg.muted", children: [
        who.user,
        " may preview but not apply (no permission to trigger kafka_archive_group_offsets)"
      ] }) : null,
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Box, { mt: 2, children: /* @__PURE__ */ jsxRuntime.jsx(RunLine, { id: "tg-run", run, children: run && run.state === "failed" ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { as: "span", color: "fg.error", children: " - the run failed: its task log in Airflow says why" }) : run && run.state !== "success" ? " - applying..." : null }) }),
      shownAnswer ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { id: "tg-out", mt: 2, children: [
        /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", mb: 1, children: [
          applied ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { as: "span", color: "fg.success", fontWeight: "semibold", children: "committed" }) : "would commit",
          " ",
          "for group ",
          /* @__PURE__ */ jsxRuntime.jsx("b", { children: shownAnswer.items.length ? shownAnswer.items[0].group : form.group }),
          t.bootstrap_servers ? ` on ${named ? `${t.name} (${t.bootstrap_servers})` : t.bootstrap_servers}` : "",
          " (from ",
          shownAnswer.basis,
          "):"
        ] }),
        /* @__PURE__ */ jsxRuntime.jsx(
          SimpleTable,
          {
            id: "tg-table",
            numeric: [false, false, true, true, false, false],
            heads: ["replay", "target topic", "partition", "offset on the target", "exact", "from the source's positions"],
            rows: shownAnswer.items.map((i) => [
              i.replay_id,
              i.topic,
              i.partition,
              i.offset,
              i.exact ? "yes" : "no",
              Object.entries(i.source_positions || {}).map(([p, o]) => `partition ${p} at ${o == null ? "its end" : count(o)}`).join("; ") || "-"
            ])
          }
        )
      ] }) : null
    ] });
  }
  const PALETTE = { ok: "green", warn: "orange", fail: "red" };
  function HealthSection() {
    const [h, setH] = react.useState(null);
    const [error, setError] = react.useState("");
    async function load() {
      setError("");
      try {
        setH(await api("/status"));
      } catch (e) {
        setH(null);
        setError(e.message);
      }
    }
    react.useEffect(() => {
      load();
    }, []);
    const level = h ? h.needs_human ? "needs a human" : h.level === "warn" ? "healthy, with warnings" : "healthy" : "";
    return /* @__PURE__ */ jsxRuntime.jsxs(
      Section,
      {
        id: "health-section",
        title: "Platform health",
        right: /* @__PURE__ */ jsxRuntime.jsxs(jsxRuntime.Fragment, { children: [
          h ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Badge, { id: "health-level", colorPalette: PALETTE[h.level], children: level }) : null,
          /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "xs", variant: "outline", id: "health-go", onClick: load, children: "Refresh" })
        ] }),
        children: [
          /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "health", error }),
          h ? /* @__PURE__ */ jsxRuntime.jsxs(jsxRuntime.Fragment, { children: [
            /* @__PURE__ */ jsxRuntime.jsx(
              SimpleTable,
              {
                id: "health",
                heads: ["level", "area", "subject", "what"],
                rows: h.checks.map((c) => [/* @__PURE__ */ jsxRuntime.jsx(react$1.Badge, { colorPalette: PALETTE[c.level], children: c.level }), c.area, c.subject, c.message])
              }
            ),
            h.replays.length ? /* @__PURE__ */ jsxRuntime.jsx(
              SimpleTable,
              {
                id: "health-replays",
                heads: ["replay", "source", "status", "records sent", "offsets remaining", "partitions done", "eta (s)"],
                rows: h.replays.map((r) => [
                  r.replay_id,
                  `${r.cluster}/${r.topic}`,
                  r.status,
                  count(r.records_sent),
                  count(r.offsets_remaining),
                  `${r.partitions_done}/${r.partitions}`,
                  r.eta_s ?? "-"
                ])
              }
            ) : null
          ] }) : !error ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { color: "fg.muted", children: "asking..." }) : null
        ]
      }
    );
  }
  function LocateSection({ shown }) {
    const tickets = useTickets();
    const [partition, setPartition] = react.useState("0");
    const [offset, setOffset] = react.useState("");
    const [found, setFound] = react.useState(null);
    const [errors, setErrors] = react.useState({});
    react.useEffect(() => {
      tickets("locate");
      setFound(null);
      setErrors({});
    }, [shown]);
    const partitions = shown ? shown.offsets.map((a) => String(a.partition)) : [];
    async function locate() {
      const current = tickets("locate");
      setFound(null);
      setErrors({});
      if (!shown) {
        setErrors({ locate: "show a topic first" });
        return;
      }
      if (!/^\d+$/.test(offset.trim())) {
        setErrors({ offset: "type an offset: a whole number, 0 or more" });
        return;
      }
      try {
        const l = await api(topicPath(shown.cluster, shown.topic) + `/partitions/${enc(partition)}/locate` + qs({ offset: offset.trim() }));
        if (current()) setFound(l);
      } catch (e) {
        if (current()) setErrors({ [errorField(e, ["partition", "offset"], "offset")]: e.message });
      }
    }
    return /* @__PURE__ */ jsxRuntime.jsxs(Section, { id: "locate-section", title: "Locate an offset", children: [
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", as: "form", onSubmit: (e) => {
        e.preventDefault();
        locate();
      }, children: [
        /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Partition", name: "partition", error: errors.partition, width: "auto", children: /* @__PURE__ */ jsxRuntime.jsx(Select, { name: "loc-partition", value: partition, options: partitions.length ? partitions : ["0"], onChange: setPartition, width: "7em" }) }),
        /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Offset", name: "offset", error: errors.offset, width: "14em", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "loc-offset", value: offset, onChange: (e) => setOffset(e.target.value), inputMode: "numeric" }) }),
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "sm", variant: "outline", mt: 6, type: "submit", id: "loc-go", children: "Locate" })
      ] }),
      /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "locate", error: errors.locate }),
      found ? /* @__PURE__ */ jsxRuntime.jsxs("div", { id: "loc-out", children: [
        /* @__PURE__ */ jsxRuntime.jsx(
          SimpleTable,
          {
            heads: ["object", "byte range", "batch offsets", "record time (UTC)"],
            rows: [[
              found.object_key,
              `${count(found.byte_start)}-${count(found.byte_end)}`,
              `${found.batch_base_offset}-${found.batch_last_offset}`,
              utc(found.timestamp)
            ]]
          }
        ),
        found.exact ? null : /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { color: "fg.warning", fontSize: "sm", children: [
          "offset ",
          found.offset,
          " holds no record (compaction removed it); the next is ",
          found.found_offset
        ] })
      ] }) : null
    ] });
  }
  function holesOf(holes, p) {
    if (holes === null) return /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { as: "span", color: "fg.muted", className: "checking", children: "checking..." });
    const mine = holes.filter((h) => h.partition === p);
    if (!mine.length) return /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { as: "span", color: "fg.muted", children: "none" });
    return /* @__PURE__ */ jsxRuntime.jsx(react$1.Stack, { gap: 0, children: mine.map((g, i) => /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { as: "span", color: g.severity === "error" ? "fg.error" : g.severity === "warning" ? "fg.warning" : "fg.muted", children: [
      g.kind,
      " ",
      g.start_offset,
      "..",
      g.end_offset
    ] }, i)) });
  }
  function OffsetsTable({ offsets, partitions, holes }) {
    const byP = Object.fromEntries(partitions.map((h) => [h.partition, h]));
    const rows = offsets.map((a) => {
      const h = byP[a.partition] || {};
      const offset = a.exact === false ? `${a.offset}..${a.offset_max}` : String(a.offset);
      return [
        a.partition,
        /* @__PURE__ */ jsxRuntime.jsx("span", { className: "offset-at-t", children: offset }),
        a.exact === false ? "(no store)" : /* @__PURE__ */ jsxRuntime.jsxs(jsxRuntime.Fragment, { children: [
          utc(a.timestamp),
          a.note ? /* @__PURE__ */ jsxRuntime.jsx(react$1.Badge, { ml: 1, colorPalette: "orange", children: a.note }) : null
        ] }),
        count(h.first_offset),
        utc(h.first_timestamp),
        count(h.last_offset),
        utc(h.max_timestamp),
        holesOf(holes, a.partition)
      ];
    });
    return /* @__PURE__ */ jsxRuntime.jsx(
      SimpleTable,
      {
        id: "offsets",
        rows,
        numeric: [true, true, false, true, false, true, false, false],
        heads: [
          "partition",
          "offset at T",
          "time of the record at T (UTC)",
          "archive first offset",
          "first time",
          "archive last offset",
          "last time",
          "holes / problems"
        ]
      }
    );
  }
  const FIELDS$1 = [
    "from",
    "to",
    "partitions",
    "target",
    "target_topic",
    "partition_mapping",
    "key_filter",
    "rate_limit_mb",
    "rate_limit_records",
    "topic_config",
    "replication_factor",
    "create_topic"
  ];
  const EMPTY$1 = {
    from: "",
    to: "",
    partitions: "",
    target_conn: "",
    target_servers: "",
    target_topic: "",
    partition_mapping: "same",
    key_filter: "",
    rate_limit_mb: "",
    rate_limit_records: "",
    create_topic: false,
    topic_config: "",
    no_source_config: false,
    replication_factor: "",
    allow_gaps: false,
    provenance_headers: false,
    check_target: true
  };
  function topicConfigs(text) {
    const out = {};
    text.split("\n").forEach((raw, i) => {
      const line = raw.trim(), at = line.indexOf("=");
      if (!line || line.startsWith("#")) return;
      const name = at < 0 ? "" : line.slice(0, at).trim();
      if (!name) throw new Error(`line ${i + 1}: "${line}" is not NAME=VALUE (e.g. retention.ms=-1)`);
      if (name in out) throw new Error(`line ${i + 1}: ${name} is given twice`);
      out[name] = line.slice(at + 1).trim();
    });
    return out;
  }
  function ReplaySection({ shown, conns, who }) {
    const tickets = useTickets();
    const [f, setF] = react.useState(EMPTY$1);
    const [errors, setErrors] = react.useState({});
    const [preview, setPreview] = react.useState(null);
    const [run, setRun] = react.useState(null);
    const set = (k) => (v) => {
      setF((old) => ({ ...old, [k]: v }));
      setPreview(null);
    };
    react.useEffect(() => {
      tickets("preview");
      setPreview(null);
      setErrors({});
      if (shown) setF((old) => ({ ...old, from: utc(shown.T), partitions: "" }));
    }, [shown]);
    usePoll(run && run.run_id, (id) => api("/replay/runs/" + enc(id)), setRun, (m) => setErrors({ launch: m }));
    function body() {
      const errs = {};
      const partitions = [];
      for (const s of f.partitions.split(",").map((x) => x.trim()).filter(Boolean)) {
        if (/^\d+$/.test(s)) partitions.push(Number(s));
        else errs.partitions = `"${s}" is not a partition number (e.g. 0,2,5)`;
      }
      const target = f.target_servers.trim() || f.target_conn;
      if (!target) errs.target = "pick an Airflow connection or type the target's bootstrap servers";
      if (!f.from.trim()) errs.from = "type where the replay starts: a time, offset:N or earliest";
      const num = (k) => {
        const v = f[k].trim();
        if (!v) return null;
        if (!(Number(v) > 0)) errs[k] = "a number above 0, or empty for no limit";
        return Number(v);
      };
      let topicConfig = {};
      if (f.create_topic) {
        try {
          topicConfig = topicConfigs(f.topic_config);
        } catch (e) {
          errs.topic_config = e.message;
        }
      }
      let rf = null;
      if (f.create_topic && f.replication_factor.trim()) {
        rf = Number(f.replication_factor);
        if (!Number.isInteger(rf) || rf < 1) errs.replication_factor = "a whole number, 1 or more";
      }
      const out = {
        cluster: shown.cluster,
        topic: shown.topic,
        partitions,
        from: f.from.trim(),
        to: f.to.trim() || null,
        target,
        target_topic: f.target_topic.trim() || null,
        partition_mapping: f.partition_mapping,
        key_filter: f.key_filter.trim() || null,
        rate_limit_mb: num("rate_limit_mb"),
        rate_limit_records: num("rate_limit_records"),
        create_topic: f.create_topic,
        allow_gaps: f.allow_gaps,
        provenance_headers: f.provenance_headers,
        topic_config: topicConfig,
        no_source_config: f.create_topic && f.no_source_config,
        replication_factor: f.create_topic ? rf : null
      };
      return Object.keys(errs).length ? { error: errs } : { body: out };
    }
    async function doPreview() {
      const current = tickets("preview");
      setPreview(null);
      setErrors({});
      if (!shown) {
        setErrors({ preview: "show a topic at a time T first" });
        return;
      }
      const b = body();
      if (b.error) {
        setErrors(b.error);
        return;
      }
      try {
        const r = await api("/replay/preview" + qs({ check_target: f.check_target }), { body: b.body });
        if (current()) setPreview({ body: JSON.stringify(b.body), answer: r });
      } catch (e) {
        if (current()) setErrors({ [errorField(e, FIELDS$1, "preview", b.body)]: e.message });
      }
    }
    async function launch() {
      const b = body();
      if (b.error || !preview || JSON.stringify(b.body) !== preview.body) {
        setErrors({ launch: "the form changed: preview it again" });
        return;
      }
      const was = preview;
      setPreview({ ...preview, used: true });
      try {
        setRun(await api("/replay/launch", { body: b.body }));
      } catch (e) {
        setPreview(was);
        setErrors({ [errorField(e, FIELDS$1, "launch", b.body)]: e.message });
      }
    }
    const blocked = preview && ((preview.answer.topic_config || {}).findings || []).filter((x) => x.level === "error");
    const canLaunch = preview && !preview.used && !(blocked && blocked.length) && who && who.can_trigger;
    const rp = run && run.replay;
    const parts = rp ? Object.values(rp.partitions) : [];
    return /* @__PURE__ */ jsxRuntime.jsxs(Section, { id: "replay-section", title: "Replay from here", children: [
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.Stack, { gap: 3, as: "form", id: "replay", onSubmit: (e) => {
        e.preventDefault();
        doPreview();
      }, children: [
        /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", children: [
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "From", name: "from", error: errors.from, width: "19em", helper: "T, another time, offset:N or earliest", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "from", value: f.from, onChange: (e) => set("from")(e.target.value) }) }),
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "To", name: "to", error: errors.to, width: "14em", helper: "default: the end of the archive", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "to", value: f.to, onChange: (e) => set("to")(e.target.value) }) }),
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Partitions", name: "partitions", error: errors.partitions, width: "10em", helper: "default: all", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "partitions", value: f.partitions, onChange: (e) => set("partitions")(e.target.value), placeholder: "0,1,2" }) })
        ] }),
        /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", children: [
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Target: an Airflow connection", name: "target_conn", width: "auto", error: errors.target, children: /* @__PURE__ */ jsxRuntime.jsx(Select, { name: "target_conn", value: f.target_conn, options: [["", "(none)"], ...conns], onChange: set("target_conn") }) }),
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "or bootstrap servers", name: "target_servers", width: "16em", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "target_servers", value: f.target_servers, onChange: (e) => set("target_servers")(e.target.value), placeholder: "host:9092" }) }),
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Target topic", name: "target_topic", error: errors.target_topic, width: "12em", helper: "default: the same name", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "target_topic", value: f.target_topic, onChange: (e) => set("target_topic")(e.target.value) }) })
        ] }),
        /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", children: [
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Partition mapping", name: "partition_mapping", error: errors.partition_mapping, width: "auto", children: /* @__PURE__ */ jsxRuntime.jsx(Select, { name: "partition_mapping", value: f.partition_mapping, options: ["same", "murmur2", "round-robin"], onChange: set("partition_mapping"), width: "10em" }) }),
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Key filter", name: "key_filter", error: errors.key_filter, width: "12em", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "key_filter", value: f.key_filter, onChange: (e) => set("key_filter")(e.target.value), placeholder: "prefix:order-" }) }),
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "MB/s", name: "rate_limit_mb", error: errors.rate_limit_mb, width: "8em", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "rate_limit_mb", value: f.rate_limit_mb, onChange: (e) => set("rate_limit_mb")(e.target.value) }) }),
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "records/s", name: "rate_limit_records", error: errors.rate_limit_records, width: "9em", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "rate_limit_records", value: f.rate_limit_records, onChange: (e) => set("rate_limit_records")(e.target.value) }) })
        ] }),
        /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { gap: 5, flexWrap: "wrap", children: [
          /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "create_topic", checked: f.create_topic, onChange: set("create_topic"), children: "create the target topic" }),
          /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "allow_gaps", checked: f.allow_gaps, onChange: set("allow_gaps"), children: "replay around holes" }),
          /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "provenance_headers", checked: f.provenance_headers, onChange: set("provenance_headers"), children: "provenance headers" }),
          /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "check_target", checked: f.check_target, onChange: set("check_target"), children: "check the target in the preview" })
        ] }),
        f.create_topic ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", id: "create-opts", children: [
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Topic configs (NAME=VALUE a line, over the source's at T)", name: "topic_config", error: errors.topic_config, width: "26em", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Textarea, { size: "sm", name: "topic_config", rows: 3, value: f.topic_config, onChange: (e) => set("topic_config")(e.target.value), placeholder: "retention.ms=-1" }) }),
          /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Replication factor", name: "replication_factor", error: errors.replication_factor, width: "10em", helper: "default: the target's", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "replication_factor", value: f.replication_factor, onChange: (e) => set("replication_factor")(e.target.value) }) }),
          /* @__PURE__ */ jsxRuntime.jsx(react$1.Box, { pt: 6, children: /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "no_source_config", checked: f.no_source_config, onChange: set("no_source_config"), children: "don't copy the source's configs" }) })
        ] }) : null,
        /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { gap: 2, children: [
          /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "sm", variant: "outline", type: "submit", id: "preview", children: "Preview (dry run)" }),
          /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "sm", id: "launch", disabled: !canLaunch, onClick: launch, children: "Launch replay" })
        ] }),
        /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "preview", error: errors.preview }),
        /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "launch", error: errors.launch }),
        who && !who.can_trigger ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: "fg.muted", children: [
          who.user,
          " may preview but not launch (no permission to trigger kafka_archive_replay)"
        ] }) : null
      ] }),
      preview ? /* @__PURE__ */ jsxRuntime.jsx(PreviewOut, { r: preview.answer, blocked }) : null,
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Box, { mt: 2, children: /* @__PURE__ */ jsxRuntime.jsx(RunLine, { id: "run-out", run, children: rp ? ` - replay ${rp.replay_id}: ${rp.status}, ${count(rp.records_sent)} records sent, ${parts.filter((p) => p.done).length}/${parts.length} partitions done` : "" }) })
    ] });
  }
  function PreviewOut({ r, blocked }) {
    const s = r.summary;
    const tc = r.target_check;
    const cfg = r.topic_config;
    const items = [
      ["plan", r.replay_id],
      ["records the replay will send", `${count(s.records)} (${bytes(s.bytes)} in ${count(s.objects)} archived objects)`],
      ["holes", s.holes ? `${s.holes} - see below` : "none"],
      ["target", `${r.target} / ${r.target_topic}`]
    ];
    if (tc) {
      items.push(["target cluster id", readable(tc.cluster_id)]);
      items.push(["target topic's partitions", readable(tc.partitions)]);
      items.push(["target topic would be created", readable(tc.topic_would_be_created)]);
    } else {
      items.push(["target", "not checked (the preview was asked not to)"]);
    }
    const parts = Object.entries(r.partitions || {});
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { id: "preview-out", mt: 3, borderTopWidth: "1px", borderColor: "border", pt: 3, children: [
      /* @__PURE__ */ jsxRuntime.jsx(Fields, { id: "preview-fields", items }),
      parts.length ? /* @__PURE__ */ jsxRuntime.jsx(
        SimpleTable,
        {
          id: "preview-partitions",
          numeric: [true, true, true, true],
          heads: ["partition", "records the replay will send", "bytes", "archived objects"],
          rows: parts.map(([p, v]) => [p, count(v.records), bytes(v.bytes), count((v.objects || []).length)])
        }
      ) : null,
      r.holes && r.holes.length ? /* @__PURE__ */ jsxRuntime.jsx(
        SimpleTable,
        {
          id: "preview-holes",
          heads: ["partition", "offsets", "kind", "why"],
          rows: r.holes.map((h) => [h.partition, `${h.start_offset ?? h.first_offset ?? "?"}..${h.end_offset ?? h.last_offset ?? "?"}`, h.kind || "-", h.reason || "-"])
        }
      ) : null,
      (r.notes || []).map((n, i) => /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: "fg.warning", children: [
        "note: ",
        n
      ] }, i)),
      cfg ? /* @__PURE__ */ jsxRuntime.jsx(TopicConfig, { tc: cfg }) : null,
      blocked && blocked.length ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { color: "fg.error", id: "launch-blocked", fontSize: "sm", children: [
        "Launch is off: the target topic would reject the replayed records (",
        blocked.map((x) => x.name).join(", "),
        "); fix the topic configs and preview again"
      ] }) : null
    ] });
  }
  function TopicConfig({ tc }) {
    const s = tc.settings || {};
    const dropped = "dropped" in tc ? tc.dropped : s.dropped || [];
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { id: "topic-config-out", mt: 3, children: [
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontWeight: "semibold", fontSize: "sm", children: [
        "Target topic configs",
        tc.created_with ? ` (would be created with ${tc.target_partitions ?? "?"} partition(s), replication factor ${tc.replication_factor ?? "the target's default"})` : "",
        s.found ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { as: "span", color: "fg.muted", fontWeight: "normal", children: [
          " - the source's at ",
          utc(s.at_ms),
          ", from the ",
          s.history_source
        ] }) : null
      ] }),
      (s.configs || []).length ? /* @__PURE__ */ jsxRuntime.jsx(SimpleTable, { id: "tc-configs", heads: ["config", "value", "source"], rows: s.configs.map((c) => [c.name, c.value, c.source]) }) : /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { color: "fg.muted", fontSize: "sm", children: "no configs set" }),
      (s.notes || []).map((n, i) => /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: "fg.warning", children: [
        "note: ",
        n
      ] }, i)),
      dropped.length ? /* @__PURE__ */ jsxRuntime.jsx(SimpleTable, { id: "tc-dropped", heads: ["not set", "value", "why"], rows: dropped.map((d) => [d.name, d.value, d.reason]) }) : null,
      (tc.diffs || []).length ? /* @__PURE__ */ jsxRuntime.jsx(SimpleTable, { id: "tc-diffs", heads: ["config", "source at T", "existing target"], rows: tc.diffs.map((d) => [d.name, d.source ?? "-", d.target ?? "-"]) }) : null,
      (tc.findings || []).map((x, i) => /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: x.level === "error" ? "fg.error" : "fg.warning", children: [
        x.level,
        ": ",
        x.name,
        ": ",
        x.message,
        x.hint ? ` - ${x.hint}` : ""
      ] }, i))
    ] });
  }
  function nameList(text) {
    return text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
  }
  const PROBLEM_FIELD = {
    nothing_selected: "topics",
    target_unreachable: "target",
    name_collision: "prefix",
    replication_factor: "replication_factor",
    hole: "allow_gaps",
    permission_denied: "target_principal",
    permissions_unverified: "target_principal"
  };
  function problemsByField(problems) {
    const out = {};
    for (const p of problems || []) {
      const field = PROBLEM_FIELD[p.code];
      if (!field || p.level !== "error") continue;
      const text = `${p.message}${p.hint ? ` - ${p.hint}` : ""}`;
      out[field] = out[field] ? `${out[field]}; ${text}` : text;
    }
    return out;
  }
  const FIELDS = [
    "topics",
    "exclude",
    "at",
    "from",
    "prefix",
    "suffix",
    "rename_regex",
    "rename_to",
    "groups",
    "target",
    "target_principal",
    "replication_factor",
    "parallelism",
    "allow_gaps",
    "principal_map"
  ];
  const EMPTY = {
    topics: "",
    all_topics: false,
    exclude: "",
    at: "",
    prefix: "",
    suffix: "",
    rename_regex: "",
    rename_to: "",
    groups: "",
    acls: false,
    target_conn: "",
    target_servers: "",
    target_principal: "",
    replication_factor: "",
    parallelism: "4",
    allow_gaps: false,
    unverified_permissions: false,
    check_target: true
  };
  function RestoreSection({ shown, conns, who }) {
    const tickets = useTickets();
    const [f, setF] = react.useState(EMPTY);
    const [errors, setErrors] = react.useState({});
    const [preview, setPreview] = react.useState(null);
    const [run, setRun] = react.useState(null);
    const [past, setPast] = react.useState(null);
    const set = (k) => (v) => {
      setF((old) => ({ ...old, [k]: v }));
      setPreview(null);
    };
    react.useEffect(() => {
      tickets("preview");
      setPreview(null);
      setErrors({});
      if (shown) setF((old) => ({ ...old, at: utc(shown.T), topics: old.topics || shown.topic }));
    }, [shown]);
    usePoll(run && run.run_id, (id) => api("/restore/runs/" + enc(id)), setRun, (m) => setErrors({ "restore-launch": m }));
    const ended = run && ["success", "failed"].includes(run.state);
    react.useEffect(() => {
      api("/restores").then((r) => setPast(r.items), (e) => setErrors((old) => ({ ...old, restores: e.message })));
    }, [ended]);
    function body() {
      const errs = {};
      const topics = nameList(f.topics);
      if (!topics.length && !f.all_topics) errs.topics = "name topics or patterns (orders, orders-*, re:...), or tick all topics";
      if (!f.at.trim()) errs.at = "type the moment T: 2026-11-29T08:00:00Z or epoch ms";
      const target = f.target_servers.trim() || f.target_conn;
      if (!target) errs.target = "pick an Airflow connection or type the target's bootstrap servers";
      let rf = null;
      if (f.replication_factor.trim()) {
        rf = Number(f.replication_factor);
        if (!Number.isInteger(rf) || rf < 1) errs.replication_factor = "a whole number, 1 or more";
      }
      const par = Number(f.parallelism);
      if (!Number.isInteger(par) || par < 1 || par > 256) errs.parallelism = "a whole number from 1 to 256";
      if (f.rename_to.trim() && !f.rename_regex.trim()) errs.rename_regex = "give the regex the replacement applies to";
      const groups = nameList(f.groups);
      const out = {
        cluster: shown.cluster,
        topics,
        all_topics: f.all_topics,
        exclude: nameList(f.exclude),
        at: f.at.trim(),
        prefix: f.prefix.trim(),
        suffix: f.suffix.trim(),
        rename_regex: f.rename_regex.trim() || null,
        rename_to: f.rename_to,
        groups: groups.length ? groups : null,
        acls: f.acls,
        target,
        target_principal: f.target_principal.trim() || null,
        replication_factor: rf,
        parallelism: par,
        allow_gaps: f.allow_gaps,
        unverified_permissions: f.unverified_permissions
      };
      return Object.keys(errs).length ? { error: errs } : { body: out };
    }
    async function doPreview() {
      const current = tickets("preview");
      setPreview(null);
      setErrors({});
      if (!shown) {
        setErrors({ "restore-preview": "show a cluster's topic at a time T first" });
        return;
      }
      const b = body();
      if (b.error) {
        setErrors(b.error);
        return;
      }
      try {
        const r = await api("/restore/plan" + qs({ check_target: f.check_target }), { body: b.body });
        if (current()) {
          setPreview({ body: JSON.stringify(b.body), answer: r });
          setErrors(problemsByField(r.problems));
        }
      } catch (e) {
        if (current()) setErrors({ [errorField(e, FIELDS, "restore-preview", b.body)]: e.message });
      }
    }
    async function launch() {
      const b = body();
      if (b.error || !preview || JSON.stringify(b.body) !== preview.body) {
        setErrors({ "restore-launch": "the form changed: preview it again" });
        return;
      }
      const was = preview;
      setPreview({ ...preview, used: true });
      try {
        setRun(await api("/restore/launch", { body: b.body }));
      } catch (e) {
        setPreview(was);
        setErrors({ [errorField(e, FIELDS, "restore-launch", b.body)]: e.message });
      }
    }
    const canLaunch = preview && !preview.used && preview.answer.ok && who && who.can_restore;
    const text = (k, props = {}) => /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: `rs-${k}`, value: f[k], onChange: (e) => set(k)(e.target.value), ...props });
    return /* @__PURE__ */ jsxRuntime.jsxs(
      Section,
      {
        id: "restore-section",
        title: "Restore a whole cluster at T",
        right: shown ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { color: "fg.muted", fontSize: "sm", children: [
          "from the archive of ",
          shown.cluster
        ] }) : null,
        children: [
          /* @__PURE__ */ jsxRuntime.jsxs(react$1.Stack, { gap: 3, as: "form", id: "restore", onSubmit: (e) => {
            e.preventDefault();
            doPreview();
          }, children: [
            /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", children: [
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Topics (names or patterns, a line each)", name: "rs-topics", error: errors.topics, width: "22em", helper: "orders, orders-*, re:^pay.*", children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Textarea, { size: "sm", name: "rs-topics", rows: 2, value: f.topics, onChange: (e) => set("topics")(e.target.value) }) }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Except", name: "rs-exclude", error: errors.exclude, width: "12em", helper: "patterns left out", children: text("exclude") }),
              /* @__PURE__ */ jsxRuntime.jsx(react$1.Box, { pt: 6, children: /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "rs-all_topics", checked: f.all_topics, onChange: set("all_topics"), children: "all user topics" }) }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Moment T", name: "rs-at", error: errors.at, width: "19em", helper: "one T for every topic and group", children: text("at") })
            ] }),
            /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", children: [
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Target names: prefix", name: "rs-prefix", error: errors.prefix, width: "12em", helper: "e.g. restored.", children: text("prefix") }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "suffix", name: "rs-suffix", error: errors.suffix, width: "9em", children: text("suffix") }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "or regex", name: "rs-rename_regex", error: errors.rename_regex, width: "11em", children: text("rename_regex", { placeholder: "^(.*)$" }) }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "replaced by", name: "rs-rename_to", error: errors.rename_to, width: "11em", children: text("rename_to", { placeholder: "dr.\\1" }) }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Groups (patterns)", name: "rs-groups", error: errors.groups, width: "14em", helper: "default: all that committed on them", children: text("groups") })
            ] }),
            /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { alignItems: "flex-start", gap: 3, flexWrap: "wrap", children: [
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Target: an Airflow connection", name: "rs-target_conn", width: "auto", error: errors.target, children: /* @__PURE__ */ jsxRuntime.jsx(Select, { name: "rs-target_conn", value: f.target_conn, options: [["", "(none)"], ...conns], onChange: set("target_conn") }) }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "or bootstrap servers", name: "rs-target_servers", width: "16em", children: text("target_servers", { placeholder: "host:9092" }) }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Target principal", name: "rs-target_principal", error: errors.target_principal, width: "14em", helper: "for the permission check", children: text("target_principal", { placeholder: "User:restorer" }) }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Replication factor", name: "rs-replication_factor", error: errors.replication_factor, width: "10em", helper: "default: as at T", children: text("replication_factor") }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Parallel partitions", name: "rs-parallelism", error: errors.parallelism, width: "9em", children: text("parallelism") })
            ] }),
            /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { gap: 5, flexWrap: "wrap", alignItems: "flex-start", children: [
              /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "rs-acls", checked: f.acls, onChange: set("acls"), children: "ACLs as at T" }),
              /* @__PURE__ */ jsxRuntime.jsx(FormField, { name: "rs-allow_gaps", error: errors.allow_gaps, width: "auto", flex: "0 1 32em", children: /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "rs-allow_gaps", checked: f.allow_gaps, onChange: set("allow_gaps"), children: "restore around holes" }) }),
              /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "rs-unverified_permissions", checked: f.unverified_permissions, onChange: set("unverified_permissions"), children: "go ahead when permissions cannot be checked" }),
              /* @__PURE__ */ jsxRuntime.jsx(Check, { id: "rs-check_target", checked: f.check_target, onChange: set("check_target"), children: "check the target in the preview" })
            ] }),
            /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { gap: 2, children: [
              /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "sm", variant: "outline", type: "submit", id: "restore-preview", children: "Preview the restore" }),
              /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "sm", id: "restore-launch", disabled: !canLaunch, onClick: launch, children: "Launch restore" })
            ] }),
            /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "restore-preview", error: errors["restore-preview"] }),
            /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "restore-launch", error: errors["restore-launch"] }),
            who && !who.can_restore ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: "fg.muted", children: [
              who.user,
              " may not preview or launch a restore (no permission to trigger kafka_archive_restore)"
            ] }) : null
          ] }),
          preview ? /* @__PURE__ */ jsxRuntime.jsx(PlanOut, { r: preview.answer }) : null,
          /* @__PURE__ */ jsxRuntime.jsx(react$1.Box, { mt: 2, children: /* @__PURE__ */ jsxRuntime.jsx(RestoreRun, { run }) }),
          past && past.length ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { mt: 3, children: [
            /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { fontWeight: "semibold", fontSize: "sm", children: "Restores in the catalog" }),
            /* @__PURE__ */ jsxRuntime.jsx(
              SimpleTable,
              {
                id: "restores",
                heads: ["restore", "status", "from", "to", "T", "resume"],
                rows: past.slice(0, 10).map((x) => [x.restore_id, x.status, x.cluster, x.target, x.at, x.resume || "-"])
              }
            )
          ] }) : null,
          /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "rs-restores", error: errors.restores })
        ]
      }
    );
  }
  const configs = (c) => Object.entries(c || {}).map(([k, v]) => `${k}=${v}`).join(", ") || "-";
  function PlanOut({ r }) {
    const est = r.estimate || {};
    const errs = (r.problems || []).filter((p) => p.level === "error");
    const items = [
      ["restore", r.restore_id],
      ["T", r.at],
      ["topics", `${count(r.topics.length)} (${count(est.partitions)} partitions)`],
      ["estimate", `${count(est.records)} records, ${bytes(est.bytes)}, ${(est.seconds || 0) < 1 ? "under a second" : `about ${duration(Math.round(est.seconds * 1e3))}`} at ${bytes(est.assumed_bytes_per_s)}/s`],
      ["target", `${r.target}${r.target_cluster_id ? ` (cluster ${r.target_cluster_id}, ${r.target_brokers} broker(s))` : ""}`],
      ["principal", readable(r.principal)],
      ["groups", r.groups.length ? r.groups.map((g) => g.group).join(", ") : "none"],
      ["ACLs", r.acls.length ? `${r.acls.length} as at T${r.skipped_acls.length ? `, ${r.skipped_acls.length} skipped` : ""}` : "not restored"]
    ];
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { id: "restore-plan", mt: 3, borderTopWidth: "1px", borderColor: "border", pt: 3, children: [
      /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { id: "restore-verdict", fontWeight: "semibold", color: r.ok ? "fg.success" : "fg.error", mb: 2, children: r.ok ? "Ready: nothing stops this restore" : `Launch is off: ${errs.length} problem(s) to fix first, each shown next to its field and below` }),
      /* @__PURE__ */ jsxRuntime.jsx(Fields, { id: "restore-fields", items }),
      (r.problems || []).length ? /* @__PURE__ */ jsxRuntime.jsx(
        SimpleTable,
        {
          id: "restore-problems",
          heads: ["", "topic", "problem", "what to do"],
          rows: r.problems.map((p) => [p.level, p.topic || "-", p.message, p.hint || "-"])
        }
      ) : null,
      /* @__PURE__ */ jsxRuntime.jsx(
        SimpleTable,
        {
          id: "restore-topics",
          numeric: [false, false, true, true, true, false, true],
          heads: ["topic", "restored as", "partitions", "records", "bytes", "configs at T", "holes"],
          rows: r.topics.map((t) => [
            t.source,
            t.target + (t.resumed ? " (resumed)" : ""),
            t.partitions,
            count(t.records),
            bytes(t.bytes),
            configs(t.configs_at_t),
            t.holes.length
          ])
        }
      ),
      r.groups.length ? /* @__PURE__ */ jsxRuntime.jsx(
        SimpleTable,
        {
          id: "restore-groups",
          heads: ["group", "on the selected topics", "also on (not restored)"],
          rows: r.groups.map((g) => [g.group, g.topics.join(", "), g.outside.join(", ") || "-"])
        }
      ) : null,
      (r.notes || []).map((n, i) => /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: "fg.warning", children: [
        "note: ",
        n
      ] }, i))
    ] });
  }
  function RestoreRun({ run }) {
    if (!run) return null;
    const st = run.restore;
    const topics = st ? Object.entries(st.topics || {}) : [];
    const rep = st && st.report;
    return /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { id: "restore-run", children: [
      /* @__PURE__ */ jsxRuntime.jsx(RunLine, { id: "restore-run-line", run, children: st ? ` - restore ${st.restore_id}: ${st.status}, ${topics.filter(([, v]) => v.status.startsWith("complete")).length}/${topics.length} topics done` : "" }),
      st && st.resume && run.state === "failed" ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: "fg.warning", children: [
        "resume it: ",
        st.resume
      ] }) : null,
      rep ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Box, { id: "restore-report", mt: 2, children: [
        /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", children: [
          count(rep.records_this_run),
          " records, ",
          bytes(rep.bytes_this_run),
          " in ",
          duration(Math.round(rep.duration_s * 1e3)),
          ";",
          " ",
          rep.groups.filter((g) => g.applied).length,
          "/",
          rep.groups.length,
          " groups moved, ",
          rep.acls_created,
          " ACLs created"
        ] }),
        /* @__PURE__ */ jsxRuntime.jsx(
          SimpleTable,
          {
            id: "restore-report-topics",
            numeric: [false, false, false, true, true, true, false],
            heads: ["topic", "restored as", "status", "records", "bytes", "time", "recovery point"],
            rows: rep.topics.map((t) => [
              t.source,
              t.target,
              t.status,
              count(t.records_this_run),
              bytes(t.bytes_this_run),
              duration(Math.round(t.duration_s * 1e3)),
              utc(Math.max(-1, ...Object.values(rep.recovery_point_ms[t.source] || {})))
            ])
          }
        ),
        (rep.problems || []).map((p, i) => /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { fontSize: "sm", color: p.level === "error" ? "fg.error" : "fg.warning", children: [
          p.level,
          ": ",
          p.message,
          p.hint ? ` - ${p.hint}` : ""
        ] }, i))
      ] }) : null
    ] });
  }
  function topicNames(holdings) {
    return [...new Set(holdings.map((h) => h.topic))].filter((t) => !t.startsWith("__")).sort();
  }
  function chooseTopic(cluster, names, wanted) {
    if (names.includes(wanted)) return { topic: wanted, error: null };
    const topic = names[0] || "";
    const error = wanted ? `the archive of ${cluster} holds no topic "${wanted}"; showing ${topic || "none"}` : null;
    return { topic, error };
  }
  const DEFAULT_AT = "-1h";
  const SHOW_FIELDS = ["at", "cluster", "topic"];
  let bundleJustLoaded = true;
  function OncallPageInAirflow() {
    const [params, setParams] = reactRouterDom.useSearchParams();
    const [ready, setReady] = react.useState(!bundleJustLoaded);
    react.useEffect(() => {
      if (ready) return void 0;
      bundleJustLoaded = false;
      setParams(params, { replace: true });
      const timer = setTimeout(() => setReady(true), 300);
      return () => clearTimeout(timer);
    }, []);
    return ready ? /* @__PURE__ */ jsxRuntime.jsx(OncallPage, {}) : null;
  }
  function OncallPage() {
    const [params, setParams] = reactRouterDom.useSearchParams();
    const tickets = useTickets();
    const [who, setWho] = react.useState(null);
    const [clusters, setClusters] = react.useState([]);
    const [cluster, setCluster] = react.useState(params.get("cluster") || "");
    const [holdings, setHoldings] = react.useState([]);
    const [topic, setTopic] = react.useState(params.get("topic") || "");
    const [atText, setAtText] = react.useState(params.get("at") || DEFAULT_AT);
    const [resolved, setResolved] = react.useState("");
    const [group, setGroup] = react.useState(params.get("group") || "");
    const [conns, setConns] = react.useState([]);
    const [errors, setErrors] = react.useState({});
    const [shown, setShown] = react.useState(null);
    const [holes, setHoles] = react.useState(null);
    const [win, setWin] = react.useState(null);
    const [chart, setChart] = react.useState({ buckets: [], bucket: 6e4, note: "" });
    const [loading, setLoading] = react.useState(false);
    const names = topicNames(holdings);
    react.useEffect(() => {
      (async () => {
        try {
          const [w, cs, cn] = await Promise.all([api("/whoami"), api("/clusters"), api("/connections")]);
          setWho(w);
          setConns(cn.items);
          const list = cs.items.map((c2) => c2.cluster);
          setClusters(list);
          const c = list.includes(cluster) ? cluster : list[0] || "";
          if (cluster && !list.includes(cluster)) {
            setErrors({ cluster: `no cluster "${cluster}" in the archive's catalog; showing ${c || "none"}` });
          }
          setCluster(c);
          if (c) await pickCluster(c, topic, atText, { keepErrors: Boolean(cluster && !list.includes(cluster)) });
        } catch (e) {
          setErrors({ page: e.message });
        }
      })();
    }, []);
    function clearShown() {
      tickets("show");
      tickets("chart");
      tickets("holes");
      setShown(null);
      setHoles(null);
      setChart({ buckets: [], bucket: 6e4, note: "" });
      setWin(null);
    }
    async function pickCluster(c, wantTopic, at, { keepErrors = false } = {}) {
      const current = tickets("topics");
      clearShown();
      setCluster(c);
      if (!keepErrors) setErrors({});
      let items;
      try {
        items = (await api(`/clusters/${encodeURIComponent(c)}/topics`)).items;
      } catch (e) {
        if (current()) setErrors({ cluster: e.message });
        return;
      }
      if (!current()) return;
      setHoldings(items);
      const { topic: t, error: topicError } = chooseTopic(c, topicNames(items), wantTopic);
      if (topicError) setErrors((old) => ({ ...old, topic: topicError }));
      setTopic(t);
      if (t) await show(c, t, at, items);
    }
    function pickTopic(t) {
      setTopic(t);
      setErrors({});
      show(cluster, t, atText, holdings);
    }
    async function show(c = cluster, t = topic, at = atText, items = holdings) {
      tickets("time");
      clearShown();
      const mine = tickets("show");
      if (!at.trim()) {
        setErrors((old) => ({ ...old, at: "type a time T: 2026-11-29T08:00:00Z, -2h, now-30m or epoch ms" }));
        return;
      }
      setErrors((old) => ({ ...old, at: void 0, show: void 0 }));
      setLoading(true);
      let off;
      try {
        off = await api(topicPath(c, t) + "/offsets" + qs({ at }));
      } catch (e) {
        if (mine()) {
          setErrors((old) => ({ ...old, [errorField(e, SHOW_FIELDS, e.status === 404 ? "topic" : "show", { at, cluster: c, topic: t })]: e.message }));
          setLoading(false);
        }
        return;
      }
      if (!mine()) return;
      setLoading(false);
      const T = off.at.ms;
      setResolved(off.at.utc);
      const mineParts = items.filter((h) => h.topic === t);
      setShown({ cluster: c, topic: t, T, atText: at, offsets: off.items, partitions: mineParts });
      setParams((p) => {
        const n = new URLSearchParams(p);
        n.set("cluster", c);
        n.set("topic", t);
        n.set("at", at);
        if (group.trim()) n.set("group", group.trim());
        else n.delete("group");
        return n;
      }, { replace: true });
      const first2 = Math.min(...mineParts.map((h) => h.first_timestamp).filter((v) => v >= 0));
      const last2 = Math.max(...mineParts.map((h) => h.max_timestamp).filter((v) => v >= 0));
      const w = initialWindow(T, Number.isFinite(first2) ? first2 : null, Number.isFinite(last2) ? last2 : null);
      setWin(w);
      loadChart(c, t, w);
      loadHoles(c, t);
    }
    async function loadHoles(c, t) {
      const current = tickets("holes");
      try {
        const r = await api(topicPath(c, t) + "/holes");
        if (current()) setHoles(r.items);
      } catch (e) {
        if (current()) {
          setHoles([]);
          setErrors((old) => ({ ...old, holes: e.message }));
        }
      }
    }
    async function loadChart(c, t, w) {
      const current = tickets("chart");
      let bucket = bucketFor(w.to - w.from);
      const from = Math.floor(w.from / bucket) * bucket;
      let note = "";
      let st;
      try {
        st = await api(topicPath(c, t) + "/stats" + qs({ from, to: w.to, bucket_ms: bucket }));
      } catch (e) {
        if (!current()) return;
        if (bucket < 6e4 && e.status && e.status < 500) {
          note = `per-second counts unavailable (${e.message}); minute buckets`;
          bucket = 6e4;
          try {
            st = await api(topicPath(c, t) + "/stats" + qs({ from: Math.floor(w.from / bucket) * bucket, to: w.to, bucket_ms: bucket }));
          } catch (e2) {
            if (current()) setErrors((old) => ({ ...old, chart: e2.message }));
            return;
          }
        } else {
          setErrors((old) => ({ ...old, chart: e.message }));
          return;
        }
      }
      if (!current()) return;
      setErrors((old) => ({ ...old, chart: void 0 }));
      setChart({ buckets: st.items, bucket, note });
    }
    function zoom(factor, at) {
      if (!shown || !win) return;
      const w = zoomWindow(win, factor, shown.T, at);
      setWin(w);
      loadChart(shown.cluster, shown.topic, w);
    }
    function fit() {
      if (!shown) return;
      const ps = shown.partitions;
      const first2 = Math.min(...ps.map((h) => h.first_timestamp).filter((v) => v >= 0));
      const last2 = Math.max(...ps.map((h) => h.max_timestamp).filter((v) => v >= 0));
      const w = Number.isFinite(first2) ? clampWindow({ from: first2 - 5e3, to: last2 + 5e3 }, shown.T) : initialWindow(shown.T, null, null);
      setWin(w);
      loadChart(shown.cluster, shown.topic, w);
    }
    function pickTime(ms) {
      const iso = new Date(ms).toISOString();
      setAtText(iso);
      show(cluster, topic, iso);
    }
    react.useEffect(() => {
      if (!atText.trim()) {
        setResolved("");
        return void 0;
      }
      const timer = setTimeout(async () => {
        const current = tickets("time");
        try {
          const t = await api("/time" + qs({ at: atText }));
          if (current()) {
            setResolved(t.utc);
            setErrors((old) => ({ ...old, at: void 0 }));
          }
        } catch (e) {
          if (current()) {
            setResolved("");
            setErrors((old) => ({ ...old, at: e.message }));
          }
        }
      }, 300);
      return () => clearTimeout(timer);
    }, [atText]);
    const first = shown ? Math.min(...shown.partitions.map((h) => h.first_timestamp).filter((v) => v >= 0)) : null;
    const last = shown ? Math.max(...shown.partitions.map((h) => h.max_timestamp).filter((v) => v >= 0)) : null;
    return /* @__PURE__ */ jsxRuntime.jsx(react$1.Box, { id: "kafka-archive-oncall", p: 4, overflowY: "auto", height: "100%", colorPalette: "blue", children: /* @__PURE__ */ jsxRuntime.jsxs(react$1.Stack, { gap: 4, maxWidth: "1400px", children: [
      /* @__PURE__ */ jsxRuntime.jsxs(react$1.HStack, { justifyContent: "space-between", flexWrap: "wrap", children: [
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Heading, { size: "xl", children: "Kafka archive" }),
        /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { color: "fg.muted", id: "who", children: who ? `${who.user}${who.can_trigger || who.can_apply_groups ? "" : " (read only)"}` : "" })
      ] }),
      /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "page", error: errors.page }),
      /* @__PURE__ */ jsxRuntime.jsxs(
        react$1.HStack,
        {
          alignItems: "flex-start",
          gap: 3,
          flexWrap: "wrap",
          as: "form",
          id: "pickers",
          onSubmit: (e) => {
            e.preventDefault();
            show();
          },
          children: [
            /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Cluster", name: "cluster", error: errors.cluster, width: "auto", children: /* @__PURE__ */ jsxRuntime.jsx(Select, { name: "cluster", value: cluster, options: clusters, onChange: (c) => pickCluster(c, topic, atText) }) }),
            /* @__PURE__ */ jsxRuntime.jsx(FormField, { label: "Topic", name: "topic", error: errors.topic, width: "auto", children: /* @__PURE__ */ jsxRuntime.jsx(Select, { name: "topic", value: topic, options: names, onChange: pickTopic }) }),
            /* @__PURE__ */ jsxRuntime.jsx(
              FormField,
              {
                label: "Time T",
                name: "at",
                error: errors.at,
                width: "20em",
                helper: /* @__PURE__ */ jsxRuntime.jsx("span", { id: "resolved", children: resolved ? `= ${resolved}` : "ISO-8601, epoch ms, -2h, now-30m" }),
                children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Input, { size: "sm", name: "at", value: atText, onChange: (e) => setAtText(e.target.value) })
              }
            ),
            /* @__PURE__ */ jsxRuntime.jsx(react$1.Box, { pt: 6, children: /* @__PURE__ */ jsxRuntime.jsx(react$1.Button, { size: "sm", type: "submit", id: "go", loading, children: "Show" }) })
          ]
        }
      ),
      /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "show", error: errors.show }),
      /* @__PURE__ */ jsxRuntime.jsx(HealthSection, {}),
      /* @__PURE__ */ jsxRuntime.jsxs(
        Section,
        {
          id: "offsets-section",
          title: shown ? `Offsets of ${shown.topic} at T` : "Offsets at T",
          right: shown ? /* @__PURE__ */ jsxRuntime.jsxs(react$1.Text, { color: "fg.muted", fontSize: "sm", id: "shown-at", children: [
            "T = ",
            new Date(shown.T).toISOString(),
            " (",
            shown.cluster,
            ")"
          ] }) : null,
          children: [
            shown ? /* @__PURE__ */ jsxRuntime.jsx(OffsetsTable, { offsets: shown.offsets, partitions: shown.partitions, holes }) : /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { color: "fg.muted", id: "offsets-empty", children: loading ? "asking the catalog..." : "pick a topic and a time T, then Show" }),
            /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "holes", error: errors.holes })
          ]
        }
      ),
      /* @__PURE__ */ jsxRuntime.jsxs(Section, { id: "traffic", title: "Traffic around T", children: [
        shown && win ? /* @__PURE__ */ jsxRuntime.jsx(
          Chart,
          {
            win,
            bucket: chart.bucket,
            buckets: chart.buckets,
            T: shown.T,
            first: Number.isFinite(first) ? first : null,
            last: Number.isFinite(last) ? last : null,
            holes,
            onZoom: zoom,
            onPick: pickTime,
            onFit: fit,
            note: chart.note
          }
        ) : /* @__PURE__ */ jsxRuntime.jsx(react$1.Text, { color: "fg.muted", children: "shown with the offsets" }),
        /* @__PURE__ */ jsxRuntime.jsx(InlineError, { name: "chart", error: errors.chart })
      ] }),
      /* @__PURE__ */ jsxRuntime.jsx(
        GroupSection,
        {
          cluster,
          shown,
          group,
          setGroup: (g) => {
            setGroup(g);
            setParams((p) => {
              const n = new URLSearchParams(p);
              if (g.trim()) n.set("group", g.trim());
              else n.delete("group");
              return n;
            }, { replace: true });
          },
          autoShow: Boolean(params.get("group"))
        }
      ),
      /* @__PURE__ */ jsxRuntime.jsx(LocateSection, { shown }),
      /* @__PURE__ */ jsxRuntime.jsx(ReplaySection, { shown, conns, who }),
      /* @__PURE__ */ jsxRuntime.jsx(StartGroupSection, { shown, conns, who, group }),
      /* @__PURE__ */ jsxRuntime.jsx(RestoreSection, { shown, conns, who })
    ] }) });
  }
  return OncallPageInAirflow;
}));
