"""
# kafka_archive_segments

Copies every **rolled** Kafka segment from the brokers' `log.dirs` to object storage, byte for
byte, **once**, with proof (SHA-256 + CRC-32C per file, every batch CRC-checked), and writes one
manifest per segment last. See `docs/archive.md` for the layout and the manifest contract.

## Tasks

* `targets` (once): reads the configuration and lists the (cluster, broker, log dir) targets
  per worker queue; `log_dirs[__<queue>]` hands each queue its list.
* `discover[__<queue>]` (mapped, one per log dir): lists the rolled segments whose whole range
  is below the recovery point and the high watermark, hashes them (cached between runs) and
  reports why anything else is skipped.
* `plan` (once): consults the manifests in the store; chooses one replica per offset range
  (lowest broker id, then log dir), detects compaction rewrites (new versions), records
  overlaps; `uploads[__<queue>]` hands each queue its share.
* `archive[__<queue>]` (mapped, one per log dir): CRC-scans and uploads each planned segment,
  manifest last; corrupt segments go to `<cluster>/_quarantine/` and **fail this task**.
* `report` (once, always): merges everything into an `ArchiveReport` (archived, skipped per
  reason, failed, lag per broker), logs and returns it, and fails the run if anything failed.
* `publish` (once, always): emits the Asset event `kafka-archive://archive/segments` (extra:
  the new manifest keys) when segments were archived, so the catalog DAG runs.

Re-runs are idempotent: content-addressed keys and `put_if_absent` mean nothing is uploaded
twice; a run killed midway leaves no manifest for unfinished segments and the next run completes
them. Tasks retry with exponential backoff (store outages); quarantine failures do not retry.

## Configuration

* Airflow Variable `kafka_archive_config` (JSON) or env `KAFKA_ARCHIVE_CONFIG` -> YAML/JSON file
  (`kafka_archive.archive.config.ArchiveConfig`: clusters -> brokers -> log dirs, `store_uri`,
  `store_options`, `schedule`, `concurrency`, `state_dir`, per-broker `queue`).
* Schedule: env `KAFKA_ARCHIVE_SCHEDULE` or `AIRFLOW_VAR_KAFKA_ARCHIVE_SCHEDULE`, else the
  config's `schedule`, else every 10 minutes. `catchup=False`, one active run at a time.
* Params (manual runs): `dry_run` (plan only), `clusters` (subset of cluster names).

## How a task reaches a broker's log dir (production)

A segment can only be read where the broker's volume is. Two deployments work:

1. **Celery queue per broker** (implemented): give each broker a `queue` in the config (e.g.
   `kafka-broker-1`) and run an Airflow Celery worker *beside that broker* (same host, or a
   sidecar in the broker's pod) with the broker's log volume mounted **read-only** at the same
   path, started with `airflow celery worker --queues kafka-broker-1`. The DAG defines one
   mapped `discover__<queue>`/`archive__<queue>` pair per queue with `queue=<queue>`, so those
   tasks only run on that worker. The set of queues is read when the DAG is parsed, from the
   environment (`KAFKA_ARCHIVE_CONFIG` file or `AIRFLOW_VAR_KAFKA_ARCHIVE_CONFIG`), so the DAG
   processor must see the same configuration as the workers.
2. **A pod that mounts the broker's volume**: on Kubernetes, run the same work with the
   `KubernetesPodOperator` (or the KubernetesExecutor with a `pod_override`) mounting the broker
   PVC read-only (ReadOnlyMany, or co-scheduled on the broker's node for ReadWriteOnce), with the
   command `kafka-archive archive --cluster C --broker-id N --log-dir /data --store s3://...`;
   the CLI does exactly what one broker's discover+plan+archive tasks do and consults the
   manifests already archived by other brokers.

Brokers without a `queue` run on the default queue (a worker that sees every log dir, e.g. a
single host or all volumes mounted).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Asset, Param, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException
from kafka_archive.airflow import archive_tasks as t
from kafka_archive.airflow import protect_task_logs
from kafka_archive.airflow.archive_dag import (
    ARCHIVE_SEGMENTS_ASSET_URI,
    is_dry_run,
    outcomes,
    parse_time_config,
    parse_time_schedule,
    raise_if_failed,
    task_config,
)
from kafka_archive.airflow.notify import alerting_args, run_deadline

protect_task_logs()  # this DAG's task logs never show a password, secret key or token

# Parse time reads only the environment (no database, no network): which queues exist and the
# schedule. Everything else is read by the tasks when they run.
_PARSE_CONFIG = parse_time_config()
GROUPS = t.queue_groups(_PARSE_CONFIG)
SEGMENTS_ASSET = Asset(ARCHIVE_SEGMENTS_ASSET_URI)

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    "retries": 3,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
    "execution_timeout": timedelta(hours=6),
    **alerting_args(),  # a message for each failed or retried task
}


def _pull(task_ids: list[str], key: str = "return_value") -> list[Any]:
    ti = get_current_context()["ti"]
    values = ti.xcom_pull(task_ids=task_ids, key=key)
    if not isinstance(values, list):
        values = [values]
    return [v for v in values if v is not None]


def _all_targets(by_group: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every target of a ``resolve_targets`` result, queue group after queue group."""
    return [x for g in GROUPS for x in by_group.get(g.key, [])]


def _in_group(task_fn: Any, task_id: str, group: t.QueueGroup) -> Any:
    """``task_fn`` as task ``task_id``, on ``group``'s worker queue when the group has one."""
    overrides: dict[str, Any] = {"task_id": task_id}
    if group.queue is not None:  # no queue: the DAG's default queue
        overrides["queue"] = group.queue
    return task_fn.override(**overrides)


@dag(
    dag_id="kafka_archive_segments",
    schedule=parse_time_schedule(config=_PARSE_CONFIG),
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["kafka-archive", "archive", "kafka"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
    deadline=run_deadline("archive_deadline"),  # unset: no deadline
    params={
        "dry_run": Param(False, type="boolean", description="Plan only; upload nothing."),
        "clusters": Param(
            [],
            type="array",
            items={"type": "string"},
            description="Archive only these clusters (empty: all).",
        ),
    },
)
def kafka_archive_segments() -> None:
    @task
    def targets(params: dict[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
        cfg = task_config()
        clusters = list((params or {}).get("clusters") or [])
        return t.resolve_targets(cfg, GROUPS, clusters)

    @task
    def select(by_group: Any, key: str) -> list[dict[str, Any]]:
        # Mapped tasks can only expand over a task's return value, so each queue group gets
        # its own list through this trivial task.
        return list(by_group.get(key, []))

    @task(retries=1)
    def discover(target: dict[str, Any]) -> dict[str, Any]:
        return t.discover_target(target, task_config())

    @task(trigger_rule="all_done")
    def plan(by_group: Any) -> dict[str, list[dict[str, Any]]]:
        discoveries = _pull([g.discover_task_id for g in GROUPS])
        out = t.plan_targets(discoveries, _all_targets(by_group), task_config(), GROUPS)
        get_current_context()["ti"].xcom_push(key=t.PLANS_KEY, value=out.pop(t.PLANS_KEY))
        return out

    @task
    def archive(work: dict[str, Any], params: dict[str, Any] | None = None) -> dict[str, Any]:
        result = t.archive_work(work, task_config(), dry_run=is_dry_run(params))
        # Pushed explicitly so that `report` sees it even when this task then fails.
        get_current_context()["ti"].xcom_push(key=t.ARCHIVE_RESULT_KEY, value=result)
        raise_if_failed(result)
        return result

    @task(trigger_rule="all_done", retries=0)
    def report(by_group: Any, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rep = t.build_report(
            targets=_all_targets(by_group),
            discoveries=_pull([g.discover_task_id for g in GROUPS]),
            plans=[p for ps in _pull(["plan"], t.PLANS_KEY) for p in ps],
            results=_pull([g.archive_task_id for g in GROUPS], t.ARCHIVE_RESULT_KEY),
            config=task_config(),
            dry_run=is_dry_run(params),
        )
        rep.log_summary()
        if not rep.ok:
            raise AirflowFailException(
                f"{rep.segments_failed} segment(s) failed ({rep.segments_quarantined} "
                f"quarantined), {len(rep.log_dir_failures)} log dir(s) failed: "
                + rep.summary_line()
            )
        return rep.to_json_dict()

    @task(trigger_rule="all_done", retries=0, outlets=[SEGMENTS_ASSET])
    def publish() -> dict[str, Any]:
        extra = t.asset_extra(
            outcomes(_pull([g.archive_task_id for g in GROUPS], t.ARCHIVE_RESULT_KEY))
        )
        if not extra["segments_archived"]:
            raise AirflowSkipException("nothing new was archived: no Asset event")
        events: Any = get_current_context()["outlet_events"]
        events[SEGMENTS_ASSET].extra = extra
        return extra

    tg = targets()
    discovers = []
    for g in GROUPS:
        dirs = select.override(task_id=g.select_targets_task_id)(tg, g.key)
        discovers.append(_in_group(discover, g.discover_task_id, g).expand(target=dirs))
    planned = plan(tg)
    for d in discovers:
        d >> planned
    archives = []
    for g in GROUPS:
        work = select.override(task_id=g.select_work_task_id)(planned, g.key)
        archives.append(_in_group(archive, g.archive_task_id, g).expand(work=work))
    rep = report(tg)
    pub = publish()
    for a in archives:
        a >> [rep, pub]


kafka_archive_segments()
