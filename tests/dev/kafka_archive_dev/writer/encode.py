"""Pure encoders of what a Kafka broker stores in ``.log`` files, for the development writer.

Magic 2 batches are the product's (:mod:`segment_lib.batch_encode`, re-exported here); this
module adds magic 0/1 messages, byte for byte as the leader leaves them after validation
(Kafka's ``LogValidator``):

* **magic 1**: an uncompressed produce request is a sequence of single messages; a compressed one
  is one *wrapper* whose value is the compressed inner message set with *relative* inner offsets
  (0..n-1) and whose own offset is the absolute offset of the last inner message. The wrapper's
  timestamp is the largest inner timestamp (CreateTime) or the append time (LogAppendTime, bit 3
  set on the wrapper only: in-place assignment leaves the inner messages as the producer wrote
  them). CRC-32 covers magic .. end of each message.
* **magic 0**: no timestamps. The broker always rebuilds compressed magic 0 sets (no in-place
  assignment for v0), with *absolute* inner offsets; lz4 uses Kafka 0.8's broken frame header
  checksum (KAFKA-3160).

Records are given as :class:`WriteRecord`; their ``timestamp`` must be set (the writer fills in
``None`` with its clock before calling these functions).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Sequence
from typing import Final

from segment_lib.batch_encode import (
    NO_SEQUENCE,
    EncodedBatch,
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
    encode_empty_batch_v2,
    encode_record_v2,
    encode_varint,
    require_timestamp,
)
from segment_lib.compression import Codec, compress
from segment_lib.records import LOG_OVERHEAD, NO_TIMESTAMP, TimestampType

__all__ = [
    "NO_SEQUENCE",
    "EncodedBatch",
    "WriteRecord",
    "encode_batch_v2",
    "encode_control_batch",
    "encode_empty_batch_v2",
    "encode_legacy_batches",
    "encode_legacy_message",
    "encode_record_v2",
    "encode_varint",
]

_TIMESTAMP_TYPE_BIT: Final = 0x08
_INT32: Final = struct.Struct(">i")
# magic 0/1 message after the 12-byte log overhead: crc uint32, magic int8, attributes int8
_LEGACY_PREFIX: Final = struct.Struct(
    ">q"  # offset
    "i"  # messageSize (bytes after this field)
    "I"  # crc: CRC-32 of magic .. end
    "b"  # magic
    "b"  # attributes: bits 0-2 codec, bit 3 timestamp type (magic 1)
)
_LEGACY_TIMESTAMP: Final = struct.Struct(">q")  # magic 1 only
#: where a legacy message's CRC-covered bytes start (the magic byte)
_LEGACY_CRC_START: Final = struct.calcsize(">qiI")


# ---------------------------------------------------------------------------------------------
# magic 0 / 1


def encode_legacy_message(
    magic: int,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    *,
    timestamp: int = NO_TIMESTAMP,
    codec: Codec = Codec.NONE,
    log_append_time: bool = False,
) -> bytes:
    """One magic 0/1 message with its 12-byte offset/size prefix (``LegacyRecord.write``).

    ``timestamp`` is ignored for magic 0; ``log_append_time`` sets attribute bit 3 (magic 1).
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    attributes = int(codec) | (_TIMESTAMP_TYPE_BIT if (log_append_time and magic == 1) else 0)
    body = bytearray()
    if magic == 1:
        body += _LEGACY_TIMESTAMP.pack(timestamp)
    for blob in (key, value):
        if blob is None:
            body += _INT32.pack(-1)
        else:
            body += _INT32.pack(len(blob)) + blob
    # messageSize counts crc(4) + magic(1) + attributes(1) + body
    size = _LEGACY_PREFIX.size - LOG_OVERHEAD + len(body)
    out = bytearray(_LEGACY_PREFIX.pack(offset, size, 0, magic, attributes))
    out += body
    crc = zlib.crc32(bytes(out[_LEGACY_CRC_START:]))
    struct.pack_into(">I", out, LOG_OVERHEAD, crc)
    return bytes(out)


def encode_legacy_batches(
    magic: int,
    base_offset: int,
    records: Sequence[WriteRecord],
    *,
    codec: Codec = Codec.NONE,
    log_append_time: int | None = None,
    xerial_snappy: bool = True,
    offsets: Sequence[int] | None = None,
    rebuilt: bool = False,
) -> list[EncodedBatch]:
    """What a magic 0/1 leader stores for one produce request of ``records`` at ``base_offset``.

    Uncompressed: one message per record (each a shallow batch). Compressed: one wrapper (magic
    1: relative inner offsets, wrapper offset = last absolute offset; magic 0: absolute inner
    offsets, lz4 with Kafka's legacy header checksum). Headers are not representable before
    magic 2 and are refused; zstd is refused for magic < 2 as Kafka does.

    ``offsets`` (absolute, increasing, the first one ``base_offset``) and ``rebuilt`` serve the
    log cleaner, whose ``MemoryRecordsBuilder`` keeps the surviving offsets (gaps) and, under
    LogAppendTime, stamps inner messages with the append time and the LogAppendTime bit.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    if not records:
        raise ValueError("nothing to encode")
    if any(r.headers for r in records):
        raise ValueError("record headers need message format v2")
    if codec is Codec.ZSTD:
        raise ValueError("zstd needs message format v2 (Kafka refuses it for magic < 2)")
    lat = log_append_time is not None and magic == 1
    offs = [base_offset + i for i in range(len(records))] if offsets is None else list(offsets)
    if (
        len(offs) != len(records)
        or offs[0] != base_offset
        or any(b <= a for a, b in itertools.pairwise(offs))
    ):
        raise ValueError("offsets must be increasing, one per record, starting at base_offset")
    timestamps = (
        [require_timestamp(r) for r in records] if magic == 1 else [NO_TIMESTAMP] * len(records)
    )
    if codec is Codec.NONE:
        out = []
        for off, r, ts in zip(offs, records, timestamps, strict=True):
            stored_ts = log_append_time if (lat and log_append_time is not None) else ts
            data = encode_legacy_message(
                magic, off, r.key, r.value, timestamp=stored_ts, log_append_time=lat
            )
            out.append(
                EncodedBatch(
                    data=data,
                    magic=magic,
                    base_offset=off,
                    last_offset=off,
                    record_count=1,
                    max_timestamp=stored_ts,
                    timestamp_type=_legacy_ts_type(magic, lat),
                )
            )
        return out
    # inner messages: magic 1 relative offsets, magic 0 absolute; inner attributes carry no codec
    # and (in-place assignment) the producer's CreateTime type
    inner_lat = lat and rebuilt
    inner = b"".join(
        encode_legacy_message(
            magic,
            (off - base_offset if magic == 1 else off),
            r.key,
            r.value,
            timestamp=(log_append_time if inner_lat and log_append_time is not None else ts),
            log_append_time=inner_lat,
        )
        for off, r, ts in zip(offs, records, timestamps, strict=True)
    )
    compressed = compress(codec, inner, xerial=xerial_snappy, legacy_lz4=magic == 0)
    last = offs[-1]
    if magic == 0:
        wrapper_ts = NO_TIMESTAMP
    elif log_append_time is not None:
        wrapper_ts = log_append_time
    else:
        wrapper_ts = max(timestamps)
    data = encode_legacy_message(
        magic, last, None, compressed, timestamp=wrapper_ts, codec=codec, log_append_time=lat
    )
    return [
        EncodedBatch(
            data=data,
            magic=magic,
            base_offset=base_offset,
            last_offset=last,
            record_count=len(records),
            max_timestamp=wrapper_ts,
            codec=codec,
            timestamp_type=_legacy_ts_type(magic, lat),
        )
    ]


def _legacy_ts_type(magic: int, log_append: bool) -> TimestampType:
    if magic == 0:
        return TimestampType.NO_TIMESTAMP
    return TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
