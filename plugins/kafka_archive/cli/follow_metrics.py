"""The offsets follower's metrics endpoint (``catalog follow-offsets --metrics-port``): the
follower's own counters (:class:`kafka_archive.metrics.process.ProcessMetrics`) and the
catalog's health facts with this cluster's ends, on one registry served over HTTP while the
follower runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_archive.cli.output import fail

if TYPE_CHECKING:
    from kafka_archive.catalog.db import Catalog
    from kafka_archive.metrics.process import ProcessMetrics
    from kafka_archive.offsets_follower.follower import BatchResult

__all__ = ["FollowerMetrics"]


@dataclass
class FollowerMetrics:
    """A running endpoint: feed it each committed batch; :meth:`stop` it at the end."""

    cluster: str
    process: ProcessMetrics
    server: Any

    @classmethod
    def start(
        cls,
        catalog: Catalog,
        cluster: str,
        bootstrap: str,
        config: Mapping[str, str],
        port: int | None,
        as_json: bool,
    ) -> FollowerMetrics | None:
        """Serve on ``port`` (None: no endpoint, returns None); a port in use exits 1."""
        if port is None:
            return None
        from kafka_archive.metrics.cluster import ClusterTarget
        from kafka_archive.metrics.exposition import (
            MetricsServerError,
            catalog_registry,
            serve_http,
        )
        from kafka_archive.metrics.process import ProcessMetrics

        target = ClusterTarget(cluster, bootstrap, dict(config))
        registry = catalog_registry(lambda: catalog, [target], keep_open=True)
        process = ProcessMetrics(registry)
        try:
            server = serve_http(registry, port)
        except MetricsServerError as exc:
            fail(str(exc), hint=exc.hint, as_json=as_json)
        return cls(cluster, process, server)

    def on_batch(self, result: BatchResult) -> None:
        """Count one committed follower transaction."""
        c = result.counts
        records = c.commits + c.tombstones + c.group_records + c.other_records + c.undecodable
        self.process.follower_batch(self.cluster, records, c.commits)

    def failed(self, exc: BaseException) -> None:
        self.process.error("follower", exc)

    def stop(self) -> None:
        self.server.shutdown()
