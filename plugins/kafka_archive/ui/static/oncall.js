// The on-call page's script (served inline in oncall.html by kafka_archive.ui.page).
"use strict";
const BASE = location.pathname.replace(/\/+$/, "") + "/api/v1";
const CSRF = { "X-Kafka-Archive-Request": "1" };
const $ = (id) => document.getElementById(id);
const state = { T: null, span: 2 * 3600e3, center: null, topics: [], holes: [], holesOf: null,
                buckets: [], canTrigger: false, previewed: null, groupPreviewed: null,
                groupShown: null, canApplyGroups: false };
// Answers arrive in any order (a slow /time after Show, two quick cluster picks, a zoom while
// the chart loads): each kind of request takes a ticket, and only the latest ticket's answer
// is shown; an older one is dropped on arrival.
const tickets = {};
function ticket(kind) {
  const n = (tickets[kind] = (tickets[kind] || 0) + 1);
  return () => tickets[kind] === n;
}

function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;",
    '"': "&quot;", "'": "&#39;"}[c]));
}
function utc(ms) { return ms == null || ms < 0 ? "-" : new Date(ms).toISOString(); }
function say(text, error) {
  const s = $("status"); s.textContent = text || ""; s.className = error ? "error" : "";
}
async function api(path, opts = {}) {
  const init = { credentials: "same-origin", headers: { Accept: "application/json" } };
  if (opts.body !== undefined) {
    init.method = "POST";
    init.headers = { ...init.headers, ...CSRF, "Content-Type": "application/json" };
    init.body = JSON.stringify(opts.body);
  }
  const r = await fetch(BASE + path, init);
  let data = null;
  try { data = await r.json(); } catch (e) { data = { message: r.statusText }; }
  if (!r.ok) {
    const err = new Error((data.message || r.statusText) + (data.hint ? " - " + data.hint : ""));
    err.status = r.status; err.body = data; throw err;
  }
  return data;
}
function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => u.append(k, x));
    else if (v !== null && v !== undefined && v !== "") u.append(k, v);
  }
  return "?" + u.toString();
}
const enc = encodeURIComponent;
function topicPath() { return `/clusters/${enc($("cluster").value)}/topics/${enc($("topic").value)}`; }
function guard(fn) {
  return async (...a) => { try { say(""); await fn(...a); } catch (e) { say(e.message, true); } };
}

// -- platform health (GET /status, the same view as `kafka-archive status`) -----------------
const LEVEL_CLASS = { ok: "ok", warn: "warn", fail: "bad" };
async function loadHealth() {
  const level = $("health-level");
  let h;
  try {
    h = await api("/status");
  } catch (e) {  // the rest of the page works without it: say so beside the heading
    level.textContent = "unavailable: " + e.message; level.className = "bad"; return;
  }
  level.textContent = h.needs_human ? "needs a human" :
    (h.level === "warn" ? "healthy, with warnings" : "healthy");
  level.className = LEVEL_CLASS[h.level];
  $("health").querySelector("tbody").innerHTML = h.checks.map((c) =>
    `<tr><td class="l ${LEVEL_CLASS[c.level]}">${esc(c.level)}</td><td class="l">${esc(c.area)}` +
    `</td><td class="l">${esc(c.subject)}</td><td class="l">${esc(c.message)}</td></tr>`).join("");
  $("health-replays").innerHTML = rowsTable("health-replay-table",
    ["replay", "source", "status", "sent", "remaining", "partitions done", "eta (s)"],
    h.replays.map((r) => [r.replay_id, `${r.cluster}/${r.topic}`, r.status, r.records_sent,
      r.offsets_remaining, `${r.partitions_done}/${r.partitions}`, r.eta_s ?? "-"]));
}

// -- pickers and time ---------------------------------------------------------------------
async function loadClusters() {
  const who = await api("/whoami");
  $("who").textContent = `- ${who.user}` +
    (who.can_trigger || who.can_apply_groups ? "" : " (read only)");
  state.canTrigger = who.can_trigger; state.canApplyGroups = who.can_apply_groups;
  const { items } = await api("/clusters");
  $("cluster").innerHTML = items.map((c) => `<option>${esc(c.cluster)}</option>`).join("");
  await loadTopics();
  const conns = (await api("/connections")).items;
  const opts = '<option value="">(none)</option>' +
    conns.map((c) => `<option>${esc(c)}</option>`).join("");
  document.querySelector("[name=target_conn]").innerHTML = opts;
  $("tg-conn").innerHTML = opts;
}
async function loadTopics() {
  if (!$("cluster").value) return;
  const current = ticket("topics"), keep = $("topic").value;
  const { items } = await api(`/clusters/${enc($("cluster").value)}/topics`);
  if (!current()) return;  // the cluster was picked again meanwhile
  state.allHoldings = items;
  const names = [...new Set(items.map((h) => h.topic))].filter((t) => !t.startsWith("__"));
  $("topic").innerHTML = names.map((t) => `<option>${esc(t)}</option>`).join("");
  pick($("topic"), keep);  // same topic on the other cluster, when it has one
}
let timer = null;
function resolveSoon() {
  clearTimeout(timer);
  timer = setTimeout(guard(async () => {
    const current = ticket("time");  // Show takes one too: its T wins over a late answer here
    try {
      const t = await api("/time" + qs({ at: $("at").value }));
      if (!current()) return;
      $("resolved").textContent = "= " + t.utc;
      $("resolved").className = "muted";
    } catch (e) {
      if (current()) { $("resolved").textContent = e.message; $("resolved").className = "bad"; }
    }
  }), 250);
}

// -- offsets at T ---------------------------------------------------------------------------
// The first answer is the offsets at T: the table is drawn as soon as they arrive; the holes
// (marked in the table and on the chart when they come) and the traffic follow in parallel.
async function show() {
  const current = ticket("show"), path = topicPath(), topic = $("topic").value;
  // a /time answer still on its way, or about to be asked (typing's pause), must not
  // overwrite this T
  clearTimeout(timer); ticket("time");
  const off = await api(path + "/offsets" + qs({ at: $("at").value }));
  if (!current()) return;  // Show was pressed again (or the chart clicked) meanwhile
  state.T = off.at.ms; state.center = off.at.ms;
  $("resolved").textContent = "= " + off.at.utc; $("resolved").className = "muted";
  state.topics = (state.allHoldings || []).filter((h) => h.topic === topic);
  if (state.holesOf !== path) { state.holes = []; state.holesOf = null; }
  renderOffsets(off.items);
  prefillReplay();
  const more = [loadHoles(path, current), drawTraffic()];
  if (state.groupShown && $("group").value.trim()) more.push(groupAtT());  // the group's table follows T
  await Promise.all(more);
}
async function loadHoles(path, current) {
  const { items } = await api(path + "/holes");
  if (!current()) return;
  state.holes = items; state.holesOf = path;
  markHoles(); paint();
}
function markHoles() {
  for (const cell of document.querySelectorAll("#offsets td.holes")) {
    const p = Number(cell.dataset.p);
    cell.innerHTML = state.holes.filter((g) => g.partition === p).map((g) =>
      `<span class="${g.severity === "error" ? "bad" : "warn"}">` +
      `${esc(g.kind)} ${g.start_offset}..${g.end_offset}</span>`).join("<br>") ||
      '<span class="muted">none</span>';
  }
}
function renderOffsets(items) {
  const byP = Object.fromEntries(state.topics.map((h) => [h.partition, h]));
  $("offsets").tBodies[0].innerHTML = items.map((a) => {
    const h = byP[a.partition] || {};
    const offset = a.exact ? a.offset : `${a.offset}..${a.offset_max}`;
    return `<tr><td>${a.partition}</td><td>${esc(offset)}</td><td>${a.exact ? a.timestamp : "?"}</td>` +
      `<td class="l">${a.exact ? utc(a.timestamp) : "(no store)"}${a.note ? " <span class=warn>" + esc(a.note) + "</span>" : ""}</td>` +
      `<td>${h.first_offset ?? ""}</td><td class="l">${utc(h.first_timestamp)}</td>` +
      `<td>${h.last_offset ?? ""}</td><td class="l">${utc(h.max_timestamp)}</td>` +
      `<td class="l holes" data-p="${a.partition}"><span class="muted">checking...</span></td>` +
      `<td><input type="checkbox" class="rp" value="${a.partition}" checked></td></tr>`;
  }).join("");
  if (state.holesOf) markHoles();  // the topic's holes already known: mark them at once
}

// -- traffic chart ------------------------------------------------------------------------------
function bucketFor(span) { return Math.max(60e3, Math.ceil(span / 120 / 60e3) * 60e3); }
async function drawTraffic() {
  if (state.center == null) return;
  const bucket = bucketFor(state.span);
  const from = Math.max(0, Math.floor(state.center - state.span / 2));
  const to = Math.floor(state.center + state.span / 2);
  const current = ticket("chart");  // a zoom while the previous window loads: the last wins
  const st = await api(topicPath() + "/stats" + qs({ from, to, bucket_ms: bucket }));
  if (!current()) return;
  state.buckets = st.items; state.from = from; state.to = to;
  $("window").textContent = `${utc(from)} .. ${utc(to)}, ${bucket / 60e3} min buckets`;
  paint();
}
function paint() {
  const c = $("chart"), g = c.getContext("2d"), W = c.width, H = c.height, pad = 30;
  g.clearRect(0, 0, W, H);
  const x = (ms) => pad + (ms - state.from) / (state.to - state.from) * (W - 2 * pad);
  const inside = (ms) => ms >= state.from && ms <= state.to;
  const maxR = Math.max(1, ...state.buckets.map((b) => b.records));
  const maxB = Math.max(1, ...state.buckets.map((b) => b.bytes));
  for (const h of state.holes) {  // holes: shaded between the records around them
    const s = h.time_span; if (!s) continue;
    const a = s.start ?? s.end, b = s.end ?? s.start;
    g.fillStyle = "rgba(198,40,40,.25)";
    g.fillRect(x(Math.max(a, state.from)), pad, Math.max(3, x(Math.min(b, state.to)) - x(Math.max(a, state.from))), H - 2 * pad);
  }
  g.fillStyle = "#0b6bcb";
  for (const b of state.buckets) {
    const x0 = x(b.start), x1 = x(b.start + b.width_ms);
    const h = (H - 2 * pad) * b.records / maxR;
    g.fillRect(x0, H - pad - h, Math.max(1, x1 - x0 - 1), h);
  }
  g.strokeStyle = getComputedStyle(document.documentElement).getPropertyValue("--bytes");
  g.lineWidth = 2; g.beginPath();
  state.buckets.forEach((b, i) => {
    const px = x(b.start + b.width_ms / 2), py = H - pad - (H - 2 * pad) * b.bytes / maxB;
    if (i) g.lineTo(px, py); else g.moveTo(px, py);
  });
  g.stroke();
  const vline = (ms, color, dash, label) => {
    if (!inside(ms)) return;
    g.strokeStyle = color; g.setLineDash(dash); g.lineWidth = 2; g.beginPath();
    g.moveTo(x(ms), pad - 6); g.lineTo(x(ms), H - pad); g.stroke(); g.setLineDash([]);
    g.fillStyle = color; g.fillText(label, x(ms) + 3, pad - 8);
  };
  const firsts = state.topics.map((h) => h.first_timestamp).filter((v) => v >= 0);
  const lasts = state.topics.map((h) => h.max_timestamp).filter((v) => v >= 0);
  if (firsts.length) vline(Math.min(...firsts), "#777", [5, 4], "archive first");
  if (lasts.length) vline(Math.max(...lasts), "#777", [5, 4], "archive last");
  vline(state.T, "#c62828", [], "T");
  g.fillStyle = "#5b6570"; g.font = "11px system-ui";
  g.fillText(`${maxR} records`, 2, 12);
  g.fillText(utc(state.from), pad, H - 8);
  const right = utc(state.to); g.fillText(right, W - pad - g.measureText(right).width, H - 8);
}
function zoom(factor, at) {
  state.center = at ?? state.center; state.span = Math.min(Math.max(state.span * factor, 10 * 60e3), 3650 * 86400e3);
  guard(drawTraffic)();
}
function chartTime(ev) {
  const c = $("chart"), r = c.getBoundingClientRect(), pad = 30;
  const px = (ev.clientX - r.left) * c.width / r.width;
  return state.from + (px - pad) / (c.width - 2 * pad) * (state.to - state.from);
}

// -- group at T, locate --------------------------------------------------------------------
async function groupAtT() {
  const g = $("group").value.trim(); if (!g) throw new Error("name a group");
  if (!$("tg-group").value.trim()) $("tg-group").value = g;  // "start G at T" below is next
  const current = ticket("group");
  const r = await api(`/clusters/${enc($("cluster").value)}/groups/${enc(g)}/offsets` + qs({ at: String(state.T ?? "") }));
  if (!current()) return;
  state.groupShown = g;
  const behind = Object.fromEntries(r.behind.map((b) => [b.topic + "/" + b.partition, b]));
  $("group-table").tBodies[0].innerHTML = r.items.map((o) => {
    const b = behind[o.topic + "/" + o.partition] || {};
    return `<tr><td class="l">${esc(o.topic)}</td><td>${o.partition}</td><td>${o.offset}</td>` +
      `<td class="l">${utc(o.commit_timestamp)}</td><td>${b.end_offset ?? "-"}</td>` +
      `<td>${b.lag ?? "-"}</td></tr>`;
  }).join("");
}
async function locate() {
  const p = $("loc-p").value, o = $("loc-o").value;
  const current = ticket("locate");
  const l = await api(topicPath() + `/partitions/${enc(p)}/locate` + qs({ offset: o }));
  if (!current()) return;
  $("loc-out").innerHTML = `<table><tr><th class="l">object</th><th>byte range</th>` +
    `<th>batch offsets</th><th>timestamp</th><th class="l">time</th></tr><tr>` +
    `<td class="l">${esc(l.object_key)}</td><td>${l.byte_start}-${l.byte_end}</td>` +
    `<td>${l.batch_base_offset}-${l.batch_last_offset}</td><td>${l.timestamp}</td>` +
    `<td class="l">${utc(l.timestamp)}</td></tr></table>` +
    (l.exact ? "" : `<p class="warn">offset ${l.offset} holds no record (compacted); the next is ${l.found_offset}</p>`);
}

// -- replay ------------------------------------------------------------------------------------
function prefillReplay() {
  const f = $("replay");
  f.from.value = utc(state.T);
  f.partitions.value = "";
  state.previewed = null; $("launch").disabled = true;
}
// NAME=VALUE lines (blank and # lines skipped), as `replay run --topic-config` takes them
function topicConfigs(text) {
  const out = {};
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim(), at = line.indexOf("=");
    if (!line || line.startsWith("#")) return;
    const name = at < 0 ? "" : line.slice(0, at).trim();
    if (!name) throw new Error(`topic configs, line ${i + 1}: "${line}" is not NAME=VALUE (e.g. retention.ms=-1)`);
    if (name in out) throw new Error(`topic configs, line ${i + 1}: ${name} is given twice`);
    out[name] = line.slice(at + 1).trim();
  });
  return out;
}
function replayBody() {
  const f = $("replay");
  const checked = [...document.querySelectorAll("input.rp")];
  const picked = checked.filter((c) => c.checked).map((c) => Number(c.value));
  const typed = f.partitions.value.split(",").map((s) => s.trim()).filter(Boolean).map(Number);
  const num = (v) => (v === "" ? null : Number(v));
  return {
    cluster: $("cluster").value, topic: $("topic").value,
    partitions: typed.length ? typed : (picked.length === checked.length ? [] : picked),
    from: f.from.value, to: f.to.value || null,
    target: f.target_servers.value.trim() || f.target_conn.value,
    target_topic: f.target_topic.value || null,
    partition_mapping: f.partition_mapping.value, key_filter: f.key_filter.value || null,
    rate_limit_mb: num(f.rate_limit_mb.value), rate_limit_records: num(f.rate_limit_records.value),
    create_topic: f.create_topic.checked, allow_gaps: f.allow_gaps.checked,
    provenance_headers: f.provenance_headers.checked,
    // the created topic's settings: sent only with create_topic (hidden otherwise)
    topic_config: f.create_topic.checked ? topicConfigs(f.topic_config.value) : {},
    no_source_config: f.create_topic.checked && f.no_source_config.checked,
    replication_factor: f.create_topic.checked ? num(f.replication_factor.value) : null,
  };
}
async function preview() {
  state.previewed = null; $("launch").disabled = true;  // also when the form is refused below
  $("preview-out").innerHTML = "";
  const body = replayBody(), current = ticket("preview");
  const r = await api("/replay/preview" + qs({ check_target: $("replay").check_target.checked }), { body });
  if (!current()) return;  // an older preview answering late: the newer one will show
  const s = r.summary;
  $("preview-out").innerHTML = `<p>Plan <b>${esc(r.replay_id)}</b>: ${s.records} records, ` +
    `${s.bytes} bytes in ${s.objects} objects, ` +
    (s.holes ? `<span class="bad">${s.holes} hole(s)</span>` : '<span class="ok">no holes</span>') +
    ` -> ${esc(r.target)} / ${esc(r.target_topic)}</p>` +
    (r.holes.length ? "<pre>" + esc(r.holes.map((h) => JSON.stringify(h)).join("\n")) + "</pre>" : "") +
    (r.target_check ? `<p class="muted">target: ${esc(JSON.stringify(r.target_check))}</p>` : "") +
    topicConfigHtml(r.topic_config);
  // an error finding: the broker would reject the records, the run would refuse to start
  const errors = ((r.topic_config || {}).findings || []).filter((f) => f.level === "error");
  if (errors.length) {
    $("preview-out").insertAdjacentHTML("beforeend", '<p class="bad" id="launch-blocked">Launch ' +
      "is off: the target topic would reject the replayed records (" +
      esc(errors.map((f) => f.name).join(", ")) + "); fix the topic configs and preview again</p>");
    return;
  }
  state.previewed = JSON.stringify(body);
  $("launch").disabled = !state.canTrigger;
}
function rowsTable(id, heads, rows) {
  if (!rows.length) return "";
  return `<table id="${id}"><tr>${heads.map((h) => `<th class="l">${esc(h)}</th>`).join("")}</tr>` +
    rows.map((r) => `<tr>${r.map((v) => `<td class="l">${esc(v)}</td>`).join("")}</tr>`).join("") +
    "</table>";
}
// the preview's topic_config (services.replay.topic_config_view): the plan's settings, and
// with the target checked what it found; `dropped` of the check when there is one
function topicConfigHtml(tc) {
  if (!tc) return "";
  const s = tc.settings || {}, dropped = "dropped" in tc ? tc.dropped : (s.dropped || []);
  const rf = tc.created_with ? `, replication factor ${esc(tc.replication_factor ?? "the target default")}` : "";
  return `<div id="topic-config-out"><p><b>Target topic configs</b>` +
    (tc.created_with ? ` (would be created with ${esc(tc.target_partitions ?? "?")} partition(s)${rf})` : "") +
    (s.found ? ` <span class="muted">source at ${esc(utc(s.at_ms))} from the ${esc(s.history_source)}</span>` : "") +
    "</p>" + (rowsTable("tc-configs", ["config", "value", "source"],
      (s.configs || []).map((c) => [c.name, c.value, c.source])) || '<p class="muted">no configs set</p>') +
    (s.notes || []).map((n) => `<p class="warn">note: ${esc(n)}</p>`).join("") +
    rowsTable("tc-dropped", ["not set", "value", "why"], dropped.map((d) => [d.name, d.value, d.reason])) +
    rowsTable("tc-diffs", ["config", "source at T", "existing target"],
      (tc.diffs || []).map((d) => [d.name, d.source ?? "-", d.target ?? "-"])) +
    (tc.findings || []).map((f) => `<p class="${f.level === "error" ? "bad" : "warn"}">` +
      `${esc(f.level)}: ${esc(f.name)}: ${esc(f.message)}${f.hint ? " - " + esc(f.hint) : ""}</p>`).join("") +
    "</div>";
}
async function launch() {
  const body = replayBody();
  if (JSON.stringify(body) !== state.previewed) throw new Error("the form changed: preview it again");
  // one run per preview: the button is off before the request, so a double click cannot
  // trigger two runs; it comes back only if Airflow refused this one
  state.previewed = null; $("launch").disabled = true;
  let run;
  try { run = await api("/replay/launch", { body }); } catch (e) {
    state.previewed = JSON.stringify(body); $("launch").disabled = !state.canTrigger; throw e;
  }
  showRun(run);
  pollRun("replay", () => api("/replay/runs/" + enc(run.run_id)), showRun);
}
// Airflow's base path (its UI's <base href>) when the page is inside Airflow's frame, where
// the run's link leads
function airflowBase() {
  try {
    if (window.top !== window) return new URL(window.top.document.baseURI).pathname.replace(/\/+$/, "");
  } catch (e) { /* not Airflow's frame (another origin): links are relative to this server */ }
  return "";
}
// Airflow 3 shows plugin pages in an iframe sandboxed "allow-scripts allow-same-origin
// allow-forms": no allow-top-navigation nor allow-popups, so neither target=_top nor _blank
// may leave the frame. The frame is same-origin with Airflow's UI, a single-page app: push
// the run's route on its history and let its router (listening to popstate) show the run.
function openInAirflow(ev) {
  const href = ev.currentTarget.getAttribute("href");
  let top = null;
  try { if (window.top !== window && window.top.history) top = window.top; } catch (e) { top = null; }
  if (!top) return;  // a page of its own: the link navigates as usual
  ev.preventDefault();
  const idx = ((top.history.state && top.history.state.idx) || 0) + 1;
  top.history.pushState({ usr: null, key: Math.random().toString(36).slice(2, 10), idx }, "", href);
  top.dispatchEvent(new PopStateEvent("popstate", { state: top.history.state }));
}
// A DAG run's line in element `where`: its link (opened in Airflow's own page of the run),
// its state (element id `stateId`), `more` after it, and a note when its DAG is paused.
function runLine(where, stateId, r, more) {
  const cls = r.state === "success" ? "ok" : r.state === "failed" ? "bad" : "muted";
  const paused = r.dag_paused && r.state === "queued" ? `<br><span class="warn">the ` +
    `${esc(r.dag_id)} DAG is paused: the run waits until it is unpaused in Airflow</span>` : "";
  $(where).innerHTML = `<p>DAG run <a target="_top" href="${esc(airflowBase() + r.url)}">${esc(r.run_id)}</a>: ` +
    `<span class="${cls}" id="${stateId}">${esc(r.state)}</span>${more}${paused}</p>`;
  $(where).querySelector("a").addEventListener("click", openInAirflow);
}
function showRun(r) {
  const rp = r.replay, parts = rp ? Object.values(rp.partitions) : [];
  runLine("run-out", "run-state", r, rp ? ` - replay ${esc(rp.replay_id)}: ${esc(rp.status)}, ` +
    `${rp.records_sent} records sent, ${parts.filter((p) => p.done).length}/${parts.length} partitions done` : "");
}
// One request at a time per kind of run, the next 3 s after the last answered (never two in
// flight, so never an older state over a newer one); a newer run of the same kind ends the
// polling of the previous one.
const polls = {};
function stopPolling(kind) { if (polls[kind]) clearTimeout(polls[kind].timer); polls[kind] = null; }
function pollRun(kind, ask, show) {
  stopPolling(kind);
  const mine = (polls[kind] = {});
  mine.timer = setTimeout(async () => {
    let r = null;
    try { r = await ask(); } catch (e) { if (polls[kind] === mine) say(e.message, true); }
    if (polls[kind] !== mine) return;
    if (r) show(r);
    if (!r || !["success", "failed"].includes(r.state)) pollRun(kind, ask, show);
  }, 3000);
}

// -- translate group -----------------------------------------------------------------------
function groupBody() {
  if (state.T == null) throw new Error("show a time T first");
  const at = utc(state.T);
  const byCommits = document.querySelector("[name=tg-basis]:checked").value === "commits";
  return {
    cluster: $("cluster").value, topic: $("topic").value, group: $("tg-group").value.trim(),
    at: byCommits ? null : at, commits_at: byCommits ? at : null,
    replay_id: $("tg-replay").value.trim() || null,
    target_topic: $("tg-target-topic").value.trim() || null,
    target: $("tg-conn").value || null,
  };
}
function showGroup(r, applied) {
  const t = r.target || {}, named = t.name && t.name !== t.bootstrap_servers;
  const where = t.bootstrap_servers ? ` on ${esc(named ? t.name : t.bootstrap_servers)}` +
    (named ? ` (${esc(t.bootstrap_servers)})` : "") : "";
  $("tg-out").innerHTML = `<p>${applied ? '<span class="ok">committed</span>' : "would commit"} ` +
    `for group <b>${esc(r.items.length ? r.items[0].group : "")}</b>${where} (from ${esc(r.basis)}):</p><table><tr><th class="l">replay</th><th class="l">target topic</th>` +
    `<th>partition</th><th>offset</th><th>exact</th><th class="l">source positions</th></tr>` +
    r.items.map((i) => `<tr><td class="l">${esc(i.replay_id)}</td><td class="l">${esc(i.topic)}</td>` +
      `<td>${i.partition}</td><td>${i.offset}</td><td>${i.exact ? "yes" : "no"}</td>` +
      `<td class="l">${esc(JSON.stringify(i.source_positions))}</td></tr>`).join("") +
    "</table>";
}
async function groupPreview() {
  // the form as sent is what Apply will compare with (not the form when the answer arrives)
  const body = groupBody(), current = ticket("tg-preview");
  state.groupPreviewed = null; $("tg-apply").disabled = true; $("tg-confirm").hidden = true;
  stopPolling("group");  // a previous apply's run must not redraw over this preview
  if (!body.group) throw new Error("name the group to start on the target");
  const r = await api("/groups/translate/preview", { body });
  if (!current()) return;
  showGroup(r, false); state.groupPreviewed = JSON.stringify(body);
  $("tg-run").innerHTML = "";
  $("tg-apply").disabled = !state.canApplyGroups;
}
function groupApply() {
  const body = groupBody();
  if (JSON.stringify(body) !== state.groupPreviewed) throw new Error("the form changed: preview it again");
  $("tg-confirm-text").textContent = `Commit these offsets for group ${body.group} on the target?`;
  $("tg-confirm").hidden = false; $("tg-apply").disabled = true;
}
function groupCancel() {
  $("tg-confirm").hidden = true; $("tg-apply").disabled = !(state.groupPreviewed && state.canApplyGroups);
}
async function groupCommit() {
  const body = groupBody();
  $("tg-confirm").hidden = true;
  if (JSON.stringify(body) !== state.groupPreviewed) throw new Error("the form changed: preview it again");
  state.groupPreviewed = null; $("tg-apply").disabled = true;  // one apply per preview
  // a run of kafka_archive_group_offsets commits them (an auditable DAG run): its line until
  // it ends, then the positions it committed (or its failure)
  let run;
  try { run = await api("/groups/translate/apply", { body }); } catch (e) {
    state.groupPreviewed = JSON.stringify(body); $("tg-apply").disabled = !state.canApplyGroups; throw e;
  }
  showGroup(run.preview, false);
  showGroupRun(run);
  pollRun("group", () => api("/groups/translate/runs/" + enc(run.run_id)), showGroupRun);
}
function showGroupRun(r) {
  const more = r.state === "failed" ? ' - <span class="bad">the run failed: its task log ' +
    "in Airflow says why</span>" : r.state === "success" ? "" : " - applying...";
  runLine("tg-run", "tg-run-state", r, more);
  if (r.applied) showGroup(r.applied, true);
}

// -- wiring ----------------------------------------------------------------------------------
$("cluster").addEventListener("change", guard(loadTopics));
$("at").addEventListener("input", resolveSoon);
$("at").addEventListener("keydown", (e) => { if (e.key === "Enter") guard(show)(); });
$("go").addEventListener("click", guard(show));
$("zoom-in").addEventListener("click", () => zoom(0.5));
$("zoom-out").addEventListener("click", () => zoom(2));
$("chart").addEventListener("wheel", (e) => { e.preventDefault(); zoom(e.deltaY < 0 ? 0.5 : 2, chartTime(e)); });
$("chart").addEventListener("click", (e) => {
  if (state.center == null || state.from == null) return;
  $("at").value = new Date(Math.round(chartTime(e))).toISOString(); guard(show)();
});
$("health-go").addEventListener("click", loadHealth);
$("group-go").addEventListener("click", guard(groupAtT));
$("loc-go").addEventListener("click", guard(locate));
$("preview").addEventListener("click", guard(preview));
const createOpts = () => { $("create-opts").hidden = !$("replay").create_topic.checked; };
$("replay").create_topic.addEventListener("change", createOpts);
createOpts();  // a reload may keep the box checked
$("launch").addEventListener("click", guard(launch));
$("tg-preview").addEventListener("click", guard(groupPreview));
$("tg-apply").addEventListener("click", guard(groupApply));
$("tg-commit").addEventListener("click", guard(groupCommit));
$("tg-cancel").addEventListener("click", groupCancel);
// a link may name what to show: ?cluster=C&topic=T&at=TIME&group=G (runbooks link here)
const LINK = new URLSearchParams(location.search);
function pick(select, value) {
  if (value && [...select.options].some((o) => o.value === value)) select.value = value;
}
guard(async () => {
  if (LINK.get("at")) $("at").value = LINK.get("at");
  if (LINK.get("group")) { $("group").value = LINK.get("group"); $("tg-group").value = LINK.get("group"); }
  loadHealth();  // not awaited: the pickers need not wait for it
  await loadClusters();
  pick($("cluster"), LINK.get("cluster"));
  if (LINK.get("cluster")) await loadTopics();
  pick($("topic"), LINK.get("topic"));
  resolveSoon();
  if ($("topic").value) await show();
  if (LINK.get("group") && state.T != null) await groupAtT();
})();
