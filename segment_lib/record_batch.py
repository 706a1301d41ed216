"""Magic 2 record batches (Kafka 0.11+), parsed from bytes.

Schema (big-endian; `KIP-98 <https://cwiki.apache.org/confluence/display/KAFKA/KIP-98>`_)::

    RecordBatch =>
      baseOffset int64
      batchLength int32                 # bytes after this field
      partitionLeaderEpoch int32
      magic int8                        # 2
      crc uint32                        # CRC-32C of attributes .. end of batch
      attributes int16                  # bits 0-2 codec, 3 ts type, 4 transactional, 5 control
      lastOffsetDelta int32
      firstTimestamp int64
      maxTimestamp int64
      producerId int64
      producerEpoch int16
      baseSequence int32
      recordCount int32
      records [Record]                  # compressed as a whole when codec != none

    Record =>
      length varint                     # zig-zag varints throughout
      attributes int8                   # unused
      timestampDelta varlong
      offsetDelta varint
      keyLength varint, key bytes       # -1 = null
      valueLength varint, value bytes   # -1 = null
      headerCount varint
      Header => keyLength varint, key UTF-8, valueLength varint, value bytes

All functions are pure: they take a buffer and positions relative to it, and raise
:class:`~segment_lib.errors.SegmentError` subclasses with buffer positions (file readers
re-anchor them to the file).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Final

from segment_lib._crc import crc32c
from segment_lib.compression import Codec, decompress
from segment_lib.errors import (
    CorruptBatchError,
    CorruptRecordError,
    CrcMismatchError,
    SegmentError,
)
from segment_lib.records import NO_TIMESTAMP, BatchHeader, Header, Record, TimestampType

__all__ = [
    "BATCH_HEADER",
    "CRC_START",
    "DELETE_HORIZON_BIT",
    "RECORDS_START",
    "EmitSlots",
    "decode_records_v2",
    "emit_records_v2",
    "first_record_timestamp",
    "has_delete_horizon",
    "parse_batch_header_v2",
    "records_section",
    "verify_crc_v2",
]

BATCH_HEADER = struct.Struct(
    ">q"  # baseOffset
    "i"  # batchLength
    "i"  # partitionLeaderEpoch
    "b"  # magic
    "I"  # crc
    "h"  # attributes
    "i"  # lastOffsetDelta
    "q"  # firstTimestamp
    "q"  # maxTimestamp
    "q"  # producerId
    "h"  # producerEpoch
    "i"  # baseSequence
    "i"  # recordCount
)
#: where the CRC-covered bytes start: after baseOffset, batchLength, leaderEpoch, magic, crc
CRC_START = struct.calcsize(">qiibI")
#: where the (possibly compressed) records start
RECORDS_START = BATCH_HEADER.size
#: smallest legal batchLength: the header minus the 12-byte log overhead
MIN_BATCH_LENGTH = RECORDS_START - struct.calcsize(">qi")

_CODEC_MASK = 0x07
#: Codec members by id. Indexing this tuple costs ~30 ns where the enum call ``Codec(id)`` costs
#: ~330 ns, paid once per batch on every scan (see docs/performance.md).
_CODECS = tuple(Codec(i) for i in range(Codec.ZSTD + 1))
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
#: attribute bit 6 (KIP-534): the log cleaner stored its delete horizon in ``firstTimestamp``
DELETE_HORIZON_BIT: Final = 0x40


def parse_batch_header_v2(buf: bytes | memoryview, position: int) -> BatchHeader:
    """Parse the magic-2 batch header at ``position`` (the caller checked length and magic).

    Raises:
        CorruptBatchError: the length field is below the header size, the codec id is unknown,
            or counts/deltas are inconsistent.
    """
    (
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        first_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    ) = BATCH_HEADER.unpack_from(buf, position)
    if batch_length < MIN_BATCH_LENGTH:
        raise CorruptBatchError(
            f"batch length {batch_length} is smaller than a v2 batch header",
            position=position + 8,
            expected=f"batchLength >= {MIN_BATCH_LENGTH}",
        )
    codec_id = attributes & _CODEC_MASK
    if codec_id > Codec.ZSTD:
        raise CorruptBatchError(
            f"unknown compression codec id {codec_id} in attributes {attributes:#06x}",
            position=position + CRC_START,
            expected="codec id 0-4",
        )
    if record_count < 0 or last_offset_delta < 0:
        raise CorruptBatchError(
            f"negative recordCount {record_count} or lastOffsetDelta {last_offset_delta}",
            position=position + CRC_START + 2,
            expected="non-negative counts",
        )
    return BatchHeader(
        position=position,
        size=batch_length + 12,
        magic=magic,
        base_offset=base_offset,
        last_offset=base_offset + last_offset_delta,
        record_count=record_count,
        attributes=attributes,
        codec=_CODECS[codec_id],
        timestamp_type=(
            TimestampType.LOG_APPEND_TIME
            if attributes & _TIMESTAMP_TYPE_BIT
            else TimestampType.CREATE_TIME
        ),
        first_timestamp=first_timestamp,
        max_timestamp=max_timestamp,
        crc=crc,
        partition_leader_epoch=leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=bool(attributes & _TRANSACTIONAL_BIT),
        is_control=bool(attributes & _CONTROL_BIT),
    )


def has_delete_horizon(header: BatchHeader) -> bool:
    """Whether the batch's ``firstTimestamp`` field holds the log cleaner's delete horizon
    (KIP-534, attribute bit 6, magic 2 only) instead of its first record's timestamp."""
    return header.magic >= 2 and bool(header.attributes & DELETE_HORIZON_BIT)


def first_record_timestamp(buf: bytes | memoryview, header: BatchHeader) -> int:
    """The timestamp of the batch's first record, as a consumer would see it.

    Normally the header's ``first_timestamp``. When the log cleaner set the delete horizon
    (:func:`has_delete_horizon`; Kafka's ``DefaultRecordBatch.deleteHorizonMs``) that field is
    the horizon, a moment *after* the cleaning, and record timestamps stay ``firstTimestamp +
    timestampDelta`` (``MemoryRecordsBuilder`` takes the deltas against the horizon, so they
    may be negative): the first record is decoded (decompressing the batch if needed) for its
    time. Under LogAppendTime that is the batch's ``max_timestamp``; a batch without records
    has none (``NO_TIMESTAMP``). The CRC is not checked here.

    Raises:
        CompressionError, CorruptRecordError: as :func:`decode_records_v2`.
    """
    if not has_delete_horizon(header):
        return header.first_timestamp
    if header.record_count <= 0:
        return NO_TIMESTAMP
    if header.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return header.max_timestamp
    data, error_base, _ = _records_section(buf, header)
    try:
        # only the first record is taken (the check that the records fill the data exactly
        # comes after the last one, which is never reached)
        first = next(
            _iter_records_python(
                data, header.record_count, header.base_offset, header.first_timestamp, None
            )
        )
    except CorruptRecordError as exc:
        raise _reanchored(exc, header, error_base) from exc
    return first.timestamp


def verify_crc_v2(buf: bytes | memoryview, header: BatchHeader) -> None:
    """Check the batch's CRC-32C (attributes .. end); raise :class:`CrcMismatchError` if wrong."""
    view = memoryview(buf)
    computed = crc32c(view[header.position + CRC_START : header.position + header.size])
    if computed != header.crc:
        raise CrcMismatchError(
            f"CRC-32C of batch at offset {header.base_offset} is {computed:#010x}, "
            f"stored {header.crc:#010x}",
            stored=header.crc,
            computed=computed,
            position=header.position,
            expected="stored CRC-32C to match the batch bytes",
        )


def decode_records_v2(buf: bytes | memoryview, header: BatchHeader) -> list[Record]:
    """Decode every record of a magic-2 batch (decompressing it if needed).

    The CRC is *not* checked here (call :func:`verify_crc_v2` first). Timestamps follow the
    broker: under LogAppendTime every record takes the batch's ``max_timestamp``.

    Raises:
        CompressionError: the payload does not decompress.
        CorruptRecordError: a record is malformed, or the count does not match ``recordCount``.
    """
    data, error_base, log_append_ts = _records_section(buf, header)
    try:
        return _decode(
            data, header.record_count, header.base_offset, header.first_timestamp, log_append_ts
        )
    except CorruptRecordError as exc:
        raise _reanchored(exc, header, error_base) from exc


#: (value, key, timestamp, headers, mark) indexes into an :func:`emit_records_v2` template
EmitSlots = tuple[int, int, int, int, int]
_EMIT_MAX_ARGS: Final = 16


def emit_records_v2(
    buf: bytes | memoryview,
    header: BatchHeader,
    fn: Callable[..., object],
    template: tuple[object, ...],
    slots: EmitSlots,
    *,
    start: int = 0,
    marks: tuple[object, object, object] | None = None,
    zero_timestamps: bool = False,
) -> tuple[int, BaseException | None]:
    """Hand every record of a magic-2 batch to ``fn`` without building :class:`Record` objects.

    For streaming records into a callable that takes them as arguments (a Kafka client's
    produce, say) this is the decoder minus the per-record tuples and the caller's loop: for
    record ``i``, ``fn(*args)`` is called with ``args`` = ``template`` whose items at
    ``slots = (value, key, timestamp, headers, mark)`` are replaced by the record's value, key,
    timestamp (0 with ``zero_timestamps``) and headers (a list of ``(str, bytes)`` tuples, or
    ``None`` when the record has none; consecutive records with byte-identical headers may get
    the *same* list, so ``fn`` must not change it); ``mark = -1`` means no mark slot.
    ``marks = (first, last, only)`` puts ``first`` in the mark slot of record 0, ``last`` in that
    of the final record and ``only`` in that of a lone record; a ``None`` item is skipped (a lone
    record without ``only`` takes ``first``, else ``last``), and a record no item marks keeps the
    template's value. Records before ``start`` are decoded but not handed over. Decompression,
    checks and errors are exactly :func:`decode_records_v2`'s; the CRC is not checked here
    either. Records reach ``fn`` as they are decoded, so a malformed record raises after the
    records before it were handed over.

    Returns:
        ``(done, error)``: ``done`` is the index of the first record ``fn`` did not accept
        (``header.record_count`` when all were), ``error`` the :class:`Exception` ``fn`` raised
        (it stops the loop and is returned, not raised, so the caller can resume at ``done``),
        or ``None``. Other ``BaseException`` s propagate.

    Raises:
        CompressionError, CorruptRecordError: as :func:`decode_records_v2`.
        ValueError: the template or slots are inconsistent.
    """
    data, error_base, log_append_ts = _records_section(buf, header)
    try:
        return _emit(
            data,
            header.record_count,
            header.first_timestamp,
            log_append_ts,
            fn,
            template,
            slots,
            start=start,
            marks=marks,
            zero_timestamps=zero_timestamps,
        )
    except CorruptRecordError as exc:
        raise _reanchored(exc, header, error_base) from exc


def records_section(
    buf: bytes | memoryview, header: BatchHeader
) -> tuple[bytes | memoryview, int | None]:
    """``(records bytes, LogAppendTime or None)`` of a magic-2 batch: its records section,
    decompressed if needed, and the timestamp every record takes under LogAppendTime (for
    decoders other than this module's, e.g. :mod:`segment_lib.columns`).

    Raises:
        CompressionError: the payload does not decompress (at the payload's position).
    """
    data, _, log_append_ts = _records_section(buf, header)
    return data, log_append_ts


def _records_section(
    buf: bytes | memoryview, header: BatchHeader
) -> tuple[bytes | memoryview, int | None, int | None]:
    """``(records bytes, their position in buf or None when decompressed, LogAppendTime)``."""
    view = memoryview(buf)
    payload_start = header.position + RECORDS_START
    payload = view[payload_start : header.position + header.size]
    if header.codec is not Codec.NONE:
        try:
            data: bytes | memoryview = decompress(header.codec, payload)
        except CorruptBatchError as exc:
            raise exc.with_location(None, payload_start) from exc
        # positions inside decompressed data are not file positions: report the batch start
        error_base = None
    else:
        data = payload
        error_base = payload_start
    log_append_ts = (
        header.max_timestamp if header.timestamp_type is TimestampType.LOG_APPEND_TIME else None
    )
    return data, error_base, log_append_ts


def _reanchored(
    exc: CorruptRecordError, header: BatchHeader, error_base: int | None
) -> SegmentError:
    """``exc`` (positions in the records section) re-anchored to the buffer: positions in
    uncompressed records move by ``error_base``; in decompressed ones the batch is named.
    (A plain function called from ``except``, not a context manager: that cost ~1.5 us per
    batch, a sixth of decoding a 16 KiB batch.)"""
    if error_base is None:
        return CorruptRecordError(
            f"in the {header.codec.label} payload of the batch at offset "
            f"{header.base_offset}, at byte {exc.position} of the decompressed records: "
            f"{exc.detail}",
            position=header.position,
            expected=exc.expected,
        )
    return exc.with_location(None, error_base)


def _decode_records_python(
    data: bytes | memoryview,
    count: int,
    base_offset: int,
    first_timestamp: int,
    log_append_ts: int | None,
) -> list[Record]:
    """Reference decoder of ``count`` records (positions in errors are relative to ``data``)."""
    return list(_iter_records_python(data, count, base_offset, first_timestamp, log_append_ts))


# the reference record decoder: one varint field after another, as the wire format lists them
def _iter_records_python(  # noqa: C901
    data: bytes | memoryview,
    count: int,
    base_offset: int,
    first_timestamp: int,
    log_append_ts: int | None,
) -> Iterator[Record]:
    """The reference decoder as a generator: each record is yielded once its own checks pass;
    the check that the records fill the data exactly comes after the last one."""
    buf = bytes(data)
    end = len(buf)
    pos = 0

    def varint(p: int, what: str) -> tuple[int, int]:
        # 1-byte fast path first: most lengths and deltas are small
        if p < end:
            b = buf[p]
            if b < 0x80:
                return (b >> 1) ^ -(b & 1), p + 1
        result = 0
        shift = 0
        start = p
        while True:
            if p >= end:
                raise CorruptRecordError(
                    f"varint {what} runs past the end of the records",
                    position=start,
                    expected="a complete varint",
                )
            b = buf[p]
            p += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1), p
            shift += 7
            if shift > 63:
                raise CorruptRecordError(
                    f"varint {what} is longer than 10 bytes",
                    position=start,
                    expected="a varint of at most 10 bytes",
                )

    def blob(p: int, what: str) -> tuple[bytes | None, int]:
        n, p = varint(p, what + " length")
        if n < 0:
            if n != -1:
                raise CorruptRecordError(
                    f"{what} length {n}", position=p, expected="-1 (null) or a length >= 0"
                )
            return None, p
        if p + n > end:
            raise CorruptRecordError(
                f"{what} of {n} bytes runs past the end of the records",
                position=p,
                expected=f"at most {end - p} bytes",
            )
        return buf[p : p + n], p + n

    for _ in range(count):
        start = pos
        length, pos = varint(pos, "record length")
        body_start = pos
        if length < 0 or pos + length > end:
            raise CorruptRecordError(
                f"record length {length} does not fit in the batch",
                position=start,
                expected=f"a length between 0 and {end - pos}",
            )
        pos += 1  # attributes (unused)
        ts_delta, pos = varint(pos, "timestampDelta")
        offset_delta, pos = varint(pos, "offsetDelta")
        key, pos = blob(pos, "key")
        value, pos = blob(pos, "value")
        n_headers, pos = varint(pos, "header count")
        if n_headers < 0:
            raise CorruptRecordError(
                f"header count {n_headers}", position=pos, expected="a count >= 0"
            )
        headers: list[Header] = []
        for _h in range(n_headers):
            hkey, pos = blob(pos, "header key")
            if hkey is None:
                raise CorruptRecordError(
                    "null header key", position=pos, expected="a UTF-8 header name"
                )
            hvalue, pos = blob(pos, "header value")
            try:
                name = hkey.decode("utf-8")
            except UnicodeDecodeError:
                raise CorruptRecordError(
                    "header key is not UTF-8", position=pos, expected="a UTF-8 header name"
                ) from None
            headers.append(Header(name, hvalue))
        if pos != body_start + length:
            raise CorruptRecordError(
                f"record fields end at byte {pos}, its length says {body_start + length}",
                position=start,
                expected="fields to fill exactly the record length",
            )
        yield Record(
            base_offset + offset_delta,
            first_timestamp + ts_delta if log_append_ts is None else log_append_ts,
            key,
            value,
            tuple(headers),
        )
    if pos != end:
        raise CorruptRecordError(
            f"{end - pos} bytes left after the {count} records the header declares",
            position=pos,
            expected="recordCount to cover the whole batch",
        )


def _emit_records_python(
    data: bytes | memoryview,
    count: int,
    first_timestamp: int,
    log_append_ts: int | None,
    fn: Callable[..., object],
    template: tuple[object, ...],
    slots: EmitSlots,
    *,
    start: int = 0,
    marks: tuple[object, object, object] | None = None,
    zero_timestamps: bool = False,
) -> tuple[int, BaseException | None]:
    """Reference of the compiled ``emit_records_v2`` (see :func:`emit_records_v2`)."""
    if len(template) > _EMIT_MAX_ARGS:
        raise ValueError(f"template has {len(template)} arguments, at most {_EMIT_MAX_ARGS}")
    if len(slots) != 5:
        raise ValueError(
            f"slots must be (value, key, timestamp, headers, mark), got {len(slots)} items"
        )
    vs, ks, ts_slot, hs, ms = slots
    seen: set[int] = set()
    for k, v in enumerate(slots):
        if not (-1 if k == 4 else 0) <= v < len(template):
            raise ValueError(f"slot {v} is outside the template ({len(template)} args)")
        if v >= 0 and v in seen:
            raise ValueError(f"slot {v} is given twice")
        seen.add(v)
    if marks is not None and (len(marks) != 3 or ms < 0):
        raise ValueError("marks must be a (first, last, only) tuple and need a mark slot")
    args = list(template)
    start = max(start, 0)
    done = start
    records = _iter_records_python(data, count, 0, first_timestamp, log_append_ts)
    for i, rec in enumerate(records):
        if i < start:
            continue
        args[vs], args[ks] = rec.value, rec.key
        args[ts_slot] = 0 if zero_timestamps else rec.timestamp
        args[hs] = [tuple(h) for h in rec.headers] if rec.headers else None
        if marks is not None:
            first, last, only = marks
            mark = template[ms]  # a None in marks keeps the template's value
            if count == 1 and only is not None:
                mark = only
            elif i == 0 and first is not None:
                mark = first
            elif i == count - 1 and last is not None:
                mark = last
            args[ms] = mark
        try:
            fn(*args)
        except Exception as exc:  # returned, not raised: the caller resumes at record `done`
            return done, exc
        done = i + 1
    return done, None


_decode = _decode_records_python
_emit = _emit_records_python
try:  # the compiled twins have the same signatures and identical results (tests compare them)
    from segment_lib._speedups import decode_records_v2 as _decode_compiled
    from segment_lib._speedups import emit_records_v2 as _emit_compiled

    _decode = _decode_compiled
    _emit = _emit_compiled
except ImportError:  # pragma: no cover - depends on the build
    pass
