// "Platform health": GET /status, the same view as `kafka-archive status`.
import { Badge, Button, Text } from "@chakra-ui/react";
import { useEffect, useState } from "react";

import { api } from "./api.js";
import { count } from "./format.js";
import { InlineError, Section, SimpleTable } from "./ui.jsx";

const PALETTE = { ok: "green", warn: "orange", fail: "red" };

export function HealthSection() {
  const [h, setH] = useState(null);
  const [error, setError] = useState("");
  async function load() {
    setError("");
    try { setH(await api("/status")); } catch (e) { setH(null); setError(e.message); }
  }
  useEffect(() => { load(); }, []);
  const level = h ? (h.needs_human ? "needs a human" : h.level === "warn" ? "healthy, with warnings" : "healthy") : "";
  return (
    <Section id="health-section" title="Platform health"
      right={<>
        {h ? <Badge id="health-level" colorPalette={PALETTE[h.level]}>{level}</Badge> : null}
        <Button size="xs" variant="outline" id="health-go" onClick={load}>Refresh</Button>
      </>}>
      <InlineError name="health" error={error} />
      {h ? (
        <>
          <SimpleTable id="health" heads={["level", "area", "subject", "what"]}
            rows={h.checks.map((c) => [<Badge colorPalette={PALETTE[c.level]}>{c.level}</Badge>, c.area, c.subject, c.message])} />
          {h.replays.length ? (
            <SimpleTable id="health-replays" heads={["replay", "source", "status", "records sent", "offsets remaining", "partitions done", "eta (s)"]}
              rows={h.replays.map((r) => [r.replay_id, `${r.cluster}/${r.topic}`, r.status, count(r.records_sent),
                count(r.offsets_remaining), `${r.partitions_done}/${r.partitions}`, r.eta_s ?? "-"])} />
          ) : null}
        </>
      ) : !error ? <Text color="fg.muted">asking...</Text> : null}
    </Section>
  );
}
