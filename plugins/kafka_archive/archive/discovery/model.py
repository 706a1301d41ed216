"""What discovery reports: candidates, what was skipped and why, and the problems it met.

Contract: pydantic models, frozen and strict (``extra="forbid"``), serialised into the DAG's
XComs and the archive report: :class:`LogDirDiscovery` (one log dir) holds the
:class:`SegmentCandidate` s (rolled, flushed, committed segments ready to be planned), the
:class:`SkippedItem` s with their :class:`SkipReason`, and :class:`ProblemInfo` s. Planning
and uploading reuse :class:`SkippedItem` and :class:`SkipReason` for what they pass over.
:data:`PENDING_REASONS` are the skip reasons of segments still to be archived later (lag).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Final

from pydantic import Field

from kafka_archive.archive.manifest import EpochRange
from kafka_archive.frozen import FrozenModel
from segment_lib.errors import SegmentError

__all__ = [
    "PENDING_REASONS",
    "LocalFile",
    "LogDirDiscovery",
    "ProblemInfo",
    "SegmentCandidate",
    "SkipReason",
    "SkippedItem",
]


class SkipReason(StrEnum):
    """Why something was not archived in a run (the report counts them per reason)."""

    #: the partition's active segment (still appended to)
    ACTIVE = "active"
    #: a file in a transient state: ``.deleted``, ``.cleaned`` or ``.swap``
    TRANSIENT_FILE = "transient_file"
    #: a partition directory being deleted, moved (``-future``) or not assigned (``-stray``)
    TRANSIENT_DIR = "transient_dir"
    #: the log cleaner is swapping segments of this partition right now
    CLEANING_IN_PROGRESS = "cleaning_in_progress"
    #: part of the range is not yet flushed (at or above the recovery point)
    ABOVE_RECOVERY_POINT = "above_recovery_point"
    #: part of the range is not yet committed (at or above the high watermark)
    ABOVE_HIGH_WATERMARK = "above_high_watermark"
    #: the partition is missing from the recovery-point or high-watermark checkpoint
    NO_CHECKPOINT = "no_checkpoint"
    #: a rolled segment holding no bytes
    EMPTY_SEGMENT = "empty_segment"
    #: retired: KRaft's ``__cluster_metadata`` log was not archived (it is now; the value
    #: stays so that older reports still parse)
    METADATA_LOG = "metadata_log"
    #: a directory in the log dir that is not a partition directory
    NOT_A_PARTITION = "not_a_partition"
    #: a manifest for exactly these bytes already exists
    ALREADY_ARCHIVED = "already_archived"
    #: the offset range is (being) archived from another replica
    OTHER_REPLICA = "other_replica"
    #: known corrupt (quarantined earlier) and its range is archived from another replica
    QUARANTINED_REPLACED = "quarantined_replaced"
    #: the segment (or its partition directory) was deleted or renamed while being archived
    VANISHED = "vanished"
    #: the segment's bytes changed between discovery and upload (it is re-planned next run)
    CHANGED = "changed"
    #: named like a segment file, but not a name Kafka loads (``48.log``; see archive/strays.py)
    ODD_NAME = "odd_name"
    #: a ``.log`` above the real active segment that the broker did not roll (archive/strays.py)
    STRAY_SEGMENT = "stray_segment"
    #: a symbolic link in the log dir (to a directory, dangling, or a loop): not followed
    SYMLINK = "symlink"
    #: every offset of the segment was pruned from the archive by a retention policy
    #: (:mod:`kafka_archive.archive.pruned`): archiving it again would undo the prune
    PRUNED = "pruned"


#: Skip reasons of rolled segments that still have to be archived later (they count for lag).
PENDING_REASONS: Final = frozenset(
    {
        SkipReason.CLEANING_IN_PROGRESS,
        SkipReason.ABOVE_RECOVERY_POINT,
        SkipReason.ABOVE_HIGH_WATERMARK,
        SkipReason.NO_CHECKPOINT,
        SkipReason.CHANGED,
    }
)


class ProblemInfo(FrozenModel):
    """An error, as JSON: type, message, and for format errors the file and byte position."""

    error: str
    message: str
    path: str | None = None
    position: int | None = None
    expected: str | None = None

    @classmethod
    def from_exception(cls, exc: BaseException, *, path: str | None = None) -> ProblemInfo:
        if isinstance(exc, SegmentError):
            return cls(
                error=type(exc).__name__,
                message=exc.detail,
                path=exc.path if exc.path is not None else path,
                position=exc.position,
                expected=exc.expected,
            )
        if isinstance(exc, OSError):
            return cls(
                error=type(exc).__name__,
                message=exc.strerror or str(exc),
                path=exc.filename if isinstance(exc.filename, str) else path,
            )
        return cls(error=type(exc).__name__, message=str(exc), path=path)


class LocalFile(FrozenModel):
    """A file in a partition directory as seen at discovery."""

    name: str
    size: int
    mtime_ns: int


class SkippedItem(FrozenModel):
    """Something discovery (or planning, or the upload) passed over, and why."""

    reason: SkipReason
    path: str
    detail: str = ""
    cluster: str | None = None
    broker_id: int | None = None
    log_dir: str | None = None
    topic: str | None = None
    partition: int | None = None
    base_offset: int | None = None
    end_offset: int | None = None
    #: for rolled segments: ``.log`` size and modification time (epoch ms), used for the lag
    size: int | None = None
    mtime_ms: int | None = None
    manifest_key: str | None = None


class SegmentCandidate(FrozenModel):
    """A rolled, flushed, committed segment of one replica, ready to be planned."""

    cluster: str
    broker_id: int
    log_dir: str
    partition_dir: str
    topic: str
    partition: int
    topic_id: str | None
    base_offset: int
    #: exclusive end: the base offset of the next segment
    end_offset: int
    log: LocalFile
    log_sha256: str
    index: LocalFile | None = None
    timeindex: LocalFile | None = None
    txnindex: LocalFile | None = None
    #: ``<end_offset>.snapshot``: producer state as of the end of this segment
    snapshot: LocalFile | None = None
    leader_epochs: list[EpochRange] = Field(default_factory=list)
    kafka_cluster_id: str | None = None
    directory_id: str | None = None
    warnings: list[str] = Field(default_factory=list)

    @property
    def path(self) -> Path:
        return Path(self.log_dir) / self.partition_dir

    @property
    def log_path(self) -> Path:
        return self.path / self.log.name

    @property
    def mtime_ms(self) -> int:
        return self.log.mtime_ns // 1_000_000

    @property
    def replica_order(self) -> tuple[int, str]:
        """The deterministic preference between replicas: lowest broker id, then log dir."""
        return (self.broker_id, self.log_dir)


class LogDirDiscovery(FrozenModel):
    """What one broker log dir holds that matters to the archive."""

    cluster: str
    broker_id: int
    log_dir: str
    hostname: str
    discovered_at: datetime
    kafka_cluster_id: str | None = None
    directory_id: str | None = None
    partitions: int = 0
    #: partition directories of topics the run was not asked for (never opened)
    unselected_partitions: int = 0
    rolled_segments: int = 0
    candidates: list[SegmentCandidate] = Field(default_factory=list)
    skipped: list[SkippedItem] = Field(default_factory=list)
    errors: list[ProblemInfo] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    digest_cache_hits: int = 0
    digest_cache_misses: int = 0
