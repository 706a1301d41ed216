"""A log dir's and a partition's side files, as discovery reads them.

Contract: the names of the files Kafka keeps beside the segments (offset checkpoints,
``leader-epoch-checkpoint``, ``partition.metadata``, ``meta.properties``) and readers for
what a candidate carries from them: the topic id, the leader-epoch entries covering a range
(:func:`epochs_for_range`, as Kafka's ``LeaderEpochFileCache``), the producer-state snapshots
by offset, and a file's size and mtime (:func:`local_file`). An unreadable topic id or epoch
checkpoint is a warning appended to ``warnings``, never an exception; a file deleted in the
meantime is ``None`` (:func:`optional_local_file`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from kafka_archive.archive.discovery.model import LocalFile
from kafka_archive.archive.manifest import EpochRange
from segment_lib.checkpoints import EpochEntry, read_leader_epoch_checkpoint
from segment_lib.cluster_metadata.files import parse_snapshot_name
from segment_lib.errors import InvalidFileNameError, SegmentError
from segment_lib.metadata_files import read_partition_metadata
from segment_lib.names import SNAPSHOT_SUFFIX, parse_segment_file_name, segment_file_name

__all__ = [
    "HIGH_WATERMARK_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "METADATA_TOPIC",
    "META_PROPERTIES",
    "PARTITION_METADATA",
    "RECOVERY_POINT_CHECKPOINT",
    "epochs_for_range",
    "find_snapshots",
    "local_file",
    "optional_local_file",
    "read_epochs",
    "read_topic_id",
    "snapshot_name",
]

RECOVERY_POINT_CHECKPOINT: Final = "recovery-point-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT: Final = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"
PARTITION_METADATA: Final = "partition.metadata"
META_PROPERTIES: Final = "meta.properties"
#: KRaft's metadata log: a Raft log without offset checkpoints; its committed bound is its newest
#: snapshot (:func:`metadata_committed_offset`)
METADATA_TOPIC: Final = "__cluster_metadata"


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


def local_file(path: Path, st: os.stat_result | None = None) -> LocalFile:
    st = st if st is not None else path.stat()
    return LocalFile(name=path.name, size=st.st_size, mtime_ns=st.st_mtime_ns)


def optional_local_file(path: Path | None) -> LocalFile | None:
    if path is None:
        return None
    try:
        return local_file(path)
    except FileNotFoundError:
        return None


def read_topic_id(path: Path, warnings: list[str]) -> str | None:
    meta = path / PARTITION_METADATA
    if not meta.exists():
        return None
    try:
        return read_partition_metadata(meta).topic_id
    except (SegmentError, OSError) as exc:
        warnings.append(f"partition.metadata unreadable, topic id unknown: {exc}")
        return None


def read_epochs(path: Path, warnings: list[str]) -> list[EpochEntry]:
    cp = path / LEADER_EPOCH_CHECKPOINT
    if not cp.exists():
        return []
    try:
        return read_leader_epoch_checkpoint(cp)
    except (SegmentError, OSError) as exc:
        warnings.append(f"leader-epoch-checkpoint unreadable, epochs unknown: {exc}")
        return []


def find_snapshots(path: Path) -> dict[int, Path]:
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


def metadata_committed_offset(path: Path) -> int | None:
    """The committed bound of KRaft's metadata log in ``path``: the end offset of its newest
    snapshot (``<endOffset>-<epoch>.checkpoint``; ``.checkpoint.part`` files are snapshots
    still being written and do not count), or ``None`` without one.

    Why this bound: the Raft log has no recovery-point or high-watermark checkpoint files. A
    KRaft snapshot is only ever taken of committed records (the controller snapshots the state
    it applied, and it applies a record only once the quorum committed it; brokers snapshot
    what they replayed from committed batches), and a record is fsynced before the quorum
    counts it. So every offset below a snapshot's end offset is committed and durable: a rolled
    segment ending at or before it is final, like a data segment below the recovery point and
    the high watermark. A segment past it waits for the next snapshot
    (``metadata.log.max.snapshot.interval.ms``, 1 hour by default, or
    ``metadata.log.max.record.bytes.between.snapshots``).
    """
    best: int | None = None
    for entry in os.scandir(path):
        parsed = parse_snapshot_name(entry.name)
        if parsed is not None and (best is None or parsed[0] > best):
            best = parsed[0]
    return best


def snapshot_name(offset: int) -> str:
    return segment_file_name(offset, SNAPSHOT_SUFFIX)
