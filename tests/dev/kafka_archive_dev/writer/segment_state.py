"""One segment in memory: its bytes and batches on top of segment_lib's index rules.

:class:`SegmentState` is :class:`segment_lib.segment_state.SegmentIndexes` (Kafka's rolling,
offset/time/transaction index rules; read its docstring) plus the segment's log bytes and
:class:`~kafka_archive_dev.writer.encode.EncodedBatch` list, which the writer's compaction
rewrites, and :meth:`~SegmentState.rebuild_indexes` (``LogSegment.recover``).

The time index's ``offsetOfMaxTimestampSoFar`` is the last offset of the earliest batch holding
the largest timestamp (Kafka's *shallow* offset, since 3.8: KAFKA-16310/16341;
:func:`~kafka_archive_dev.writer.append.chunk_max_timestamp`). Brokers before 3.8 used, for
uncompressed CreateTime appends on the leader, the offset of the first *record* holding the
batch's largest timestamp; the writer's ``time_index_record_offsets=True`` passes that offset
instead (real 3.6 time indexes match it).

Nothing here touches the disk: the writer formats a segment's files from this state.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_archive_dev.writer.encode import EncodedBatch
from segment_lib.segment_state import SegmentIndexes

__all__ = ["SegmentState"]


class SegmentState(SegmentIndexes):
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
        super().__init__(
            base_offset,
            created_ms=created_ms,
            index_interval_bytes=index_interval_bytes,
            max_index_bytes=max_index_bytes,
            roll_jitter_ms=roll_jitter_ms,
        )
        self.log = bytearray()
        self.batches: list[EncodedBatch] = []

    @property
    def next_offset(self) -> int:
        return self.batches[-1].next_offset if self.batches else self.base_offset

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        # a segment rebuilt outside append (compaction) loads it from its first batch
        if self.rolling_based_timestamp is None and self.batches:
            self.rolling_based_timestamp = self.batches[0].max_timestamp
        return super().time_waited_for_roll(now, message_timestamp)

    def append(
        self,
        largest_offset: int,
        largest_timestamp: int,
        shallow_offset_of_max_timestamp: int,
        batches: Sequence[EncodedBatch],
    ) -> int:
        """``LogSegment.append`` (per append rule); returns the position the chunk starts at."""
        data = b"".join(b.data for b in batches)
        position = self.index_append(
            largest_offset, largest_timestamp, shallow_offset_of_max_timestamp, len(data)
        )
        self.log += data
        self.batches.extend(batches)
        return position

    def rebuild_indexes(self) -> None:
        """Recompute the indexes from the batches as ``LogSegment.recover`` does (one batch at a
        time) - used after the writer rewrites a segment outside ``append``."""
        self.offset_index.clear()
        self.time_index.clear()
        self._max_ts_and_offset = None
        self.size = len(self.log)
        valid = 0
        last_entry = 0
        for b in self.batches:
            max_ts, _ = self.max_timestamp_and_offset()
            if b.max_timestamp > max_ts:
                self._max_ts_and_offset = (b.max_timestamp, b.last_offset)
            if valid - last_entry > self.index_interval_bytes:
                self.offset_index.append((b.last_offset, valid))
                ts, off = self.max_timestamp_and_offset()
                self.time_index_maybe_append(ts, off, False)
                last_entry = valid
            valid += b.size
        ts, off = self.max_timestamp_and_offset()
        self.time_index_maybe_append(ts, off, True)
