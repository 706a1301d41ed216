// "Restore a whole cluster at T" (issue 24): the form of the kafka_archive_restore DAG's Params,
// a preview (the preflight, as `restore plan`: every topic with its target name, partitions,
// records, bytes, configs at T and holes; the groups; the ACLs; every problem with what to do,
// each also shown next to the field that fixes it; the estimate), then a launch (an ordinary run
// of kafka_archive_restore) followed until it ends, with its report. Launch needs the preview of
// exactly the form as it is, and a plan without errors.
import { Box, Button, HStack, Input, Stack, Text, Textarea } from "@chakra-ui/react";
import { useEffect, useState } from "react";

import { api, enc, qs } from "./api.js";
import { bytes, count, duration, readable, utc } from "./format.js";
import { nameList, problemsByField } from "./restorePlan.js";
import { RunLine, usePoll } from "./runs.jsx";
import { Check, errorField, Fields, FormField, InlineError, Section, Select, SimpleTable, useTickets } from "./ui.jsx";

const FIELDS = ["topics", "exclude", "at", "from", "prefix", "suffix", "rename_regex", "rename_to", "groups",
  "target", "target_principal", "replication_factor", "parallelism", "allow_gaps", "principal_map"];
const EMPTY = {
  topics: "", all_topics: false, exclude: "", at: "", prefix: "", suffix: "", rename_regex: "", rename_to: "",
  groups: "", acls: false, target_conn: "", target_servers: "", target_principal: "", replication_factor: "",
  parallelism: "4", allow_gaps: false, unverified_permissions: false, check_target: true,
};

export function RestoreSection({ shown, conns, who }) {
  const tickets = useTickets();
  const [f, setF] = useState(EMPTY);
  const [errors, setErrors] = useState({});
  const [preview, setPreview] = useState(null); // {body, answer, used}
  const [run, setRun] = useState(null);
  const [past, setPast] = useState(null); // the catalog's restores, newest first
  const set = (k) => (v) => { setF((old) => ({ ...old, [k]: v })); setPreview(null); };
  // the page's T (and its topic, when none is typed yet) is where the form starts
  useEffect(() => {
    tickets("preview"); setPreview(null); setErrors({});
    if (shown) setF((old) => ({ ...old, at: utc(shown.T), topics: old.topics || shown.topic }));
  }, [shown]); // eslint-disable-line react-hooks/exhaustive-deps
  usePoll(run && run.run_id, (id) => api("/restore/runs/" + enc(id)), setRun, (m) => setErrors({ "restore-launch": m }));
  // the catalog's restores: on opening, and again when the page's run ends
  const ended = run && ["success", "failed"].includes(run.state);
  useEffect(() => {
    api("/restores").then((r) => setPast(r.items), (e) => setErrors((old) => ({ ...old, restores: e.message })));
  }, [ended]);

  /** The request, or {error: {field: message}} for what the page can tell itself. */
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
      cluster: shown.cluster, topics: topics, all_topics: f.all_topics, exclude: nameList(f.exclude), at: f.at.trim(),
      prefix: f.prefix.trim(), suffix: f.suffix.trim(), rename_regex: f.rename_regex.trim() || null, rename_to: f.rename_to,
      groups: groups.length ? groups : null, acls: f.acls, target: target, target_principal: f.target_principal.trim() || null,
      replication_factor: rf, parallelism: par, allow_gaps: f.allow_gaps, unverified_permissions: f.unverified_permissions,
    };
    return Object.keys(errs).length ? { error: errs } : { body: out };
  }
  async function doPreview() {
    const current = tickets("preview");
    setPreview(null); setErrors({});
    if (!shown) { setErrors({ "restore-preview": "show a cluster's topic at a time T first" }); return; }
    const b = body();
    if (b.error) { setErrors(b.error); return; }
    try {
      const r = await api("/restore/plan" + qs({ check_target: f.check_target }), { body: b.body });
      if (current()) { setPreview({ body: JSON.stringify(b.body), answer: r }); setErrors(problemsByField(r.problems)); }
    } catch (e) {
      if (current()) setErrors({ [errorField(e, FIELDS, "restore-preview", b.body)]: e.message });
    }
  }
  async function launch() {
    const b = body();
    if (b.error || !preview || JSON.stringify(b.body) !== preview.body) { setErrors({ "restore-launch": "the form changed: preview it again" }); return; }
    const was = preview;
    setPreview({ ...preview, used: true }); // one run per preview: a double click launches one
    try {
      setRun(await api("/restore/launch", { body: b.body }));
    } catch (e) {
      setPreview(was);
      setErrors({ [errorField(e, FIELDS, "restore-launch", b.body)]: e.message });
    }
  }
  const canLaunch = preview && !preview.used && preview.answer.ok && who && who.can_restore;
  const text = (k, props = {}) => <Input size="sm" name={`rs-${k}`} value={f[k]} onChange={(e) => set(k)(e.target.value)} {...props} />;
  return (
    <Section id="restore-section" title="Restore a whole cluster at T"
      right={shown ? <Text color="fg.muted" fontSize="sm">from the archive of {shown.cluster}</Text> : null}>
      <Stack gap={3} as="form" id="restore" onSubmit={(e) => { e.preventDefault(); doPreview(); }}>
        <HStack alignItems="flex-start" gap={3} flexWrap="wrap">
          <FormField label="Topics (names or patterns, a line each)" name="rs-topics" error={errors.topics} width="22em" helper="orders, orders-*, re:^pay.*">
            <Textarea size="sm" name="rs-topics" rows={2} value={f.topics} onChange={(e) => set("topics")(e.target.value)} />
          </FormField>
          <FormField label="Except" name="rs-exclude" error={errors.exclude} width="12em" helper="patterns left out">
            {text("exclude")}
          </FormField>
          <Box pt={6}><Check id="rs-all_topics" checked={f.all_topics} onChange={set("all_topics")}>all user topics</Check></Box>
          <FormField label="Moment T" name="rs-at" error={errors.at} width="19em" helper="one T for every topic and group">
            {text("at")}
          </FormField>
        </HStack>
        <HStack alignItems="flex-start" gap={3} flexWrap="wrap">
          <FormField label="Target names: prefix" name="rs-prefix" error={errors.prefix} width="12em" helper="e.g. restored.">
            {text("prefix")}
          </FormField>
          <FormField label="suffix" name="rs-suffix" error={errors.suffix} width="9em">{text("suffix")}</FormField>
          <FormField label="or regex" name="rs-rename_regex" error={errors.rename_regex} width="11em">{text("rename_regex", { placeholder: "^(.*)$" })}</FormField>
          <FormField label="replaced by" name="rs-rename_to" error={errors.rename_to} width="11em">{text("rename_to", { placeholder: "dr.\\1" })}</FormField>
          <FormField label="Groups (patterns)" name="rs-groups" error={errors.groups} width="14em" helper="default: all that committed on them">
            {text("groups")}
          </FormField>
        </HStack>
        <HStack alignItems="flex-start" gap={3} flexWrap="wrap">
          <FormField label="Target: an Airflow connection" name="rs-target_conn" width="auto" error={errors.target}>
            <Select name="rs-target_conn" value={f.target_conn} options={[["", "(none)"], ...conns]} onChange={set("target_conn")} />
          </FormField>
          <FormField label="or bootstrap servers" name="rs-target_servers" width="16em">
            {text("target_servers", { placeholder: "host:9092" })}
          </FormField>
          <FormField label="Target principal" name="rs-target_principal" error={errors.target_principal} width="14em" helper="for the permission check">
            {text("target_principal", { placeholder: "User:restorer" })}
          </FormField>
          <FormField label="Replication factor" name="rs-replication_factor" error={errors.replication_factor} width="10em" helper="default: as at T">
            {text("replication_factor")}
          </FormField>
          <FormField label="Parallel partitions" name="rs-parallelism" error={errors.parallelism} width="9em">{text("parallelism")}</FormField>
        </HStack>
        <HStack gap={5} flexWrap="wrap" alignItems="flex-start">
          <Check id="rs-acls" checked={f.acls} onChange={set("acls")}>ACLs as at T</Check>
          <FormField name="rs-allow_gaps" error={errors.allow_gaps} width="auto" flex="0 1 32em">
            <Check id="rs-allow_gaps" checked={f.allow_gaps} onChange={set("allow_gaps")}>restore around holes</Check>
          </FormField>
          <Check id="rs-unverified_permissions" checked={f.unverified_permissions} onChange={set("unverified_permissions")}>go ahead when permissions cannot be checked</Check>
          <Check id="rs-check_target" checked={f.check_target} onChange={set("check_target")}>check the target in the preview</Check>
        </HStack>
        <HStack gap={2}>
          <Button size="sm" variant="outline" type="submit" id="restore-preview">Preview the restore</Button>
          <Button size="sm" id="restore-launch" disabled={!canLaunch} onClick={launch}>Launch restore</Button>
        </HStack>
        <InlineError name="restore-preview" error={errors["restore-preview"]} />
        <InlineError name="restore-launch" error={errors["restore-launch"]} />
        {who && !who.can_restore ? <Text fontSize="sm" color="fg.muted">{who.user} may not preview or launch a restore (no permission to trigger kafka_archive_restore)</Text> : null}
      </Stack>
      {preview ? <PlanOut r={preview.answer} /> : null}
      <Box mt={2}><RestoreRun run={run} /></Box>
      {past && past.length ? (
        <Box mt={3}>
          <Text fontWeight="semibold" fontSize="sm">Restores in the catalog</Text>
          <SimpleTable id="restores" heads={["restore", "status", "from", "to", "T", "resume"]}
            rows={past.slice(0, 10).map((x) => [x.restore_id, x.status, x.cluster, x.target, x.at, x.resume || "-"])} />
        </Box>
      ) : null}
      <InlineError name="rs-restores" error={errors.restores} />
    </Section>
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
    ["estimate", `${count(est.records)} records, ${bytes(est.bytes)}, ${(est.seconds || 0) < 1 ? "under a second" : `about ${duration(Math.round(est.seconds * 1000))}`} at ${bytes(est.assumed_bytes_per_s)}/s`],
    ["target", `${r.target}${r.target_cluster_id ? ` (cluster ${r.target_cluster_id}, ${r.target_brokers} broker(s))` : ""}`],
    ["principal", readable(r.principal)],
    ["groups", r.groups.length ? r.groups.map((g) => g.group).join(", ") : "none"],
    ["ACLs", r.acls.length ? `${r.acls.length} as at T${r.skipped_acls.length ? `, ${r.skipped_acls.length} skipped` : ""}` : "not restored"],
  ];
  return (
    <Box id="restore-plan" mt={3} borderTopWidth="1px" borderColor="border" pt={3}>
      <Text id="restore-verdict" fontWeight="semibold" color={r.ok ? "fg.success" : "fg.error"} mb={2}>
        {r.ok ? "Ready: nothing stops this restore" : `Launch is off: ${errs.length} problem(s) to fix first, each shown next to its field and below`}
      </Text>
      <Fields id="restore-fields" items={items} />
      {(r.problems || []).length ? (
        <SimpleTable id="restore-problems" heads={["", "topic", "problem", "what to do"]}
          rows={r.problems.map((p) => [p.level, p.topic || "-", p.message, p.hint || "-"])} />
      ) : null}
      <SimpleTable id="restore-topics" numeric={[false, false, true, true, true, false, true]}
        heads={["topic", "restored as", "partitions", "records", "bytes", "configs at T", "holes"]}
        rows={r.topics.map((t) => [t.source, t.target + (t.resumed ? " (resumed)" : ""), t.partitions, count(t.records), bytes(t.bytes),
          configs(t.configs_at_t), t.holes.length])} />
      {r.groups.length ? (
        <SimpleTable id="restore-groups" heads={["group", "on the selected topics", "also on (not restored)"]}
          rows={r.groups.map((g) => [g.group, g.topics.join(", "), g.outside.join(", ") || "-"])} />
      ) : null}
      {(r.notes || []).map((n, i) => <Text key={i} fontSize="sm" color="fg.warning">note: {n}</Text>)}
    </Box>
  );
}

function RestoreRun({ run }) {
  if (!run) return null;
  const st = run.restore;
  const topics = st ? Object.entries(st.topics || {}) : [];
  const rep = st && st.report;
  return (
    <Box id="restore-run">
      <RunLine id="restore-run-line" run={run}>
        {st ? ` - restore ${st.restore_id}: ${st.status}, ${topics.filter(([, v]) => v.status.startsWith("complete")).length}/${topics.length} topics done` : ""}
      </RunLine>
      {st && st.resume && run.state === "failed" ? <Text fontSize="sm" color="fg.warning">resume it: {st.resume}</Text> : null}
      {rep ? (
        <Box id="restore-report" mt={2}>
          <Text fontSize="sm">
            {count(rep.records_this_run)} records, {bytes(rep.bytes_this_run)} in {duration(Math.round(rep.duration_s * 1000))};
            {" "}{rep.groups.filter((g) => g.applied).length}/{rep.groups.length} groups moved, {rep.acls_created} ACLs created
          </Text>
          <SimpleTable id="restore-report-topics" numeric={[false, false, false, true, true, true, false]}
            heads={["topic", "restored as", "status", "records", "bytes", "time", "recovery point"]}
            rows={rep.topics.map((t) => [t.source, t.target, t.status, count(t.records_this_run), bytes(t.bytes_this_run),
              duration(Math.round(t.duration_s * 1000)), utc(Math.max(-1, ...Object.values(rep.recovery_point_ms[t.source] || {})))])} />
          {(rep.problems || []).map((p, i) => <Text key={i} fontSize="sm" color={p.level === "error" ? "fg.error" : "fg.warning"}>{p.level}: {p.message}{p.hint ? ` - ${p.hint}` : ""}</Text>)}
        </Box>
      ) : null}
    </Box>
  );
}
