"""A broker-faithful writer of one partition directory (``<topic>-<partition>``).

:class:`PartitionWriter` plays the part of Kafka's ``UnifiedLog`` + ``LogSegment`` on the leader
(``append``: offsets assigned as ``LogValidator`` does) or on a follower (``append_as_follower``:
the leader's batch bytes appended in fetch-sized chunks). It reproduces, rule for rule, what
ends up on disk:

* **rolling** (``UnifiedLog.maybeRoll`` / ``LogSegment.shouldRoll``), checked before each append
  with the append's size, max timestamp and last offset::

      size > segment.bytes - messagesSize
      or (size > 0 and timeWaitedForRoll(now, maxTimestampInMessages) > segment.ms - rollJitterMs)
      or offset index full or time index full (its last slot is reserved for the roll entry)
      or the append's last offset not within int32 of the base offset

  where ``timeWaitedForRoll`` is ``maxTimestampInMessages - <largest timestamp of the segment's
  first append>`` when that timestamp is >= 0, else ``now - <segment creation time>``. The new
  segment's base offset is the log end offset.
* **offset index** (``LogSegment.append``): *before* adding an append's bytes, if more than
  ``index.interval.bytes`` were appended since the last entry, add ``(last offset of this append,
  position where it starts)``; so a segment's first append is never indexed and an entry's
  offset may lie in a later batch than the one at its position (follower chunks).
* **time index**: alongside each offset index entry, ``maybeAppend(maxTimestampSoFar,
  offsetOfMaxTimestampSoFar)`` (only when the timestamp grew); once more when the segment is
  rolled (``onBecomeInactiveSegment``) or closed. ``offsetOfMaxTimestampSoFar`` is the last offset
  of the earliest batch holding the largest timestamp (Kafka's *shallow* offset, since 3.8:
  KAFKA-16310/16341). Brokers before 3.8 used, for uncompressed CreateTime appends on the
  leader, the offset of the first *record* holding the batch's largest timestamp; set
  ``time_index_record_offsets=True`` to write that (real 3.6 time indexes match it).
* **producer state**: idempotent/transactional producers tracked like ``ProducerStateManager``; a
  ``<offset>.snapshot`` is written at every roll (offset = new segment's base) and at a clean
  close (offset = log end offset), each only if beyond the previous snapshot.
* **transactions**: COMMIT/ABORT control batches; an aborted transaction that had data is
  appended to the ``.txnindex`` of the segment holding its marker as ``(producerId, firstOffset,
  lastOffset = marker offset, lastStableOffset)``, where the LSO is the first offset of the
  earliest still-open transaction of *another* producer, else marker offset + 1.
* **leader epochs**: ``leader-epoch-checkpoint`` gets ``(epoch, LEO)`` when this replica becomes
  leader and an entry whenever a follower appends a batch of a newer epoch.
* **closing**: ``close()`` is a clean shutdown (indexes trimmed, final time index entry, final
  snapshot, recovery point = LEO). ``close(active=True)`` leaves the files as a running or
  crashed broker has them: the active segment's indexes preallocated to ``segment_index_bytes``
  (zero tails), no final entries, recovery point at the last roll; optionally a torn final batch
  (``torn_tail_bytes``) or a zero-preallocated ``.log`` (``log_preallocate``).

Files are kept in memory and written when a segment rolls and at ``close``; the writer is meant
for tests and the demo, not for large volumes.
"""

from __future__ import annotations

import os
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from segment_lib.compression import Codec
from segment_lib.control import ControlType
from segment_lib.metadata_files import encode_kafka_uuid
from segment_lib.names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    format_partition_dir_name,
    segment_file_name,
)
from segment_lib.offset_index import ENTRY as OFFSET_ENTRY
from segment_lib.offset_index import format_offset_index
from segment_lib.producer_snapshot import ProducerSnapshotEntry, format_producer_snapshot
from segment_lib.records import NO_PRODUCER_ID, NO_TIMESTAMP, Header, TimestampType
from segment_lib.time_index import ENTRY as TIME_ENTRY
from segment_lib.time_index import format_time_index
from segment_lib.txn_index import AbortedTxn, format_txn_index
from segment_lib.writer import _files
from segment_lib.writer.encode import (
    NO_SEQUENCE,
    EncodedBatch,
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
    encode_legacy_batches,
)

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
_BATCHES_TO_RETAIN: Final = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN

#: what ``append`` accepts per record: a WriteRecord, ``(key, value)`` or ``(key, value, headers)``
RecordLike = (
    WriteRecord
    | tuple[bytes | None, bytes | None]
    | tuple[bytes | None, bytes | None, Sequence[Header]]
)


class ManualClock:
    """A settable millisecond clock (the writer's default, so output is deterministic)."""

    __slots__ = ("now_ms",)

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = start_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        """Move the clock forward by ``ms`` and return the new time."""
        self.now_ms += ms
        return self.now_ms


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an append landed: offsets, the segment and byte position, the broker's time."""

    first_offset: int
    last_offset: int
    segment_base_offset: int
    position: int
    size: int
    append_time: int
    rolled: bool


def chunk_max_timestamp(batches: Sequence[EncodedBatch]) -> tuple[int, int]:
    """``(maxTimestamp, shallowOffsetOfMaxTimestamp)`` of an append, as ``UnifiedLog`` computes it:
    the largest batch max timestamp and the last offset of the *earliest* batch holding it
    (``(-1, -1)`` when no batch has a timestamp, e.g. magic 0).

    For the leader this equals what ``LogValidator`` reports in every case the writer produces
    (one magic 2 batch: its last offset; magic 1 single messages: the first message with the
    largest timestamp, the base offset under LogAppendTime; magic 0: -1).
    """
    max_ts = NO_TIMESTAMP
    shallow = -1
    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts = b.max_timestamp
            shallow = b.last_offset
    return max_ts, shallow


# ---------------------------------------------------------------------------------------------
# producer state (ProducerStateManager / ProducerStateEntry / ProducerAppendInfo)


@dataclass(slots=True)
class _BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int


@dataclass(slots=True)
class _ProducerEntry:
    producer_id: int
    epoch: int = -1
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batches: deque[_BatchMetadata] = field(default_factory=lambda: deque(maxlen=_BATCHES_TO_RETAIN))

    def maybe_update_epoch(self, epoch: int) -> None:
        if self.epoch != epoch:
            self.batches.clear()
            self.epoch = epoch

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def snapshot_entry(self) -> ProducerSnapshotEntry:
        last = self.batches[-1] if self.batches else None
        return ProducerSnapshotEntry(
            producer_id=self.producer_id,
            epoch=self.epoch,
            last_sequence=last.last_seq if last else NO_SEQUENCE,
            last_offset=last.last_offset if last else -1,
            offset_delta=last.offset_delta if last else 0,
            timestamp=self.last_timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_first_offset=(
                -1 if self.current_txn_first_offset is None else self.current_txn_first_offset
            ),
        )


@dataclass(frozen=True, slots=True)
class _CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class _ProducerState:
    """The parts of ``ProducerStateManager`` that shape files: entries, open transactions,
    snapshot offsets."""

    def __init__(self) -> None:
        self.producers: dict[int, _ProducerEntry] = {}
        #: ongoingTxns: first offset -> producer id (a TreeMap in Kafka: iterate sorted)
        self.ongoing: dict[int, int] = {}
        self.last_map_offset = 0
        self.last_snap_offset = 0

    def append_chunk(self, batches: Sequence[EncodedBatch]) -> list[_CompletedTxn]:
        """Apply a chunk; return the completed transactions (LSO computed by the caller after
        :meth:`start_pending`)."""
        started: list[tuple[int, int]] = []
        completed: list[_CompletedTxn] = []
        for b in batches:
            if not b.has_producer_id:
                continue
            entry = self.producers.setdefault(b.producer_id, _ProducerEntry(b.producer_id))
            if b.is_control:
                assert b.control_type is not None
                if entry.current_txn_first_offset is not None:
                    completed.append(
                        _CompletedTxn(
                            b.producer_id,
                            entry.current_txn_first_offset,
                            b.base_offset,
                            b.control_type is ControlType.ABORT,
                        )
                    )
                # ProducerStateEntry.update(epoch, coordinatorEpoch, timestamp): the marker
                # record's timestamp is the batch max timestamp (single record, delta 0)
                entry.maybe_update_epoch(b.producer_epoch)
                entry.coordinator_epoch = b.coordinator_epoch
                entry.current_txn_first_offset = None
                entry.last_timestamp = b.max_timestamp
            else:
                entry.maybe_update_epoch(b.producer_epoch)
                entry.batches.append(
                    _BatchMetadata(
                        b.last_sequence,
                        b.last_offset,
                        b.last_offset - b.base_offset,
                        b.max_timestamp,
                    )
                )
                entry.last_timestamp = b.max_timestamp
                if entry.current_txn_first_offset is None and b.is_transactional:
                    entry.current_txn_first_offset = b.base_offset
                    started.append((b.base_offset, b.producer_id))
                elif entry.current_txn_first_offset is not None and not b.is_transactional:
                    raise ValueError(
                        f"non-transactional batch at {b.base_offset} from producer "
                        f"{b.producer_id} inside its open transaction"
                    )
        # ProducerStateManager.update adds the transactions started in this append
        for first, pid in started:
            self.ongoing[first] = pid
        return completed

    def last_stable_offset(self, txn: _CompletedTxn) -> int:
        for first in sorted(self.ongoing):
            if self.ongoing[first] != txn.producer_id:
                return first
        return txn.last_offset + 1

    def complete(self, txn: _CompletedTxn) -> None:
        self.ongoing.pop(txn.first_offset, None)

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing) if self.ongoing else None

    def take_snapshot(self) -> tuple[int, bytes] | None:
        if self.last_map_offset <= self.last_snap_offset:
            return None
        self.last_snap_offset = self.last_map_offset
        entries = [self.producers[pid].snapshot_entry() for pid in sorted(self.producers)]
        return self.last_map_offset, format_producer_snapshot(entries)


# ---------------------------------------------------------------------------------------------
# segments (LogSegment + OffsetIndex + TimeIndex + TransactionIndex)


class SegmentState:
    """One segment in memory: its log bytes, batches and the three indexes as Kafka keeps them."""

    def __init__(
        self,
        base_offset: int,
        *,
        created_ms: int,
        index_interval_bytes: int,
        max_index_bytes: int,
        roll_jitter_ms: int = 0,
    ) -> None:
        self.base_offset = base_offset
        self.created_ms = created_ms
        self.index_interval_bytes = index_interval_bytes
        self.max_index_bytes = max_index_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.log = bytearray()
        self.batches: list[EncodedBatch] = []
        self.offset_index: list[tuple[int, int]] = []
        self.time_index: list[tuple[int, int]] = []
        self.txn_index: list[AbortedTxn] = []
        self.bytes_since_last_index_entry = 0
        # maxTimestampAndOffsetSoFar; None = UNKNOWN (then read from the time index)
        self._max_ts_and_offset: tuple[int, int] | None = None
        self.rolling_based_timestamp: int | None = None
        # AbstractIndex: maxEntries = roundDown(maxIndexSize, entrySize) / entrySize
        self.offset_index_max_entries = max_index_bytes // OFFSET_ENTRY.size
        self.time_index_max_entries = max_index_bytes // TIME_ENTRY.size

    @property
    def size(self) -> int:
        return len(self.log)

    @property
    def next_offset(self) -> int:
        return self.batches[-1].next_offset if self.batches else self.base_offset

    def max_timestamp_and_offset(self) -> tuple[int, int]:
        if self._max_ts_and_offset is None:
            # TimeIndex.lastEntry(): (NO_TIMESTAMP, baseOffset) when empty
            self._max_ts_and_offset = (
                self.time_index[-1] if self.time_index else (NO_TIMESTAMP, self.base_offset)
            )
        return self._max_ts_and_offset

    def offset_index_full(self) -> bool:
        return len(self.offset_index) >= self.offset_index_max_entries

    def time_index_full(self) -> bool:
        # TimeIndex.isFull reserves the last slot for the entry written on roll
        return len(self.time_index) >= self.time_index_max_entries - 1

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        if self.rolling_based_timestamp is None and self.batches:
            self.rolling_based_timestamp = self.batches[0].max_timestamp
        ts = -1 if self.rolling_based_timestamp is None else self.rolling_based_timestamp
        if ts >= 0:
            return message_timestamp - ts
        return now - self.created_ms

    def should_roll(
        self,
        *,
        segment_bytes: int,
        segment_ms: int,
        messages_size: int,
        max_timestamp: int,
        max_offset: int,
        now: int,
    ) -> bool:
        reached_roll_ms = (
            self.time_waited_for_roll(now, max_timestamp) > segment_ms - self.roll_jitter_ms
        )
        return (
            self.size > segment_bytes - messages_size
            or (self.size > 0 and reached_roll_ms)
            or self.offset_index_full()
            or self.time_index_full()
            or not 0 <= max_offset - self.base_offset <= _INT32_MAX
        )

    def _time_index_maybe_append(self, timestamp: int, offset: int, skip_full_check: bool) -> None:
        if not skip_full_check and self.time_index_full():
            raise ValueError("append to a full time index")
        last_ts, last_off = (
            self.time_index[-1] if self.time_index else (NO_TIMESTAMP, self.base_offset)
        )
        if self.time_index and offset < last_off:
            raise ValueError(f"time index offset {offset} below the last entry's {last_off}")
        if timestamp > last_ts:
            self.time_index.append((timestamp, offset))

    def append(
        self,
        largest_offset: int,
        largest_timestamp: int,
        shallow_offset_of_max_timestamp: int,
        batches: Sequence[EncodedBatch],
    ) -> int:
        """``LogSegment.append``; returns the position the chunk starts at."""
        data = b"".join(b.data for b in batches)
        if not data:
            return self.size
        physical_position = self.size
        if physical_position == 0:
            self.rolling_based_timestamp = largest_timestamp
        if not 0 <= largest_offset - self.base_offset <= _INT32_MAX:
            raise ValueError(f"offset {largest_offset} overflows segment {self.base_offset}")
        self.log += data
        self.batches.extend(batches)
        if largest_timestamp > self.max_timestamp_and_offset()[0]:
            self._max_ts_and_offset = (largest_timestamp, shallow_offset_of_max_timestamp)
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            if self.offset_index_full():
                raise ValueError("append to a full offset index")
            if not self.offset_index or largest_offset > self.offset_index[-1][0]:
                self.offset_index.append((largest_offset, physical_position))
            ts, off = self.max_timestamp_and_offset()
            self._time_index_maybe_append(ts, off, False)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += len(data)
        return physical_position

    def on_become_inactive(self) -> None:
        """``onBecomeInactiveSegment`` / ``close``: the final time index entry."""
        if self._max_ts_and_offset is None and not self.batches:
            return  # maxTimestampAndOffsetSoFar is UNKNOWN: close() appends nothing
        ts, off = self.max_timestamp_and_offset()
        self._time_index_maybe_append(ts, off, True)

    def rebuild_indexes(self) -> None:
        """Recompute the indexes from the batches as ``LogSegment.recover`` does (one batch at a
        time) - used after the writer rewrites a segment outside ``append``."""
        self.offset_index.clear()
        self.time_index.clear()
        self._max_ts_and_offset = None
        valid = 0
        last_entry = 0
        for b in self.batches:
            max_ts, _ = self.max_timestamp_and_offset()
            if b.max_timestamp > max_ts:
                self._max_ts_and_offset = (b.max_timestamp, b.last_offset)
            if valid - last_entry > self.index_interval_bytes:
                self.offset_index.append((b.last_offset, valid))
                ts, off = self.max_timestamp_and_offset()
                self._time_index_maybe_append(ts, off, False)
                last_entry = valid
            valid += b.size
        ts, off = self.max_timestamp_and_offset()
        self._time_index_maybe_append(ts, off, True)


# ---------------------------------------------------------------------------------------------


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


def new_topic_id(seed: str | None = None) -> str:
    """A Kafka ``Uuid`` string (topic or directory id); deterministic from ``seed``."""
    value = uuid.uuid5(uuid.NAMESPACE_URL, seed) if seed is not None else uuid.uuid4()
    return encode_kafka_uuid(value)


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
        self.producer_state = _ProducerState()
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

    def _records(self, records: Iterable[RecordLike], default_ts: int) -> list[WriteRecord]:
        out = []
        for r in records:
            if isinstance(r, WriteRecord):
                wr = r
            elif len(r) == 2:
                wr = WriteRecord(r[0], r[1])
            else:
                wr = WriteRecord(r[0], r[1], tuple(r[2]))  # type: ignore[misc]
            if wr.timestamp is None:
                wr = wr._replace(timestamp=default_ts)
            out.append(wr)
        if not out:
            raise ValueError("append needs at least one record")
        return out

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
        recs = self._records(records, now if timestamp is None else timestamp)
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
        (self.dir / segment_file_name(offset, SNAPSHOT_SUFFIX)).write_bytes(data)

    def _write_segment(
        self,
        seg: SegmentState,
        *,
        active: bool,
        preallocate_indexes: bool = False,
        torn_tail: bytes = b"",
    ) -> None:
        base = seg.base_offset
        log = bytes(seg.log) + torn_tail
        if active and self.log_preallocate and len(log) < self.segment_bytes:
            log += bytes(self.segment_bytes - len(log))
        (self.dir / segment_file_name(base, LOG_SUFFIX)).write_bytes(log)
        prealloc = self.segment_index_bytes if (active and preallocate_indexes) else 0
        (self.dir / segment_file_name(base, INDEX_SUFFIX)).write_bytes(
            format_offset_index(base, seg.offset_index, preallocate=prealloc)
        )
        (self.dir / segment_file_name(base, TIME_INDEX_SUFFIX)).write_bytes(
            format_time_index(base, seg.time_index, preallocate=prealloc)
        )
        txn_path = self.dir / segment_file_name(base, TXN_INDEX_SUFFIX)
        if seg.txn_index:
            txn_path.write_bytes(format_txn_index(seg.txn_index))
        elif txn_path.exists():
            txn_path.unlink()
        self._written_segments.add(base)

    def rewrite_segment_files(self, seg: SegmentState) -> None:
        """Write a (rolled) segment's files again after the writer changed it (compaction)."""
        self._write_segment(seg, active=False)

    def remove_segment_files(self, base_offset: int) -> None:
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            p = self.dir / segment_file_name(base_offset, suffix)
            if p.exists():
                p.unlink()
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
