"""One archive run end to end: discover -> plan -> upload -> report.

KRaft's metadata log is archived in the same run: its rolled segments as any partition's, its
snapshots and quorum-state by :mod:`kafka_archive.archive.metadata_snapshots` (a snapshot that
fails verification is a log-dir failure of the report).

The CLI calls :func:`run_archive` for one broker; the Airflow DAG runs the same three steps as
separate tasks (:mod:`kafka_archive.airflow.archive_tasks`) and assembles the same report with
:func:`assemble_report`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from kafka_archive.archive.digests import DigestCache
from kafka_archive.archive.discovery import LogDirDiscovery, ProblemInfo, discover_log_dir
from kafka_archive.archive.manifest_cache import ManifestCache
from kafka_archive.archive.metadata_snapshots import archive_metadata_files
from kafka_archive.archive.planner import ArchivePlan, plan_cluster
from kafka_archive.archive.report import (
    ArchiveReport,
    LogDirFailure,
    SegmentOutcome,
)
from kafka_archive.archive.uploader import StopSignal, archive_log_dir
from kafka_archive.store import ObjectStore, StoreError

__all__ = ["Progress", "assemble_report", "run_archive"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Progress:
    """Optional callbacks for a progress display (all may be ``None``)."""

    on_discover: Callable[[str], None] | None = None
    on_planned: Callable[[int, int], None] | None = None  # (segments, bytes) to upload
    on_outcome: Callable[[SegmentOutcome], None] | None = None


def assemble_report(
    *,
    store_uri: str,
    dry_run: bool,
    started_at: datetime,
    discoveries: Sequence[LogDirDiscovery],
    plans: Sequence[ArchivePlan],
    outcomes: Sequence[SegmentOutcome],
    extra_failures: Sequence[LogDirFailure] = (),
) -> ArchiveReport:
    """The report of a run from its discoveries, plans and segment outcomes."""
    failures = [
        LogDirFailure(cluster=d.cluster, broker_id=d.broker_id, log_dir=d.log_dir, error=e)
        for d in discoveries
        for e in d.errors
    ]
    failures.extend(extra_failures)
    warnings = [f"{d.log_dir}: {w}" for d in discoveries for w in d.warnings]
    warnings += [w for p in plans for w in p.warnings]
    return ArchiveReport.build(
        clusters=sorted({d.cluster for d in discoveries} | {p.cluster for p in plans}),
        store_uri=store_uri,
        dry_run=dry_run,
        started_at=started_at,
        log_dirs=len(discoveries),
        outcomes=outcomes,
        skipped=[s for d in discoveries for s in d.skipped] + [s for p in plans for s in p.skipped],
        log_dir_failures=failures,
        brokers={(d.cluster, d.broker_id) for d in discoveries},
        warnings=warnings,
    )


def run_archive(
    *,
    cluster: str,
    broker_id: int,
    log_dirs: Sequence[str],
    store: ObjectStore,
    dry_run: bool = False,
    concurrency: int = 4,
    state_dir: str | None = None,
    progress: Progress | None = None,
    topics: Sequence[str] = (),
) -> ArchiveReport:
    """Archive the rolled segments of one broker's log dirs into ``store``.

    ``topics``: glob patterns of the topics to archive (empty: every topic); the partitions of
    other topics are neither read nor listed (:mod:`~kafka_archive.archive.topic_selection`).

    Manifests already in the store are consulted, so ranges archived from another broker are
    skipped (``other_replica``) and segments archived before are not touched.

    Raises:
        ValueError: ``cluster`` cannot name a cluster (checked before anything is written).
    """
    from kafka_archive.archive.layout import check_cluster
    from kafka_archive.archive.manifest import utc_now

    check_cluster(cluster)  # before any cache is opened: bad input leaves nothing behind
    started = utc_now()
    progress = progress or Progress()
    with DigestCache(state_dir) as digests:
        discoveries = [
            discover_log_dir(
                cluster,
                broker_id,
                d,
                digests=digests,
                on_segment=progress.on_discover,
                topics=topics,
            )
            for d in log_dirs
        ]
    cache = ManifestCache(state_dir)
    try:
        plan = plan_cluster(cluster, discoveries, store, cache=cache)
    finally:
        cache.close()
    if progress.on_planned is not None:
        tasks = [t for p in plan.log_dirs for t in p.tasks]
        progress.on_planned(len(tasks), sum(t.candidate.log.size for t in tasks))
    outcomes: list[SegmentOutcome] = []
    stop = StopSignal()  # a dead store stops the whole run, not each log dir in turn
    for lp in plan.log_dirs:
        outcomes.extend(
            archive_log_dir(
                store,
                lp,
                dry_run=dry_run,
                concurrency=concurrency,
                on_outcome=progress.on_outcome,
                stop=stop,
            )
        )
    # the metadata log's snapshots and quorum-state (its segments went with the others)
    extra: list[LogDirFailure] = []
    for d in log_dirs:
        if stop.is_set():
            break  # the store failed: the segments' failures already say so
        try:
            meta = archive_metadata_files(store, cluster, broker_id, d, dry_run=dry_run)
        except StoreError as exc:
            extra.append(
                LogDirFailure(
                    cluster=cluster,
                    broker_id=broker_id,
                    log_dir=d,
                    error=ProblemInfo.from_exception(exc),
                )
            )
            continue
        extra += [
            LogDirFailure(cluster=cluster, broker_id=broker_id, log_dir=d, error=p)
            for p in meta.problems
        ]
        if meta.snapshots_seen:
            log.info(
                "kafka-archive: %s metadata snapshots: %d archived, %d already archived, of %d",
                d,
                meta.snapshots_archived,
                meta.snapshots_already,
                meta.snapshots_seen,
            )
    report = assemble_report(
        store_uri=store.uri,
        dry_run=dry_run,
        started_at=started,
        discoveries=discoveries,
        plans=[plan],
        outcomes=outcomes,
        extra_failures=extra,
    )
    report.log_summary(log)
    return report
