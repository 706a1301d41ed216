// "Replay from here": the form of the replay DAG's Params, a dry run (the plan in readable
// fields: records the replay will send per partition, holes, the target's answer, the target
// topic's configs), then a launch (an ordinary run of kafka_archive_replay) followed until it
// ends. Launch needs the preview of exactly the form as it is.
import { Box, Button, HStack, Input, Stack, Text, Textarea } from "@chakra-ui/react";
import { useEffect, useState } from "react";

import { api, enc, qs } from "./api.js";
import { bytes, count, readable, utc } from "./format.js";
import { RunLine, usePoll } from "./runs.jsx";
import { Check, errorField, Fields, FormField, InlineError, Section, Select, SimpleTable, useTickets } from "./ui.jsx";

const FIELDS = ["from", "to", "partitions", "target", "target_topic", "partition_mapping", "key_filter",
  "rate_limit_mb", "rate_limit_records", "topic_config", "replication_factor", "create_topic"];
const EMPTY = {
  from: "", to: "", partitions: "", target_conn: "", target_servers: "", target_topic: "",
  partition_mapping: "same", key_filter: "", rate_limit_mb: "", rate_limit_records: "",
  create_topic: false, topic_config: "", no_source_config: false, replication_factor: "",
  allow_gaps: false, provenance_headers: false, check_target: true,
};

/** NAME=VALUE lines (blank and # lines skipped) as `replay run --topic-config` takes them;
 * throws an error in words naming the line. */
export function topicConfigs(text) {
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

export function ReplaySection({ shown, conns, who }) {
  const tickets = useTickets();
  const [f, setF] = useState(EMPTY);
  const [errors, setErrors] = useState({});
  const [preview, setPreview] = useState(null); // {body, answer, used}
  const [run, setRun] = useState(null);
  const set = (k) => (v) => { setF((old) => ({ ...old, [k]: v })); setPreview(null); };
  // a new topic or T: the form starts from T, the previous plan is gone
  useEffect(() => {
    tickets("preview"); setPreview(null); setErrors({});
    if (shown) setF((old) => ({ ...old, from: utc(shown.T), partitions: "" }));
  }, [shown]); // eslint-disable-line react-hooks/exhaustive-deps
  usePoll(run && run.run_id, (id) => api("/replay/runs/" + enc(id)), setRun, (m) => setErrors({ launch: m }));

  /** The request, or {error: {field: message}} for what the page can tell itself. */
  function body() {
    const errs = {};
    const partitions = [];
    for (const s of f.partitions.split(",").map((x) => x.trim()).filter(Boolean)) {
      if (/^\d+$/.test(s)) partitions.push(Number(s)); else errs.partitions = `"${s}" is not a partition number (e.g. 0,2,5)`;
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
      try { topicConfig = topicConfigs(f.topic_config); } catch (e) { errs.topic_config = e.message; }
    }
    let rf = null;
    if (f.create_topic && f.replication_factor.trim()) {
      rf = Number(f.replication_factor);
      if (!Number.isInteger(rf) || rf < 1) errs.replication_factor = "a whole number, 1 or more";
    }
    const out = {
      cluster: shown.cluster, topic: shown.topic, partitions, from: f.from.trim(), to: f.to.trim() || null,
      target, target_topic: f.target_topic.trim() || null, partition_mapping: f.partition_mapping,
      key_filter: f.key_filter.trim() || null, rate_limit_mb: num("rate_limit_mb"), rate_limit_records: num("rate_limit_records"),
      create_topic: f.create_topic, allow_gaps: f.allow_gaps, provenance_headers: f.provenance_headers,
      topic_config: topicConfig, no_source_config: f.create_topic && f.no_source_config,
      replication_factor: f.create_topic ? rf : null,
    };
    return Object.keys(errs).length ? { error: errs } : { body: out };
  }
  async function doPreview() {
    const current = tickets("preview");
    setPreview(null); setErrors({});
    if (!shown) { setErrors({ preview: "show a topic at a time T first" }); return; }
    const b = body();
    if (b.error) { setErrors(b.error); return; }
    try {
      const r = await api("/replay/preview" + qs({ check_target: f.check_target }), { body: b.body });
      if (current()) setPreview({ body: JSON.stringify(b.body), answer: r });
    } catch (e) {
      if (current()) setErrors({ [errorField(e, FIELDS, "preview", b.body)]: e.message });
    }
  }
  async function launch() {
    const b = body();
    if (b.error || !preview || JSON.stringify(b.body) !== preview.body) { setErrors({ launch: "the form changed: preview it again" }); return; }
    const was = preview;
    setPreview({ ...preview, used: true }); // one run per preview: a double click launches one
    try {
      setRun(await api("/replay/launch", { body: b.body }));
    } catch (e) {
      setPreview(was);
      setErrors({ [errorField(e, FIELDS, "launch", b.body)]: e.message });
    }
  }
  const blocked = preview && ((preview.answer.topic_config || {}).findings || []).filter((x) => x.level === "error");
  const canLaunch = preview && !preview.used && !(blocked && blocked.length) && who && who.can_trigger;
  const rp = run && run.replay;
  const parts = rp ? Object.values(rp.partitions) : [];
  return (
    <Section id="replay-section" title="Replay from here">
      <Stack gap={3} as="form" id="replay" onSubmit={(e) => { e.preventDefault(); doPreview(); }}>
        <HStack alignItems="flex-start" gap={3} flexWrap="wrap">
          <FormField label="From" name="from" error={errors.from} width="19em" helper="T, another time, offset:N or earliest">
            <Input size="sm" name="from" value={f.from} onChange={(e) => set("from")(e.target.value)} />
          </FormField>
          <FormField label="To" name="to" error={errors.to} width="14em" helper="default: the end of the archive">
            <Input size="sm" name="to" value={f.to} onChange={(e) => set("to")(e.target.value)} />
          </FormField>
          <FormField label="Partitions" name="partitions" error={errors.partitions} width="10em" helper="default: all">
            <Input size="sm" name="partitions" value={f.partitions} onChange={(e) => set("partitions")(e.target.value)} placeholder="0,1,2" />
          </FormField>
        </HStack>
        <HStack alignItems="flex-start" gap={3} flexWrap="wrap">
          <FormField label="Target: an Airflow connection" name="target_conn" width="auto" error={errors.target}>
            <Select name="target_conn" value={f.target_conn} options={[["", "(none)"], ...conns]} onChange={set("target_conn")} />
          </FormField>
          <FormField label="or bootstrap servers" name="target_servers" width="16em">
            <Input size="sm" name="target_servers" value={f.target_servers} onChange={(e) => set("target_servers")(e.target.value)} placeholder="host:9092" />
          </FormField>
          <FormField label="Target topic" name="target_topic" error={errors.target_topic} width="12em" helper="default: the same name">
            <Input size="sm" name="target_topic" value={f.target_topic} onChange={(e) => set("target_topic")(e.target.value)} />
          </FormField>
        </HStack>
        <HStack alignItems="flex-start" gap={3} flexWrap="wrap">
          <FormField label="Partition mapping" name="partition_mapping" error={errors.partition_mapping} width="auto">
            <Select name="partition_mapping" value={f.partition_mapping} options={["same", "murmur2", "round-robin"]} onChange={set("partition_mapping")} width="10em" />
          </FormField>
          <FormField label="Key filter" name="key_filter" error={errors.key_filter} width="12em">
            <Input size="sm" name="key_filter" value={f.key_filter} onChange={(e) => set("key_filter")(e.target.value)} placeholder="prefix:order-" />
          </FormField>
          <FormField label="MB/s" name="rate_limit_mb" error={errors.rate_limit_mb} width="8em">
            <Input size="sm" name="rate_limit_mb" value={f.rate_limit_mb} onChange={(e) => set("rate_limit_mb")(e.target.value)} />
          </FormField>
          <FormField label="records/s" name="rate_limit_records" error={errors.rate_limit_records} width="9em">
            <Input size="sm" name="rate_limit_records" value={f.rate_limit_records} onChange={(e) => set("rate_limit_records")(e.target.value)} />
          </FormField>
        </HStack>
        <HStack gap={5} flexWrap="wrap">
          <Check id="create_topic" checked={f.create_topic} onChange={set("create_topic")}>create the target topic</Check>
          <Check id="allow_gaps" checked={f.allow_gaps} onChange={set("allow_gaps")}>replay around holes</Check>
          <Check id="provenance_headers" checked={f.provenance_headers} onChange={set("provenance_headers")}>provenance headers</Check>
          <Check id="check_target" checked={f.check_target} onChange={set("check_target")}>check the target in the preview</Check>
        </HStack>
        {f.create_topic ? (
          <HStack alignItems="flex-start" gap={3} flexWrap="wrap" id="create-opts">
            <FormField label="Topic configs (NAME=VALUE a line, over the source's at T)" name="topic_config" error={errors.topic_config} width="26em">
              <Textarea size="sm" name="topic_config" rows={3} value={f.topic_config} onChange={(e) => set("topic_config")(e.target.value)} placeholder="retention.ms=-1" />
            </FormField>
            <FormField label="Replication factor" name="replication_factor" error={errors.replication_factor} width="10em" helper="default: the target's">
              <Input size="sm" name="replication_factor" value={f.replication_factor} onChange={(e) => set("replication_factor")(e.target.value)} />
            </FormField>
            <Box pt={6}><Check id="no_source_config" checked={f.no_source_config} onChange={set("no_source_config")}>don't copy the source's configs</Check></Box>
          </HStack>
        ) : null}
        <HStack gap={2}>
          <Button size="sm" variant="outline" type="submit" id="preview">Preview (dry run)</Button>
          <Button size="sm" id="launch" disabled={!canLaunch} onClick={launch}>Launch replay</Button>
        </HStack>
        <InlineError name="preview" error={errors.preview} />
        <InlineError name="launch" error={errors.launch} />
        {who && !who.can_trigger ? <Text fontSize="sm" color="fg.muted">{who.user} may preview but not launch (no permission to trigger kafka_archive_replay)</Text> : null}
      </Stack>
      {preview ? <PreviewOut r={preview.answer} blocked={blocked} /> : null}
      <Box mt={2}>
        <RunLine id="run-out" run={run}>
          {rp ? ` - replay ${rp.replay_id}: ${rp.status}, ${count(rp.records_sent)} records sent, ${parts.filter((p) => p.done).length}/${parts.length} partitions done` : ""}
        </RunLine>
      </Box>
    </Section>
  );
}

function PreviewOut({ r, blocked }) {
  const s = r.summary;
  const tc = r.target_check;
  const cfg = r.topic_config;
  const items = [
    ["plan", r.replay_id],
    ["records the replay will send", `${count(s.records)} (${bytes(s.bytes)} in ${count(s.objects)} archived objects)`],
    ["holes", s.holes ? `${s.holes} - see below` : "none"],
    ["target", `${r.target} / ${r.target_topic}`],
  ];
  if (tc) {
    items.push(["target cluster id", readable(tc.cluster_id)]);
    items.push(["target topic's partitions", readable(tc.partitions)]);
    items.push(["target topic would be created", readable(tc.topic_would_be_created)]);
  } else {
    items.push(["target", "not checked (the preview was asked not to)"]);
  }
  const parts = Object.entries(r.partitions || {});
  return (
    <Box id="preview-out" mt={3} borderTopWidth="1px" borderColor="border" pt={3}>
      <Fields id="preview-fields" items={items} />
      {parts.length ? (
        <SimpleTable id="preview-partitions" numeric={[true, true, true, true]}
          heads={["partition", "records the replay will send", "bytes", "archived objects"]}
          rows={parts.map(([p, v]) => [p, count(v.records), bytes(v.bytes), count((v.objects || []).length)])} />
      ) : null}
      {r.holes && r.holes.length ? (
        <SimpleTable id="preview-holes" heads={["partition", "offsets", "kind", "why"]}
          rows={r.holes.map((h) => [h.partition, `${h.start_offset ?? h.first_offset ?? "?"}..${h.end_offset ?? h.last_offset ?? "?"}`, h.kind || "-", h.reason || "-"])} />
      ) : null}
      {(r.notes || []).map((n, i) => <Text key={i} fontSize="sm" color="fg.warning">note: {n}</Text>)}
      {cfg ? <TopicConfig tc={cfg} /> : null}
      {blocked && blocked.length ? (
        <Text color="fg.error" id="launch-blocked" fontSize="sm">
          Launch is off: the target topic would reject the replayed records ({blocked.map((x) => x.name).join(", ")}); fix the topic configs and preview again
        </Text>
      ) : null}
    </Box>
  );
}

function TopicConfig({ tc }) {
  const s = tc.settings || {};
  const dropped = "dropped" in tc ? tc.dropped : (s.dropped || []);
  return (
    <Box id="topic-config-out" mt={3}>
      <Text fontWeight="semibold" fontSize="sm">
        Target topic configs
        {tc.created_with ? ` (would be created with ${tc.target_partitions ?? "?"} partition(s), replication factor ${tc.replication_factor ?? "the target's default"})` : ""}
        {s.found ? <Text as="span" color="fg.muted" fontWeight="normal"> - the source's at {utc(s.at_ms)}, from the {s.history_source}</Text> : null}
      </Text>
      {(s.configs || []).length ? (
        <SimpleTable id="tc-configs" heads={["config", "value", "source"]} rows={s.configs.map((c) => [c.name, c.value, c.source])} />
      ) : <Text color="fg.muted" fontSize="sm">no configs set</Text>}
      {(s.notes || []).map((n, i) => <Text key={i} fontSize="sm" color="fg.warning">note: {n}</Text>)}
      {dropped.length ? <SimpleTable id="tc-dropped" heads={["not set", "value", "why"]} rows={dropped.map((d) => [d.name, d.value, d.reason])} /> : null}
      {(tc.diffs || []).length ? (
        <SimpleTable id="tc-diffs" heads={["config", "source at T", "existing target"]} rows={tc.diffs.map((d) => [d.name, d.source ?? "-", d.target ?? "-"])} />
      ) : null}
      {(tc.findings || []).map((x, i) => (
        <Text key={i} fontSize="sm" color={x.level === "error" ? "fg.error" : "fg.warning"}>
          {x.level}: {x.name}: {x.message}{x.hint ? ` - ${x.hint}` : ""}
        </Text>
      ))}
    </Box>
  );
}
