"""The scrape-time collector: the catalog's health facts (and a cluster's ends) as metric
families, computed afresh on every scrape.

:class:`CatalogCollector` is registered on a ``prometheus_client`` registry by every process
that exposes the platform's metrics (``kafka-archive metrics serve``, the on-call API server,
the follower). :func:`families` is the pure part (a :class:`~.snapshot.Snapshot` plus cluster
answers -> families) that the tests check value by value.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kafka_archive.metrics.cluster import CONSUMER_OFFSETS, ClusterEnds, ClusterTarget, cluster_ends
from kafka_archive.metrics.definitions import metric
from kafka_archive.metrics.snapshot import Snapshot, read_snapshot

if TYPE_CHECKING:
    from kafka_archive.catalog.db import Catalog

__all__ = ["CatalogCollector", "archive_lag", "families", "replay_eta_s"]

log = logging.getLogger(__name__)


class _Families:
    """Families by metric name, made on first use from :mod:`.definitions`."""

    def __init__(self) -> None:
        self.made: dict[str, GaugeMetricFamily | CounterMetricFamily] = {}

    def add(self, name: str, labels: Sequence[str], value: float) -> None:
        fam = self.made.get(name)
        if fam is None:
            d = metric(name)
            cls = CounterMetricFamily if d.kind == "counter" else GaugeMetricFamily
            fam = cls(d.family, d.help, labels=list(d.labels))
            self.made[name] = fam
        fam.add_metric([str(v) for v in labels], value)


def archive_lag(
    end_offset: int, high_watermark: int, max_timestamp_ms: int, now_ms: int
) -> tuple[int, float]:
    """``(offsets, seconds)`` the archive is behind a partition whose high watermark is
    ``high_watermark``: offsets the cluster holds past the archived end, and (while there are
    any) the age of the newest archived record, which is how much recent history would be
    lost if the cluster lost the partition now. Caught up: ``(0, 0.0)``."""
    offsets = max(0, high_watermark - max(end_offset, 0))
    if offsets == 0:
        return 0, 0.0
    if max_timestamp_ms <= 0:  # nothing archived: as old as the archive can say
        return offsets, 0.0
    return offsets, max(0.0, (now_ms - max_timestamp_ms) / 1000.0)


def replay_eta_s(
    records_sent: int, offsets_remaining: int, created_ms: int, now_ms: int
) -> float | None:
    """Seconds left at the replay's average rate so far; None before any record was sent."""
    elapsed = (now_ms - created_ms) / 1000.0
    if records_sent <= 0 or elapsed <= 0:
        return None
    return offsets_remaining / (records_sent / elapsed)


def families(snap: Snapshot, answers: Iterable[ClusterEnds] = ()) -> list[Metric]:
    """The metric families of ``snap`` joined with the clusters' ``answers``."""
    f = _Families()
    now = snap.now_ms
    by_cluster = {a.cluster: a for a in answers}
    for a in by_cluster.values():
        f.add("kafka_archive_cluster_up", [a.cluster], 0 if a.error and not a.ends else 1)
    for p in snap.partitions:
        key = [p.cluster, p.topic, str(p.partition)]
        f.add("kafka_archive_partition_archived_end_offset", key, max(p.end_offset, 0))
        f.add(
            "kafka_archive_partition_last_archived_timestamp_seconds", key, p.last_archived_ms / 1e3
        )
        hw = (
            by_cluster[p.cluster].ends.get((p.topic, p.partition))
            if p.cluster in by_cluster
            else None
        )
        if hw is None:
            continue
        offsets, seconds = archive_lag(p.end_offset, hw, p.max_timestamp_ms, now)
        f.add("kafka_archive_partition_high_watermark", key, hw)
        f.add("kafka_archive_partition_lag_offsets", key, offsets)
        f.add("kafka_archive_partition_lag_seconds", key, seconds)
    for b in snap.brokers:
        f.add(
            "kafka_archive_archive_last_success_timestamp_seconds",
            [b.cluster, b.broker],
            b.last_archived_ms / 1e3,
        )
    for t in snap.topics:
        f.add("kafka_archive_store_segments", [t.cluster, t.topic], t.segments)
        f.add("kafka_archive_store_bytes", [t.cluster, t.topic], t.bytes)
    builds = snap.builds
    if builds.last_success_ms:
        f.add(
            "kafka_archive_catalog_build_last_success_timestamp_seconds",
            [],
            builds.last_success_ms / 1e3,
        )
    if builds.last_failure_ms:
        f.add(
            "kafka_archive_catalog_build_last_failure_timestamp_seconds",
            [],
            builds.last_failure_ms / 1e3,
        )
    for status in sorted({"running", "ok", "failed", "stale", *builds.by_status}):
        f.add("kafka_archive_catalog_builds", [status], builds.by_status.get(status, 0))
    for kind in sorted({"corrupt", "misfiled", "unreadable-manifest", "missing", *snap.integrity}):
        f.add("kafka_archive_integrity_problems", [kind], snap.integrity.get(kind, 0))
    for (cluster, topic, kind), n in sorted(snap.coverage.items()):
        f.add("kafka_archive_coverage_problems", [cluster, topic, kind], n)
    _follower(f, snap, by_cluster)
    for pr in snap.prunes:
        if pr.last_done_ms:
            f.add(
                "kafka_archive_prune_last_success_timestamp_seconds",
                [pr.cluster],
                pr.last_done_ms / 1e3,
            )
        f.add("kafka_archive_prune_unfinished_ranges", [pr.cluster], pr.unfinished)
        if pr.oldest_unfinished_ms:
            f.add(
                "kafka_archive_prune_oldest_unfinished_timestamp_seconds",
                [pr.cluster],
                pr.oldest_unfinished_ms / 1e3,
            )
        f.add("kafka_archive_pruned_bytes", [pr.cluster], pr.bytes_pruned)
    _replays(f, snap)
    return list(f.made.values())


def _follower(f: _Families, snap: Snapshot, by_cluster: dict[str, ClusterEnds]) -> None:
    clusters = sorted({fp.cluster for fp in snap.follower})
    for cluster in clusters:
        rows = [fp for fp in snap.follower if fp.cluster == cluster]
        f.add(
            "kafka_archive_follower_position_offsets", [cluster], sum(r.next_offset for r in rows)
        )
        f.add(
            "kafka_archive_follower_last_progress_timestamp_seconds",
            [cluster],
            max(r.updated_at_ms for r in rows) / 1e3,
        )
        answer = by_cluster.get(cluster)
        if answer is None or not answer.ends:
            continue
        stored = {r.partition: r.next_offset for r in rows}
        lag = sum(
            max(0, end - stored.get(p, 0))
            for (topic, p), end in answer.ends.items()
            if topic == CONSUMER_OFFSETS
        )
        f.add("kafka_archive_follower_lag_offsets", [cluster], lag)


def _replays(f: _Families, snap: Snapshot) -> None:
    for status in sorted(
        {"planned", "running", "complete", "complete-with-gaps", "failed", *snap.replays_by_status}
    ):
        f.add("kafka_archive_replays", [status], snap.replays_by_status.get(status, 0))
    for r in snap.active_replays:
        key = [r.replay_id, r.cluster, r.topic]
        f.add("kafka_archive_replay_records_sent_total", key, r.records_sent)
        f.add("kafka_archive_replay_offsets_remaining", key, r.offsets_remaining)
        f.add("kafka_archive_replay_partitions", [*key, "done"], r.partitions_done)
        f.add("kafka_archive_replay_partitions", [*key, "todo"], r.partitions - r.partitions_done)
        f.add("kafka_archive_replay_last_progress_timestamp_seconds", key, r.last_progress_ms / 1e3)
        eta = replay_eta_s(r.records_sent, r.offsets_remaining, r.created_ms, snap.now_ms)
        if eta is not None:
            f.add("kafka_archive_replay_eta_seconds", key, eta)


class CatalogCollector(Collector):
    """Collects :func:`families` on every scrape from the catalog ``open_catalog()`` returns
    (and closes, unless ``keep_open``) and the ``targets``' ends. A catalog that cannot be
    read is ``kafka_archive_catalog_up 0`` and a warning in the log, never a failed scrape:
    the alert on it is more use than a 500."""

    def __init__(
        self,
        open_catalog: Callable[[], Catalog],
        targets: Sequence[ClusterTarget] = (),
        *,
        keep_open: bool = False,
    ) -> None:
        self._open = open_catalog
        self._targets = list(targets)
        self._keep_open = keep_open

    def collect(self) -> Iterator[Metric]:
        started = time.monotonic()
        up = GaugeMetricFamily("kafka_archive_catalog_up", metric("kafka_archive_catalog_up").help)
        try:
            catalog = self._open()
            try:
                snap = read_snapshot(catalog)
            finally:
                if not self._keep_open:
                    catalog.close()
        except Exception as exc:  # unreachable or damaged catalog: a fact, not a crash
            from kafka_archive.redact import redact_text

            log.warning("metrics: the catalog could not be read: %s", redact_text(str(exc)))
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        answers = [
            cluster_ends(
                t, [(p.topic, p.partition) for p in snap.partitions if p.cluster == t.name]
            )
            for t in self._targets
        ]
        yield from families(snap, answers)
        dur = GaugeMetricFamily(
            "kafka_archive_scrape_duration_seconds",
            metric("kafka_archive_scrape_duration_seconds").help,
        )
        dur.add_metric([], time.monotonic() - started)
        yield dur

    def describe(self) -> Iterable[Metric]:
        # the families depend on the catalog: nothing described (no collect at registration)
        return []
