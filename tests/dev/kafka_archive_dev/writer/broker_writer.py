"""A broker's log directories, written like a Kafka broker leaves them.

:class:`BrokerWriter` owns one or more log directories (``log.dirs``) and the
:class:`~kafka_archive_dev.writer.PartitionWriter` of every partition replica the broker hosts:

* a new partition goes to the log dir holding the fewest partitions (``LogManager.nextLogDirs``,
  ties broken by configuration order);
* ``meta.properties`` in every log dir (version 1 with ``node.id`` and ``directory.id`` for KRaft,
  version 0 with ``broker.id`` for ZooKeeper mode);
* per log dir, the offset checkpoints the ``LogManager`` keeps: ``recovery-point-offset-checkpoint``
  (each log's recovery point), ``replication-offset-checkpoint`` (high watermarks),
  ``log-start-offset-checkpoint`` (only logs whose start offset is past their first segment's
  base, as ``checkpointLogStartOffsetsInDir`` filters) and ``cleaner-offset-checkpoint`` (compacted
  logs the cleaner has cleaned; an empty file, as the cleaner manager creates it, until then);
* ``__consumer_offsets`` partitions (``offsets.topic.num.partitions``, default 50) holding offset
  commits as the group coordinator writes them (one batch per commit request in the partition
  of ``partition_for_group``; record timestamp = append time, base sequence 0, key v1, value v3);
* replicas: :meth:`replicate` appends a leader's batches to this broker's follower replica in
  fetch-sized chunks, so followers roll and index at their own points.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_archive_dev.writer import _files
from kafka_archive_dev.writer.append import AppendResult
from kafka_archive_dev.writer.compaction import CleanResult, compact
from kafka_archive_dev.writer.deterministic import ManualClock, new_topic_id
from kafka_archive_dev.writer.encode import EncodedBatch, WriteRecord
from kafka_archive_dev.writer.partition_writer import PartitionWriter
from segment_lib.compression import Codec
from segment_lib.consumer_offsets import (
    DEFAULT_NUM_PARTITIONS,
    encode_offset_commit_key,
    encode_offset_commit_value,
    partition_for_group,
)

__all__ = ["CONSUMER_OFFSETS", "DEFAULT_FETCH_MAX_BYTES", "BrokerWriter"]

CONSUMER_OFFSETS = "__consumer_offsets"
#: replica.fetch.max.bytes
DEFAULT_FETCH_MAX_BYTES = 1024 * 1024
#: offsets.topic.segment.bytes
OFFSETS_TOPIC_SEGMENT_BYTES = 100 * 1024 * 1024


class BrokerWriter:
    """Writes the log directories of broker ``broker_id`` under ``root``.

    Args:
        root: parent folder; each entry of ``log_dirs`` is a folder name (or path) below it.
        broker_id: ``node.id`` / ``broker.id``.
        log_dirs: the broker's ``log.dirs``.
        cluster_id: written to ``meta.properties``.
        clock: shared by all partitions (default a :class:`ManualClock`).
        kraft: KRaft (meta.properties v1) or ZooKeeper mode (v0).
        offsets_partitions: ``offsets.topic.num.partitions``.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        broker_id: int,
        *,
        log_dirs: Sequence[str] = ("kafka-logs",),
        cluster_id: str = "kafka-archive-test",
        clock: Callable[[], int] | None = None,
        kraft: bool = True,
        offsets_partitions: int = DEFAULT_NUM_PARTITIONS,
    ) -> None:
        if not log_dirs:
            raise ValueError("a broker needs at least one log dir")
        self.root = Path(root)
        self.broker_id = broker_id
        self.log_dirs = [self.root / d for d in log_dirs]
        self.cluster_id = cluster_id
        self.clock: Callable[[], int] = clock if clock is not None else ManualClock()
        self.kraft = kraft
        self.offsets_partitions = offsets_partitions
        self.partitions: dict[tuple[str, int], PartitionWriter] = {}
        self.closed = False
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)

    # -- partitions ------------------------------------------------------------------------------

    def _next_log_dir(self) -> Path:
        counts = {d: 0 for d in self.log_dirs}
        for pw in self.partitions.values():
            counts[pw.log_dir] += 1
        return min(self.log_dirs, key=lambda d: counts[d])

    def partition(
        self,
        topic: str,
        partition: int,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        leader_epoch: int | None = 0,
        **config: Any,
    ) -> PartitionWriter:
        """The replica of ``topic-partition`` on this broker, created on first use.

        ``config`` goes to :class:`PartitionWriter` (segment_bytes, timestamp_type, ...);
        ``leader_epoch=None`` creates a follower replica.
        """
        key = (topic, partition)
        pw = self.partitions.get(key)
        if pw is not None:
            return pw
        target = Path(log_dir) if log_dir is not None else self._next_log_dir()
        if target not in self.log_dirs:
            target = self.root / target
            if target not in self.log_dirs:
                raise ValueError(f"{log_dir} is not one of this broker's log dirs")
        config.setdefault("clock", self.clock)
        config.setdefault("topic_id", new_topic_id(topic))
        pw = PartitionWriter(target, topic, partition, leader_epoch=leader_epoch, **config)
        self.partitions[key] = pw
        return pw

    def consumer_offsets(self, partition: int, **config: Any) -> PartitionWriter:
        """``__consumer_offsets-<partition>`` (compacted, 100 MiB segments unless overridden)."""
        if not 0 <= partition < self.offsets_partitions:
            raise ValueError(f"__consumer_offsets has {self.offsets_partitions} partitions")
        config.setdefault("segment_bytes", OFFSETS_TOPIC_SEGMENT_BYTES)
        return self.partition(CONSUMER_OFFSETS, partition, **config)

    def commit_offsets(
        self,
        group: str,
        offsets: Mapping[tuple[str, int], int],
        *,
        metadata: str = "",
        commit_timestamp: int | None = None,
        leader_epoch: int = -1,
        codec: Codec = Codec.NONE,
    ) -> AppendResult:
        """Store one OffsetCommit request of ``group`` (``GroupMetadataManager.storeOffsets``)."""
        if not offsets:
            raise ValueError("no offsets to commit")
        now = self.clock()
        ts = now if commit_timestamp is None else commit_timestamp
        records = [
            WriteRecord(
                encode_offset_commit_key(group, topic, part),
                encode_offset_commit_value(
                    offset=off, commit_timestamp=ts, metadata=metadata, leader_epoch=leader_epoch
                ),
            )
            for (topic, part), off in offsets.items()
        ]
        pw = self.consumer_offsets(partition_for_group(group, self.offsets_partitions))
        return pw.append(records, codec=codec, base_sequence=0, timestamp=now)

    def compact(self, topic: str, partition: int, **kw: Any) -> CleanResult:
        """One log-cleaner round over ``topic-partition`` (see :func:`compact`)."""
        return compact(self.partitions[(topic, partition)], **kw)

    def replicate(
        self,
        leader: PartitionWriter,
        *,
        fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        up_to_offset: int | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        **config: Any,
    ) -> PartitionWriter:
        """Bring this broker's follower replica of ``leader``'s partition up to date.

        Batches the follower lacks are appended in chunks of at most ``fetch_max_bytes`` (and
        of the follower's ``segment.bytes``; at least one batch, as a fetch returns), stopping
        before ``up_to_offset`` if given. The follower's high watermark becomes
        min(leader HW, its LEO). ``config`` (segment_bytes,
        ...) applies when the replica is created; the topic id and timestamp type follow the
        leader's.
        """
        config.setdefault("topic_id", leader.topic_id)
        config.setdefault("message_format", leader.message_format)
        config.setdefault("timestamp_type", leader.timestamp_type)
        follower = self.partition(
            leader.topic, leader.partition, log_dir=log_dir, leader_epoch=None, **config
        )
        pending = [
            b
            for b in leader.appended
            if b.last_offset >= follower.log_end_offset
            and (up_to_offset is None or b.last_offset < up_to_offset)
        ]
        # a chunk larger than segment.bytes would be refused (RecordBatchTooLargeException)
        limit = min(fetch_max_bytes, follower.segment_bytes)
        chunk: list[EncodedBatch] = []
        size = 0
        for b in pending:
            if chunk and size + b.size > limit:
                follower.append_as_follower(chunk)
                chunk, size = [], 0
            chunk.append(b)
            size += b.size
        if chunk:
            follower.append_as_follower(chunk)
        follower.high_watermark = min(leader.high_watermark, follower.log_end_offset)
        return follower

    # -- closing ---------------------------------------------------------------------------------

    def close(
        self,
        *,
        active: bool = False,
        preallocate_indexes: bool = True,
        torn_tail_bytes: Mapping[tuple[str, int], int] | None = None,
    ) -> None:
        """Shut the broker down: every partition closed (see :meth:`PartitionWriter.close`),
        then ``meta.properties`` and the checkpoint files of each log dir written."""
        if self.closed:
            raise ValueError("broker writer is closed")
        torn = dict(torn_tail_bytes or {})
        for key, pw in self.partitions.items():
            if not pw.closed:
                pw.close(
                    active=active,
                    preallocate_indexes=preallocate_indexes,
                    torn_tail_bytes=torn.get(key, 0),
                )
        for d in self.log_dirs:
            _files.write_meta_properties(
                d,
                node_id=self.broker_id,
                cluster_id=self.cluster_id,
                directory_id=new_topic_id(f"{self.cluster_id}/{self.broker_id}/{d.name}"),
                kraft=self.kraft,
            )
            here = [pw for pw in self.partitions.values() if pw.log_dir == d]
            _files.write_offset_checkpoint(
                d / _files.RECOVERY_POINT_CHECKPOINT,
                {(pw.topic, pw.partition): pw.recovery_point for pw in here},
            )
            _files.write_offset_checkpoint(
                d / _files.REPLICATION_OFFSET_CHECKPOINT,
                {(pw.topic, pw.partition): pw.high_watermark for pw in here},
            )
            _files.write_offset_checkpoint(
                d / _files.LOG_START_OFFSET_CHECKPOINT,
                {
                    (pw.topic, pw.partition): pw.log_start_offset
                    for pw in here
                    if pw.log_start_offset > pw.segments[0].base_offset
                },
            )
            cleaned = {
                (pw.topic, pw.partition): pw.cleaner_checkpoint
                for pw in here
                if pw.cleaner_checkpoint is not None
            }
            cleaner_path = d / _files.CLEANER_OFFSET_CHECKPOINT
            if cleaned:
                _files.write_offset_checkpoint(cleaner_path, cleaned)
            else:
                # the cleaner manager creates the file empty and writes it only after a clean
                cleaner_path.write_bytes(b"")
        self.closed = True
