"""One archived segment version as its manifest describes it: :class:`SegmentRef`.

The unit the catalog build works on: listed from the archive's manifests
(:mod:`kafka_archive.catalog._manifests`), handed to executors in extraction tasks
(:mod:`kafka_archive.catalog.tasks`), checked against what the bytes hold
(:mod:`kafka_archive.catalog.identity`) and rebuilt from catalog rows for re-extraction
(:mod:`kafka_archive.catalog.plan`). It imports nothing of the platform, so every one of those
modules imports it at top level.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SegmentRef"]


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """One archived segment version, as its manifest describes it."""

    cluster: str
    topic: str
    partition: int
    manifest_key: str
    object_key: str
    size: int
    sha256: str | None
    base_offset: int
    archived_at_ms: int
    broker_id: int | None = None
    log_dir: str | None = None
    #: exclusive end of the segment's offset range (next segment's base offset), -1 unknown
    end_offset: int = -1
    #: CRC-32C of the whole ``.log`` (8 hex digits) from the manifest; ``None`` when unknown
    #: (refs rebuilt from catalog rows, which keep only the SHA-256)
    crc32c: str | None = None
    #: what the manifest recorded of the bytes, for the identity checks of
    #: :mod:`kafka_archive.catalog.identity` (``None``: unknown, not checked)
    first_offset: int | None = None
    last_offset: int | None = None
    batch_count: int | None = None
    record_count: int | None = None
    leader_epochs: tuple[int, ...] | None = None
    #: the topic id of the partition directory the segment came from (its
    #: ``partition.metadata``; Kafka's base64 form), ``None`` when the broker wrote none
    topic_id: str | None = None

    @property
    def partition_key(self) -> tuple[str, str, int]:
        return (self.cluster, self.topic, self.partition)
