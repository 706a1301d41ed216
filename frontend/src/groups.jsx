// "Consumer group at T" (its archived commits) and "Start group G at T on the target" (a run
// of kafka_archive_group_offsets that commits the translated positions there).
import { Box, Button, HStack, Input, RadioGroup, Text } from "@chakra-ui/react";
import { useEffect, useState } from "react";

import { api, enc, qs } from "./api.js";
import { count, utc } from "./format.js";
import { RunLine, usePoll } from "./runs.jsx";
import { errorField, FormField, InlineError, Section, Select, SimpleTable, useTickets } from "./ui.jsx";

export function GroupSection({ cluster, shown, group, setGroup, autoShow }) {
  const tickets = useTickets();
  const [answer, setAnswer] = useState(null);
  const [error, setError] = useState("");
  const [asked, setAsked] = useState(autoShow);

  async function load(g = group) {
    const current = tickets("group");
    setAnswer(null); setError("");
    if (!g.trim()) { setError("name a consumer group"); return; }
    if (!shown) { setError("show a topic at a time T first"); return; }
    setAsked(true);
    try {
      const r = await api(`/clusters/${enc(shown.cluster)}/groups/${enc(g.trim())}/offsets` + qs({ at: String(shown.T) }));
      if (current()) setAnswer(r);
    } catch (e) {
      if (current()) setError(e.message);
    }
  }
  // the group's table follows T (and the topic): asked again for each new `shown`
  useEffect(() => {
    tickets("group"); setAnswer(null);
    if (shown && asked && group.trim()) load();
  }, [shown]); // eslint-disable-line react-hooks/exhaustive-deps

  const behind = answer ? Object.fromEntries(answer.behind.map((b) => [`${b.topic}/${b.partition}`, b])) : {};
  return (
    <Section id="group-section" title="Consumer group at T">
      <HStack alignItems="flex-start" gap={3} flexWrap="wrap" as="form" onSubmit={(e) => { e.preventDefault(); load(); }}>
        <FormField label="Group" name="group" error={error} width="18em">
          <Input size="sm" name="group" value={group} onChange={(e) => setGroup(e.target.value)} />
        </FormField>
        <Button size="sm" variant="outline" mt={6} type="submit" id="group-go">Committed position at T</Button>
      </HStack>
      {answer ? (
        answer.items.length ? (
          <SimpleTable id="group-table" numeric={[false, true, true, false, true, true]}
            heads={["topic", "partition", "committed offset", "commit time (UTC)", "archive offset at T", "records behind"]}
            rows={answer.items.map((o) => {
              const b = behind[`${o.topic}/${o.partition}`] || {};
              return [o.topic, o.partition, o.offset, utc(o.commit_timestamp), b.end_offset ?? "-", b.lag ?? "-"];
            })} />
        ) : <Text color="fg.muted" id="group-none">{group} had committed nothing by T ({cluster})</Text>
      ) : null}
    </Section>
  );
}

const TG_FIELDS = ["group", "at", "commits_at", "replay_id", "target_topic", "target"];

export function StartGroupSection({ shown, conns, who, group }) {
  const tickets = useTickets();
  const [form, setForm] = useState({ group: "", basis: "at", replay_id: "", target_topic: "", target: "" });
  const [errors, setErrors] = useState({});
  const [preview, setPreview] = useState(null); // {body, answer}
  const [applied, setApplied] = useState(null);
  const [confirming, setConfirming] = useState(false);
  const [run, setRun] = useState(null);
  const [typed, setTyped] = useState(false); // a group typed here stops following the one above
  const set = (k) => (v) => { setForm((f) => ({ ...f, [k]: v })); setPreview(null); setConfirming(false); };
  // the group above is the one to start, until one is typed here
  useEffect(() => { if (!typed) setForm((f) => ({ ...f, group })); }, [group]); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => { tickets("tg"); setPreview(null); setApplied(null); setConfirming(false); setErrors({}); }, [shown]); // eslint-disable-line react-hooks/exhaustive-deps
  usePoll(run && run.run_id, (id) => api("/groups/translate/runs/" + enc(id)), (r) => {
    setRun(r); if (r.applied) setApplied(r.applied);
  }, (m) => setErrors({ apply: m }));

  function body() {
    const at = utc(shown.T);
    const byCommits = form.basis === "commits";
    return {
      cluster: shown.cluster, topic: shown.topic, group: form.group.trim(),
      at: byCommits ? null : at, commits_at: byCommits ? at : null,
      replay_id: form.replay_id.trim() || null, target_topic: form.target_topic.trim() || null,
      target: form.target || null,
    };
  }
  async function doPreview() {
    const current = tickets("tg");
    setPreview(null); setApplied(null); setRun(null); setConfirming(false); setErrors({});
    if (!shown) { setErrors({ preview: "show a topic at a time T first" }); return; }
    if (!form.group.trim()) { setErrors({ group: "name the group to start on the target" }); return; }
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
    if (!preview || JSON.stringify(b) !== preview.body) { setErrors({ apply: "the form changed: preview it again" }); return; }
    const was = preview;
    setPreview({ ...preview, used: true }); // one apply per preview
    try {
      const r = await api("/groups/translate/apply", { body: b });
      setRun(r);
    } catch (e) {
      setPreview(was);
      setErrors({ [errorField(e, TG_FIELDS, "apply", b)]: e.message });
    }
  }
  const shownAnswer = applied || (preview && preview.answer);
  const t = (shownAnswer && shownAnswer.target) || {};
  const named = t.name && t.name !== t.bootstrap_servers;
  return (
    <Section id="start-group-section" title="Start group G at T on the target">
      <HStack alignItems="flex-start" gap={3} flexWrap="wrap">
        <FormField label="Group" name="tg-group" error={errors.group} width="16em">
          <Input size="sm" name="tg-group" value={form.group} onChange={(e) => { setTyped(true); set("group")(e.target.value); }} />
        </FormField>
        <FormField label="Start at" name="tg-basis" error={errors.at || errors.commits_at} width="auto">
          <RadioGroup.Root size="sm" value={form.basis} onValueChange={(e) => set("basis")(e.value)} name="tg-basis">
            <HStack gap={4} pt={1}>
              <RadioGroup.Item value="at" data-testid="tg-basis-at"><RadioGroup.ItemHiddenInput /><RadioGroup.ItemIndicator /><RadioGroup.ItemText>the records at T</RadioGroup.ItemText></RadioGroup.Item>
              <RadioGroup.Item value="commits" data-testid="tg-basis-commits"><RadioGroup.ItemHiddenInput /><RadioGroup.ItemIndicator /><RadioGroup.ItemText>its archived commits at T</RadioGroup.ItemText></RadioGroup.Item>
            </HStack>
          </RadioGroup.Root>
        </FormField>
        <FormField label="Replay id" name="tg-replay" error={errors.replay_id} width="14em" helper="default: the topic's latest replay">
          <Input size="sm" name="tg-replay" value={form.replay_id} onChange={(e) => set("replay_id")(e.target.value)} />
        </FormField>
        <FormField label="Target topic" name="tg-target-topic" error={errors.target_topic} width="12em" helper="default: any">
          <Input size="sm" name="tg-target-topic" value={form.target_topic} onChange={(e) => set("target_topic")(e.target.value)} />
        </FormField>
        <FormField label="Target's credentials from" name="tg-conn" error={errors.target} width="auto" helper="an Airflow connection (optional)">
          <Select name="tg-conn" value={form.target} options={[["", "(the replay's target)"], ...conns]} onChange={set("target")} />
        </FormField>
      </HStack>
      <HStack gap={2} mt={3} flexWrap="wrap">
        <Button size="sm" variant="outline" id="tg-preview" onClick={doPreview}>Preview</Button>
        <Button size="sm" id="tg-apply" disabled={!preview || preview.used || !(who && who.can_apply_groups) || confirming}
          onClick={() => setConfirming(true)}>Apply on the target</Button>
        {confirming ? (
          <HStack id="tg-confirm" gap={2} borderWidth="1px" borderColor="border.warning" borderRadius="md" px={2} py={1}>
            <Text fontSize="sm">Commit these offsets for group {form.group.trim()} on the target?</Text>
            <Button size="xs" colorPalette="red" id="tg-commit" onClick={commit}>Commit</Button>
            <Button size="xs" variant="outline" id="tg-cancel" onClick={() => setConfirming(false)}>Cancel</Button>
          </HStack>
        ) : null}
      </HStack>
      <InlineError name="tg-preview" error={errors.preview} />
      <InlineError name="tg-apply" error={errors.apply} />
      {who && !who.can_apply_groups ? <Text fontSize="sm" color="fg.muted">{who.user} may preview but not apply (no permission to trigger kafka_archive_group_offsets)</Text> : null}
      <Box mt={2}>
        <RunLine id="tg-run" run={run}>
          {run && run.state === "failed" ? <Text as="span" color="fg.error"> - the run failed: its task log in Airflow says why</Text> : run && run.state !== "success" ? " - applying..." : null}
        </RunLine>
      </Box>
      {shownAnswer ? (
        <Box id="tg-out" mt={2}>
          <Text fontSize="sm" mb={1}>
            {applied ? <Text as="span" color="fg.success" fontWeight="semibold">committed</Text> : "would commit"}{" "}
            for group <b>{shownAnswer.items.length ? shownAnswer.items[0].group : form.group}</b>
            {t.bootstrap_servers ? ` on ${named ? `${t.name} (${t.bootstrap_servers})` : t.bootstrap_servers}` : ""} (from {shownAnswer.basis}):
          </Text>
          <SimpleTable id="tg-table" numeric={[false, false, true, true, false, false]}
            heads={["replay", "target topic", "partition", "offset on the target", "exact", "from the source's positions"]}
            rows={shownAnswer.items.map((i) => [i.replay_id, i.topic, i.partition, i.offset, i.exact ? "yes" : "no",
              Object.entries(i.source_positions || {}).map(([p, o]) => `partition ${p} at ${o == null ? "its end" : count(o)}`).join("; ") || "-"])} />
        </Box>
      ) : null}
    </Section>
  );
}
