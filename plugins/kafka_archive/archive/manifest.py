"""The segment manifest: the archive's per-segment contract with every reader.

One JSON manifest is written per archived segment, at
``<cluster>/<topic>/<partition>/manifests/<baseOffset:020d>-<sha16>.json`` (see
:mod:`kafka_archive.archive.layout`). Readers (the catalog, replay) discover the archive by
listing manifests (:func:`iter_manifests`); data objects without a manifest do not exist for
them.

Contract (``format_version`` 1):

* **Written last.** A manifest is written only after every file it lists is in the store and
  has been verified there (size and SHA-256 as reported by the store after the upload). So a
  manifest's existence proves that the segment is completely archived; a run that dies midway
  leaves no manifest and the next run completes the segment.
* **Immutable.** A manifest is never changed or overwritten. A segment rewritten by log
  compaction (same base offset, new bytes) gets a *new* manifest beside the old one (its key
  differs by the SHA-256 of the new ``.log``); ``supersedes`` names the earlier versions from
  the same broker that it replaces. Readers order versions by ``archived_at``.
* **Offsets.** ``base_offset`` is the segment's base offset (its file name) and ``end_offset``
  the exclusive upper bound of its offset range when it was archived (the base offset of the
  next segment on the broker): every offset it holds lies in ``[base_offset, end_offset)``.
  ``first_offset``/``last_offset`` are the first and last offsets actually held (-1 for a
  segment without batches); compaction leaves gaps inside the range.
* **Overlaps.** With replication the same offsets live on several brokers and each may roll its
  segments at different offsets. The archiver archives each offset range once, but a segment
  that is needed for some offsets may share others with segments archived from another replica;
  every such intersection is listed in ``overlaps`` (never hidden), with the other manifest's
  key and range, so readers can de-duplicate by offset.
* **Checksums.** ``files`` lists every stored object with its size, SHA-256 (hex) and CRC-32C
  (hex, Castagnoli, as S3's ``x-amz-checksum-crc32c`` and Kafka's batch CRC use); the ``.log``
  was also CRC-checked batch by batch before upload.
* **Timestamps.** ``first_timestamp``/``max_timestamp`` are the broker's batch timestamps in
  epoch milliseconds (-1 when absent, e.g. magic 0); ``archived_at`` is UTC.
* **Origin.** ``origin`` says how the segment was made: ``disk`` (a broker's file copied from
  its log dir; manifests written before the field existed are read so) or ``fetch`` (batches
  fetched over the Kafka protocol, byte for byte, laid out in segment files as a broker writes
  them by :mod:`kafka_archive.archive.fetch`; ``source`` then names the leader it was fetched
  from, ``log_dir`` is ``fetch`` and ``fetch`` holds what the fetch archiver resumes from).
* **Versioning.** ``format_version`` is an integer. Fields may be *added* within a version
  (readers ignore unknown fields); renaming, removing or changing the meaning of a field bumps
  it. :func:`parse_manifest` rejects versions newer than :data:`MANIFEST_FORMAT_VERSION` with
  :class:`UnsupportedManifestVersion` instead of misreading them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kafka_archive.archive.layout import (
    cluster_prefix,
    manifest_prefix,
    parse_manifest_key,
    topic_prefix,
)
from kafka_archive.errors import KafkaArchiveError
from kafka_archive.store import ObjectStore

__all__ = [
    "MANIFEST_FORMAT_VERSION",
    "MANIFEST_KIND",
    "EpochRange",
    "FetchedSegment",
    "InvalidManifest",
    "ManifestFile",
    "ManifestOverlap",
    "OpenTransaction",
    "SegmentManifest",
    "SegmentSource",
    "UnsupportedManifestVersion",
    "iter_manifest_keys",
    "iter_manifests",
    "parse_manifest",
    "read_manifest",
]

log = logging.getLogger(__name__)

#: The manifest format this code writes and the newest it reads.
MANIFEST_FORMAT_VERSION: Final = 1
MANIFEST_KIND: Final = "kafka-archive/segment-manifest"

FileRole = Literal["log", "index", "timeindex", "txnindex", "producer_snapshot"]


class InvalidManifest(KafkaArchiveError, ValueError):
    """A manifest's bytes are not a valid manifest (bad JSON or fields); names the key."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        self.key = key
        super().__init__(f"{key or '<manifest>'}: {message}")


class UnsupportedManifestVersion(InvalidManifest):
    """A manifest written in a newer ``format_version`` than this code understands."""


class _Model(BaseModel):
    # Readers ignore fields added by later writers of the same format version.
    model_config = ConfigDict(extra="ignore", frozen=True)


class ManifestFile(_Model):
    """One stored object of the segment."""

    role: FileRole
    #: the broker's file name, e.g. ``00000000000000000000.index``
    name: str
    key: str
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    #: CRC-32C (Castagnoli) of the whole file, 8 lowercase hex digits
    crc32c: str = Field(pattern=r"^[0-9a-f]{8}$")


class EpochRange(_Model):
    """A leader epoch and the first offset written in it (a ``leader-epoch-checkpoint`` entry)."""

    epoch: int
    start_offset: int


class ManifestOverlap(_Model):
    """Another archived segment (from another replica or an earlier version) whose offset range
    intersects this one's."""

    manifest_key: str
    broker_id: int | None
    base_offset: int
    end_offset: int
    #: ``replica``: a differently rolled copy of the same offsets from another broker;
    #: ``previous_version``: an earlier version from the same broker (before compaction)
    relation: Literal["replica", "previous_version"]
    #: the intersection, ``[overlap_start, overlap_end)``
    overlap_start: int
    overlap_end: int


class SegmentSource(_Model):
    """Where the bytes came from."""

    broker_id: int
    log_dir: str
    partition_dir: str
    #: ``cluster.id`` / ``directory.id`` from the log dir's ``meta.properties`` (if present)
    kafka_cluster_id: str | None = None
    directory_id: str | None = None
    hostname: str | None = None
    #: modification time of the ``.log`` when it was archived (epoch ms)
    log_mtime_ms: int


class OpenTransaction(_Model):
    """A producer's transaction still open at the end of a fetched segment."""

    producer_id: int
    first_offset: int


class FetchedSegment(_Model):
    """What the fetch archiver knew when it closed a segment (``origin`` ``fetch``)."""

    #: the partition's high watermark and log start offset in the last Fetch answer used
    high_watermark: int
    log_start_offset: int
    #: transactions open after the segment's last batch (the next segment's ``.txnindex``
    #: needs them: an abort marker there may close one)
    open_transactions: list[OpenTransaction] = Field(default_factory=list)
    #: ``[expected offset, next batch's base offset]`` of each offset gap inside the segment
    #: (compaction: legitimate)
    offset_gaps: list[tuple[int, int]] = Field(default_factory=list)
    #: when set, offsets ``[hole_from, base_offset)`` were deleted by the broker (retention,
    #: DeleteRecords) before they were archived: a named hole, never a silent skip
    hole_from: int | None = None


class SegmentManifest(_Model):
    """Everything known about one archived segment; see the module docstring for the contract."""

    format_version: int = MANIFEST_FORMAT_VERSION
    kind: Literal["kafka-archive/segment-manifest"] = MANIFEST_KIND
    #: always ``archived``: a manifest exists only for a completely archived segment
    #: (corrupt segments get a quarantine record instead, never a manifest)
    status: Literal["archived"] = "archived"
    cluster: str
    topic: str
    topic_id: str | None
    partition: int = Field(ge=0)
    base_offset: int = Field(ge=0)
    end_offset: int = Field(ge=0)
    first_offset: int
    last_offset: int
    batch_count: int = Field(ge=0)
    record_count: int = Field(ge=0)
    first_timestamp: int
    max_timestamp: int
    offset_of_max_timestamp: int
    magics: list[int]
    codecs: list[str]
    transactional_batches: int = Field(ge=0)
    control_batches: int = Field(ge=0)
    #: distinct ``partitionLeaderEpoch`` values found in the batches (magic 2), ascending
    batch_leader_epochs: list[int]
    #: entries of ``leader-epoch-checkpoint`` whose epoch covers part of the segment's range
    leader_epochs: list[EpochRange]
    #: SHA-256 of the ``.log``: the segment's identity
    segment_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    files: list[ManifestFile]
    overlaps: list[ManifestOverlap] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)
    source: SegmentSource
    archived_at: datetime
    archiver_version: str
    warnings: list[str] = Field(default_factory=list)
    #: ``disk`` or ``fetch`` (module docstring, "Origin")
    origin: Literal["disk", "fetch"] = "disk"
    fetch: FetchedSegment | None = None

    @field_validator("archived_at")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("archived_at must be timezone-aware")
        return value.astimezone(UTC)

    @property
    def log_file(self) -> ManifestFile:
        """The ``.log`` entry."""
        for f in self.files:
            if f.role == "log":
                return f
        raise InvalidManifest("manifest lists no .log file")

    def file(self, role: FileRole) -> ManifestFile | None:
        """The entry of ``role``, if the segment had that file."""
        return next((f for f in self.files if f.role == role), None)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def to_json_bytes(self) -> bytes:
        """The canonical stored form: UTF-8 JSON, keys in model order, 2-space indent."""
        return (self.model_dump_json(indent=2) + "\n").encode("utf-8")


def parse_manifest(data: bytes, *, key: str | None = None) -> SegmentManifest:
    """Parse and validate manifest bytes (``key`` only names the source in errors)."""
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidManifest(f"not JSON: {exc}", key=key) from None
    if not isinstance(raw, dict):
        raise InvalidManifest("not a JSON object", key=key)
    if raw.get("kind") != MANIFEST_KIND:
        raise InvalidManifest(f"kind is {raw.get('kind')!r}, expected {MANIFEST_KIND!r}", key=key)
    version = raw.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidManifest(f"bad format_version {version!r}", key=key)
    if version > MANIFEST_FORMAT_VERSION:
        raise UnsupportedManifestVersion(
            f"format_version {version} is newer than the supported {MANIFEST_FORMAT_VERSION}; "
            "upgrade kafka-archive to read it",
            key=key,
        )
    try:
        return SegmentManifest.model_validate(raw)
    except ValidationError as exc:
        raise InvalidManifest(str(exc), key=key) from None


def read_manifest(store: ObjectStore, key: str) -> SegmentManifest:
    """Fetch (SHA-256-verified by the store) and parse one manifest."""
    return parse_manifest(store.get_bytes(key), key=key)


def iter_manifest_keys(
    store: ObjectStore, cluster: str, topic: str | None = None, partition: int | None = None
) -> Iterator[str]:
    """Keys of the manifests of ``cluster`` (optionally one topic / partition), in key order
    (so per partition in base offset order). Quarantine records are never included."""
    if partition is not None:
        if topic is None:
            raise ValueError("a partition needs a topic")
        prefix = manifest_prefix(cluster, topic, partition)
    elif topic is not None:
        prefix = topic_prefix(cluster, topic)
    else:
        prefix = cluster_prefix(cluster)
    for obj in store.list(prefix):
        parsed = parse_manifest_key(obj.key)
        if parsed is not None and parsed.cluster == cluster:
            yield obj.key


def iter_manifests(
    store: ObjectStore,
    cluster: str,
    topic: str | None = None,
    partition: int | None = None,
    *,
    on_error: Literal["raise", "skip"] = "raise",
) -> Iterator[SegmentManifest]:
    """Every archived segment's manifest for ``cluster`` (optionally one topic / partition).

    This is the reader's entry point: a segment is archived iff its manifest is listed here.
    With ``on_error='skip'`` unreadable manifests are logged and skipped instead of raising
    (:class:`InvalidManifest` / :class:`UnsupportedManifestVersion`).
    """
    for key in iter_manifest_keys(store, cluster, topic, partition):
        try:
            yield read_manifest(store, key)
        except InvalidManifest:
            if on_error == "raise":
                raise
            log.warning("skipping unreadable manifest %s", key, exc_info=True)


def manifest_json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`SegmentManifest` (documentation and external validators)."""
    return SegmentManifest.model_json_schema()


def utc_now() -> datetime:
    return datetime.now(UTC)
