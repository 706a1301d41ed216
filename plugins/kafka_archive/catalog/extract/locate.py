"""Where an object's bytes differ from what its manifest recorded (error path only).

When the whole-object checksum of :func:`~kafka_archive.catalog.extract.from_store.
extract_object` differs from the manifest's, :func:`integrity_error` reads the object again
and says what it can: two reads that differ (the store returned different bytes), a second read
that matches (the first read went wrong), the batch failing its own check, or the single
header byte no batch CRC covers that explains the CRC-32C difference
(:func:`~kafka_archive.catalog.integrity.locate_single_byte_error`).
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_archive.catalog.extract.extractor import SegmentExtractor
from kafka_archive.catalog.extract.framing import (
    MIN_SIZE_FIELD,
    OFFSET_SIZE,
    UNCOVERED_LEGACY,
    UNCOVERED_V2,
)
from kafka_archive.catalog.integrity import (
    ObjectChecksum,
    ObjectIntegrityError,
    crc32c_update,
    locate_single_byte_error,
)
from kafka_archive.store import ObjectStore
from segment_lib.errors import SegmentError
from segment_lib.records import LOG_OVERHEAD, MAGIC_OFFSET

__all__ = ["integrity_error"]


def integrity_error(
    store: ObjectStore,
    key: str,
    size: int,
    checksum: ObjectChecksum,
    expected: str,
    error: SegmentError | None,
    *,
    crc32c: str | None,
    chunk_bytes: int,
) -> ObjectIntegrityError:
    """The error for an object whose checksum differs from the manifest's, with the position
    of the difference when it can be found (error path only: reads the object again)."""
    computed = checksum.hexdigest()
    what = (
        f"{checksum.algorithm} of bytes [0, {size}) is {computed}, the manifest recorded {expected}"
    )
    position: int | None = None
    where = ""
    # Read the object again: every batch CRC checked, the batch positions, the CRC-32C (a
    # second read also tells a damaged stored object from a read that went wrong once).
    again = _reread(store, key, size, chunk_bytes)
    if checksum.algorithm == "crc32c" and again.crc != checksum.crc:
        where = (
            f"; a second read of the object gave CRC-32C {again.crc:08x}: the store returned "
            "different bytes on two reads"
        )
    elif crc32c and again.crc == int(crc32c, 16):
        where = "; a second read matches the manifest: the first read returned wrong bytes"
    if not where:
        where, position, error = _locate(again, error, crc32c, size)
    return ObjectIntegrityError(
        what + where,
        uri=store.uri,
        key=key,
        algorithm=checksum.algorithm,
        expected=expected,
        computed=computed,
        size=size,
        position=position,
        cause=error.to_dict() if error is not None else None,
    )


def _locate(
    again: _Reread, error: SegmentError | None, crc32c: str | None, size: int
) -> tuple[str, int | None, SegmentError | None]:
    """Where two reads agree on bytes that differ from the manifest's: the batch failing its
    own check, else the single uncovered header byte explaining the CRC-32C difference."""
    error = error if error is not None else again.error
    if error is not None:
        return (
            f"; in them the batch at byte {error.position} fails its own check: {error.detail}",
            error.position,
            error,
        )
    if not crc32c:
        return "; the manifest has no CRC-32C to locate the difference with", None, None
    # Every batch passed its CRC and framing, so the difference lies in header bytes no batch
    # CRC covers (a CRC detects every error burst of up to 32 bits in what it covers).
    found = locate_single_byte_error(again.crc ^ int(crc32c, 16), size, again.headers)
    if len(found) != 1:
        return (
            "; no single byte of the batch headers explains the difference: its position is "
            "unknown",
            None,
            None,
        )
    position, xor = found[0]
    batch = max(a for a, _b in again.headers if a <= position)
    return (
        f"; the difference is the byte at {position} (xor 0x{xor:02x}), in the header of the "
        f"batch at byte {batch}, which no batch CRC covers",
        position,
        None,
    )


class _Reread(NamedTuple):
    headers: list[tuple[int, int]]  # byte ranges of batch headers no batch CRC covers
    crc: int  # CRC-32C of the bytes
    error: SegmentError | None  # the first batch that fails its checks


def _reread(store: ObjectStore, key: str, size: int, chunk_bytes: int) -> _Reread:
    """Read the object again (error path): its CRC-32C, the first batch failing its own
    checks, and the byte ranges of its batch headers that no batch CRC covers (found by
    following the size fields)."""
    ranges: list[tuple[int, int]] = []
    crc = 0
    error: SegmentError | None = None
    scan = SegmentExtractor(topic="", size=size, path=f"{store.uri.rstrip('/')}/{key}")
    nxt = 0  # where the next batch starts
    carry = b""  # a header cut by the previous chunk's end
    walking = True
    pos = 0
    while pos < size:
        end = min(size, pos + chunk_bytes)
        chunk = store.get_range(key, pos, end)
        crc = crc32c_update(chunk, crc)
        if error is None:
            try:
                scan.feed(chunk)
                if end == size:
                    scan.finish()
            except SegmentError as exc:
                error = exc
        buf = carry + chunk if carry else chunk
        buf_start = end - len(buf)
        while walking and nxt + MAGIC_OFFSET + 1 <= end:
            i = nxt - buf_start
            length = OFFSET_SIZE.unpack_from(buf, i)[1]
            magic = buf[i + MAGIC_OFFSET]
            ranges.append((nxt, nxt + (UNCOVERED_V2 if magic >= 2 else UNCOVERED_LEGACY)))
            if length < MIN_SIZE_FIELD:
                walking = False  # framing lost: the headers found so far are the candidates
            nxt += LOG_OVERHEAD + length
        carry = bytes(buf[nxt - buf_start :]) if buf_start <= nxt < end else b""
        del chunk, buf
        pos = end
    return _Reread(ranges, crc, error)
