"""Recognising record batches in raw bytes, without trusting a file name or a length field.

Two questions the readers need answered from bytes alone:

* :func:`find_next_batch`: after a batch whose length field runs past the end of the data, is
  there a valid magic-2 batch *later* in the bytes? If so the length field is corrupt (a torn
  tail only ever ends a file: nothing valid follows it), and the reader must say so instead of
  stopping quietly.
* :func:`header_problem` / :func:`log_problem`: do these bytes start like a Kafka ``.log``?
  The first is a cheap layout check (magic byte, length field, offset) for files *named* like
  segments; the second also demands a complete first batch with a valid checksum, for files
  whose name says nothing (a renamed copy).

Pure functions of a buffer; positions are buffer positions.
"""

from __future__ import annotations

import struct
from typing import Final

from segment_lib.batch_search import FoundBatch, find_next_batch
from segment_lib.legacy import legacy_message_size_bounds
from segment_lib.record_batch import MIN_BATCH_LENGTH
from segment_lib.records import MAGIC_OFFSET

__all__ = ["FoundBatch", "find_next_batch", "header_problem", "log_problem"]

_OFFSET_SIZE: Final = struct.Struct(">qi")


def header_problem(buf: bytes | memoryview) -> tuple[int, str] | None:
    """Why ``buf`` does not start like a Kafka log, as ``(byte position, reason)``, or ``None``.

    A layout check only: offset, length and magic of the first batch. Accepted: an empty
    buffer, fewer bytes than a header (a torn first batch), and zero-filled preallocated space.
    """
    view = memoryview(buf)
    if len(view) <= MAGIC_OFFSET:
        return None
    base, size = _OFFSET_SIZE.unpack_from(view, 0)
    magic = view[MAGIC_OFFSET]
    if base == 0 and size == 0 and not any(view[: min(len(view), 4096)]):
        return None  # preallocated, nothing written yet
    if magic not in (0, 1, 2):
        return MAGIC_OFFSET, f"byte {MAGIC_OFFSET} (the magic byte) is {magic}, not 0, 1 or 2"
    minimum = MIN_BATCH_LENGTH if magic == 2 else legacy_message_size_bounds(magic)
    if size < minimum:
        return 8, f"bytes 8-11 (the batch length) hold {size}, less than a header ({minimum})"
    if base < 0:
        return 0, f"bytes 0-7 (the base offset) hold {base}, a negative offset"
    return None


def log_problem(buf: bytes | memoryview) -> tuple[int, str] | None:
    """Like :func:`header_problem`, but also requires a complete first batch whose checksum
    matches (CRC-32C for magic 2, CRC-32 before): strong evidence that the bytes are a log."""
    from segment_lib.errors import SegmentError
    from segment_lib.log_file import iter_batches

    view = memoryview(buf)
    if len(view) == 0:
        return 0, "the file is empty"
    problem = header_problem(view)
    if problem is not None:
        return problem
    if len(view) <= MAGIC_OFFSET or not any(view[: min(len(view), 4096)]):
        return 0, "the bytes are too short or all zero: no complete batch to recognise"
    try:
        next(iter_batches(view, 0, verify_crc=True), None)
    except SegmentError as exc:
        return exc.position or 0, f"the first batch is not valid: {exc.detail}"
    return None
