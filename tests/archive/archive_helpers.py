"""Run the archive the way the DAG does (all brokers discovered, one plan), without Airflow."""

from __future__ import annotations

from collections.abc import Sequence

from cluster_data import CLUSTER, Cluster
from kafka_archive.archive import ArchiveReport
from kafka_archive.archive.digests import DigestCache
from kafka_archive.archive.discovery import discover_log_dir
from kafka_archive.archive.manifest import utc_now
from kafka_archive.archive.planner import plan_cluster
from kafka_archive.archive.runner import assemble_report
from kafka_archive.archive.uploader import StopSignal, archive_log_dir
from kafka_archive.store import ObjectStore


def archive_cluster(
    cluster: Cluster,
    store: ObjectStore,
    *,
    brokers: Sequence[int] | None = None,
    dry_run: bool = False,
    state_dir: str | None = None,
    concurrency: int = 2,
) -> ArchiveReport:
    started = utc_now()
    targets = [(b, d) for b, d in cluster.all_targets() if brokers is None or b in brokers]
    with DigestCache(state_dir) as digests:
        discoveries = [discover_log_dir(CLUSTER, b, d, digests=digests) for b, d in targets]
    plan = plan_cluster(CLUSTER, discoveries, store)
    outcomes = []
    stop = StopSignal()
    for lp in plan.log_dirs:
        outcomes.extend(
            archive_log_dir(store, lp, dry_run=dry_run, concurrency=concurrency, stop=stop)
        )
    return assemble_report(
        store_uri=store.uri,
        dry_run=dry_run,
        started_at=started,
        discoveries=discoveries,
        plans=[plan],
        outcomes=outcomes,
    )
