"""Reading ``.log`` segment files: every batch of every magic, in file order.

:class:`LogBuffer` wraps the bytes of one segment (an ``mmap`` of the file, or any buffer) and
yields :class:`~segment_lib.records.BatchHeader` objects, verifying CRCs on the way, and decodes
records on demand. Errors name the file and the absolute byte position.

The end of the file is handled as the broker does: when the last batch is incomplete (fewer
bytes than its size field promises, or than a header needs), or the file ends in a zero-filled
preallocated region, the reader raises :class:`~segment_lib.errors.TornTailError`, or, with
``allow_torn_tail=True``, stops there and records ``torn_tail_position``. A length field that
runs past the end while a valid batch follows it is *not* a torn tail but corruption
(:class:`~segment_lib.errors.CorruptBatchError` at the length field), so a damaged file never
looks shorter than it is. A rolled segment is
never legitimately torn; an active one may be.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from segment_lib.batch_search import find_next_batch
from segment_lib.errors import (
    CorruptBatchError,
    SegmentError,
    TornTailError,
    UnsupportedFormatError,
)
from segment_lib.legacy import (
    decode_records_legacy,
    legacy_message_size_bounds,
    parse_legacy_header,
    verify_crc_legacy,
)
from segment_lib.record_batch import (
    MIN_BATCH_LENGTH,
    RECORDS_START,
    decode_records_v2,
    parse_batch_header_v2,
    verify_crc_v2,
)
from segment_lib.records import LOG_OVERHEAD, MAGIC_OFFSET, BatchHeader, Record

__all__ = ["LogBuffer", "decode_batch", "iter_batches", "open_log", "verify_batch_crc"]

_OFFSET_SIZE = struct.Struct(">qi")

_ScanV2 = Callable[[memoryview, int, int, bool, int], tuple[list[BatchHeader], int, str]]
_scan_v2: _ScanV2 | None = None
#: whether the compiled scan checks CRCs with hardware instructions; with only its portable
#: table CRC (~2.5 GB/s: no SSE4.2, or a non-x86 CPU where the `crc32c` package may use ARMv8
#: instructions) CRC-verifying scans keep to the Python path, which calls the package
_scan_crc_in_hardware = False
try:  # the compiled magic-2 scan (see iter_batches); absent without a C compiler
    from segment_lib._speedups import CRC32C_IMPL as _crc_impl
    from segment_lib._speedups import scan_batches_v2 as _scan_compiled

    _scan_v2 = _scan_compiled
    _scan_crc_in_hardware = _crc_impl != "table"
except ImportError:  # pragma: no cover - depends on the build
    pass
#: most batches returned by one call of the compiled scan
_SCAN_CHUNK_MAX = 1024


def _all_zero(view: memoryview) -> bool:
    return not any(view)


def verify_batch_crc(buf: bytes | memoryview, header: BatchHeader) -> None:
    """Check the batch's CRC with the algorithm of its magic (pure; buffer positions)."""
    if header.magic >= 2:
        verify_crc_v2(buf, header)
    else:
        verify_crc_legacy(buf, header)


def decode_batch(buf: bytes | memoryview, header: BatchHeader) -> list[Record]:
    """Decode a batch's records (pure; the CRC is not re-checked here)."""
    if header.magic >= 2:
        return decode_records_v2(buf, header)
    return decode_records_legacy(buf, header)


# the batch scanner's cases (bounds, torn tail, resync, CRC) in one loop on the per-batch path
def iter_batches(  # noqa: C901, PLR0912
    buf: bytes | memoryview,
    start: int = 0,
    *,
    verify_crc: bool = True,
    end: int | None = None,
    tail_resync: bool = True,
) -> Iterator[BatchHeader]:
    """Yield the batches of ``buf[start:end]`` in order (pure; positions are buffer positions).

    ``tail_resync=False``: a batch whose length runs past the end is reported as a torn tail
    without searching the bytes after it for a valid batch (the search is what tells a corrupt
    length field from a torn tail). For a caller reading a larger object in chunks, which reads
    on from the torn tail's position and so meets every such batch again, whole or at the
    object's end, where it searches: the search at every chunk's end costs ~0.1 ms and finds
    nothing there but the next chunk's bytes.

    Raises:
        TornTailError: the final batch is incomplete (its ``position`` is where it starts) and
            no valid batch follows it (not searched with ``tail_resync=False``).
        CorruptBatchError / CrcMismatchError: a batch is malformed or fails its checksum; also a
            length field running past the end while a valid magic-2 batch follows (position =
            the length field).
        UnsupportedFormatError: a magic other than 0, 1 or 2.
    """
    view = memoryview(buf)
    limit = len(view) if end is None else end
    pos = start
    # Fast path: runs of magic-2 batches are walked by the compiled scan, which accepts a batch
    # only where the loop below would yield it (same BatchHeader) and otherwise stops, leaving
    # that position to the loop below: legacy messages, tails and every error stay the Python
    # reference's. Plain byte buffers and in-range int positions only; anything odder takes the
    # reference path unchanged.
    scan = (
        _scan_v2
        if _scan_v2 is not None
        and (_scan_crc_in_hardware or not verify_crc)
        and type(start) is int
        and type(limit) is int
        and start >= 0
        and limit <= len(view)
        and view.format == "B"
        and view.ndim == 1
        and view.contiguous
        else None
    )
    # batches per compiled call: one first (so next(iter_batches(...)) parses and checks one
    # batch, as before), doubling up to _SCAN_CHUNK_MAX (the call cost is amortised, the list
    # stays small, and a consumer that stops early wastes at most as much as it consumed)
    chunk = 1
    #: last offset of the previous batch: a batch found after a bad length field must follow it
    last_offset = -1
    while pos < limit:
        if scan is not None:
            headers, pos, reason = scan(view, pos, limit, verify_crc, chunk)
            if headers:
                last_offset = headers[-1].last_offset
            yield from headers
            if reason == "limit" or pos >= limit:
                chunk = min(2 * chunk, _SCAN_CHUNK_MAX)
                continue
        remaining = limit - pos
        if remaining < MAGIC_OFFSET + 1:
            if _all_zero(view[pos:limit]):
                raise TornTailError(
                    f"{remaining} zero bytes of preallocated space after the last batch",
                    position=pos,
                    expected="end of log",
                )
            raise TornTailError(
                f"last batch cut short after {remaining} bytes",
                position=pos,
                expected="a complete batch header",
            )
        _offset, size = _OFFSET_SIZE.unpack_from(view, pos)
        magic = view[pos + MAGIC_OFFSET]
        if size == 0 and _all_zero(view[pos:limit]):
            raise TornTailError(
                f"{remaining} zero bytes of preallocated space after the last batch",
                position=pos,
                expected="end of log",
            )
        if magic == 2:
            min_size = MIN_BATCH_LENGTH
        elif magic in (0, 1):
            min_size = legacy_message_size_bounds(magic)
        else:
            raise UnsupportedFormatError(
                f"magic byte {magic} at offset field {_offset}",
                position=pos + MAGIC_OFFSET,
                expected="magic 0, 1 or 2",
            )
        if size < min_size:
            raise CorruptBatchError(
                f"batch size {size} is smaller than a magic {magic} header",
                position=pos + 8,
                expected=f"size >= {min_size}",
            )
        if LOG_OVERHEAD + size > remaining:
            # A torn tail only ever ends the data: if a valid batch follows, this length field
            # is corrupt and stopping here would silently hide everything after it.
            after = (
                find_next_batch(view, pos + 1, limit, min_base_offset=last_offset + 1)
                if tail_resync
                else None
            )
            if after is not None:
                raise CorruptBatchError(
                    f"batch length {size} runs past the end of the data ({remaining} bytes "
                    f"remain), yet a valid batch (base offset {after.base_offset}) starts at "
                    f"byte {after.position}: the length field is corrupt, not a torn tail",
                    position=pos + 8,
                    expected=f"a batch length <= {remaining - LOG_OVERHEAD} ending at a batch",
                )
            raise TornTailError(
                f"last batch declares {LOG_OVERHEAD + size} bytes but only {remaining} remain",
                position=pos,
                expected="a complete batch",
            )
        if magic == 2:
            if remaining < RECORDS_START:  # pragma: no cover - implied by the size check
                raise TornTailError("batch header cut short", position=pos)
            header = parse_batch_header_v2(view, pos)
            if verify_crc:
                verify_crc_v2(view, header)
        else:
            if verify_crc:
                # check the wrapper before decompressing anything it claims to hold
                verify_crc_legacy(view, _shallow_probe(view, pos, size, magic))
            header = parse_legacy_header(view[: pos + LOG_OVERHEAD + size], pos)
        yield header
        last_offset = header.last_offset
        pos = header.next_position


def _shallow_probe(view: memoryview, pos: int, size: int, magic: int) -> BatchHeader:
    """A minimal header for CRC-checking a legacy message before parsing its payload."""
    from segment_lib.compression import Codec
    from segment_lib.records import TimestampType

    crc = struct.unpack_from(">I", view, pos + 12)[0]
    return BatchHeader(
        pos,
        LOG_OVERHEAD + size,
        magic,
        0,
        0,
        0,
        0,
        Codec.NONE,
        TimestampType.NO_TIMESTAMP,
        -1,
        -1,
        crc,
    )


class LogBuffer:
    """The bytes of one ``.log`` segment, with the file name used in every error.

    Args:
        data: the segment bytes (``bytes``, ``memoryview`` or ``mmap``).
        path: the file they came from (for error messages only).
        verify_crc: check every batch's checksum while iterating (default, as the archive and
            the catalog do).
    """

    __slots__ = ("_mmap", "data", "path", "torn_tail_position", "verify_crc")

    def __init__(
        self,
        data: bytes | memoryview | mmap.mmap,
        path: str | os.PathLike[str] | None = None,
        *,
        verify_crc: bool = True,
    ) -> None:
        self._mmap = data if isinstance(data, mmap.mmap) else None
        self.data = memoryview(data)
        self.path = None if path is None else os.fspath(path)
        self.verify_crc = verify_crc
        #: set when iteration with ``allow_torn_tail=True`` stopped at an incomplete last batch
        self.torn_tail_position: int | None = None

    def __len__(self) -> int:
        return len(self.data)

    def batches(self, start: int = 0, *, allow_torn_tail: bool = False) -> Iterator[BatchHeader]:
        """Yield every batch from byte ``start`` on (see :func:`iter_batches`)."""
        try:
            yield from iter_batches(self.data, start, verify_crc=self.verify_crc)
        except TornTailError as exc:
            if allow_torn_tail:
                self.torn_tail_position = exc.position
                return
            raise exc.with_location(self.path) from exc
        except SegmentError as exc:
            raise exc.with_location(self.path) from exc

    def records(self, header: BatchHeader) -> list[Record]:
        """Decode one batch's records."""
        try:
            return decode_batch(self.data, header)
        except SegmentError as exc:
            raise exc.with_location(self.path) from exc

    def iter_records(
        self, start: int = 0, *, allow_torn_tail: bool = False, include_control: bool = False
    ) -> Iterator[tuple[BatchHeader, Record]]:
        """Yield ``(batch, record)`` for every record from byte ``start``; control batches only
        when ``include_control``."""
        for header in self.batches(start, allow_torn_tail=allow_torn_tail):
            if header.is_control and not include_control:
                continue
            for record in self.records(header):
                yield header, record

    def close(self) -> None:
        """Release the buffer and unmap the file. Slices still referenced elsewhere (records
        being decoded, a traceback holding a frame) keep the mapping alive until collected."""
        try:
            self.data.release()
            if self._mmap is not None:
                self._mmap.close()
        except BufferError:
            pass

    def __enter__(self) -> LogBuffer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def open_log(path: str | os.PathLike[str], *, verify_crc: bool = True) -> LogBuffer:
    """Map a ``.log`` file read-only (no copy) and return its :class:`LogBuffer`.

    Use as a context manager so the mapping is released.
    """
    p = Path(path)
    with p.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return LogBuffer(b"", p, verify_crc=verify_crc)
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return LogBuffer(mapped, p, verify_crc=verify_crc)
