"""Kafka's time index (``<base offset>.timeindex``): timestamp -> offset.

Format (``TimeIndex.java``): a flat array of 12-byte big-endian entries, each
``timestamp:int64`` (the largest record timestamp seen so far in the segment) and
``relativeOffset:int32`` (offset - base offset of the record carrying that timestamp).

Kafka appends (``maybeAppend``) only when the timestamp is *greater* than the last entry's and
refuses an offset smaller than the last entry's; when a segment is rolled or closed it appends
the final max timestamp once more (skipped when equal to the last entry), which is why an index
is never "full" before its last slot. :func:`parse_time_index` checks, raising
:class:`~segment_lib.errors.CorruptIndexError` at the offending entry's byte:

* the length is a multiple of 12 (Kafka's ``sanityCheck``);
* relative offsets are >= 0 (Kafka: last offset >= base offset) and never decrease;
* timestamps never decrease (Kafka's ``sanityCheck`` only compares last with first; writing
  makes them strictly increasing, equal neighbours are tolerated here).

Zero-filled tail: an active segment's time index is preallocated with zeros. Timestamps of
appended entries strictly increase from at least 0, so an all-zero entry can only be real in
slot 0 (a record with timestamp 0 at the base offset). Trailing all-zero entries are dropped
(counted in :attr:`TimeIndex.tail_bytes`); a file that is zero throughout reads as empty, which
loses nothing: lookups then answer ``(-1, base_offset)``, the same offset as ``(0, base_offset)``.
"""

from __future__ import annotations

import operator
import os
import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, NamedTuple

from segment_lib._index_util import Buffer, pad_preallocated, read_index_file, valid_length
from segment_lib.errors import CorruptIndexError

__all__ = [
    "ENTRY",
    "NO_TIMESTAMP",
    "TimeIndex",
    "TimestampOffset",
    "format_time_index",
    "parse_time_index",
    "read_time_index",
]

ENTRY: Final = struct.Struct(
    ">"
    "q"  # timestamp: max record timestamp so far (ms)
    "i"  # relativeOffset: offset - baseOffset of the record with that timestamp
)
NO_TIMESTAMP: Final = -1  # RecordBatch.NO_TIMESTAMP
_INT32_MAX: Final = (1 << 31) - 1
_INT64_MAX: Final = (1 << 63) - 1


class TimestampOffset(NamedTuple):
    """A time index entry with the absolute offset (Kafka's ``TimestampOffset``)."""

    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class TimeIndex:
    """A parsed time index: parallel int64 timestamps and int32 relative offsets."""

    base_offset: int
    timestamps: array[int]
    relative_offsets: array[int]
    tail_bytes: int = 0  # zero-filled preallocated bytes after the last entry

    @property
    def entries(self) -> int:
        """Number of valid entries (Kafka's ``entries()``)."""
        return len(self.timestamps)

    def __len__(self) -> int:
        return len(self.timestamps)

    def __iter__(self) -> Iterator[TimestampOffset]:
        base = self.base_offset
        for ts, rel in zip(self.timestamps, self.relative_offsets, strict=True):
            yield TimestampOffset(ts, base + rel)

    def entry(self, n: int) -> TimestampOffset:
        """The ``n``-th entry (IndexError when out of range)."""
        return TimestampOffset(self.timestamps[n], self.base_offset + self.relative_offsets[n])

    @property
    def last_entry(self) -> TimestampOffset:
        """Last entry, or ``(-1, base_offset)`` when empty (Kafka's ``lastEntry``)."""
        if not self.timestamps:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(-1)

    def lookup_floor(self, timestamp: int) -> TimestampOffset:
        """Kafka's ``TimeIndex.lookup``: the entry with the largest timestamp <= ``timestamp``.

        With none, ``(-1, base_offset)``. Among entries with equal timestamps (never written by
        Kafka, tolerated by the parser) the first is returned, the safe choice for a
        search-forward-from-here caller.
        """
        ts = self.timestamps
        slot = bisect_right(ts, timestamp) - 1
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(bisect_left(ts, ts[slot], 0, slot))


def parse_time_index(data: Buffer, base_offset: int) -> TimeIndex:
    """Parse the bytes of a ``.timeindex`` file; error positions are relative to ``data``."""
    end = valid_length(data, ENTRY.size, "time index")
    timestamps = array("q")
    rel = array("i")
    for ts, r in ENTRY.iter_unpack(memoryview(data)[:end]):
        timestamps.append(ts)
        rel.append(r)
    _check(timestamps, rel)
    return TimeIndex(base_offset, timestamps, rel, len(data) - end)


def _check(ts: array[int], rel: array[int]) -> None:
    # Fast C-level checks first; only walk entry by entry to report where a check failed.
    if (
        all(map(operator.le, ts, ts[1:]))
        and all(map(operator.le, rel, rel[1:]))
        and (not rel or rel[0] >= 0)
    ):
        return
    for i in range(len(ts)):
        where = i * ENTRY.size
        if rel[i] < 0:
            raise CorruptIndexError(
                f"entry {i} has relative offset {rel[i]}, i.e. below the base offset",
                position=where,
                expected="relative offset >= 0",
            )
        if i and ts[i] < ts[i - 1]:
            raise CorruptIndexError(
                f"entry {i} timestamp {ts[i]} is below the previous entry's {ts[i - 1]}",
                position=where,
                expected="non-decreasing timestamps",
            )
        if i and rel[i] < rel[i - 1]:
            raise CorruptIndexError(
                f"entry {i} relative offset {rel[i]} is below the previous entry's {rel[i - 1]}",
                position=where,
                expected="non-decreasing offsets",
            )


def read_time_index(path: str | os.PathLike[str], base_offset: int | None = None) -> TimeIndex:
    """Read and parse a ``.timeindex`` file; the base offset defaults to the one in its name."""
    return read_index_file(path, ".timeindex", base_offset, parse_time_index)


def format_time_index(
    base_offset: int, entries: Iterable[tuple[int, int]], *, preallocate: int = 0
) -> bytes:
    """Bytes of a ``.timeindex`` holding ``(timestamp, offset)`` entries.

    Entries must follow Kafka's append rules (timestamps strictly increasing from >= 0, offsets
    non-decreasing, within int32 of the base), else ValueError. ``preallocate`` pads with zeros
    to that many bytes (rounded down to whole entries), like an active segment's index.
    """
    out = bytearray()
    last_ts = NO_TIMESTAMP
    last_rel = 0
    for timestamp, offset in entries:
        rel = offset - base_offset
        if not last_ts < timestamp <= _INT64_MAX:
            raise ValueError(f"timestamp {timestamp} does not increase (or is not an int64)")
        if not last_rel <= rel <= _INT32_MAX:
            raise ValueError(f"offset {offset} decreases or is not within int32 of the base")
        out += ENTRY.pack(timestamp, rel)
        last_ts, last_rel = timestamp, rel
    return pad_preallocated(out, preallocate, ENTRY.size)
