"""Cross-checks of kafka_archive_dev.writer against implementations not written here.

* Every segment the writer produces (every codec, magic 0/1/2, headers, null keys/values,
  transactions with markers, LogAppendTime) is parsed by kafka-python's ``MemoryRecords`` and by
  aiokafka's record parsers (compiled ``_crecords`` and pure-Python), which must agree with what
  was written, CRCs included.
* kafka-python's own batch builders produce byte-identical uncompressed batches.
* Batches written by real Kafka brokers re-encode to the same bytes (uncompressed) or the same
  record payload (compressed).

Timestamp conventions of the foreign parsers: both apply LogAppendTime themselves (a record of a
LogAppendTime batch/wrapper reports the batch's max timestamp / the wrapper's timestamp, as
Kafka's consumer does), so expected timestamps are the broker-reported ones; for magic 0, which
has no timestamp field, they report ``None`` where Kafka reports NO_TIMESTAMP (-1).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka.errors import UnsupportedCodecError
from aiokafka.record import memory_records as aio_memory_records
from kafka.record import MemoryRecords as KafkaPythonMemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka_archive_dev.writer import (
    ManualClock,
    PartitionWriter,
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
    encode_legacy_batches,
    encode_legacy_message,
    encode_record_v2,
)

from segment_lib.compression import Codec, decompress
from segment_lib.log_file import open_log
from segment_lib.record_batch import RECORDS_START
from segment_lib.records import BatchHeader, Header, Record, TimestampType


@dataclass(frozen=True)
class ForeignBatch:
    base_offset: int
    is_control: bool
    is_transactional: bool
    producer_id: int | None
    crc_ok: bool
    #: offset, timestamp, timestamp type (-1: none), key, value, headers
    records: list[tuple[int, int, int, bytes | None, bytes | None, tuple[Header, ...]]]


def _norm_ts(ts: int | None) -> int:
    return -1 if ts is None else ts


def _foreign_batches(
    make: Callable[[bytes], Any], data: bytes, magic: int
) -> Iterator[ForeignBatch]:
    records = make(data)
    while True:
        batch = records.next_batch()
        if batch is None:
            return
        crc_ok = batch.validate_crc()  # before iterating (aiokafka requires it)
        recs = [
            (
                r.offset,
                _norm_ts(r.timestamp),
                _norm_ts(r.timestamp_type),
                None if r.key is None else bytes(r.key),
                None if r.value is None else bytes(r.value),
                tuple(Header(k, None if v is None else bytes(v)) for k, v in r.headers),
            )
            for r in batch
        ]
        yield ForeignBatch(
            base_offset=recs[0][0] if recs else batch.base_offset,
            is_control=bool(getattr(batch, "is_control_batch", False)),
            is_transactional=bool(getattr(batch, "is_transactional", False)),
            producer_id=getattr(batch, "producer_id", None) if magic >= 2 else None,
            crc_ok=crc_ok,
            records=recs,
        )


PARSERS: dict[str, Callable[[bytes], Any]] = {
    "kafka-python": KafkaPythonMemoryRecords,
    "aiokafka-c": aio_memory_records.MemoryRecords,
    "aiokafka-py": aio_memory_records._MemoryRecordsPy,
}


def _ours(path: Path) -> list[tuple[BatchHeader, list[Record]]]:
    with open_log(path) as lb:
        return [(h, lb.records(h)) for h in lb.batches()]


def _expected(path: Path) -> list[ForeignBatch]:
    out = []
    for h, recs in _ours(path):
        out.append(
            ForeignBatch(
                base_offset=recs[0].offset if recs else h.base_offset,
                is_control=h.is_control,
                is_transactional=h.is_transactional,
                producer_id=h.producer_id if h.magic >= 2 else None,
                crc_ok=True,
                records=[
                    (r.offset, r.timestamp, int(h.timestamp_type), r.key, r.value, r.headers)
                    for r in recs
                ],
            )
        )
    return out


def _write_segment(tmp_path: Path, magic: int, codec: Codec, ts_type: TimestampType) -> Path:
    clock = ManualClock(1_700_000_000_000)
    pw = PartitionWriter(
        tmp_path, "x", 0, message_format=magic, timestamp_type=ts_type, clock=clock
    )
    heads = (Header("a", b"1"), Header("empty", b""), Header("null", None), Header("ü", b"\xff"))
    for i in range(6):
        clock.advance(37)
        recs = [
            WriteRecord(
                None if j == 1 else f"key-{i}-{j}".encode(),
                None if j == 2 else (f"value-{i}-{j}-".encode() * (j + 1)),
                heads[: j + 1] if magic == 2 else (),
                clock() - 1000 + 13 * j - (50 if j == 3 else 0),
            )
            for j in range(4)
        ]
        pw.append(recs, codec=codec)
    if magic == 2:
        tx = pw.begin_transaction(4242, 3)
        tx.append([(b"t1", b"x"), (None, None)], codec=codec)
        tx.abort(coordinator_epoch=9)
        tx2 = pw.begin_transaction(4242, 3)
        tx2.append([(b"t2", b"y")], codec=codec)
        clock.advance(5)
        tx2.commit()
        pw.append([(b"idem", b"potent")], codec=codec, producer_id=17, producer_epoch=0)
    pw.close()
    return tmp_path / "x-0" / "00000000000000000000.log"


CASES = [
    (magic, codec, ts_type)
    for magic in (0, 1, 2)
    for codec in Codec
    for ts_type in (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)
    if not (magic < 2 and codec is Codec.ZSTD)
    and not (magic == 0 and ts_type is TimestampType.LOG_APPEND_TIME)
]


@pytest.mark.parametrize(("magic", "codec", "ts_type"), CASES)
@pytest.mark.parametrize("parser", list(PARSERS))
def test_foreign_parsers_read_what_the_writer_wrote(
    tmp_path: Path, magic: int, codec: Codec, ts_type: TimestampType, parser: str
) -> None:
    log = _write_segment(tmp_path, magic, codec, ts_type)
    data = log.read_bytes()
    expected = _expected(log)
    if magic == 0 and codec is Codec.LZ4 and parser.startswith("aiokafka"):
        # aiokafka deliberately refuses Kafka 0.8's lz4 framing
        with pytest.raises(UnsupportedCodecError):
            list(_foreign_batches(PARSERS[parser], data, magic))
        return
    got = list(_foreign_batches(PARSERS[parser], data, magic))
    assert all(b.crc_ok for b in got)
    if parser == "kafka-python" or magic < 2:
        # not every parser exposes the same batch attributes; compare what both expose
        got_cmp = [(b.base_offset, b.records) for b in got]
        exp_cmp = [(b.base_offset, b.records) for b in expected]
    else:
        got_cmp = [(b.base_offset, b.is_control, b.is_transactional, b.records) for b in got]
        exp_cmp = [(b.base_offset, b.is_control, b.is_transactional, b.records) for b in expected]
    assert got_cmp == exp_cmp
    # the expected side really exercises the features
    records = [r for b in expected for r in b.records]
    assert any(r[3] is None for r in records) and any(r[4] is None for r in records)
    if magic == 2:
        assert any(b.is_control for b in expected) and any(r[5] for r in records)
    if ts_type is TimestampType.LOG_APPEND_TIME:
        for b in got:
            if b.records and magic > 0:
                assert len({r[1] for r in b.records}) == 1


def test_foreign_parsers_see_transaction_and_producer_fields(tmp_path: Path) -> None:
    log = _write_segment(tmp_path, 2, Codec.NONE, TimestampType.CREATE_TIME)
    got = list(_foreign_batches(PARSERS["kafka-python"], log.read_bytes(), 2))
    flags = [(b.is_control, b.is_transactional, b.producer_id) for b in got[-5:]]
    assert flags == [
        (False, True, 4242),
        (True, True, 4242),
        (False, True, 4242),
        (True, True, 4242),
        (False, False, 17),
    ]
    batches = KafkaPythonMemoryRecords(log.read_bytes())
    control_types = []
    while (b := batches.next_batch()) is not None:
        if b.is_control_batch:
            control_types += [(r.type, r.abort, r.commit) for r in b]
    assert control_types == [(0, True, False), (1, False, True)]


# ---------------------------------------------------------------------------------------------
# byte equality with kafka-python's builders


def test_v2_bytes_equal_kafka_python_builder() -> None:
    recs = [
        WriteRecord(b"k", b"v", (Header("h", b"1"),), 1_000),
        WriteRecord(None, None, (), 1_003),
        WriteRecord(b"key" * 50, b"value" * 300, (), 998),
    ]
    for pid, epoch, seq, txn in ((-1, -1, -1, False), (55, 2, 10, True)):
        builder = DefaultRecordBatchBuilder(2, 0, txn, pid, epoch, seq, 1 << 20)
        for i, r in enumerate(recs):
            builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
        theirs = bytes(builder.build())
        ours = encode_batch_v2(
            0,
            recs,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            transactional=txn,
            partition_leader_epoch=0,
        )
        assert ours.data == theirs


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_bytes_equal_kafka_python_builder(magic: int) -> None:
    recs = [WriteRecord(b"k", b"v", (), 1_000), WriteRecord(None, None, (), 1_003)]
    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
    for i, r in enumerate(recs):
        builder.append(i, r.timestamp, r.key, r.value)
    theirs = bytes(builder.build())
    ours = b"".join(b.data for b in encode_legacy_batches(magic, 0, recs))
    assert ours == theirs


# ---------------------------------------------------------------------------------------------
# byte equality with real broker output


def _raw_record_timestamps(payload: bytes, first_ts: int, count: int) -> list[int]:
    """Record timestamps from the raw deltas (our reader applies LogAppendTime)."""

    def varint(p: int) -> tuple[int, int]:
        shift = result = 0
        while True:
            b = payload[p]
            p += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1), p
            shift += 7

    out, p = [], 0
    for _ in range(count):
        length, p = varint(p)
        end = p + length
        delta, _ = varint(p + 1)
        out.append(first_ts + delta)
        p = end
    return out


def test_real_broker_batches_reencode_identically(real_broker_data: Path) -> None:
    same_bytes = same_payload = legacy_same = 0
    for log in sorted(real_broker_data.rglob("*.log")):
        try:
            with open_log(log) as lb:
                parsed = [
                    (h, lb.records(h), bytes(lb.data[h.position : h.next_position]))
                    for h in lb.batches()
                ]
        except Exception:
            continue
        for h, recs, raw in parsed:
            if h.magic < 2:
                if h.codec is Codec.NONE:
                    [r] = recs
                    assert (
                        encode_legacy_message(
                            h.magic,
                            r.offset,
                            r.key,
                            r.value,
                            timestamp=h.max_timestamp,
                            log_append_time=h.timestamp_type is TimestampType.LOG_APPEND_TIME,
                        )
                        == raw
                    )
                    legacy_same += 1
                continue
            if h.attributes & 0x40 or not recs:
                continue  # cleaner-rewritten (delete horizon) or emptied batches
            payload = decompress(h.codec, raw[RECORDS_START:])
            stamps = _raw_record_timestamps(payload, h.first_timestamp, h.record_count)
            if h.is_control:
                [r] = recs
                ctype = struct.unpack(">h", r.key[2:4])[0] if r.key else None
                if ctype not in (0, 1):
                    continue  # KRaft control records: not written by the writer
                from segment_lib.control import ControlType, decode_control_record

                ours = encode_control_batch(
                    h.base_offset,
                    ControlType(ctype),
                    producer_id=h.producer_id,
                    producer_epoch=h.producer_epoch,
                    timestamp=stamps[0],
                    coordinator_epoch=decode_control_record(r.key, r.value).coordinator_epoch or 0,
                    log_append_time=(
                        h.max_timestamp
                        if h.timestamp_type is TimestampType.LOG_APPEND_TIME
                        else None
                    ),
                    partition_leader_epoch=h.partition_leader_epoch,
                )
                assert ours.data == raw
                same_bytes += 1
                continue
            mine = b"".join(
                encode_record_v2(
                    r.offset - h.base_offset, ts - h.first_timestamp, r.key, r.value, r.headers
                )
                for r, ts in zip(recs, stamps, strict=True)
            )
            assert mine == payload, f"{log} batch at {h.position}"
            same_payload += 1
            if h.codec is Codec.NONE and stamps[0] == h.first_timestamp:
                ours = encode_batch_v2(
                    h.base_offset,
                    [
                        WriteRecord(r.key, r.value, r.headers, ts)
                        for r, ts in zip(recs, stamps, strict=True)
                    ],
                    log_append_time=(
                        h.max_timestamp
                        if h.timestamp_type is TimestampType.LOG_APPEND_TIME
                        else None
                    ),
                    producer_id=h.producer_id,
                    producer_epoch=h.producer_epoch,
                    base_sequence=h.base_sequence,
                    transactional=h.is_transactional,
                    partition_leader_epoch=h.partition_leader_epoch,
                    offset_deltas=[r.offset - h.base_offset for r in recs],
                    last_offset_delta=h.last_offset - h.base_offset,
                )
                assert ours.data == raw, f"{log} batch at {h.position}"
                same_bytes += 1
    assert same_bytes > 1000 and same_payload > 1000 and legacy_same > 10


@pytest.mark.parametrize("parser", ["kafka-python", "aiokafka-c"])
def test_foreign_parsers_read_the_demo_cluster(tmp_path: Path, parser: str) -> None:
    """Compacted segments (gaps, delete horizons, emptied batches), markers, replicas, legacy
    formats and torn tails: everything the demo writes reads the same through other parsers."""
    from kafka_archive_dev.writer import write_demo_cluster

    demo = write_demo_cluster(tmp_path, seed=11, steps=200)
    checked = 0
    for log in sorted(demo.root.rglob("*.log")):
        with open_log(log) as lb:
            parsed = [(h, lb.records(h)) for h in lb.batches(allow_torn_tail=True)]
            end = lb.torn_tail_position if lb.torn_tail_position is not None else len(lb)
        if not parsed:
            continue
        magics = {h.magic for h, _ in parsed}
        if (
            0 in magics
            and any(h.codec is Codec.LZ4 for h, _ in parsed)
            and parser != "kafka-python"
        ):
            continue  # aiokafka refuses Kafka 0.8's lz4 framing (see the test above)
        data = log.read_bytes()[:end]
        got = list(_foreign_batches(PARSERS[parser], data, max(magics)))
        assert all(b.crc_ok for b in got), log
        expected = [
            [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] for _, recs in parsed
        ]
        assert [[(o, t, k, v, hd) for o, t, _, k, v, hd in b.records] for b in got] == expected
        checked += 1
    assert checked > 25
