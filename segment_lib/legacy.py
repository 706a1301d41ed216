"""Magic 0 and magic 1 message sets (Kafka 0.8 - 0.10), parsed from bytes.

Schema (big-endian)::

    MessageSet => [offset int64, messageSize int32, Message]
    Message =>
      crc uint32                 # CRC-32 (zlib) of magic .. end of message
      magic int8                 # 0 or 1
      attributes int8            # bits 0-2 codec; bit 3 timestamp type (magic 1)
      timestamp int64            # magic 1 only
      key bytes                  # int32 length, -1 = null
      value bytes                # int32 length, -1 = null

A compressed message (codec != none) is a *wrapper*: its value is a compressed inner message
set. For magic 1 the inner offsets are relative (0..n-1) and the wrapper carries the absolute
offset of the last inner message; for magic 0 the inner offsets are absolute. Under
LogAppendTime the inner messages take the wrapper's timestamp. Each shallow (top-level) message
is one :class:`~segment_lib.records.BatchHeader`, as Kafka's own log reader treats it.
"""

from __future__ import annotations

import struct
import zlib

from segment_lib.compression import Codec, decompress
from segment_lib.errors import CorruptBatchError, CorruptRecordError, CrcMismatchError
from segment_lib.records import (
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    BatchHeader,
    Record,
    TimestampType,
)

__all__ = [
    "decode_records_legacy",
    "legacy_message_size_bounds",
    "parse_legacy_header",
    "verify_crc_legacy",
]

# offset int64, messageSize int32, crc uint32, magic int8, attributes int8
_PREFIX = struct.Struct(">qiIbb")
_TIMESTAMP = struct.Struct(">q")
_INT32 = struct.Struct(">i")
#: where the CRC-covered bytes start (the magic byte)
_CRC_START = struct.calcsize(">qiI")
#: smallest messageSize: crc, magic, attributes, [timestamp], key length, value length
_MIN_SIZE = {0: struct.calcsize(">Ibbii"), 1: struct.calcsize(">Ibbqii")}
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08


def legacy_message_size_bounds(magic: int) -> int:
    """The smallest legal ``messageSize`` for a magic 0 or 1 message."""
    return _MIN_SIZE[magic]


class _Message:
    """One parsed legacy message (shallow or inner), fields only; no copies of the payload."""

    __slots__ = (
        "attributes",
        "crc",
        "end",
        "key",
        "magic",
        "offset",
        "position",
        "timestamp",
        "value",
    )

    def __init__(self, buf: memoryview, position: int, end_limit: int) -> None:
        offset, size, crc, magic, attributes = _PREFIX.unpack_from(buf, position)
        self.position = position
        self.offset = offset
        self.crc = crc
        self.magic = magic
        self.attributes = attributes
        end = position + LOG_OVERHEAD + size
        if magic not in _MIN_SIZE or size < _MIN_SIZE[magic] or end > end_limit:
            raise CorruptRecordError(
                f"message size {size} for magic {magic} does not fit",
                position=position + 8,
                expected=f"a size between {_MIN_SIZE.get(magic, 14)} and "
                f"{end_limit - position - LOG_OVERHEAD}",
            )
        self.end = end
        p = position + _PREFIX.size
        if magic == 1:
            (self.timestamp,) = _TIMESTAMP.unpack_from(buf, p)
            p += _TIMESTAMP.size
        else:
            self.timestamp = NO_TIMESTAMP
        self.key, p = _bytes_field(buf, p, end, "key")
        self.value, p = _bytes_field(buf, p, end, "value")
        if p != end:
            raise CorruptRecordError(
                f"{end - p} bytes left in a message after its value",
                position=p,
                expected="key and value to fill exactly the message size",
            )

    @property
    def codec(self) -> int:
        return int(self.attributes) & _CODEC_MASK

    def check_crc(self, buf: memoryview) -> None:
        computed = zlib.crc32(buf[self.position + _CRC_START : self.end])
        if computed != self.crc:
            raise CrcMismatchError(
                f"CRC-32 of message at offset {self.offset} is {computed:#010x}, "
                f"stored {self.crc:#010x}",
                stored=self.crc,
                computed=computed,
                position=self.position,
                expected="stored CRC-32 to match the message bytes",
            )


def _bytes_field(buf: memoryview, p: int, end: int, what: str) -> tuple[memoryview | None, int]:
    if p + 4 > end:
        raise CorruptRecordError(
            f"{what} length runs past the end of the message",
            position=p,
            expected="an int32 length",
        )
    (n,) = _INT32.unpack_from(buf, p)
    p += 4
    if n == -1:
        return None, p
    if n < 0 or p + n > end:
        raise CorruptRecordError(
            f"{what} length {n} does not fit in the message",
            position=p - 4,
            expected=f"-1 or a length between 0 and {end - p}",
        )
    return buf[p : p + n], p + n


def _inner_messages(buf: memoryview, wrapper: _Message) -> list[_Message]:
    """Decompress and parse a wrapper's inner message set (errors at the wrapper's position)."""
    if wrapper.value is None:
        raise CorruptBatchError(
            f"compressed wrapper message at offset {wrapper.offset} has a null value",
            position=wrapper.position,
            expected="a compressed inner message set",
        )
    try:
        inner = memoryview(decompress(wrapper.codec, wrapper.value, legacy_lz4=wrapper.magic == 0))
    except CorruptBatchError as exc:
        raise exc.with_location(None, wrapper.position) from exc
    messages: list[_Message] = []
    p = 0
    try:
        while p < len(inner):
            if p + LOG_OVERHEAD + 6 > len(inner):
                raise CorruptRecordError(
                    "inner message header cut short",
                    position=p,
                    expected="a complete inner message",
                )
            m = _Message(inner, p, len(inner))
            if m.codec != Codec.NONE:
                raise CorruptRecordError(
                    "inner message is itself compressed",
                    position=p,
                    expected="uncompressed inner messages",
                )
            if m.magic != wrapper.magic:
                raise CorruptRecordError(
                    f"inner message magic {m.magic} inside a magic {wrapper.magic} wrapper",
                    position=p,
                    expected=f"magic {wrapper.magic}",
                )
            m.check_crc(inner)
            messages.append(m)
            p = m.end
    except CorruptBatchError as exc:
        raise CorruptRecordError(
            f"in the {Codec(wrapper.codec).label} payload of the wrapper at offset "
            f"{wrapper.offset}, at byte {exc.position} of the inner message set: {exc.detail}",
            position=wrapper.position,
            expected=exc.expected,
        ) from exc
    if not messages:
        raise CorruptBatchError(
            f"compressed wrapper at offset {wrapper.offset} holds no messages",
            position=wrapper.position,
            expected="at least one inner message",
        )
    return messages


def _inner_offsets(wrapper: _Message, inner: list[_Message]) -> list[int]:
    if wrapper.magic == 0:
        return [m.offset for m in inner]
    base = wrapper.offset - inner[-1].offset
    return [base + m.offset for m in inner]


def parse_legacy_header(buf: bytes | memoryview, position: int) -> BatchHeader:
    """Describe the shallow legacy message at ``position`` as a batch.

    A compressed wrapper is decompressed to learn its base offset and count (Kafka's own
    ``LegacyRecordBatch.baseOffset`` does the same).
    """
    view = memoryview(buf)
    m = _Message(view, position, len(view))
    if m.magic == 0:
        ts_type = TimestampType.NO_TIMESTAMP
    elif m.attributes & _TIMESTAMP_TYPE_BIT:
        ts_type = TimestampType.LOG_APPEND_TIME
    else:
        ts_type = TimestampType.CREATE_TIME
    if m.codec == Codec.NONE:
        base, count = m.offset, 1
    else:
        inner = _inner_messages(view, m)
        base, count = _inner_offsets(m, inner)[0], len(inner)
    return BatchHeader(
        position=position,
        size=m.end - position,
        magic=m.magic,
        base_offset=base,
        last_offset=m.offset,
        record_count=count,
        attributes=m.attributes,
        codec=Codec(m.codec),
        timestamp_type=ts_type,
        first_timestamp=m.timestamp,
        max_timestamp=m.timestamp,
        crc=m.crc,
    )


def verify_crc_legacy(buf: bytes | memoryview, header: BatchHeader) -> None:
    """Check the shallow message's CRC-32 (inner CRCs are checked when records are decoded)."""
    view = memoryview(buf)
    _Message(view, header.position, header.position + header.size).check_crc(view)


def decode_records_legacy(buf: bytes | memoryview, header: BatchHeader) -> list[Record]:
    """Decode the record(s) of a shallow legacy message, inner CRCs verified."""
    view = memoryview(buf)
    m = _Message(view, header.position, header.position + header.size)
    if m.codec == Codec.NONE:
        return [Record(m.offset, m.timestamp, _opt(m.key), _opt(m.value))]
    inner = _inner_messages(view, m)
    offsets = _inner_offsets(m, inner)
    append_time = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    return [
        Record(off, m.timestamp if append_time else im.timestamp, _opt(im.key), _opt(im.value))
        for off, im in zip(offsets, inner, strict=True)
    ]


def _opt(v: memoryview | None) -> bytes | None:
    return None if v is None else bytes(v)
