"""File-writing glue: the files the writer writes, formatted by segment_lib's own format modules.

Each function writes one file (or a segment's set of files) the way the broker names it; the
byte layout is the format module's (``segment_lib.checkpoints``, ``segment_lib.metadata_files``,
``segment_lib.offset_index``, ``segment_lib.time_index``, ``segment_lib.txn_index``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from kafka_archive_dev.writer.segment_state import SegmentState
from segment_lib.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from segment_lib.metadata_files import (
    MetaProperties,
    format_meta_properties,
    format_partition_metadata,
)
from segment_lib.names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_file_name,
)
from segment_lib.offset_index import format_offset_index
from segment_lib.time_index import format_time_index
from segment_lib.txn_index import format_txn_index

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "PARTITION_METADATA",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "remove_segment_files",
    "write_leader_epoch_checkpoint",
    "write_meta_properties",
    "write_offset_checkpoint",
    "write_partition_metadata",
    "write_producer_snapshot",
    "write_segment_files",
]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"


def write_leader_epoch_checkpoint(partition_dir: Path, entries: Iterable[tuple[int, int]]) -> None:
    (partition_dir / LEADER_EPOCH_CHECKPOINT).write_bytes(format_leader_epoch_checkpoint(entries))


def write_offset_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    path.write_bytes(format_offset_checkpoint(offsets))


def write_partition_metadata(partition_dir: Path, topic_id: str) -> None:
    (partition_dir / PARTITION_METADATA).write_bytes(format_partition_metadata(topic_id))


def write_meta_properties(
    log_dir: Path, *, node_id: int, cluster_id: str, directory_id: str | None, kraft: bool
) -> None:
    """KRaft brokers write version 1 (``node.id``, ``directory.id`` since 3.7); ZooKeeper-mode
    brokers version 0 (``broker.id``)."""
    meta = MetaProperties(
        version=1 if kraft else 0,
        node_id=node_id,
        cluster_id=cluster_id,
        directory_id=directory_id if kraft else None,
    )
    (log_dir / "meta.properties").write_bytes(format_meta_properties(meta))


def write_segment_files(
    partition_dir: Path,
    seg: SegmentState,
    *,
    log_size: int = 0,
    index_size: int = 0,
    torn_tail: bytes = b"",
) -> None:
    """A segment's ``.log``, ``.index``, ``.timeindex`` and, when it holds aborted transactions,
    ``.txnindex`` (a stale one is removed otherwise).

    ``torn_tail`` bytes follow the log's batches; the ``.log`` is then zero-padded up to
    ``log_size`` (``log.preallocate`` on an active segment) and both indexes preallocated to
    ``index_size`` bytes (an active segment's; 0: trimmed to their entries).
    """
    base = seg.base_offset
    log = bytes(seg.log) + torn_tail
    if len(log) < log_size:
        log += bytes(log_size - len(log))
    (partition_dir / segment_file_name(base, LOG_SUFFIX)).write_bytes(log)
    (partition_dir / segment_file_name(base, INDEX_SUFFIX)).write_bytes(
        format_offset_index(base, seg.offset_index, preallocate=index_size)
    )
    (partition_dir / segment_file_name(base, TIME_INDEX_SUFFIX)).write_bytes(
        format_time_index(base, seg.time_index, preallocate=index_size)
    )
    txn_path = partition_dir / segment_file_name(base, TXN_INDEX_SUFFIX)
    if seg.txn_index:
        txn_path.write_bytes(format_txn_index(seg.txn_index))
    elif txn_path.exists():
        txn_path.unlink()


def remove_segment_files(partition_dir: Path, base_offset: int) -> None:
    """Delete a segment's ``.log`` and index files (those that exist)."""
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        p = partition_dir / segment_file_name(base_offset, suffix)
        if p.exists():
            p.unlink()


def write_producer_snapshot(partition_dir: Path, offset: int, data: bytes) -> None:
    (partition_dir / segment_file_name(offset, SNAPSHOT_SUFFIX)).write_bytes(data)
