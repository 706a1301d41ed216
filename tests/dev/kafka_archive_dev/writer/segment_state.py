"""One segment in memory (Kafka's ``LogSegment`` with its offset, time and transaction indexes).

:class:`SegmentState` holds a segment's log bytes, batches and index entries, and applies
Kafka's rules:

* **rolling** (``UnifiedLog.maybeRoll`` / ``LogSegment.shouldRoll``, here
  :meth:`~SegmentState.should_roll`), checked before each append with the append's size, max
  timestamp and last offset::

      size > segment.bytes - messagesSize
      or (size > 0 and timeWaitedForRoll(now, maxTimestampInMessages) > segment.ms - rollJitterMs)
      or offset index full or time index full (its last slot is reserved for the roll entry)
      or the append's last offset not within int32 of the base offset

  where ``timeWaitedForRoll`` is ``maxTimestampInMessages - <largest timestamp of the segment's
  first append>`` when that timestamp is >= 0, else ``now - <segment creation time>``.
* **offset index** (``LogSegment.append``): *before* adding an append's bytes, if more than
  ``index.interval.bytes`` were appended since the last entry, add ``(last offset of this append,
  position where it starts)``; so a segment's first append is never indexed and an entry's
  offset may lie in a later batch than the one at its position (follower chunks).
* **time index**: alongside each offset index entry, ``maybeAppend(maxTimestampSoFar,
  offsetOfMaxTimestampSoFar)`` (only when the timestamp grew); once more when the segment is
  rolled (``onBecomeInactiveSegment``) or closed. ``offsetOfMaxTimestampSoFar`` is the last offset
  of the earliest batch holding the largest timestamp (Kafka's *shallow* offset, since 3.8:
  KAFKA-16310/16341; :func:`~kafka_archive_dev.writer.append.chunk_max_timestamp`). Brokers before
  3.8 used, for uncompressed CreateTime appends on the leader, the offset of the first *record*
  holding the batch's largest timestamp; the writer's ``time_index_record_offsets=True`` passes
  that offset instead (real 3.6 time indexes match it).

Nothing here touches the disk: the writer formats a segment's files from this state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kafka_archive_dev.writer.encode import EncodedBatch
from segment_lib.offset_index import ENTRY as OFFSET_ENTRY
from segment_lib.records import NO_TIMESTAMP
from segment_lib.time_index import ENTRY as TIME_ENTRY
from segment_lib.txn_index import AbortedTxn

__all__ = ["SegmentState"]

_INT32_MAX: Final = (1 << 31) - 1


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
