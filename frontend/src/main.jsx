// The on-call page (issues 14, 23): a React app that Airflow 3's UI renders in its own shell
// at /plugin/kafka-archive (the plugin's react_apps entry). Airflow imports this bundle and
// renders its default export, inside its own router and Chakra theme.
//
// The page's state that a link can carry is in the URL's query: cluster, topic, at (T as
// typed) and group; a runbook's deep link opens on exactly that, and what is shown is written
// back there, so the address bar can be copied into an incident channel.
import { Box, Button, Heading, HStack, Input, Stack, Text } from "@chakra-ui/react";
import { useEffect, useState } from "react";
import { useSearchParams } from "react-router-dom";

import { api, qs, topicPath } from "./api.js";
import { Chart } from "./Chart.jsx";
import { GroupSection, StartGroupSection } from "./groups.jsx";
import { HealthSection } from "./health.jsx";
import { LocateSection } from "./locate.jsx";
import { OffsetsTable } from "./offsets.jsx";
import { ReplaySection } from "./replay.jsx";
import { RestoreSection } from "./restore.jsx";
import { bucketFor, clampWindow, initialWindow, zoomWindow } from "./scale.js";
import { chooseTopic, topicNames } from "./topics.js";
import { errorField, FormField, InlineError, Section, Select, useTickets } from "./ui.jsx";

const DEFAULT_AT = "-1h";
const SHOW_FIELDS = ["at", "cluster", "topic"];

// Airflow 3.3's UI renders a React app through React.lazy while its bundle loads, and directly
// (globalThis[name]) on every later render: its first re-render after the load (any navigation,
// such as the page writing what it shows into the URL) mounts the page anew, and what the first
// mount knew that the URL does not say (an error under a link's unknown topic) would be lost.
// So the first mount after the bundle loaded only causes that re-render (a navigation to the
// same URL) and waits for its successor; should the host keep it mounted, it goes on anyway.
let bundleJustLoaded = true;

export default function OncallPageInAirflow() {
  const [params, setParams] = useSearchParams();
  const [ready, setReady] = useState(!bundleJustLoaded);
  useEffect(() => {
    if (ready) return undefined;
    bundleJustLoaded = false;
    setParams(params, { replace: true });
    const timer = setTimeout(() => setReady(true), 300);
    return () => clearTimeout(timer);
  }, []); // eslint-disable-line react-hooks/exhaustive-deps
  return ready ? <OncallPage /> : null;
}

function OncallPage() {
  const [params, setParams] = useSearchParams();
  const tickets = useTickets();
  const [who, setWho] = useState(null);
  const [clusters, setClusters] = useState([]);
  const [cluster, setCluster] = useState(params.get("cluster") || "");
  const [holdings, setHoldings] = useState([]); // the cluster's partitions (catalog topics)
  const [topic, setTopic] = useState(params.get("topic") || "");
  const [atText, setAtText] = useState(params.get("at") || DEFAULT_AT);
  const [resolved, setResolved] = useState("");
  const [group, setGroup] = useState(params.get("group") || "");
  const [conns, setConns] = useState([]);
  const [errors, setErrors] = useState({});
  // what is shown: all of it belongs to `shown` (cluster, topic, T); cleared together
  const [shown, setShown] = useState(null); // {cluster, topic, T, atText, offsets: [...]}
  const [holes, setHoles] = useState(null);
  const [win, setWin] = useState(null);
  const [chart, setChart] = useState({ buckets: [], bucket: 60e3, note: "" });
  const [loading, setLoading] = useState(false);

  const names = topicNames(holdings);

  // -- open: who, clusters, connections; then the link's (or the first) topic at its T ----------
  useEffect(() => {
    (async () => {
      try {
        const [w, cs, cn] = await Promise.all([api("/whoami"), api("/clusters"), api("/connections")]);
        setWho(w); setConns(cn.items);
        const list = cs.items.map((c) => c.cluster);
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
  }, []); // eslint-disable-line react-hooks/exhaustive-deps

  function clearShown() {
    tickets("show"); tickets("chart"); tickets("holes");
    setShown(null); setHoles(null); setChart({ buckets: [], bucket: 60e3, note: "" }); setWin(null);
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
    // (the message is made here, not in an updater: React may run an updater later)
    const { topic: t, error: topicError } = chooseTopic(c, topicNames(items), wantTopic);
    if (topicError) setErrors((old) => ({ ...old, topic: topicError }));
    setTopic(t);
    if (t) await show(c, t, at, items);
  }

  function pickTopic(t) {
    setTopic(t); setErrors({});
    show(cluster, t, atText, holdings);
  }

  // -- Show: offsets at T (first), then holes and the chart ------------------------------
  async function show(c = cluster, t = topic, at = atText, items = holdings) {
    tickets("time"); // a /time answer still on its way must not overwrite this T
    clearShown(); // the previous topic's (or T's) table never stays under the new name
    const mine = tickets("show");
    if (!at.trim()) {
      setErrors((old) => ({ ...old, at: "type a time T: 2026-11-29T08:00:00Z, -2h, now-30m or epoch ms" }));
      return;
    }
    setErrors((old) => ({ ...old, at: undefined, show: undefined }));
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
      n.set("cluster", c); n.set("topic", t); n.set("at", at);
      if (group.trim()) n.set("group", group.trim()); else n.delete("group");
      return n;
    }, { replace: true });
    const first = Math.min(...mineParts.map((h) => h.first_timestamp).filter((v) => v >= 0));
    const last = Math.max(...mineParts.map((h) => h.max_timestamp).filter((v) => v >= 0));
    const w = initialWindow(T, Number.isFinite(first) ? first : null, Number.isFinite(last) ? last : null);
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
      if (current()) { setHoles([]); setErrors((old) => ({ ...old, holes: e.message })); }
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
      if (bucket < 60e3 && e.status && e.status < 500) {
        // the catalog could not count at that resolution here: per minute, and say so
        note = `per-second counts unavailable (${e.message}); minute buckets`;
        bucket = 60e3;
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
    setErrors((old) => ({ ...old, chart: undefined }));
    setChart({ buckets: st.items, bucket, note });
  }

  function zoom(factor, at) {
    if (!shown || !win) return;
    const w = zoomWindow(win, factor, shown.T, at);
    setWin(w); loadChart(shown.cluster, shown.topic, w);
  }
  function fit() {
    if (!shown) return;
    const ps = shown.partitions;
    const first = Math.min(...ps.map((h) => h.first_timestamp).filter((v) => v >= 0));
    const last = Math.max(...ps.map((h) => h.max_timestamp).filter((v) => v >= 0));
    const w = Number.isFinite(first) ? clampWindow({ from: first - 5e3, to: last + 5e3 }, shown.T) : initialWindow(shown.T, null, null);
    setWin(w); loadChart(shown.cluster, shown.topic, w);
  }
  function pickTime(ms) {
    const iso = new Date(ms).toISOString();
    setAtText(iso); show(cluster, topic, iso);
  }

  // T resolved as one types (the answer of /time; Show's T wins over a late one)
  useEffect(() => {
    if (!atText.trim()) { setResolved(""); return undefined; }
    const timer = setTimeout(async () => {
      const current = tickets("time");
      try {
        const t = await api("/time" + qs({ at: atText }));
        if (current()) { setResolved(t.utc); setErrors((old) => ({ ...old, at: undefined })); }
      } catch (e) {
        if (current()) { setResolved(""); setErrors((old) => ({ ...old, at: e.message })); }
      }
    }, 300);
    return () => clearTimeout(timer);
  }, [atText]); // eslint-disable-line react-hooks/exhaustive-deps

  const first = shown ? Math.min(...shown.partitions.map((h) => h.first_timestamp).filter((v) => v >= 0)) : null;
  const last = shown ? Math.max(...shown.partitions.map((h) => h.max_timestamp).filter((v) => v >= 0)) : null;

  return (
    <Box id="kafka-archive-oncall" p={4} overflowY="auto" height="100%" colorPalette="blue">
      <Stack gap={4} maxWidth="1400px">
        <HStack justifyContent="space-between" flexWrap="wrap">
          <Heading size="xl">Kafka archive</Heading>
          <Text color="fg.muted" id="who">
            {who ? `${who.user}${who.can_trigger || who.can_apply_groups ? "" : " (read only)"}` : ""}
          </Text>
        </HStack>
        <InlineError name="page" error={errors.page} />
        <HStack alignItems="flex-start" gap={3} flexWrap="wrap" as="form" id="pickers"
          onSubmit={(e) => { e.preventDefault(); show(); }}>
          <FormField label="Cluster" name="cluster" error={errors.cluster} width="auto">
            <Select name="cluster" value={cluster} options={clusters} onChange={(c) => pickCluster(c, topic, atText)} />
          </FormField>
          <FormField label="Topic" name="topic" error={errors.topic} width="auto">
            <Select name="topic" value={topic} options={names} onChange={pickTopic} />
          </FormField>
          <FormField label="Time T" name="at" error={errors.at} width="20em"
            helper={<span id="resolved">{resolved ? `= ${resolved}` : "ISO-8601, epoch ms, -2h, now-30m"}</span>}>
            <Input size="sm" name="at" value={atText} onChange={(e) => setAtText(e.target.value)} />
          </FormField>
          <Box pt={6}>
            <Button size="sm" type="submit" id="go" loading={loading}>Show</Button>
          </Box>
        </HStack>
        <InlineError name="show" error={errors.show} />

        <HealthSection />

        <Section id="offsets-section" title={shown ? `Offsets of ${shown.topic} at T` : "Offsets at T"}
          right={shown ? <Text color="fg.muted" fontSize="sm" id="shown-at">T = {new Date(shown.T).toISOString()} ({shown.cluster})</Text> : null}>
          {shown ? <OffsetsTable offsets={shown.offsets} partitions={shown.partitions} holes={holes} /> :
            <Text color="fg.muted" id="offsets-empty">{loading ? "asking the catalog..." : "pick a topic and a time T, then Show"}</Text>}
          <InlineError name="holes" error={errors.holes} />
        </Section>

        <Section id="traffic" title="Traffic around T">
          {shown && win ? (
            <Chart win={win} bucket={chart.bucket} buckets={chart.buckets} T={shown.T}
              first={Number.isFinite(first) ? first : null} last={Number.isFinite(last) ? last : null}
              holes={holes} onZoom={zoom} onPick={pickTime} onFit={fit} note={chart.note} />
          ) : <Text color="fg.muted">shown with the offsets</Text>}
          <InlineError name="chart" error={errors.chart} />
        </Section>

        <GroupSection cluster={cluster} shown={shown} group={group}
          setGroup={(g) => { setGroup(g); setParams((p) => { const n = new URLSearchParams(p); if (g.trim()) n.set("group", g.trim()); else n.delete("group"); return n; }, { replace: true }); }}
          autoShow={Boolean(params.get("group"))} />
        <LocateSection shown={shown} />
        <ReplaySection shown={shown} conns={conns} who={who} />
        <StartGroupSection shown={shown} conns={conns} who={who} group={group} />
        <RestoreSection shown={shown} conns={conns} who={who} />
      </Stack>
    </Box>
  );
}
