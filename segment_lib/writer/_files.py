"""File-writing glue: the writer's small files, formatted by segment_lib's own format modules.

Each function writes one file the way the broker names it; the byte layout is the format
module's (``segment_lib.checkpoints``, ``segment_lib.metadata_files``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from segment_lib.checkpoints import format_leader_epoch_checkpoint, format_offset_checkpoint
from segment_lib.metadata_files import (
    MetaProperties,
    format_meta_properties,
    format_partition_metadata,
)

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "PARTITION_METADATA",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "write_leader_epoch_checkpoint",
    "write_meta_properties",
    "write_offset_checkpoint",
    "write_partition_metadata",
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
