"""Kafka's offset index (``<base offset>.index``): offset -> byte position in the ``.log``.

Format (``OffsetIndex.java``): a flat array of 8-byte big-endian entries, each
``relativeOffset:int32`` (offset - segment base offset) and ``position:int32`` (byte position in
the segment's ``.log`` of a batch at or before the one holding that offset). Entries are sparse:
one roughly every ``index.interval.bytes`` of log.

Invariants Kafka maintains when appending, and which :func:`parse_offset_index` checks:

* relative offsets are >= 0 and strictly increasing (``append`` refuses anything else);
* positions are >= 0 and never decrease (each entry is the log size at append time);
* the length is a multiple of 8 (``sanityCheck``).

Violations raise :class:`~segment_lib.errors.CorruptIndexError` whose ``position`` is the byte
where the offending entry starts.

Zero-filled tail: an active segment's index is preallocated and zero beyond the last entry. Kafka
never writes an entry with position 0 (an entry is only added once more than
``index.interval.bytes`` >= 0 bytes precede it), so all-zero entries are never real: trailing ones
are dropped and counted in :attr:`OffsetIndex.tail_bytes`.
"""

from __future__ import annotations

import operator
import os
import struct
import sys
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, NamedTuple

from segment_lib._index_util import Buffer, pad_preallocated, read_index_file, valid_length
from segment_lib.errors import CorruptIndexError

__all__ = [
    "ENTRY",
    "OffsetIndex",
    "OffsetPosition",
    "format_offset_index",
    "parse_offset_index",
    "read_offset_index",
]

ENTRY: Final = struct.Struct(
    ">"
    "i"  # relativeOffset: offset - baseOffset
    "i"  # position: byte position of a batch in the .log
)
_INT32: Final = array("i").itemsize
assert _INT32 == 4, "array('i') must hold 32-bit ints"
_INT32_MAX: Final = (1 << 31) - 1


class OffsetPosition(NamedTuple):
    """An index entry with the absolute offset (Kafka's ``OffsetPosition``)."""

    offset: int
    position: int


@dataclass(frozen=True, slots=True)
class OffsetIndex:
    """A parsed offset index: two parallel int32 arrays plus the segment's base offset."""

    base_offset: int
    relative_offsets: array[int]
    positions: array[int]
    tail_bytes: int = 0  # zero-filled preallocated bytes after the last entry

    @property
    def entries(self) -> int:
        """Number of valid entries (Kafka's ``entries()``)."""
        return len(self.relative_offsets)

    def __len__(self) -> int:
        return len(self.relative_offsets)

    def __iter__(self) -> Iterator[OffsetPosition]:
        base = self.base_offset
        for rel, pos in zip(self.relative_offsets, self.positions, strict=True):
            yield OffsetPosition(base + rel, pos)

    def entry(self, n: int) -> OffsetPosition:
        """The ``n``-th entry (IndexError when out of range, negative ``n`` counts from the end)."""
        return OffsetPosition(self.base_offset + self.relative_offsets[n], self.positions[n])

    @property
    def last_offset(self) -> int:
        """Offset of the last entry, or the base offset when empty (Kafka's ``lastOffset``)."""
        return self.base_offset + (self.relative_offsets[-1] if self.relative_offsets else 0)

    def lookup_floor(self, offset: int) -> OffsetPosition:
        """Kafka's ``OffsetIndex.lookup``: the entry with the largest offset <= ``offset``.

        When there is none (empty index or ``offset`` below the first entry) the answer is
        ``(base_offset, 0)``: start reading the ``.log`` from its beginning.
        """
        slot = bisect_right(self.relative_offsets, offset - self.base_offset) - 1
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(slot)


def parse_offset_index(data: Buffer, base_offset: int) -> OffsetIndex:
    """Parse the bytes of an ``.index`` file; positions in errors are relative to ``data``."""
    end = valid_length(data, ENTRY.size, "offset index")
    words = array("i")
    words.frombytes(memoryview(data)[:end])
    if sys.byteorder == "little":
        words.byteswap()  # the file is big-endian
    rel, pos = words[0::2], words[1::2]
    _check(rel, pos)
    return OffsetIndex(base_offset, rel, pos, len(data) - end)


def _check(rel: array[int], pos: array[int]) -> None:
    # Fast C-level checks first; only walk entry by entry to report where a check failed.
    increasing = all(map(operator.lt, rel, rel[1:]))
    non_decreasing = all(map(operator.le, pos, pos[1:]))
    if increasing and non_decreasing and (not rel or (rel[0] >= 0 and pos[0] >= 0)):
        return
    for i, (r, p) in enumerate(zip(rel, pos, strict=True)):
        where = i * ENTRY.size
        if r < 0:
            raise CorruptIndexError(
                f"entry {i} has relative offset {r}, i.e. below the base offset",
                position=where,
                expected="relative offset >= 0",
            )
        if p < 0:
            raise CorruptIndexError(
                f"entry {i} has negative position {p}", position=where, expected="position >= 0"
            )
        if i and r <= rel[i - 1]:
            raise CorruptIndexError(
                f"entry {i} relative offset {r} does not increase (previous {rel[i - 1]})",
                position=where,
                expected="strictly increasing offsets",
            )
        if i and p < pos[i - 1]:
            raise CorruptIndexError(
                f"entry {i} position {p} is below the previous entry's {pos[i - 1]}",
                position=where,
                expected="non-decreasing positions",
            )


def read_offset_index(path: str | os.PathLike[str], base_offset: int | None = None) -> OffsetIndex:
    """Read and parse an ``.index`` file; the base offset defaults to the one in its name."""
    return read_index_file(path, ".index", base_offset, parse_offset_index)


def format_offset_index(
    base_offset: int, entries: Iterable[tuple[int, int]], *, preallocate: int = 0
) -> bytes:
    """Bytes of an ``.index`` holding ``(offset, position)`` entries.

    ``preallocate`` pads with zeros to that many bytes (rounded down to whole entries), as Kafka
    leaves an active segment's index. Raises ValueError for entries Kafka could not have written.
    """
    out = bytearray()
    last = -1
    last_pos = 1  # Kafka's first entry always has position > 0 (see the module docstring)
    for offset, position in entries:
        rel = offset - base_offset
        if not last < rel <= _INT32_MAX:
            raise ValueError(f"offset {offset} is not increasing or not within int32 of the base")
        if not last_pos <= position <= _INT32_MAX:
            raise ValueError(f"position {position} is not positive, decreasing or beyond int32")
        out += ENTRY.pack(rel, position)
        last, last_pos = rel, position
    return pad_preallocated(out, preallocate, ENTRY.size)
