"""Discovery: which segments of one broker log dir may be archived now, and why others may not.

:func:`discover_log_dir` lists a broker log directory (``log.dirs`` entry) and returns a
:class:`LogDirDiscovery`: the archivable segments (:class:`SegmentCandidate`) and every thing it
passed over with the reason (:class:`SkippedItem`). Nothing is written anywhere.

A segment is a candidate only if all of these hold:

* its partition directory is live (``topic-N``; not ``-delete``/``-future``/``-stray``, not
  ``__cluster_metadata`` whose Raft log has no offset checkpoints, and no cleaner ``.swap`` file
  is present: a swap is the moment the cleaner replaces segments, when the listing is
  inconsistent);
* it is **rolled** (not the segment with the highest base offset, which the broker appends to)
  and not in a transient state (``.deleted``, ``.cleaned``, ``.swap`` files are never taken);
* its whole offset range is **flushed and committed**: every offset of a rolled segment is
  below the next segment's base offset (``end_offset``), and we require ``end_offset <=``
  the partition's recovery point (``recovery-point-offset-checkpoint``: flushed to disk) and
  ``end_offset <=`` its high watermark (``replication-offset-checkpoint``: replicated to the
  ISR). Both files are rewritten periodically by the broker, so they may lag; a lagging value
  is only more conservative. A partition missing from either file is not archived
  (``no_checkpoint``). Using ``end_offset`` rather than the last offset actually held is exact
  except for a segment whose tail was compacted away, which then waits for the checkpoints to
  pass the next base offset (they normally already have);
* its ``.log`` is not empty.

Each candidate carries the SHA-256 of its ``.log`` (its identity in the store), computed through
a :class:`~kafka_archive.archive.digests.DigestCache` so unchanged segments are not re-read on
every run, plus its companions (``.index``, ``.timeindex``, ``.txnindex``), the producer-state
snapshot taken when it was rolled (``<end_offset>.snapshot``, if still present), the
``leader-epoch-checkpoint`` entries covering its range and the topic id from
``partition.metadata``.

Problems that make a whole log dir unusable (missing directory, unreadable checkpoint, a
``meta.properties`` naming another broker) are returned in ``errors``; they never raise.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from kafka_archive.archive.digests import DigestCache
from kafka_archive.archive.manifest import EpochRange, utc_now
from kafka_archive.archive.strays import inspect_partition, log_dir_entry_problem
from segment_lib.checkpoints import (
    EpochEntry,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
)
from segment_lib.errors import InvalidFileNameError, SegmentError
from segment_lib.metadata_files import read_meta_properties, read_partition_metadata
from segment_lib.names import (
    SNAPSHOT_SUFFIX,
    SWAP_SUFFIX,
    parse_partition_dir_name,
    parse_segment_file_name,
    segment_file_name,
)
from segment_lib.partition import PartitionView, SegmentFiles

__all__ = [
    "HIGH_WATERMARK_CHECKPOINT",
    "METADATA_TOPIC",
    "RECOVERY_POINT_CHECKPOINT",
    "LocalFile",
    "LogDirDiscovery",
    "ProblemInfo",
    "SegmentCandidate",
    "SkipReason",
    "SkippedItem",
    "discover_log_dir",
    "epochs_for_range",
]

log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT: Final = "recovery-point-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT: Final = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"
PARTITION_METADATA: Final = "partition.metadata"
META_PROPERTIES: Final = "meta.properties"
#: KRaft's metadata log: a Raft log without offset checkpoints; its state is in its snapshots.
METADATA_TOPIC: Final = "__cluster_metadata"


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
    #: KRaft's ``__cluster_metadata`` log
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


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProblemInfo(_Model):
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


class LocalFile(_Model):
    """A file in a partition directory as seen at discovery."""

    name: str
    size: int
    mtime_ns: int


class SkippedItem(_Model):
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


class SegmentCandidate(_Model):
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


class LogDirDiscovery(_Model):
    """What one broker log dir holds that matters to the archive."""

    cluster: str
    broker_id: int
    log_dir: str
    hostname: str
    discovered_at: datetime
    kafka_cluster_id: str | None = None
    directory_id: str | None = None
    partitions: int = 0
    rolled_segments: int = 0
    candidates: list[SegmentCandidate] = Field(default_factory=list)
    skipped: list[SkippedItem] = Field(default_factory=list)
    errors: list[ProblemInfo] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    digest_cache_hits: int = 0
    digest_cache_misses: int = 0


def epochs_for_range(entries: list[EpochEntry], base: int, end: int) -> list[EpochRange]:
    """The leader-epoch entries whose epoch wrote offsets in ``[base, end)``.

    An entry ``(epoch, start)`` covers ``[start, next entry's start)`` (the last one: onwards),
    as in Kafka's ``LeaderEpochFileCache``.
    """
    out: list[EpochRange] = []
    for i, e in enumerate(entries):
        next_start = entries[i + 1].start_offset if i + 1 < len(entries) else None
        if e.start_offset < end and (next_start is None or next_start > base):
            out.append(EpochRange(epoch=e.epoch, start_offset=e.start_offset))
    return out


def _local(path: Path, st: os.stat_result | None = None) -> LocalFile:
    st = st if st is not None else path.stat()
    return LocalFile(name=path.name, size=st.st_size, mtime_ns=st.st_mtime_ns)


def _optional(path: Path | None) -> LocalFile | None:
    if path is None:
        return None
    try:
        return _local(path)
    except FileNotFoundError:
        return None


class _Discoverer:
    def __init__(
        self,
        cluster: str,
        broker_id: int,
        log_dir: Path,
        digests: DigestCache,
        on_segment: Callable[[str], None] | None,
    ) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.log_dir = log_dir
        self.digests = digests
        self.on_segment = on_segment
        self.candidates: list[SegmentCandidate] = []
        self.skipped: list[SkippedItem] = []
        self.errors: list[ProblemInfo] = []
        self.warnings: list[str] = []
        self.partitions = 0
        self.rolled = 0
        self.kafka_cluster_id: str | None = None
        self.directory_id: str | None = None

    def skip(self, reason: SkipReason, path: Path, detail: str = "", **kw: object) -> None:
        self.skipped.append(
            SkippedItem(
                reason=reason,
                path=str(path),
                detail=detail,
                cluster=self.cluster,
                broker_id=self.broker_id,
                log_dir=str(self.log_dir),
                **kw,  # type: ignore[arg-type]
            )
        )

    def run(self) -> None:
        if not self.log_dir.is_dir():
            self.errors.append(
                ProblemInfo(
                    error="LogDirNotFound",
                    message="log dir does not exist or is not a directory (is the broker's "
                    "volume mounted on this worker?)",
                    path=str(self.log_dir),
                )
            )
            return
        if not self._check_meta():
            return
        try:
            rp = self._checkpoint(RECOVERY_POINT_CHECKPOINT)
            hw = self._checkpoint(HIGH_WATERMARK_CHECKPOINT)
        except SegmentError as exc:
            self.errors.append(ProblemInfo.from_exception(exc))
            return
        for entry in sorted(os.scandir(self.log_dir), key=lambda e: e.name):
            if not entry.is_dir(follow_symlinks=False):
                odd = log_dir_entry_problem(entry)
                if odd is not None:
                    self.skip(SkipReason(odd.reason), odd.path, odd.detail)
                continue
            try:
                self._partition_dir(Path(entry.path), rp, hw)
            except FileNotFoundError:
                # Renamed (-delete, -future) or removed while we looked: not an error, the
                # next run sees its new state.
                self.skip(
                    SkipReason.VANISHED,
                    Path(entry.path),
                    "partition directory disappeared during discovery",
                )

    def _check_meta(self) -> bool:
        path = self.log_dir / META_PROPERTIES
        if not path.exists():
            self.warnings.append(
                f"{path} is missing: the broker id {self.broker_id} could not be confirmed"
            )
            return True
        try:
            meta = read_meta_properties(path)
        except (SegmentError, OSError) as exc:
            self.errors.append(ProblemInfo.from_exception(exc, path=str(path)))
            return False
        self.kafka_cluster_id = meta.cluster_id
        self.directory_id = meta.directory_id
        if meta.node_id is not None and meta.node_id != self.broker_id:
            self.errors.append(
                ProblemInfo(
                    error="BrokerIdMismatch",
                    message=f"meta.properties names broker {meta.node_id}, but this log dir was "
                    f"configured for broker {self.broker_id}: refusing to archive it under the "
                    "wrong broker (check the configuration and the mounted volume)",
                    path=str(path),
                )
            )
            return False
        return True

    def _checkpoint(self, name: str) -> dict[tuple[str, int], int] | None:
        path = self.log_dir / name
        if not path.exists():
            self.warnings.append(f"{path} is missing: no partition of this log dir is archived")
            return None
        return read_offset_checkpoint(path)

    # TODO(issue 11): split: one directory's classification (segments, strays, odd names,
    # symlinks) in one walk
    def _partition_dir(  # noqa: C901, PLR0912
        self,
        path: Path,
        rp: dict[tuple[str, int], int] | None,
        hw: dict[tuple[str, int], int] | None,
    ) -> None:
        try:
            name = parse_partition_dir_name(path.name)
        except InvalidFileNameError:
            self.skip(SkipReason.NOT_A_PARTITION, path, "not named <topic>-<partition>")
            return
        if name.state is not None:
            self.skip(
                SkipReason.TRANSIENT_DIR,
                path,
                f"partition directory in state '{name.state}'",
                topic=name.topic,
                partition=name.partition,
            )
            return
        if name.topic == METADATA_TOPIC:
            self.skip(
                SkipReason.METADATA_LOG,
                path,
                "KRaft metadata log (no offset checkpoints; its state lives in its snapshots)",
                topic=name.topic,
                partition=name.partition,
            )
            return
        self.partitions += 1
        try:
            view = PartitionView.open(path)
        except FileNotFoundError:
            raise
        except (OSError, SegmentError) as exc:
            self.errors.append(ProblemInfo.from_exception(exc, path=str(path)))
            return
        tp = dict(topic=view.topic, partition=view.partition)
        key = (view.topic, view.partition)
        rp_offset = rp.get(key) if rp is not None else None
        hw_offset = hw.get(key) if hw is not None else None
        # odd names and stray segments are reported; strays never become "the active segment"
        view, odd_files = inspect_partition(view, rp_offset, hw_offset)
        for odd in odd_files:
            self.skip(
                SkipReason(odd.reason), odd.path, odd.detail, **tp, base_offset=odd.base_offset
            )
        swapping = False
        for t in view.transient_files:
            self.skip(SkipReason.TRANSIENT_FILE, t, "transient file", **tp)
            swapping = swapping or t.name.endswith(SWAP_SUFFIX)
        if view.active is not None:
            self.skip(
                SkipReason.ACTIVE,
                view.active.log,
                "active segment",
                **tp,
                base_offset=view.active.base_offset,
            )
        rolled = view.rolled
        self.rolled += len(rolled)
        if not rolled:
            return
        warnings: list[str] = []
        topic_id = self._topic_id(path, warnings)
        epochs = self._epochs(path, warnings)
        snapshots = self._snapshots(path)
        for i, seg in enumerate(rolled):
            end = view.segments[i + 1].base_offset
            try:
                st = seg.log.stat()
            except FileNotFoundError:
                continue  # deleted by retention while we listed
            info = dict(
                **tp,
                base_offset=seg.base_offset,
                end_offset=end,
                size=st.st_size,
                mtime_ms=st.st_mtime_ns // 1_000_000,
            )
            if swapping:
                self.skip(
                    SkipReason.CLEANING_IN_PROGRESS,
                    seg.log,
                    "a .swap file is present; retried next run",
                    **info,
                )
                continue
            if st.st_size == 0 or end <= seg.base_offset:
                self.skip(SkipReason.EMPTY_SEGMENT, seg.log, "no bytes", **info)
                continue
            if rp_offset is None or hw_offset is None:
                missing = [
                    n
                    for n, v in (
                        (RECOVERY_POINT_CHECKPOINT, rp_offset),
                        (HIGH_WATERMARK_CHECKPOINT, hw_offset),
                    )
                    if v is None
                ]
                self.skip(
                    SkipReason.NO_CHECKPOINT,
                    seg.log,
                    f"partition not in {', '.join(missing)}",
                    **info,
                )
                continue
            if end > rp_offset:
                self.skip(
                    SkipReason.ABOVE_RECOVERY_POINT,
                    seg.log,
                    f"range ends at {end}, recovery point is {rp_offset}",
                    **info,
                )
                continue
            if end > hw_offset:
                self.skip(
                    SkipReason.ABOVE_HIGH_WATERMARK,
                    seg.log,
                    f"range ends at {end}, high watermark is {hw_offset}",
                    **info,
                )
                continue
            self._candidate(view, seg, end, st, topic_id, epochs, snapshots, warnings)

    def _candidate(
        self,
        view: PartitionView,
        seg: SegmentFiles,
        end: int,
        st: os.stat_result,
        topic_id: str | None,
        epochs: list[EpochEntry],
        snapshots: dict[int, Path],
        warnings: list[str],
    ) -> None:
        if self.on_segment is not None:
            self.on_segment(str(seg.log))
        try:
            digest = self.digests.digest(seg.log, st)
        except FileNotFoundError:
            return  # deleted by retention while we hashed
        self.candidates.append(
            SegmentCandidate(
                cluster=self.cluster,
                broker_id=self.broker_id,
                log_dir=str(self.log_dir),
                partition_dir=view.path.name,
                topic=view.topic,
                partition=view.partition,
                topic_id=topic_id,
                base_offset=seg.base_offset,
                end_offset=end,
                log=_local(seg.log, st),
                log_sha256=digest.sha256,
                index=_optional(seg.index),
                timeindex=_optional(seg.time_index),
                txnindex=_optional(seg.txn_index),
                snapshot=_optional(snapshots.get(end)),
                leader_epochs=epochs_for_range(epochs, seg.base_offset, end),
                kafka_cluster_id=self.kafka_cluster_id,
                directory_id=self.directory_id,
                warnings=list(warnings),
            )
        )

    def _topic_id(self, path: Path, warnings: list[str]) -> str | None:
        meta = path / PARTITION_METADATA
        if not meta.exists():
            return None
        try:
            return read_partition_metadata(meta).topic_id
        except (SegmentError, OSError) as exc:
            warnings.append(f"partition.metadata unreadable, topic id unknown: {exc}")
            return None

    def _epochs(self, path: Path, warnings: list[str]) -> list[EpochEntry]:
        cp = path / LEADER_EPOCH_CHECKPOINT
        if not cp.exists():
            return []
        try:
            return read_leader_epoch_checkpoint(cp)
        except (SegmentError, OSError) as exc:
            warnings.append(f"leader-epoch-checkpoint unreadable, epochs unknown: {exc}")
            return []

    @staticmethod
    def _snapshots(path: Path) -> dict[int, Path]:
        out: dict[int, Path] = {}
        for entry in os.scandir(path):
            if entry.name.endswith(SNAPSHOT_SUFFIX):
                try:
                    parsed = parse_segment_file_name(entry.name)
                except InvalidFileNameError:
                    continue
                if parsed.transient is None:
                    out[parsed.base_offset] = Path(entry.path)
        return out


def discover_log_dir(
    cluster: str,
    broker_id: int,
    log_dir: str | os.PathLike[str],
    *,
    digests: DigestCache | None = None,
    on_segment: Callable[[str], None] | None = None,
) -> LogDirDiscovery:
    """Discover the archivable segments of one broker log dir (see the module docstring).

    ``on_segment`` is called with each candidate's path before it is hashed (progress display).
    """
    cache = digests or DigestCache(None)
    hits, misses = cache.hits, cache.misses
    d = _Discoverer(cluster, broker_id, Path(log_dir).absolute(), cache, on_segment)
    d.run()
    return LogDirDiscovery(
        cluster=cluster,
        broker_id=broker_id,
        log_dir=str(d.log_dir),
        hostname=socket.gethostname(),
        discovered_at=utc_now(),
        kafka_cluster_id=d.kafka_cluster_id,
        directory_id=d.directory_id,
        partitions=d.partitions,
        rolled_segments=d.rolled,
        candidates=d.candidates,
        skipped=d.skipped,
        errors=d.errors,
        warnings=d.warnings,
        digest_cache_hits=cache.hits - hits,
        digest_cache_misses=cache.misses - misses,
    )


def snapshot_name(offset: int) -> str:
    return segment_file_name(offset, SNAPSHOT_SUFFIX)
