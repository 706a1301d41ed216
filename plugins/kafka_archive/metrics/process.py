"""In-process metrics of long-running processes (the offsets follower): counters only the
process itself knows, beside what :class:`~.collector.CatalogCollector` reads from the catalog.

Each process makes one :class:`ProcessMetrics` on its own registry (never the global default
registry: tests and the API server may host several)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from kafka_archive.metrics.definitions import metric

__all__ = ["ProcessMetrics", "error_kind"]

#: the fixed vocabulary of ``kafka_archive_errors_total``'s ``kind`` label
ERROR_KINDS = ("catalog", "store", "kafka", "config", "other")


def error_kind(exc: BaseException) -> str:
    """The ``kind`` label of a failure: where it came from, by the exception's module (a fixed
    vocabulary, so the label stays bounded whatever the message)."""
    module = type(exc).__module__ or ""
    if module.startswith(("sqlalchemy", "psycopg", "sqlite3", "kafka_archive.catalog")):
        return "catalog"
    if module.startswith(("botocore", "boto3", "kafka_archive.store")):
        return "store"
    if module.startswith(("confluent_kafka", "cimpl")):
        return "kafka"
    if module.startswith("kafka_archive.settings") or isinstance(exc, ValueError):
        return "config"
    return "other"


def _counter(name: str, registry: CollectorRegistry) -> Counter:
    d = metric(name)
    return Counter(d.family, d.help, list(d.labels), registry=registry)


class ProcessMetrics:
    """The counters of one long-running process, on ``registry``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.follower_records = _counter("kafka_archive_follower_records_read_total", registry)
        self.follower_commits = _counter("kafka_archive_follower_commits_recorded_total", registry)
        self.follower_transactions = _counter("kafka_archive_follower_transactions_total", registry)
        self.errors = _counter("kafka_archive_errors_total", registry)

    def follower_batch(self, cluster: str, records: int, commits: int) -> None:
        """One committed follower transaction of ``records`` records and ``commits`` commits."""
        self.follower_records.labels(cluster).inc(records)
        self.follower_commits.labels(cluster).inc(commits)
        self.follower_transactions.labels(cluster).inc()

    def error(self, component: str, exc: BaseException) -> None:
        """Count one failure of ``component`` (``follower``, ``api``, ``exporter``)."""
        self.errors.labels(component, error_kind(exc)).inc()
