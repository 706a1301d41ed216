"""Every metric the platform exposes: name, type, help, labels. The one registry of names.

Conventions (Prometheus's naming guide): prefix ``kafka_archive_``; base units (seconds,
bytes); ``_total`` only on counters; timestamps as ``..._timestamp_seconds`` (Unix seconds, so
that ``time() - x`` is an age); a gauge of "how many" is plural without a unit.

Label cardinality is bounded by what the archive holds, never by traffic:

* ``cluster``, ``broker``: the archived clusters and their brokers (tens);
* ``topic``, ``partition``: the archived partitions (the partition-level series are the only
  large family: one series per archived partition and metric, 4 metrics);
* ``kind``, ``status``, ``job``, ``component``: fixed vocabularies (listed in docs/operations.md);
* ``replay_id``: only replays that are planned or running (finished ones leave the series), so
  at most the number of concurrent replays.

The dashboard and the alert rules are checked against :data:`METRICS` by the test suite
(tests/test_monitoring_chart.py): a query naming a metric that is not here fails.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["METRICS", "MetricDef", "metric", "names"]


@dataclass(frozen=True, slots=True)
class MetricDef:
    """One metric: ``kind`` is ``gauge`` or ``counter`` (a counter's exposed sample name ends
    in ``_total``; ``name`` is the full name including it)."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        """The name ``prometheus_client`` families take (a counter's without ``_total``)."""
        return self.name.removesuffix("_total") if self.kind == "counter" else self.name


_P = ("cluster", "topic", "partition")
_R = ("replay_id", "cluster", "topic")

METRICS: tuple[MetricDef, ...] = (
    # the catalog and the exporter itself
    MetricDef("kafka_archive_catalog_up", "gauge", "1 when the catalog answered this scrape."),
    MetricDef(
        "kafka_archive_scrape_duration_seconds", "gauge", "Time this scrape took to compute."
    ),
    MetricDef(
        "kafka_archive_cluster_up",
        "gauge",
        "1 when the cluster answered its end offsets this scrape (only clusters configured).",
        ("cluster",),
    ),
    # archive
    MetricDef(
        "kafka_archive_partition_archived_end_offset",
        "gauge",
        "One past the highest offset of the partition the archive can serve (as cataloged).",
        _P,
    ),
    MetricDef(
        "kafka_archive_partition_high_watermark",
        "gauge",
        "The partition's high watermark as the live cluster answered it.",
        _P,
    ),
    MetricDef(
        "kafka_archive_partition_lag_offsets",
        "gauge",
        "Offsets the cluster holds beyond the archive (high watermark - archived end).",
        _P,
    ),
    MetricDef(
        "kafka_archive_partition_lag_seconds",
        "gauge",
        "Age of the newest archived record while the cluster holds newer offsets; 0 when "
        "caught up.",
        _P,
    ),
    MetricDef(
        "kafka_archive_partition_last_archived_timestamp_seconds",
        "gauge",
        "When the partition's newest segment version was archived.",
        _P,
    ),
    MetricDef(
        "kafka_archive_archive_last_success_timestamp_seconds",
        "gauge",
        "When the broker's (broker=\"\": the protocol fetcher's) newest segment was archived.",
        ("cluster", "broker"),
    ),
    MetricDef(
        "kafka_archive_store_segments",
        "gauge",
        "Segment versions stored (not pruned) per topic.",
        ("cluster", "topic"),
    ),
    MetricDef(
        "kafka_archive_store_bytes",
        "gauge",
        "Bytes of the stored (not pruned) segment versions per topic.",
        ("cluster", "topic"),
    ),
    # catalog
    MetricDef(
        "kafka_archive_catalog_build_last_success_timestamp_seconds",
        "gauge",
        "When the newest successful catalog build finished (absent: never).",
    ),
    MetricDef(
        "kafka_archive_catalog_build_last_failure_timestamp_seconds",
        "gauge",
        "When the newest failed or killed catalog build stopped (absent: never).",
    ),
    MetricDef(
        "kafka_archive_catalog_builds",
        "gauge",
        "Catalog builds recorded, by status (running, ok, failed, stale).",
        ("status",),
    ),
    MetricDef(
        "kafka_archive_integrity_problems",
        "gauge",
        "Open integrity problems (objects the catalog refused), by kind.",
        ("kind",),
    ),
    MetricDef(
        "kafka_archive_coverage_problems",
        "gauge",
        "Coverage problems of the archive per topic, by kind (missing, overlap, divergent, "
        "corrupt).",
        ("cluster", "topic", "kind"),
    ),
    # offsets follower
    MetricDef(
        "kafka_archive_follower_position_offsets",
        "gauge",
        "Sum over __consumer_offsets partitions of the follower's stored positions.",
        ("cluster",),
    ),
    MetricDef(
        "kafka_archive_follower_lag_offsets",
        "gauge",
        "Offsets of __consumer_offsets the follower has not stored yet (cluster's ends - "
        "positions).",
        ("cluster",),
    ),
    MetricDef(
        "kafka_archive_follower_last_progress_timestamp_seconds",
        "gauge",
        "When the follower last stored a position.",
        ("cluster",),
    ),
    # prune
    MetricDef(
        "kafka_archive_prune_last_success_timestamp_seconds",
        "gauge",
        "When the newest prune of the cluster finished a range.",
        ("cluster",),
    ),
    MetricDef(
        "kafka_archive_prune_unfinished_ranges",
        "gauge",
        "Pruned ranges planned but not finished (a prune stopped between plan and deletes).",
        ("cluster",),
    ),
    MetricDef(
        "kafka_archive_prune_oldest_unfinished_timestamp_seconds",
        "gauge",
        "When the oldest unfinished prune range was planned (absent: none).",
        ("cluster",),
    ),
    MetricDef(
        "kafka_archive_pruned_bytes",
        "gauge",
        "Bytes removed by finished prunes of the cluster.",
        ("cluster",),
    ),
    # replay
    MetricDef(
        "kafka_archive_replays", "gauge", "Replays recorded in the catalog, by status.", ("status",)
    ),
    MetricDef(
        "kafka_archive_replay_records_sent_total",
        "counter",
        "Records a planned or running replay has committed to its target.",
        _R,
    ),
    MetricDef(
        "kafka_archive_replay_offsets_remaining",
        "gauge",
        "Source offsets a planned or running replay has still to read.",
        _R,
    ),
    MetricDef(
        "kafka_archive_replay_partitions",
        "gauge",
        "Source partitions of a planned or running replay, by state (done, todo).",
        (*_R, "state"),
    ),
    MetricDef(
        "kafka_archive_replay_last_progress_timestamp_seconds",
        "gauge",
        "When a planned or running replay last committed progress (or was created).",
        _R,
    ),
    MetricDef(
        "kafka_archive_replay_eta_seconds",
        "gauge",
        "Estimated time left of a running replay at its average rate so far (absent: no rate).",
        _R,
    ),
    # in-process (the long-running processes' own; kafka_archive.metrics.process)
    MetricDef(
        "kafka_archive_follower_records_read_total",
        "counter",
        "__consumer_offsets records this follower process read and stored.",
        ("cluster",),
    ),
    MetricDef(
        "kafka_archive_follower_commits_recorded_total",
        "counter",
        "Offset commits this follower process stored.",
        ("cluster",),
    ),
    MetricDef(
        "kafka_archive_follower_transactions_total",
        "counter",
        "Catalog transactions this follower process committed.",
        ("cluster",),
    ),
    MetricDef(
        "kafka_archive_errors_total",
        "counter",
        "Failures of a long-running process, by component and kind (catalog, store, kafka, "
        "config, other).",
        ("component", "kind"),
    ),
)

_BY_NAME = {m.name: m for m in METRICS}


def metric(name: str) -> MetricDef:
    """The definition of ``name`` (KeyError: not a metric of the platform)."""
    return _BY_NAME[name]


def names() -> frozenset[str]:
    """Every exposed sample name (counters with ``_total``)."""
    return frozenset(_BY_NAME)
