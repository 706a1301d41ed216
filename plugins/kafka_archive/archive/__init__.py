"""Archiving: copy rolled Kafka segments from broker log dirs to object storage, exactly once.

Pipeline (each step a module; see docs/archive.md):

* :mod:`~kafka_archive.archive.discovery` - what each broker log dir holds that may be archived
  now (rolled, flushed, committed segments) and why everything else is skipped;
* :mod:`~kafka_archive.archive.planner` - which replica archives each offset range, what is
  already archived, what is a compaction rewrite;
* :mod:`~kafka_archive.archive.uploader` - verify (CRC scan), upload content-addressed objects,
  write the manifest last; quarantine corrupt segments;
* :mod:`~kafka_archive.archive.report` - counts, failures and the archive lag per broker.

Readers use :func:`iter_manifests` (the manifest is the contract: :mod:`.manifest`), object keys
come from :mod:`.layout`, the configuration is :class:`ArchiveConfig`, and the Airflow DAG
``kafka_archive_segments`` emits :data:`ARCHIVE_SEGMENTS_ASSET_URI` when segments were archived.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from kafka_archive.archive.config import (
        ArchiveConfig,
        ArchiveTarget,
        ConfigError,
        load_config,
    )
    from kafka_archive.archive.discovery import (
        LogDirDiscovery,
        SegmentCandidate,
        SkippedItem,
        SkipReason,
        discover_log_dir,
    )
    from kafka_archive.archive.manifest import (
        MANIFEST_FORMAT_VERSION,
        InvalidManifest,
        SegmentManifest,
        UnsupportedManifestVersion,
        iter_manifest_keys,
        iter_manifests,
        parse_manifest,
        read_manifest,
    )
    from kafka_archive.archive.planner import ArchivePlan, LogDirPlan, SegmentTask, plan_cluster
    from kafka_archive.archive.report import (
        ArchiveReport,
        BrokerLag,
        SegmentOutcome,
        SegmentStatus,
    )
    from kafka_archive.archive.runner import Progress, run_archive

# The names above are re-exported lazily (PEP 562): importing one light submodule (the catalog
# needs only :mod:`.layout`; a query command needs nothing of the pipeline) must not load the
# whole pipeline, its pydantic configuration models and the store SDKs.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("ArchiveConfig", "ArchiveTarget", "ConfigError", "load_config"), "config"),
    **dict.fromkeys(
        ("LogDirDiscovery", "SegmentCandidate", "SkippedItem", "SkipReason", "discover_log_dir"),
        "discovery",
    ),
    **dict.fromkeys(
        (
            "MANIFEST_FORMAT_VERSION",
            "InvalidManifest",
            "SegmentManifest",
            "UnsupportedManifestVersion",
            "iter_manifest_keys",
            "iter_manifests",
            "parse_manifest",
            "read_manifest",
        ),
        "manifest",
    ),
    **dict.fromkeys(("ArchivePlan", "LogDirPlan", "SegmentTask", "plan_cluster"), "planner"),
    **dict.fromkeys(("ArchiveReport", "BrokerLag", "SegmentOutcome", "SegmentStatus"), "report"),
    **dict.fromkeys(("Progress", "run_archive"), "runner"),
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


#: The Airflow Asset the archive DAG updates whenever it archived new segments. The event's
#: ``extra`` holds ``clusters``, ``segments_archived`` and ``manifest_keys`` (new manifests).
#: The catalog DAG schedules on ``Asset(ARCHIVE_SEGMENTS_ASSET_URI)``.
ARCHIVE_SEGMENTS_ASSET_URI: Final = "kafka-archive://archive/segments"

__all__ = [
    "ARCHIVE_SEGMENTS_ASSET_URI",
    "MANIFEST_FORMAT_VERSION",
    "ArchiveConfig",
    "ArchivePlan",
    "ArchiveReport",
    "ArchiveTarget",
    "BrokerLag",
    "ConfigError",
    "InvalidManifest",
    "LogDirDiscovery",
    "LogDirPlan",
    "Progress",
    "SegmentCandidate",
    "SegmentManifest",
    "SegmentOutcome",
    "SegmentStatus",
    "SegmentTask",
    "SkipReason",
    "SkippedItem",
    "UnsupportedManifestVersion",
    "discover_log_dir",
    "iter_manifest_keys",
    "iter_manifests",
    "load_config",
    "parse_manifest",
    "plan_cluster",
    "read_manifest",
    "run_archive",
]
