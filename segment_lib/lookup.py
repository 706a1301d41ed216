"""Offset and timestamp lookups, answered exactly as the Kafka broker answers them.

**Offset -> position** (``UnifiedLog.read`` / ``LogSegment.translateOffset``): pick the segment
with the greatest base offset <= O, take the ``.index`` floor entry for O, scan batches from that
byte position to the first batch whose last offset is >= O. If that segment holds no such batch
(compaction removed its tail), continue with the next segment.

**Timestamp -> offset** (ListOffsets v1+, ``UnifiedLog.fetchOffsetByTimestamp``): the first
segment whose *largest timestamp* is >= T; inside it, the ``.timeindex`` floor entry for T gives
an offset, the ``.index`` floor of that offset a byte position, and the scan from there returns
the first record (control records included, as the broker does) with timestamp >= T and offset
>= the log start offset. Because each segment's time index keeps the running maximum, this is
the *earliest offset whose timestamp is >= T* even when CreateTime timestamps go backwards.
Special targets: -1 LATEST (log end offset), -2 EARLIEST (log start offset), -3 MAX_TIMESTAMP
(KIP-734: the first record carrying the partition's largest timestamp); they return
timestamp -1 except MAX_TIMESTAMP.

Indexes are used when present and well-formed; a missing or corrupt index falls back to scanning
from the start of the segment, which gives the same answer (the broker would rebuild the index).
"""

from __future__ import annotations

from dataclasses import dataclass

from segment_lib.errors import SegmentError
from segment_lib.log_file import open_log
from segment_lib.offset_index import read_offset_index
from segment_lib.partition import PartitionView, SegmentFiles
from segment_lib.time_index import read_time_index

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "BatchLocation",
    "TimestampAnswer",
    "find_offset",
    "find_offset_for_timestamp",
]

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


@dataclass(frozen=True, slots=True)
class BatchLocation:
    """Where an offset lives: its segment, and the byte position/offsets of its batch."""

    segment: SegmentFiles
    position: int
    batch_base_offset: int
    batch_last_offset: int
    size: int


@dataclass(frozen=True, slots=True)
class TimestampAnswer:
    """A ListOffsets answer. ``offset`` is -1 when no record qualifies; ``segment``/``position``
    locate the batch holding ``offset`` when it is a record in the log."""

    offset: int
    timestamp: int
    segment: SegmentFiles | None = None
    position: int = -1
    leader_epoch: int = -1

    @property
    def found(self) -> bool:
        return self.offset >= 0


def _index_position(segment: SegmentFiles, offset: int) -> int:
    """Byte position of the ``.index`` floor entry for ``offset`` (0 without a usable index)."""
    if segment.index is None:
        return 0
    try:
        return read_offset_index(segment.index, segment.base_offset).lookup_floor(offset).position
    except (SegmentError, OSError):
        return 0


def find_offset(view: PartitionView, offset: int) -> BatchLocation | None:
    """Locate the batch holding ``offset`` (or, after a compaction gap, the next batch).

    Returns ``None`` when ``offset`` is at or past the log end.
    """
    first = view.segment_for_offset(offset)
    if first is None:
        if not view.segments:
            return None
        first = view.segments[0]
    for segment in view.segments_from(first):
        start = _index_position(segment, offset) if segment is first else 0
        with open_log(segment.log) as log:
            if start > len(log):
                start = 0  # an index pointing past the data is stale: scan it all
            for batch in log.batches(start, allow_torn_tail=view.is_active(segment)):
                if batch.last_offset >= offset:
                    return BatchLocation(
                        segment, batch.position, batch.base_offset, batch.last_offset, batch.size
                    )
    return None


def _largest_timestamp(view: PartitionView, segment: SegmentFiles) -> int:
    """The segment's largest timestamp, from the time index's last entry for a rolled segment
    (as the broker loads it), else from a header scan."""
    if segment.time_index is not None and not view.is_active(segment):
        try:
            index = read_time_index(segment.time_index, segment.base_offset)
        except (SegmentError, OSError):
            index = None
        if index is not None and len(index):
            return index.last_entry.timestamp
    return view.summary(segment).max_timestamp


def _search_segment(
    view: PartitionView, segment: SegmentFiles, target: int, start_offset: int
) -> TimestampAnswer | None:
    position = 0
    if segment.time_index is not None:
        try:
            floor = read_time_index(segment.time_index, segment.base_offset).lookup_floor(target)
            position = _index_position(segment, max(floor.offset, start_offset))
        except (SegmentError, OSError):
            position = 0
    with open_log(segment.log) as log:
        if position > len(log):
            position = 0
        for batch in log.batches(position, allow_torn_tail=view.is_active(segment)):
            if batch.max_timestamp < target:
                continue
            for record in log.records(batch):
                if record.timestamp >= target and record.offset >= start_offset:
                    return TimestampAnswer(
                        record.offset,
                        record.timestamp,
                        segment,
                        batch.position,
                        batch.partition_leader_epoch,
                    )
    return None


def find_offset_for_timestamp(
    view: PartitionView, timestamp: int, *, log_start_offset: int | None = None
) -> TimestampAnswer:
    """ListOffsets for one partition directory (see the module docstring).

    Args:
        view: the partition directory.
        timestamp: target time in epoch ms, or -1 / -2 / -3 (latest / earliest / max timestamp).
        log_start_offset: the partition's log start offset (from ``log-start-offset-checkpoint``);
            defaults to the first offset held by the log.
    """
    if not view.segments:
        return TimestampAnswer(-1, -1)
    start = view.first_offset if log_start_offset is None else log_start_offset
    if timestamp == LATEST_TIMESTAMP:
        return TimestampAnswer(view.log_end_offset, -1)
    if timestamp == EARLIEST_TIMESTAMP:
        loc = find_offset(view, start)
        if loc is None:
            return TimestampAnswer(start, -1)
        return TimestampAnswer(start, -1, loc.segment, loc.position)
    if timestamp == MAX_TIMESTAMP:
        best = max((view.summary(s).max_timestamp for s in view.segments), default=-1)
        if best < 0:
            return TimestampAnswer(-1, -1)
        timestamp = best
    elif timestamp < 0:
        raise ValueError(f"timestamp {timestamp}: use epoch milliseconds >= 0, or -1, -2, -3")
    for segment in view.segments:
        if _largest_timestamp(view, segment) >= timestamp:
            answer = _search_segment(view, segment, timestamp, start)
            # The broker answers from the first such segment only, even when the log start
            # offset hides every qualifying record there.
            return answer if answer is not None else TimestampAnswer(-1, -1)
    return TimestampAnswer(-1, -1)
