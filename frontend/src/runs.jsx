// A DAG run the page started (a replay, a group move): its line, a link to Airflow's own page
// of the run (a route of the host's router: no reload, no iframe), followed until it ends.
import { Link, Text } from "@chakra-ui/react";
import { useEffect, useRef } from "react";
import { Link as RouterLink } from "react-router-dom";

/** Polls `ask()` every 3 s (one request at a time, so never an older state over a newer
 * one) and hands each answer to `onRun` until the run ends; a new `runId` restarts it, none
 * (or unmounting) stops it. */
export function usePoll(runId, ask, onRun, onError) {
  const timer = useRef(null);
  useEffect(() => {
    if (!runId) return undefined;
    let alive = true;
    const tick = async () => {
      let r = null;
      try { r = await ask(runId); } catch (e) { if (alive) onError(e.message); }
      if (!alive) return;
      if (r) onRun(r);
      if (!r || !["success", "failed"].includes(r.state)) timer.current = setTimeout(tick, 3000);
    };
    timer.current = setTimeout(tick, 3000);
    return () => { alive = false; clearTimeout(timer.current); };
  }, [runId]); // eslint-disable-line react-hooks/exhaustive-deps
}

export function RunLine({ id, run, children }) {
  if (!run) return null;
  const color = run.state === "success" ? "fg.success" : run.state === "failed" ? "fg.error" : "fg.muted";
  return (
    <Text id={id} fontSize="sm">
      DAG run{" "}
      <Link asChild color="fg.info" textDecoration="underline"><RouterLink to={run.url}>{run.run_id}</RouterLink></Link>
      :{" "}<Text as="span" fontWeight="semibold" color={color} id={`${id}-state`}>{run.state}</Text>
      {children}
      {run.dag_paused && run.state === "queued" ? (
        <Text as="span" display="block" color="fg.warning">
          the {run.dag_id} DAG is paused: the run waits until it is unpaused in Airflow
        </Text>
      ) : null}
    </Text>
  );
}
