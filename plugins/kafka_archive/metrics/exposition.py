"""Exposing a registry: an HTTP endpoint for long-running processes, and the textfile format
(for node_exporter's textfile collector) for anything that wants to leave a file behind.

Both are ``prometheus_client``'s own (``start_http_server``, ``write_to_textfile``: written to
a temporary file and renamed, so a collector never reads half a file); this module only gives
them the platform's defaults and typed errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, start_http_server, write_to_textfile

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.metrics.cluster import ClusterTarget
from kafka_archive.metrics.collector import CatalogCollector

if TYPE_CHECKING:
    from collections.abc import Callable

    from kafka_archive.catalog.db import Catalog

__all__ = ["MetricsServerError", "catalog_registry", "serve_http", "write_textfile"]


class MetricsServerError(KafkaArchiveError):
    """The metrics endpoint could not be started (port in use, bad address)."""


def catalog_registry(
    open_catalog: Callable[[], Catalog],
    targets: Sequence[ClusterTarget] = (),
    *,
    keep_open: bool = False,
) -> CollectorRegistry:
    """A fresh registry holding a :class:`CatalogCollector` (no process or platform
    collectors of ``prometheus_client``'s default registry)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CatalogCollector(open_catalog, targets, keep_open=keep_open))
    return registry


def serve_http(registry: CollectorRegistry, port: int, addr: str = "0.0.0.0") -> Any:
    """Serve ``registry`` at ``http://addr:port/metrics`` from a daemon thread; returns the
    server (``shutdown()`` stops it)."""
    try:
        server, _thread = start_http_server(port, addr=addr, registry=registry)
    except OSError as exc:
        raise MetricsServerError(
            f"cannot serve metrics on {addr}:{port}: {exc.strerror or exc}",
            hint="choose another --metrics-port (or stop what listens there)",
        ) from exc
    return server


def write_textfile(registry: CollectorRegistry, path: str | Path) -> None:
    """Write ``registry`` to ``path`` in the text format, atomically (temp file + rename)."""
    write_to_textfile(str(path), registry)
