"""Finding a valid magic-2 record batch later in raw bytes: :func:`find_next_batch`.

After a batch whose length field runs past the end of the data, is there a valid batch *later*
in the bytes? If so the length field is corrupt (a torn tail only ever ends a file: nothing
valid follows it), and the reader must say so instead of stopping quietly.

A module of its own (re-exported by :mod:`segment_lib.sniff`) so that
:mod:`segment_lib.log_file` uses it and :mod:`segment_lib.sniff` uses the log reader without
the two importing each other. Pure functions of a buffer; positions are buffer positions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from segment_lib._crc import crc32c
from segment_lib.record_batch import BATCH_HEADER, CRC_START, MIN_BATCH_LENGTH, RECORDS_START
from segment_lib.records import LOG_OVERHEAD, MAGIC_OFFSET

__all__ = ["FoundBatch", "find_next_batch"]
#: bytes searched per step of :func:`find_next_batch` (a copy of this much is made per step)
_WINDOW: Final = 1 << 20
_MAGIC_V2: Final = b"\x02"
#: a possible batch start: zero high bytes of base offset and length, magic 2 at +16
_CANDIDATE: Final = re.compile(rb"\x00.{7}\x00.{7}\x02", re.DOTALL)

_CODEC_MAX: Final = 4


class FoundBatch:
    """A magic-2 batch found by :func:`find_next_batch`: where it starts, its base offset."""

    __slots__ = ("base_offset", "position")

    def __init__(self, position: int, base_offset: int) -> None:
        self.position = position
        self.base_offset = base_offset


def _valid_v2_at(view: memoryview, pos: int, limit: int, min_base_offset: int) -> int | None:
    """The base offset of a complete magic-2 batch at ``pos`` whose CRC-32C checks, else None.

    Cheap field checks come first so random bytes rarely reach the CRC.
    """
    if pos + RECORDS_START > limit:
        return None
    (base, length, _epoch, magic, crc, attrs, delta, _ft, _mt, _pid, _pe, _bs, count) = (
        BATCH_HEADER.unpack_from(view, pos)
    )
    if magic != 2 or length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + length > limit:
        return None
    if base < min_base_offset or delta < 0 or count < 0 or (attrs & 0x07) > _CODEC_MAX:
        return None
    if crc32c(view[pos + CRC_START : pos + LOG_OVERHEAD + length]) != crc:
        return None
    return int(base)


def find_next_batch(
    buf: bytes | memoryview, start: int, limit: int, *, min_base_offset: int = 0
) -> FoundBatch | None:
    """The first position in ``[start, limit)`` holding a complete magic-2 batch with a valid
    CRC-32C and a base offset ``>= min_base_offset``, or ``None``.

    Cost is linear in the bytes searched up to the first hit (a copy of at most 1 MiB at a
    time, searched for the magic byte in C); a real torn tail is at most one batch long, and
    a corrupt length field is usually followed closely by the next batch. Not searched for:
    legacy (magic 0/1) messages, and batches with a base offset of 2^56 or more or a length of
    2^24 or more (the high bytes of both fields are zero in every batch Kafka writes with the
    default size limits; a larger one is then reported as a torn tail, as before).
    """
    view = memoryview(buf)
    limit = min(limit, len(view))  # a caller's end past the buffer: nothing is there
    window_start = start
    while window_start + RECORDS_START <= limit:
        window_end = min(limit, window_start + _WINDOW)
        # the window's bytes plus the 16 after it: a batch at p has its magic at p + 16
        chunk = bytes(view[window_start : window_end + MAGIC_OFFSET])
        for p in _candidates(chunk, window_end - window_start):
            base = _valid_v2_at(view, window_start + p, limit, min_base_offset)
            if base is not None:
                return FoundBatch(window_start + p, base)
        window_start = window_end
    return None


def _candidates(chunk: bytes, span: int) -> Iterator[int]:
    """Positions ``p < span`` of ``chunk`` where a batch may start: magic 2 at ``p + 16`` and
    zero high bytes of base offset and length. Two C-speed strategies: finding the magic byte
    where it is rare (zero runs, text), the regex engine where it is common (compressed)."""
    if chunk.count(_MAGIC_V2) * 4096 < len(chunk):  # under 256 per MiB
        i = chunk.find(_MAGIC_V2, MAGIC_OFFSET)
        while 0 <= i < span + MAGIC_OFFSET:
            p = i - MAGIC_OFFSET
            if chunk[p] == 0 and chunk[p + 8] == 0:
                yield p
            i = chunk.find(_MAGIC_V2, i + 1)
        return
    m = _CANDIDATE.search(chunk, 0, span + MAGIC_OFFSET)
    while m is not None:
        yield m.start()
        # searched again from one byte on, so overlapping candidates are all tried
        m = _CANDIDATE.search(chunk, m.start() + 1, span + MAGIC_OFFSET)
