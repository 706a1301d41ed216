"""A broker-faithful writer of one partition directory (``<topic>-<partition>``).

:class:`PartitionWriter` plays the part of Kafka's ``UnifiedLog`` on the leader (``append``:
offsets assigned as ``LogValidator`` does) or on a follower (``append_as_follower``: the
leader's batch bytes appended in fetch-sized chunks). It reproduces, rule for rule, what ends
up on disk; the rules live beside the state they shape:

* **what an append takes and reports** (records, :class:`AppendResult`, the append's max
  timestamp): :mod:`kafka_archive_dev.writer.append`;
* **segments, rolling and indexes**: :mod:`kafka_archive_dev.writer.segment_state` (the roll check
  runs before each append; the new segment's base offset is the log end offset);
* **producer state and transactions**: :mod:`kafka_archive_dev.writer.producer_state`; a
  ``<offset>.snapshot`` is written at every roll (offset = new segment's base) and at a clean
  close (offset = log end offset), each only if beyond the previous snapshot;
* **leader epochs**: ``leader-epoch-checkpoint`` gets ``(epoch, LEO)`` when this replica becomes
  leader and an entry whenever a follower appends a batch of a newer epoch;
* **closing**: ``close()`` is a clean shutdown (indexes trimmed, final time index entry, final
  snapshot, recovery point = LEO). ``close(active=True)`` leaves the files as a running or
  crashed broker has them: the active segment's indexes preallocated to ``segment_index_bytes``
  (zero tails), no final entries, recovery point at the last roll; optionally a torn final batch
  (``torn_tail_bytes``) or a zero-preallocated ``.log`` (``log_preallocate``).

Files are kept in memory and written (:mod:`kafka_archive_dev.writer._files`) when a segment rolls
and at ``close``; the writer is meant for tests and the demo, not for large volumes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Final

from kafka_archive_dev.writer import _files
from kafka_archive_dev.writer.append import (
    AppendResult,
    RecordLike,
    chunk_max_timestamp,
    to_write_records,
)
from kafka_archive_dev.writer.deterministic import ManualClock, new_topic_id
from kafka_archive_dev.writer.encode import (
    NO_SEQUENCE,
    EncodedBatch,
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
    encode_legacy_batches,
)
from kafka_archive_dev.writer.producer_state import ProducerState
from kafka_archive_dev.writer.segment_state import SegmentState
from segment_lib.compression import Codec
from segment_lib.control import ControlType
from segment_lib.names import format_partition_dir_name
from segment_lib.records import NO_PRODUCER_ID, NO_TIMESTAMP, TimestampType
from segment_lib.time_index import ENTRY as TIME_ENTRY
from segment_lib.txn_index import AbortedTxn

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "DEFAULT_SEGMENT_INDEX_BYTES",
    "DEFAULT_SEGMENT_MS",
    "AppendResult",
    "ManualClock",
    "PartitionWriter",
    "RecordLike",
    "SegmentState",
    "Transaction",
    "chunk_max_timestamp",
    "new_topic_id",
]

DEFAULT_SEGMENT_BYTES: Final = 1 << 30  # segment.bytes
DEFAULT_SEGMENT_MS: Final = 7 * 24 * 3600 * 1000  # segment.ms
DEFAULT_INDEX_INTERVAL_BYTES: Final = 4096  # index.interval.bytes
DEFAULT_SEGMENT_INDEX_BYTES: Final = 10 * 1024 * 1024  # segment.index.bytes
_INT32_MAX: Final = (1 << 31) - 1


class Transaction:
    """An open transaction of one producer on one partition (see
    :meth:`PartitionWriter.begin_transaction`)."""

    def __init__(self, writer: PartitionWriter, producer_id: int, producer_epoch: int) -> None:
        self.writer = writer
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch

    def append(
        self,
        records: Iterable[RecordLike],
        *,
        codec: Codec = Codec.NONE,
        timestamp: int | None = None,
    ) -> AppendResult:
        return self.writer.append(
            records,
            codec=codec,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            transactional=True,
            timestamp=timestamp,
        )

    def commit(self, *, coordinator_epoch: int = 0, timestamp: int | None = None) -> AppendResult:
        return self.writer.write_marker(
            ControlType.COMMIT,
            self.producer_id,
            self.producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=timestamp,
        )

    def abort(self, *, coordinator_epoch: int = 0, timestamp: int | None = None) -> AppendResult:
        return self.writer.write_marker(
            ControlType.ABORT,
            self.producer_id,
            self.producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=timestamp,
        )


class PartitionWriter:
    """Writes one partition directory under the log dir ``log_dir`` like a Kafka broker.

    Args:
        log_dir: the broker log directory; the partition directory ``<topic>-<partition>`` is
            created inside it.
        segment_bytes, segment_ms, index_interval_bytes, segment_index_bytes: the topic configs
            of the same names (``segment_index_bytes`` also sizes preallocated active indexes).
        roll_jitter_ms: the segment's random jitter, fixed here (Kafka draws it per segment).
        message_format: magic 2, 1 or 0 (``log.message.format.version`` of old brokers).
        timestamp_type: the topic's ``message.timestamp.type``.
        clock: milliseconds now; defaults to a :class:`ManualClock`.
        leader_epoch: the epoch this replica leads with (``None``: it is a follower).
        topic_id: for ``partition.metadata`` (``None``: derived from the topic name).
        log_preallocate: ``log.preallocate``; an active ``.log`` left open is zero-padded.
        time_index_record_offsets: the pre-3.8 leader rule for time index offsets (see the
            module docstring).
        partition_metadata: write ``partition.metadata`` (brokers before 2.8, which had no
            topic ids, did not).
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str],
        topic: str,
        partition: int,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        segment_ms: int = DEFAULT_SEGMENT_MS,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
        roll_jitter_ms: int = 0,
        message_format: int = 2,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        clock: Callable[[], int] | None = None,
        leader_epoch: int | None = 0,
        topic_id: str | None = None,
        log_preallocate: bool = False,
        xerial_snappy: bool = True,
        time_index_record_offsets: bool = False,
        partition_metadata: bool = True,
    ) -> None:
        if message_format not in (0, 1, 2):
            raise ValueError(f"message format must be 0, 1 or 2, not {message_format}")
        if segment_index_bytes < TIME_ENTRY.size:
            raise ValueError("segment_index_bytes must hold at least one time index entry")
        self.log_dir = Path(log_dir)
        self.topic = topic
        self.partition = partition
        self.dir = self.log_dir / format_partition_dir_name(topic, partition)
        self.segment_bytes = segment_bytes
        self.segment_ms = segment_ms
        self.index_interval_bytes = index_interval_bytes
        self.segment_index_bytes = segment_index_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.message_format = message_format
        self.timestamp_type = TimestampType.NO_TIMESTAMP if message_format == 0 else timestamp_type
        self.clock: Callable[[], int] = clock if clock is not None else ManualClock()
        self.topic_id = topic_id if topic_id is not None else new_topic_id(topic)
        self.log_preallocate = log_preallocate
        self.xerial_snappy = xerial_snappy
        self.time_index_record_offsets = time_index_record_offsets
        self.segments: list[SegmentState] = []
        self.producer_state = ProducerState()
        self.snapshots: dict[int, bytes] = {}
        self.leader_epochs: list[tuple[int, int]] = []
        self.leader_epoch: int | None = None
        self.log_start_offset = 0
        self.recovery_point = 0
        self._high_watermark: int | None = None
        self.cleaner_checkpoint: int | None = None
        #: every batch appended, in order (the replication source for followers)
        self.appended: list[EncodedBatch] = []
        self.closed = False
        self._written_segments: set[int] = set()
        self.dir.mkdir(parents=True, exist_ok=True)
        # UnifiedLog.append flushes partition.metadata before any data (maybeFlushMetadataFile)
        if partition_metadata:
            _files.write_partition_metadata(self.dir, self.topic_id)
        self._new_segment(0)
        if leader_epoch is not None:
            self.become_leader(leader_epoch)

    # -- state --------------------------------------------------------------------------------

    @property
    def active(self) -> SegmentState:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def high_watermark(self) -> int:
        """The high watermark (defaults to the LEO: a single in-sync replica)."""
        return self._leo if self._high_watermark is None else self._high_watermark

    @high_watermark.setter
    def high_watermark(self, value: int) -> None:
        if not self.log_start_offset <= value <= self._leo:
            raise ValueError(f"high watermark {value} outside [{self.log_start_offset}, LEO]")
        self._high_watermark = value

    @property
    def last_stable_offset(self) -> int:
        fuo = self.producer_state.first_unstable_offset()
        return self.high_watermark if fuo is None else min(fuo, self.high_watermark)

    def _new_segment(self, base_offset: int) -> SegmentState:
        seg = SegmentState(
            base_offset,
            created_ms=self.clock(),
            index_interval_bytes=self.index_interval_bytes,
            max_index_bytes=self.segment_index_bytes,
            roll_jitter_ms=self.roll_jitter_ms,
        )
        self.segments.append(seg)
        if len(self.segments) == 1:
            self._leo = base_offset
        return seg

    def become_leader(self, epoch: int) -> None:
        """``Partition.makeLeader``: lead with ``epoch`` from the current log end offset."""
        self.leader_epoch = epoch
        self._assign_epoch(epoch, self._leo)

    def become_follower(self) -> None:
        self.leader_epoch = None

    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        # LeaderEpochFileCache.assign: only when the epoch changes (or the start moves back)
        if self.leader_epochs:
            last_epoch, last_start = self.leader_epochs[-1]
            if epoch == last_epoch and start_offset >= last_start:
                return
        self.leader_epochs = [
            (e, s) for e, s in self.leader_epochs if e < epoch and s < start_offset
        ]
        self.leader_epochs.append((epoch, start_offset))

    # -- appends --------------------------------------------------------------------------------

    def _next_sequence(self, producer_id: int, producer_epoch: int) -> int:
        entry = self.producer_state.producers.get(producer_id)
        if entry is None or entry.epoch != producer_epoch or not entry.batches:
            return 0
        return (entry.last_seq + 1) % (_INT32_MAX + 1)

    def append(
        self,
        records: Iterable[RecordLike],
        *,
        codec: Codec = Codec.NONE,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = 0,
        transactional: bool = False,
        base_sequence: int | None = None,
        timestamp: int | None = None,
    ) -> AppendResult:
        """Append one produce request's records as the leader (``UnifiedLog.appendAsLeader``).

        Records without a timestamp get ``timestamp`` (default: the clock), as a producer stamps
        them at send time. ``producer_id`` >= 0 makes the batch idempotent (sequence numbers are
        continued automatically unless ``base_sequence`` is given); ``transactional`` opens or
        continues that producer's transaction.
        """
        self._check_open()
        if self.leader_epoch is None:
            raise ValueError("this replica is a follower: use append_as_follower")
        now = self.clock()
        recs = to_write_records(records, now if timestamp is None else timestamp)
        lat = now if self.timestamp_type is TimestampType.LOG_APPEND_TIME else None
        if self.message_format == 2:
            pid = producer_id
            if pid < 0 and transactional:
                raise ValueError("a transactional append needs a producer id")
            # a non-idempotent batch normally says -1; the group coordinator's offset-commit
            # batches say 0 (its MemoryRecordsBuilder is given baseSequence 0)
            seq = NO_SEQUENCE if base_sequence is None else base_sequence
            if pid >= 0 and base_sequence is None:
                seq = self._next_sequence(pid, producer_epoch)
            batches = [
                encode_batch_v2(
                    self._leo,
                    recs,
                    codec=codec,
                    log_append_time=lat,
                    producer_id=pid,
                    producer_epoch=producer_epoch if pid >= 0 else -1,
                    base_sequence=seq,
                    transactional=transactional,
                    partition_leader_epoch=self.leader_epoch,
                    xerial_snappy=self.xerial_snappy,
                )
            ]
        else:
            if producer_id >= 0 or transactional:
                raise ValueError("idempotent/transactional records need message format v2")
            batches = encode_legacy_batches(
                self.message_format,
                self._leo,
                recs,
                codec=codec,
                log_append_time=lat,
                xerial_snappy=self.xerial_snappy,
            )
        offset_of_max: int | None = None
        if (
            self.time_index_record_offsets
            and codec is Codec.NONE
            and self.message_format == 2
            and lat is None
        ):
            # Kafka < 3.8 (LogValidator.assignOffsetsNonCompressed): the first record holding
            # the batch's largest timestamp
            stamps = [r.timestamp for r in recs if r.timestamp is not None]
            offset_of_max = self._leo + stamps.index(max(stamps))
        return self._append_chunk(batches, now=now, append_time=now, offset_of_max=offset_of_max)

    def write_marker(
        self,
        control_type: ControlType,
        producer_id: int,
        producer_epoch: int,
        *,
        coordinator_epoch: int = 0,
        timestamp: int | None = None,
    ) -> AppendResult:
        """Append a COMMIT/ABORT marker, as the leader does for ``WriteTxnMarkers``."""
        self._check_open()
        if self.message_format != 2 or self.leader_epoch is None:
            raise ValueError("markers need message format v2 on the leader")
        now = self.clock()
        ts = now if timestamp is None else timestamp
        lat = now if self.timestamp_type is TimestampType.LOG_APPEND_TIME else None
        batch = encode_control_batch(
            self._leo,
            control_type,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            timestamp=ts,
            coordinator_epoch=coordinator_epoch,
            log_append_time=lat,
            partition_leader_epoch=self.leader_epoch,
        )
        return self._append_chunk([batch], now=now, append_time=now)

    def begin_transaction(self, producer_id: int, producer_epoch: int = 0) -> Transaction:
        """A handle whose ``append`` writes transactional batches and ``commit``/``abort`` the
        marker (the transaction starts at its first batch, as on the broker)."""
        return Transaction(self, producer_id, producer_epoch)

    def commit(self, producer_id: int, producer_epoch: int = 0, **kw: int) -> AppendResult:
        return self.write_marker(ControlType.COMMIT, producer_id, producer_epoch, **kw)  # type: ignore[arg-type]

    def abort(self, producer_id: int, producer_epoch: int = 0, **kw: int) -> AppendResult:
        return self.write_marker(ControlType.ABORT, producer_id, producer_epoch, **kw)  # type: ignore[arg-type]

    def append_as_follower(self, batches: Sequence[EncodedBatch]) -> AppendResult:
        """Append one fetched chunk of the leader's batches unchanged (``appendAsFollower``)."""
        self._check_open()
        if not batches:
            raise ValueError("empty chunk")
        if batches[0].last_offset < self._leo:
            raise ValueError(
                f"chunk starting at {batches[0].base_offset} is behind the LEO {self._leo}"
            )
        for b in batches:
            if b.magic >= 2 and b.partition_leader_epoch >= 0:
                self._assign_epoch(b.partition_leader_epoch, b.base_offset)
        now = self.clock()
        return self._append_chunk(batches, now=now, append_time=NO_TIMESTAMP)

    def _append_chunk(
        self,
        batches: Sequence[EncodedBatch],
        *,
        now: int,
        append_time: int,
        offset_of_max: int | None = None,
    ) -> AppendResult:
        size = sum(b.size for b in batches)
        if size > self.segment_bytes:
            raise ValueError(f"append of {size} bytes exceeds segment.bytes {self.segment_bytes}")
        max_ts, shallow = chunk_max_timestamp(batches)
        if offset_of_max is not None:
            shallow = offset_of_max
        first = batches[0]
        last_offset = batches[-1].last_offset
        rolled = False
        if self.active.should_roll(
            segment_bytes=self.segment_bytes,
            segment_ms=self.segment_ms,
            messages_size=size,
            max_timestamp=max_ts,
            max_offset=last_offset,
            now=now,
        ):
            # rollOffset: the first offset (v2) or lastOffset - Int.MaxValue (legacy), at least LEO
            roll_to = first.base_offset if first.magic >= 2 else last_offset - _INT32_MAX
            self.roll(max(roll_to, self._leo))
            rolled = True
        seg = self.active
        completed = self.producer_state.append_chunk(batches)
        position = seg.append(last_offset, max_ts, shallow, batches)
        self.appended.extend(batches)
        for txn in completed:
            lso = self.producer_state.last_stable_offset(txn)
            if txn.is_aborted:
                seg.txn_index.append(
                    AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso)
                )
            self.producer_state.complete(txn)
        self._leo = last_offset + 1
        self.producer_state.last_map_offset = self._leo
        return AppendResult(
            first_offset=first.base_offset,
            last_offset=last_offset,
            segment_base_offset=seg.base_offset,
            position=position,
            size=size,
            append_time=append_time,
            rolled=rolled,
        )

    def roll(self, new_base_offset: int | None = None) -> SegmentState:
        """``UnifiedLog.roll``: close the active segment, open one at the LEO, snapshot the
        producer state at the new base offset."""
        self._check_open()
        base = self._leo if new_base_offset is None else max(new_base_offset, self._leo)
        old = self.active
        if old.base_offset == base:
            if old.size != 0:
                raise ValueError(f"segment {base} already exists")
            # KAFKA-6388: an empty active segment with the same base offset is recreated
            self.segments.pop()
        else:
            old.on_become_inactive()
            self._write_segment(old, active=False)
        seg = self._new_segment(base)
        self.producer_state.last_map_offset = base
        snap = self.producer_state.take_snapshot()
        if snap is not None:
            self.snapshots[snap[0]] = snap[1]
            self._write_snapshot(*snap)
        # the asynchronous flush after a roll moves the recovery point to the new segment
        self.recovery_point = base
        return seg

    # -- files ----------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("partition writer is closed")

    def _write_snapshot(self, offset: int, data: bytes) -> None:
        _files.write_producer_snapshot(self.dir, offset, data)

    def _write_segment(
        self,
        seg: SegmentState,
        *,
        active: bool,
        preallocate_indexes: bool = False,
        torn_tail: bytes = b"",
    ) -> None:
        _files.write_segment_files(
            self.dir,
            seg,
            log_size=self.segment_bytes if (active and self.log_preallocate) else 0,
            index_size=self.segment_index_bytes if (active and preallocate_indexes) else 0,
            torn_tail=torn_tail,
        )
        self._written_segments.add(seg.base_offset)

    def rewrite_segment_files(self, seg: SegmentState) -> None:
        """Write a (rolled) segment's files again after the writer changed it (compaction)."""
        self._write_segment(seg, active=False)

    def remove_segment_files(self, base_offset: int) -> None:
        _files.remove_segment_files(self.dir, base_offset)
        self._written_segments.discard(base_offset)

    def close(
        self,
        *,
        active: bool = False,
        preallocate_indexes: bool = True,
        torn_tail_bytes: int = 0,
    ) -> None:
        """Write every file and stop.

        ``active=False`` is a clean shutdown. ``active=True`` leaves the last segment as a live
        (or crashed) broker does: indexes preallocated (unless ``preallocate_indexes=False``),
        no final time index entry, no closing snapshot, and ``torn_tail_bytes`` bytes of a next
        batch that was never completed (not part of the log: the LEO is unchanged).
        """
        self._check_open()
        seg = self.active
        torn = b""
        if torn_tail_bytes:
            if not active:
                raise ValueError("a torn tail only exists on an active segment")
            torn = self._torn_batch(torn_tail_bytes)
        if active:
            self._write_segment(
                seg, active=True, preallocate_indexes=preallocate_indexes, torn_tail=torn
            )
        else:
            # UnifiedLog.close: snapshot at the LEO, then LogSegment.close on each segment
            snap = self.producer_state.take_snapshot()
            if snap is not None:
                self.snapshots[snap[0]] = snap[1]
                self._write_snapshot(*snap)
            seg.on_become_inactive()
            self._write_segment(seg, active=False)
            self.recovery_point = self._leo
        _files.write_leader_epoch_checkpoint(self.dir, self.leader_epochs)
        self.closed = True

    def _torn_batch(self, n: int) -> bytes:
        rec = [WriteRecord(b"torn-key", b"torn-value" * 8, (), self.clock())]
        if self.message_format == 2:
            full = encode_batch_v2(self._leo, rec, partition_leader_epoch=self.leader_epoch or 0)
            data = full.data
        else:
            data = encode_legacy_batches(self.message_format, self._leo, rec)[0].data
        if not 0 < n < len(data):
            raise ValueError(f"torn_tail_bytes must be between 1 and {len(data) - 1}")
        return data[:n]
