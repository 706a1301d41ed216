"""One segment's index state as Kafka's ``LogSegment`` keeps it: rolling and the sparse indexes.

:class:`SegmentIndexes` holds no bytes, only what decides a segment's files besides its batches:
its size, the ``.index`` and ``.timeindex`` entries, the ``.txnindex`` entries and the
largest timestamp so far. It applies Kafka's rules:

* **rolling** (``UnifiedLog.maybeRoll`` / ``LogSegment.shouldRoll``, here
  :meth:`~SegmentIndexes.should_roll`), checked before each append with the append's size, max
  timestamp and last offset::

      size > segment.bytes - messagesSize
      or (size > 0 and timeWaitedForRoll(now, maxTimestampInMessages) > segment.ms - rollJitterMs)
      or offset index full or time index full (its last slot is reserved for the roll entry)
      or the append's last offset not within int32 of the base offset

  where ``timeWaitedForRoll`` is ``maxTimestampInMessages - <largest timestamp of the segment's
  first append>`` when that timestamp is >= 0, else ``now - <segment creation time>``.
* **offset index** (``LogSegment.append``), in two generations:

  - *per append* (brokers before the batch loop of ``LogSegment.append``; still what their
    followers wrote for multi-batch fetch chunks): *before* adding an append's bytes, if more
    than ``index.interval.bytes`` were appended since the last entry, add ``(last offset of the
    append, position where the append starts)``; so an entry's offset may lie in a later batch
    than the one at its position;
  - *per batch* (current ``LogSegment.append``: ``for (RecordBatch batch : records.batches())``):
    the same test before each batch of the append, the entry being ``(batch.lastOffset, the
    batch's position)``.

  A leader appends one magic-2 batch per produce request (``LogValidator`` refuses more), so
  for a leader's log both rules give the same entries; they differ only for older followers.
* **time index**: alongside each offset index entry, ``maybeAppend(maxTimestampSoFar,
  offsetOfMaxTimestampSoFar)`` (only when the timestamp grew); once more when the segment is
  rolled (``onBecomeInactiveSegment``) or closed (``LogSegment.close``), unless nothing was
  appended.

Nothing here touches the disk: :mod:`segment_lib.segment_builder` and the dev writer (tests)
format a segment's files from this state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from segment_lib.offset_index import ENTRY as OFFSET_ENTRY
from segment_lib.records import NO_TIMESTAMP
from segment_lib.time_index import ENTRY as TIME_ENTRY
from segment_lib.txn_index import AbortedTxn

__all__ = ["INT32_MAX", "IndexedBatch", "SegmentIndexes"]

INT32_MAX: Final = (1 << 31) - 1


class IndexedBatch(Protocol):
    """What the per-batch index rule reads of a batch (``BatchHeader`` has it)."""

    @property
    def size(self) -> int: ...

    @property
    def last_offset(self) -> int: ...

    @property
    def max_timestamp(self) -> int: ...


class SegmentIndexes:
    """One segment's size, roll state and index entries as Kafka keeps them (no bytes).

    Attributes:
        offset_index: ``(offset, position)`` entries, absolute offsets.
        time_index: ``(timestamp, offset)`` entries, absolute offsets.
        txn_index: the aborted transactions whose marker is in this segment, in marker order.
    """

    def __init__(
        self,
        base_offset: int,
        *,
        created_ms: int = 0,
        index_interval_bytes: int = 4096,
        max_index_bytes: int = 10 * 1024 * 1024,
        roll_jitter_ms: int = 0,
    ) -> None:
        self.base_offset = base_offset
        self.created_ms = created_ms
        self.index_interval_bytes = index_interval_bytes
        self.max_index_bytes = max_index_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.size = 0
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

    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """``(maxTimestampSoFar, offsetOfMaxTimestampSoFar)`` of the segment."""
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
        """``LogSegment.shouldRoll`` for an append of ``messages_size`` bytes."""
        reached_roll_ms = (
            self.time_waited_for_roll(now, max_timestamp) > segment_ms - self.roll_jitter_ms
        )
        return (
            self.size > segment_bytes - messages_size
            or (self.size > 0 and reached_roll_ms)
            or self.offset_index_full()
            or self.time_index_full()
            or not 0 <= max_offset - self.base_offset <= INT32_MAX
        )

    def time_index_maybe_append(self, timestamp: int, offset: int, skip_full_check: bool) -> None:
        """``TimeIndex.maybeAppend``: an entry only when ``timestamp`` grew."""
        if not skip_full_check and self.time_index_full():
            raise ValueError("append to a full time index")
        last_ts, last_off = (
            self.time_index[-1] if self.time_index else (NO_TIMESTAMP, self.base_offset)
        )
        if self.time_index and offset < last_off:
            raise ValueError(f"time index offset {offset} below the last entry's {last_off}")
        if timestamp > last_ts:
            self.time_index.append((timestamp, offset))

    def _maybe_index(self, last_offset: int, position: int) -> None:
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            if self.offset_index_full():
                raise ValueError("append to a full offset index")
            if not self.offset_index or last_offset > self.offset_index[-1][0]:
                self.offset_index.append((last_offset, position))
            ts, off = self.max_timestamp_and_offset()
            self.time_index_maybe_append(ts, off, False)
            self.bytes_since_last_index_entry = 0

    def index_append(
        self,
        largest_offset: int,
        largest_timestamp: int,
        offset_of_max_timestamp: int,
        size: int,
    ) -> int:
        """``LogSegment.append`` of one append of ``size`` bytes, *per append* rule (module
        docstring); returns the position the append starts at."""
        position = self.size
        if size <= 0:
            return position
        self._check_in_range(largest_offset)
        if position == 0:
            self.rolling_based_timestamp = largest_timestamp
        if largest_timestamp > self.max_timestamp_and_offset()[0]:
            self._max_ts_and_offset = (largest_timestamp, offset_of_max_timestamp)
        self._maybe_index(largest_offset, position)
        self.bytes_since_last_index_entry += size
        self.size += size
        return position

    def index_append_batches(
        self, batches: Sequence[IndexedBatch], offsets_of_max: Sequence[int] | None = None
    ) -> int:
        """``LogSegment.append`` of one append of ``batches``, *per batch* rule (module
        docstring); ``offsets_of_max[i]`` replaces batch i's last offset as the offset of its
        max timestamp (pre-3.8 leaders' record rule). Returns the position the append starts at.
        """
        start = self.size
        if not batches:
            return start
        self._check_in_range(batches[-1].last_offset)
        if start == 0:
            # rollingBasedTimestamp: the first batch's max timestamp (loadFirstBatchTimestamp;
            # the per-batch LogSegment.append no longer takes the append's largest timestamp)
            self.rolling_based_timestamp = batches[0].max_timestamp
        position = start
        for i, b in enumerate(batches):
            if b.max_timestamp > self.max_timestamp_and_offset()[0]:
                off = b.last_offset if offsets_of_max is None else offsets_of_max[i]
                self._max_ts_and_offset = (b.max_timestamp, off)
            self._maybe_index(b.last_offset, position)
            position += b.size
            self.bytes_since_last_index_entry += b.size
        self.size = position
        return start

    def _check_in_range(self, largest_offset: int) -> None:
        if not 0 <= largest_offset - self.base_offset <= INT32_MAX:
            raise ValueError(f"offset {largest_offset} overflows segment {self.base_offset}")

    def restart(self) -> None:
        """What a clean broker restart does to the segment: ``LogSegment.close`` (the final time
        index entry) and then a new ``LogSegment`` for the same files, whose
        ``bytesSinceLastIndexEntry`` starts at 0 and whose largest timestamp so far is read
        back from the time index's last entry."""
        self.on_become_inactive()
        self.bytes_since_last_index_entry = 0
        self._max_ts_and_offset = None

    def on_become_inactive(self) -> None:
        """``onBecomeInactiveSegment`` / ``close``: the final time index entry."""
        if self._max_ts_and_offset is None and self.size == 0:
            return  # maxTimestampAndOffsetSoFar is UNKNOWN: close() appends nothing
        ts, off = self.max_timestamp_and_offset()
        self.time_index_maybe_append(ts, off, True)
