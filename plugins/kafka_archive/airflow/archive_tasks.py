"""The bodies of the ``kafka_archive_segments`` DAG's tasks, free of Airflow imports.

The DAG file only wires these together; keeping them here makes them importable and testable
without a scheduler and keeps the DAG file free of work at parse time. Everything crossing a
task boundary (XCom) is plain JSON: pydantic models dumped with ``mode="json"``.

Task graph (one *group* of mapped tasks per worker queue, see :func:`queue_groups`)::

    targets ─► log_dirs[g] ─► discover[g] (mapped per log dir) ─► plan
    plan ─► uploads[g] ─► archive[g] (mapped per log dir) ─┬─► report  (fails the run on failures)
                                                          └─► publish (Asset event if archived)

``log_dirs``/``uploads`` only pick a group's list out of ``targets``/``plan``: mapped tasks
can expand only over a task's return value, not over one key of it.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kafka_archive.archive.config import ArchiveConfig, ArchiveTarget, ConfigError
from kafka_archive.archive.discovery import LogDirDiscovery, ProblemInfo
from kafka_archive.archive.manifest import utc_now
from kafka_archive.archive.planner import ArchivePlan, LogDirPlan
from kafka_archive.archive.report import (
    ArchiveReport,
    LogDirFailure,
    SegmentOutcome,
    SegmentStatus,
)
from kafka_archive.archive.runner import assemble_report
from kafka_archive.services.archive import ArchiveService

__all__ = [
    "ARCHIVE_RESULT_KEY",
    "DEFAULT_GROUP",
    "PLANS_KEY",
    "QueueGroup",
    "archive_work",
    "asset_extra",
    "build_report",
    "discover_target",
    "plan_targets",
    "queue_groups",
    "resolve_targets",
]

log = logging.getLogger(__name__)

#: XCom key under which each archive task pushes its result (also when it then fails).
ARCHIVE_RESULT_KEY: Final = "archive_result"
#: Output of the plan task holding the per-cluster plans (for the report).
PLANS_KEY: Final = "plans"
#: Group key of targets without a queue (they run on the DAG's default queue).
DEFAULT_GROUP: Final = "default_queue"


@dataclass(frozen=True, slots=True)
class QueueGroup:
    """One worker queue and the ids of its mapped discover/archive tasks."""

    key: str
    queue: str | None

    @property
    def discover_task_id(self) -> str:
        return "discover" if self.queue is None else f"discover__{self.key}"

    @property
    def archive_task_id(self) -> str:
        return "archive" if self.queue is None else f"archive__{self.key}"

    @property
    def select_targets_task_id(self) -> str:
        return "log_dirs" if self.queue is None else f"log_dirs__{self.key}"

    @property
    def select_work_task_id(self) -> str:
        return "uploads" if self.queue is None else f"uploads__{self.key}"


def _group_key(queue: str | None) -> str:
    return DEFAULT_GROUP if queue is None else "q_" + re.sub(r"[^A-Za-z0-9_]", "_", queue)


def queue_groups(config: ArchiveConfig | None) -> list[QueueGroup]:
    """The task groups the DAG defines: the default queue always, plus one per configured
    queue (from the config known at parse time)."""
    groups = [QueueGroup(DEFAULT_GROUP, None)]
    if config is not None:
        seen = {DEFAULT_GROUP}
        for q in config.queues():
            key = _group_key(q)
            if q is not None and key not in seen:
                seen.add(key)
                groups.append(QueueGroup(key, q))
    return groups


def resolve_targets(
    config: ArchiveConfig, groups: Sequence[QueueGroup], clusters: Sequence[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Targets (log dirs) per group key; every group key is present (maybe empty).

    Raises :class:`ConfigError` when a target's queue has no group, i.e. the DAG was parsed with
    a different configuration than the tasks now read (make both read the same source).
    """
    out: dict[str, list[dict[str, Any]]] = {g.key: [] for g in groups}
    known = {g.queue: g.key for g in groups}
    for t in config.targets(list(clusters) if clusters else None):
        key = known.get(t.queue)
        if key is None:
            raise ConfigError(
                f"log dir {t.log_dir} of broker {t.broker_id} is assigned to queue {t.queue!r}, "
                f"but the DAG was parsed with queues {sorted(q for q in known if q)}: set "
                "KAFKA_ARCHIVE_CONFIG or AIRFLOW_VAR_KAFKA_ARCHIVE_CONFIG for the DAG processor "
                "too, so it sees the same configuration as the workers"
            )
        out[key].append(t.model_dump(mode="json"))
    return out


def _service(config: ArchiveConfig) -> ArchiveService:
    """The archive service for ``config``, the store's credentials taken from the configured
    Airflow connection first."""
    from kafka_archive.airflow.store_connection import use_store_connection

    use_store_connection()
    return ArchiveService(config=config)


def discover_target(target: dict[str, Any], config: ArchiveConfig) -> dict[str, Any]:
    """Discover one log dir (runs on the worker that can see it)."""
    t = ArchiveTarget.model_validate(target)
    d = ArchiveService(config=config).discover(t)
    log.info(
        "kafka-archive: %s: %d partition(s), %d rolled segment(s), %d candidate(s), "
        "%d skipped, %d error(s); digest cache %d hit(s) / %d miss(es)",
        t.label,
        d.partitions,
        d.rolled_segments,
        len(d.candidates),
        len(d.skipped),
        len(d.errors),
        d.digest_cache_hits,
        d.digest_cache_misses,
    )
    for e in d.errors:
        log.error("kafka-archive: %s: %s: %s (%s)", t.label, e.error, e.message, e.path)
    return d.model_dump(mode="json")


def plan_targets(
    discoveries: Iterable[dict[str, Any]],
    targets: Iterable[dict[str, Any]],
    config: ArchiveConfig,
    groups: Sequence[QueueGroup],
) -> dict[str, Any]:
    """Plan every cluster; returns ``{group key: [work item], PLANS_KEY: [plan]}``.

    A work item is one log dir's share: its target, its :class:`LogDirPlan` and the errors its
    discovery met (so that log dir's archive task reports them as its failure). A target whose
    discovery produced nothing (its task failed) gets a work item with an error too.
    """
    found = [LogDirDiscovery.model_validate(d) for d in discoveries if d]
    by_key = {(d.cluster, d.broker_id, d.log_dir): d for d in found}
    all_targets = [ArchiveTarget.model_validate(t) for t in targets]
    work: dict[str, list[dict[str, Any]]] = {g.key: [] for g in groups}
    group_of = {g.queue: g.key for g in groups}
    by_cluster: dict[str, list[LogDirDiscovery]] = defaultdict(list)
    for d in found:
        by_cluster[d.cluster].append(d)
    plans = _service(config).plan(by_cluster)
    plan_of = {(p.cluster, lp.broker_id, lp.log_dir): lp for p in plans for lp in p.log_dirs}
    for t in all_targets:
        k = (t.cluster, t.broker_id, t.log_dir)
        found_d = by_key.get(k)
        errors = (
            [e.model_dump(mode="json") for e in found_d.errors]
            if found_d
            else [
                ProblemInfo(
                    error="DiscoveryMissing",
                    message="the discover task of this log dir produced no result (see its log)",
                    path=t.log_dir,
                ).model_dump(mode="json")
            ]
        )
        lp = plan_of.get(k) or LogDirPlan(
            cluster=t.cluster, broker_id=t.broker_id, log_dir=t.log_dir
        )
        work[group_of.get(t.queue, DEFAULT_GROUP)].append(
            {
                "target": t.model_dump(mode="json"),
                "plan": lp.model_dump(mode="json"),
                "discovery_errors": errors,
            }
        )
        log.info("kafka-archive: plan %s: %d segment(s) to archive", t.label, len(lp.tasks))
    return {**work, PLANS_KEY: [p.model_dump(mode="json") for p in plans]}


def archive_work(
    work: dict[str, Any], config: ArchiveConfig, *, dry_run: bool = False
) -> dict[str, Any]:
    """Upload one log dir's planned segments; returns the result pushed to XCom.

    ``failed`` in the result tells the caller (the Airflow task) to fail after pushing it.
    """
    t = ArchiveTarget.model_validate(work["target"])
    plan = LogDirPlan.model_validate(work["plan"])
    errors = [ProblemInfo.model_validate(e) for e in work.get("discovery_errors", [])]
    outcomes = _service(config).upload(t, plan, dry_run=dry_run) if plan.tasks else []
    # KRaft metadata snapshots + quorum-state of this log dir; a snapshot that fails its
    # verification fails the task like a discovery error (it is retried next run)
    errors += _service(config).archive_metadata_files(t, dry_run=dry_run).problems
    failed = [o for o in outcomes if o.failed]
    for o in outcomes:
        log.info(
            "kafka-archive: %s %s-%d@%d %s %s",
            t.label,
            o.topic,
            o.partition,
            o.base_offset,
            o.status.value,
            o.detail,
        )
    return {
        "target": t.model_dump(mode="json"),
        "outcomes": [o.model_dump(mode="json") for o in outcomes],
        "errors": [e.model_dump(mode="json") for e in errors],
        "failed": bool(failed or errors),
        "summary": f"{t.label}: {sum(o.status.value == 'archived' for o in outcomes)} archived, "
        f"{len(failed)} failed, {len(errors)} log dir error(s)",
    }


def build_report(
    *,
    targets: Iterable[dict[str, Any]],
    discoveries: Iterable[dict[str, Any]],
    plans: Iterable[dict[str, Any]],
    results: Iterable[dict[str, Any]],
    config: ArchiveConfig,
    dry_run: bool,
    started_at: Any = None,
) -> ArchiveReport:
    """The run's report from everything the tasks pushed. A target without an archive result
    (its task crashed before pushing) is a log dir failure."""
    ds = [LogDirDiscovery.model_validate(d) for d in discoveries if d]
    ps = [ArchivePlan.model_validate(p) for p in plans if p]
    rs = [r for r in results if r]
    outcomes = [SegmentOutcome.model_validate(o) for r in rs for o in r.get("outcomes", [])]
    seen = {(r["target"]["cluster"], r["target"]["broker_id"], r["target"]["log_dir"]) for r in rs}
    discovered = {(d.cluster, d.broker_id, d.log_dir) for d in ds}
    extra: list[LogDirFailure] = []
    for t in (ArchiveTarget.model_validate(x) for x in targets):
        k = (t.cluster, t.broker_id, t.log_dir)
        if k not in seen:
            extra.append(
                LogDirFailure(
                    cluster=t.cluster,
                    broker_id=t.broker_id,
                    log_dir=t.log_dir,
                    error=ProblemInfo(
                        error="ArchiveTaskMissing",
                        message="the archive task of this log dir reported nothing (see its log)",
                        path=t.log_dir,
                    ),
                )
            )
        elif k not in discovered:
            extra.append(
                LogDirFailure(
                    cluster=t.cluster,
                    broker_id=t.broker_id,
                    log_dir=t.log_dir,
                    error=ProblemInfo(
                        error="DiscoveryMissing",
                        message="the discover task of this log dir produced no result "
                        "(see its log)",
                        path=t.log_dir,
                    ),
                )
            )
    return assemble_report(
        store_uri=ArchiveService(config=config).store_uri(),
        dry_run=dry_run,
        started_at=started_at or (min((d.discovered_at for d in ds), default=None) or utc_now()),
        discoveries=ds,
        plans=ps,
        outcomes=outcomes,
        extra_failures=extra,
    )


def asset_extra(outcomes: Iterable[SegmentOutcome], *, max_keys: int = 1000) -> dict[str, Any]:
    """The ``extra`` of the Asset event from the archive tasks' outcomes: what was newly
    archived (manifest keys capped at ``max_keys``; ``manifest_keys_truncated`` says when -
    readers list the manifests anyway, the keys are a hint)."""
    archived = [o for o in outcomes if o.status is SegmentStatus.ARCHIVED]
    keys = [o.manifest_key for o in archived if o.manifest_key]
    return {
        "clusters": sorted({o.cluster for o in archived}),
        "segments_archived": len(archived),
        "bytes_archived": sum(o.segment_bytes for o in archived),
        "manifest_keys": keys[:max_keys],
        "manifest_keys_truncated": len(keys) > max_keys,
    }
