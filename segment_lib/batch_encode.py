"""Encoders of magic 2 record batches, byte for byte as a Kafka producer sends them and the
leader stores them (Kafka's ``MemoryRecordsBuilder`` / ``DefaultRecordBatch``).

Two uses: the development writer (``tests/dev``) builds whole log directories with them, and
batch-level replay re-encodes the few source batches it cannot send as they are (a batch cut
by the replay's range, a compacted batch whose offsets have gaps, a LogAppendTime batch whose
records must carry the append time). :func:`restamp_v2` is the other half of batch-level
replay: a stored batch given a new producer id, epoch, base sequence and the transactional
flag, its CRC-32C recomputed, nothing else touched (compressed records stay compressed).

* ``firstTimestamp`` is the first record's timestamp and record timestamp deltas are relative
  to it, as the producer wrote them. Under ``LogAppendTime`` the broker only overwrites
  ``maxTimestamp`` with its append time and sets attribute bit 3 (``setMaxTimestamp``, in
  place); the records keep their own deltas.
* CRC-32C covers attributes .. end (:data:`~segment_lib.record_batch.CRC_START`).

Every function here is a pure function of its arguments.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from segment_lib._crc import crc32c
from segment_lib.compression import Codec, compress
from segment_lib.control import ControlType, encode_control_record
from segment_lib.errors import CorruptBatchError
from segment_lib.record_batch import BATCH_HEADER, CRC_START
from segment_lib.records import (
    LOG_OVERHEAD,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    BatchHeader,
    Header,
    TimestampType,
)

__all__ = [
    "NO_SEQUENCE",
    "EncodedBatch",
    "WriteRecord",
    "assemble_v2",
    "encode_batch_v2",
    "encode_control_batch",
    "encode_empty_batch_v2",
    "encode_record_v2",
    "encode_varint",
    "require_timestamp",
    "restamp_v2",
    "v2_attributes",
]

NO_SEQUENCE: Final = -1
_INT32_MAX: Final = (1 << 31) - 1

# magic 2 attribute bits (DefaultRecordBatch)
_TIMESTAMP_TYPE_BIT: Final = 0x08
_TRANSACTIONAL_BIT: Final = 0x10
_CONTROL_BIT: Final = 0x20
_DELETE_HORIZON_BIT: Final = 0x40


class WriteRecord(NamedTuple):
    """One record to write. ``timestamp`` ``None`` means "stamp with the clock" (writer only)."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """One shallow batch as stored: a magic 2 batch or one magic 0/1 message (maybe a wrapper).

    ``max_timestamp`` is what Kafka's ``RecordBatch.maxTimestamp()`` returns for it (the header's
    maxTimestamp, the legacy message's timestamp, -1 for magic 0); ``last_sequence`` is
    ``base_sequence + last_offset_delta`` (wrapping like Kafka) or -1.
    """

    data: bytes
    magic: int
    base_offset: int
    last_offset: int
    record_count: int
    max_timestamp: int
    codec: Codec = Codec.NONE
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE
    is_transactional: bool = False
    control_type: ControlType | None = None
    coordinator_epoch: int = -1
    partition_leader_epoch: int = -1

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def is_control(self) -> bool:
        return self.control_type is not None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        # DefaultRecordBatch.incrementSequence: sequences wrap at Integer.MAX_VALUE
        delta = self.last_offset - self.base_offset
        return (self.base_sequence + delta) % (_INT32_MAX + 1)


# ---------------------------------------------------------------------------------------------
# varints (zig-zag, protobuf style; Kafka's ByteUtils.writeVarint / writeVarlong)


def encode_varint(value: int) -> bytes:
    """Zig-zag varint of a signed 64-bit value."""
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"{value} does not fit a varlong")
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _varbytes(data: bytes | None) -> bytes:
    if data is None:
        return encode_varint(-1)
    return encode_varint(len(data)) + data


def encode_record_v2(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header] = (),
) -> bytes:
    """One magic 2 record, its varint length prefix included (``DefaultRecord.writeTo``)."""
    body = bytearray(b"\x00")  # attributes: unused, always 0
    body += encode_varint(timestamp_delta)
    body += encode_varint(offset_delta)
    body += _varbytes(key)
    body += _varbytes(value)
    body += encode_varint(len(headers))
    for name, hvalue in headers:
        body += _varbytes(name.encode("utf-8"))
        body += _varbytes(hvalue)
    return encode_varint(len(body)) + bytes(body)


def v2_attributes(
    codec: Codec, log_append: bool, transactional: bool, control: bool, delete_horizon: bool
) -> int:
    """A magic 2 batch's attributes field from its parts."""
    return (
        int(codec)
        | (_TIMESTAMP_TYPE_BIT if log_append else 0)
        | (_TRANSACTIONAL_BIT if transactional else 0)
        | (_CONTROL_BIT if control else 0)
        | (_DELETE_HORIZON_BIT if delete_horizon else 0)
    )


def assemble_v2(
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    first_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    record_count: int,
    payload: bytes,
) -> bytes:
    """A whole magic 2 batch from its header fields and its (already compressed) records;
    the batch length and the CRC-32C are computed."""
    batch_length = BATCH_HEADER.size - LOG_OVERHEAD + len(payload)
    header = bytearray(
        BATCH_HEADER.pack(
            base_offset,
            batch_length,
            partition_leader_epoch,
            2,
            0,  # crc, filled below
            attributes,
            last_offset_delta,
            first_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            record_count,
        )
    )
    crc = crc32c(bytes(header[CRC_START:]) + payload)
    struct.pack_into(">I", header, CRC_START - 4, crc)
    return bytes(header) + payload


def encode_batch_v2(
    base_offset: int,
    records: Sequence[WriteRecord],
    *,
    codec: Codec = Codec.NONE,
    log_append_time: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    partition_leader_epoch: int = -1,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
    xerial_snappy: bool = True,
) -> EncodedBatch:
    """A magic 2 data batch holding ``records`` (at least one; timestamps set).

    Args:
        base_offset: offset of the first record (the leader assigns the log end offset).
        log_append_time: set for a LogAppendTime topic: becomes ``maxTimestamp`` and sets bit 3;
            records keep their timestamp deltas against ``firstTimestamp``.
        offset_deltas / last_offset_delta: for batches rewritten by the log cleaner, which keep
            the surviving records' offsets (gaps) and the original last offset.
        delete_horizon_ms: the cleaner's delete horizon (attribute bit 6); it then replaces
            ``firstTimestamp`` and record deltas are taken against it.
        xerial_snappy: snappy framed as the Java producer does (default) or raw (librdkafka).
    """
    if not records:
        raise ValueError("a data batch needs at least one record (see encode_empty_batch_v2)")
    deltas = list(range(len(records))) if offset_deltas is None else list(offset_deltas)
    if len(deltas) != len(records) or any(b <= a for a, b in itertools.pairwise(deltas)):
        raise ValueError("offset_deltas must be increasing, one per record")
    last_delta = deltas[-1] if last_offset_delta is None else last_offset_delta
    if deltas[0] < 0 or last_delta < deltas[-1] or last_delta > _INT32_MAX:
        raise ValueError(f"bad offset deltas {deltas[0]}..{last_delta}")
    timestamps = [require_timestamp(r) for r in records]
    base_ts = timestamps[0] if delete_horizon_ms is None else delete_horizon_ms
    payload = b"".join(
        encode_record_v2(d, ts - base_ts, r.key, r.value, r.headers)
        for d, ts, r in zip(deltas, timestamps, records, strict=True)
    )
    if codec is not Codec.NONE:
        payload = compress(codec, payload, xerial=xerial_snappy)
    log_append = log_append_time is not None
    # MemoryRecordsBuilder starts maxTimestamp at NO_TIMESTAMP and keeps the largest record's
    max_ts = log_append_time if log_append_time is not None else max(NO_TIMESTAMP, *timestamps)
    data = assemble_v2(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=v2_attributes(
            codec, log_append, transactional, False, delete_horizon_ms is not None
        ),
        last_offset_delta=last_delta,
        first_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=len(records),
        payload=payload,
    )
    return EncodedBatch(
        data=data,
        magic=2,
        base_offset=base_offset,
        last_offset=base_offset + last_delta,
        record_count=len(records),
        max_timestamp=max_ts,
        codec=codec,
        timestamp_type=(TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=transactional,
        partition_leader_epoch=partition_leader_epoch,
    )


def encode_control_batch(
    offset: int,
    control_type: ControlType,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    coordinator_epoch: int = 0,
    log_append_time: int | None = None,
    partition_leader_epoch: int = -1,
    delete_horizon_ms: int | None = None,
) -> EncodedBatch:
    """A COMMIT/ABORT marker batch (``MemoryRecords.withEndTransactionMarker``).

    One control record (key ``version 0, type``, value ``version 0, coordinatorEpoch``), the
    transactional and control bits set, no compression, base sequence -1.
    """
    if control_type not in (ControlType.COMMIT, ControlType.ABORT):
        raise ValueError(f"only COMMIT and ABORT markers are written, not {control_type.name}")
    key, value = encode_control_record(control_type, coordinator_epoch)
    base_ts = timestamp if delete_horizon_ms is None else delete_horizon_ms
    payload = encode_record_v2(0, timestamp - base_ts, key, value, ())
    max_ts = timestamp if log_append_time is None else log_append_time
    data = assemble_v2(
        base_offset=offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=v2_attributes(
            Codec.NONE, log_append_time is not None, True, True, delete_horizon_ms is not None
        ),
        last_offset_delta=0,
        first_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        record_count=1,
        payload=payload,
    )
    return EncodedBatch(
        data=data,
        magic=2,
        base_offset=offset,
        last_offset=offset,
        record_count=1,
        max_timestamp=max_ts,
        timestamp_type=(
            TimestampType.LOG_APPEND_TIME
            if log_append_time is not None
            else TimestampType.CREATE_TIME
        ),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        control_type=control_type,
        coordinator_epoch=coordinator_epoch,
        partition_leader_epoch=partition_leader_epoch,
    )


def encode_empty_batch_v2(
    base_offset: int,
    last_offset: int,
    *,
    max_timestamp: int,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control_type: ControlType | None = None,
    partition_leader_epoch: int = -1,
) -> EncodedBatch:
    """A header-only batch (``DefaultRecordBatch.writeEmptyHeader``), left by the log cleaner
    when it removes every record of a batch it must keep for producer state.

    ``firstTimestamp`` is -1, the codec none, ``recordCount`` 0; offsets and producer fields are
    the original batch's.
    """
    data = assemble_v2(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=v2_attributes(
            Codec.NONE,
            timestamp_type is TimestampType.LOG_APPEND_TIME,
            transactional,
            control_type is not None,
            False,
        ),
        last_offset_delta=last_offset - base_offset,
        first_timestamp=NO_TIMESTAMP,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=0,
        payload=b"",
    )
    return EncodedBatch(
        data=data,
        magic=2,
        base_offset=base_offset,
        last_offset=last_offset,
        record_count=0,
        max_timestamp=max_timestamp,
        timestamp_type=timestamp_type,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=transactional,
        control_type=control_type,
        partition_leader_epoch=partition_leader_epoch,
    )


def require_timestamp(record: WriteRecord) -> int:
    if record.timestamp is None:
        raise ValueError("record timestamp is not set (the writer stamps records first)")
    return record.timestamp


#: where the fields a replay re-stamps lie in a batch (offsets from its first byte)
_PRODUCER_FIELDS: Final = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence
_PRODUCER_AT: Final = struct.calcsize(">qiibIhiqq")
_ATTRIBUTES_AT: Final = struct.calcsize(">qiibI")
_LEADER_EPOCH_AT: Final = struct.calcsize(">qi")
_HEAD: Final = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch


def restamp_v2(
    batch: bytes | memoryview,
    header: BatchHeader,
    *,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool = True,
) -> bytearray:
    """A copy of the stored magic 2 data batch ``batch`` (exactly ``header.size`` bytes) as a
    producer sends it: base offset 0 and partition leader epoch -1 (the leader assigns both),
    the given producer id, epoch and base sequence, the transactional flag set (or cleared),
    the CRC-32C recomputed. The records - compressed or not - are the stored bytes, untouched;
    so are the codec and timestamp type bits.

    Raises:
        CorruptBatchError: ``batch`` is not ``header.size`` bytes, or is a control batch
            (markers are the coordinator's to write, never a producer's).
    """
    if len(batch) != header.size or header.magic != 2:
        raise CorruptBatchError(
            f"restamp_v2 needs one whole magic 2 batch of {header.size} bytes, got "
            f"{len(batch)} (magic {header.magic})",
            position=header.position,
        )
    if header.is_control:
        raise CorruptBatchError("a control batch is never re-sent", position=header.position)
    out = bytearray(batch)
    _HEAD.pack_into(out, 0, 0, header.size - LOG_OVERHEAD, -1)
    attributes = header.attributes & ~(_TRANSACTIONAL_BIT | _CONTROL_BIT)
    if transactional:
        attributes |= _TRANSACTIONAL_BIT
    struct.pack_into(">h", out, _ATTRIBUTES_AT, attributes)
    _PRODUCER_FIELDS.pack_into(out, _PRODUCER_AT, producer_id, producer_epoch, base_sequence)
    struct.pack_into(">I", out, CRC_START - 4, crc32c(memoryview(out)[CRC_START:]))
    return out
