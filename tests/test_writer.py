"""Tests of kafka_archive_dev.writer: what it writes must read back through segment_lib's own
readers and follow the broker's rules, checked against independent models.

The index model used here (``index_model``) is a few lines written from Kafka's
``LogSegment.append`` and is itself checked against real broker files (``test_index_model_*``),
so the writer is compared with a rule that real brokers demonstrably follow, not with itself.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from pathlib import Path

import pytest
from kafka_archive_dev.writer import (
    AppendResult,
    BrokerWriter,
    ManualClock,
    PartitionWriter,
    WriteRecord,
    compact,
    encode_batch_v2,
    encode_control_batch,
    encode_empty_batch_v2,
    encode_legacy_batches,
    encode_varint,
    write_demo_cluster,
)

from segment_lib.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint
from segment_lib.compression import Codec
from segment_lib.consumer_offsets import OffsetCommit, decode_offsets_record, partition_for_group
from segment_lib.control import ControlType, decode_control_record
from segment_lib.errors import TornTailError
from segment_lib.log_file import open_log
from segment_lib.metadata_files import read_meta_properties, read_partition_metadata
from segment_lib.offset_index import read_offset_index
from segment_lib.producer_snapshot import read_producer_snapshot
from segment_lib.records import BatchHeader, Header, Record, TimestampType
from segment_lib.time_index import read_time_index
from segment_lib.txn_index import AbortedTxn, read_txn_index

# ---------------------------------------------------------------------------------------------
# helpers


def read_log(path: Path, *, allow_torn: bool = False) -> list[tuple[BatchHeader, list[Record]]]:
    with open_log(path) as lb:
        return [(h, lb.records(h)) for h in lb.batches(allow_torn_tail=allow_torn)]


def seg_files(pdir: Path, suffix: str) -> list[Path]:
    return sorted(pdir.glob(f"*{suffix}"))


def all_records(pdir: Path, *, allow_torn: bool = False) -> list[Record]:
    out: list[Record] = []
    for log in seg_files(pdir, ".log"):
        for h, recs in read_log(log, allow_torn=allow_torn):
            if not h.is_control:
                out.extend(recs)
    return out


def appended_records(pw: PartitionWriter) -> list[Record]:
    """Every non-control record the writer appended (files of the active segment are only
    written at close)."""
    return [
        r
        for h, recs in _parse(b"".join(b.data for b in pw.appended))
        if not h.is_control
        for r in recs
    ]


def index_model(
    chunks: Sequence[Sequence[BatchHeader]],
    base: int,
    interval: int,
    *,
    final: bool = True,
    records: dict[int, list[Record]] | None = None,
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Expected (.index, .timeindex) entries of a segment built by appending ``chunks``.

    From ``LogSegment.append``: before an append's bytes are counted, if more than ``interval``
    bytes came since the last entry, index (last offset of the append, its start position) and
    offer (max timestamp so far, last offset of the earliest batch holding it) to the time
    index, which takes it only when the timestamp grew; ``final`` adds the roll/close entry.
    With ``records`` (batch position -> records), uncompressed CreateTime batches contribute the
    offset of their first record with the max timestamp instead (Kafka before 3.8).
    """
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    since = 0
    max_ts, max_off = -1, base

    def offer(ts: int, off: int) -> None:
        if ts > (times[-1][0] if times else -1):
            times.append((ts, off))

    for chunk in chunks:
        for h in chunk:
            ts, off = h.max_timestamp, h.last_offset
            recs = records.get(h.position) if records is not None else None
            if recs and h.codec is Codec.NONE and h.timestamp_type is TimestampType.CREATE_TIME:
                ts = max(r.timestamp for r in recs)
                off = next(r.offset for r in recs if r.timestamp == ts)
            if ts > max_ts:
                max_ts, max_off = ts, off
        if since > interval:
            offsets.append((chunk[-1].last_offset, chunk[0].position))
            offer(max_ts, max_off)
            since = 0
        since += sum(h.size for h in chunk)
    if final:
        offer(max_ts, max_off)
    return offsets, times


def chunks_of(headers: Sequence[BatchHeader], starts: set[int]) -> list[list[BatchHeader]]:
    """Group a segment's batches into the appends that started at ``starts`` positions."""
    out: list[list[BatchHeader]] = []
    for h in headers:
        if h.position in starts or not out:
            out.append([h])
        else:
            out[-1].append(h)
    return out


def written_indexes(pdir: Path, base: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    name = f"{base:020d}"
    oi = read_offset_index(pdir / f"{name}.index")
    ti = read_time_index(pdir / f"{name}.timeindex")
    return [(e.offset, e.position) for e in oi], [(e.timestamp, e.offset) for e in ti]


# ---------------------------------------------------------------------------------------------
# the index model against real brokers


@pytest.mark.parametrize(
    "relpath",
    [
        "NikhilDighe9975__kafka_setup/kafka-logs/__consumer_offsets-12/00000000000000000000",
        "smartassets__backend-server/kafka/data/temperature-0/00000000000000000000",
        "rjmfernandes__flink-on-prem/data/_confluent-monitoring-0/00000000000000000000",
    ],
)
def test_index_model_reproduces_real_broker_indexes(real_broker_data: Path, relpath: str) -> None:
    # these segments were written by leaders appending one batch per request
    base = real_broker_data / relpath
    headers = [h for h, _ in read_log(base.with_suffix(".log"))]
    expected = index_model([[h] for h in headers], 0, 4096)
    assert written_indexes(base.parent, 0) == expected
    assert len(expected[0]) > 5


def test_pre_3_8_time_index_rule_reproduces_a_kafka_3_6_leader(real_broker_data: Path) -> None:
    # Confluent 7.6 (Kafka 3.6): uncompressed CreateTime leader appends indexed the first record
    # holding the batch's max timestamp, not the batch's last offset
    base = real_broker_data / "rjmfernandes__flink-on-prem/data/orders-0/00000000000000000000"
    parsed = read_log(base.with_suffix(".log"))
    record_level = index_model(
        [[h] for h, _ in parsed], 0, 4096, records=dict((h.position, recs) for h, recs in parsed)
    )
    shallow = index_model([[h] for h, _ in parsed], 0, 4096)
    assert written_indexes(base.parent, 0) == record_level
    assert record_level[1] != shallow[1]


def test_writer_pre_3_8_time_index_rule(tmp_path: Path) -> None:
    for record_offsets, expected in ((False, [(900, 3)]), (True, [(900, 1)])):
        pw = PartitionWriter(
            tmp_path / str(record_offsets),
            "t",
            0,
            index_interval_bytes=0,
            time_index_record_offsets=record_offsets,
        )
        pw.append([(b"a", b"1")], timestamp=100)
        pw.append([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], timestamp=900)  # offsets 1-3
        pw.close()
        assert written_indexes(pw.dir, 0)[1] == expected


# ---------------------------------------------------------------------------------------------
# encoders


@pytest.mark.parametrize(
    ("value", "encoded"),
    # zig-zag varints as protobuf defines them: 0->0, -1->1, 1->2, 63->126, -64->127, 64->128
    [(0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (300, "d804")],
)
def test_varint(value: int, encoded: str) -> None:
    assert encode_varint(value).hex() == encoded


RECORDS = [
    WriteRecord(b"k1", b"v1", (Header("h1", b"x"), Header("h2", None)), 1_000),
    WriteRecord(None, b"no key", (), 990),
    WriteRecord(b"k3", None, (), 1_005),
    WriteRecord(b"", b"", (Header("", b""),), 1_001),
]


@pytest.mark.parametrize("codec", list(Codec))
@pytest.mark.parametrize("log_append_time", [None, 5_000])
def test_batch_v2_reads_back(codec: Codec, log_append_time: int | None) -> None:
    b = encode_batch_v2(
        42,
        RECORDS,
        codec=codec,
        log_append_time=log_append_time,
        producer_id=7,
        producer_epoch=3,
        base_sequence=11,
        transactional=True,
        partition_leader_epoch=5,
    )
    [(h, recs)] = [(h, r) for h, r in _parse(b.data)]
    assert (h.base_offset, h.last_offset, h.record_count, h.codec) == (42, 45, 4, codec)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (7, 3, 11)
    assert h.partition_leader_epoch == 5 and h.is_transactional and not h.is_control
    assert h.first_timestamp == 1_000  # the first record's, also under LogAppendTime
    if log_append_time is None:
        assert h.timestamp_type is TimestampType.CREATE_TIME and h.max_timestamp == 1_005
        assert [r.timestamp for r in recs] == [1_000, 990, 1_005, 1_001]
    else:
        assert h.timestamp_type is TimestampType.LOG_APPEND_TIME
        assert h.max_timestamp == 5_000
        assert h.attributes & 0x08
        assert {r.timestamp for r in recs} == {5_000}
    assert [(r.offset, r.key, r.value, r.headers) for r in recs] == [
        (42 + i, w.key, w.value, w.headers) for i, w in enumerate(RECORDS)
    ]
    assert b.last_sequence == 14


def test_log_append_time_keeps_record_deltas() -> None:
    # the broker overwrites maxTimestamp and bit 3 only: record bytes equal the CreateTime batch's
    create = encode_batch_v2(0, RECORDS)
    lat = encode_batch_v2(0, RECORDS, log_append_time=9_999)
    assert create.data[61:] == lat.data[61:]  # records start after the 61-byte header
    assert create.data[35:43] != lat.data[35:43]  # maxTimestamp differs


def _parse(data: bytes) -> list[tuple[BatchHeader, list[Record]]]:
    from segment_lib.log_file import LogBuffer

    lb = LogBuffer(data)
    return [(h, lb.records(h)) for h in lb.batches()]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4])
@pytest.mark.parametrize("lat", [None, 7_000])
def test_legacy_reads_back(magic: int, codec: Codec, lat: int | None) -> None:
    recs = [r._replace(headers=()) for r in RECORDS]
    batches = encode_legacy_batches(magic, 100, recs, codec=codec, log_append_time=lat)
    parsed = _parse(b"".join(b.data for b in batches))
    assert len(parsed) == (len(recs) if codec is Codec.NONE else 1)
    out = [r for _, rs in parsed for r in rs]
    assert [(r.offset, r.key, r.value) for r in out] == [
        (100 + i, r.key, r.value) for i, r in enumerate(recs)
    ]
    if magic == 0:
        assert {r.timestamp for r in out} == {-1}
    elif lat is not None:
        assert {r.timestamp for r in out} == {lat}
    else:
        assert [r.timestamp for r in out] == [1_000, 990, 1_005, 1_001]
    if codec is not Codec.NONE:
        ((h, _),) = parsed
        assert h.last_offset == 103 and h.base_offset == 100  # wrapper: last inner offset
        assert h.max_timestamp == (-1 if magic == 0 else (lat if lat else 1_005))


def test_legacy_wrapper_inner_offsets() -> None:
    # magic 1 wrappers hold relative inner offsets, magic 0 absolute ones
    for magic, expected in ((1, [0, 1]), (0, [500, 501])):
        [b] = encode_legacy_batches(
            magic,
            500,
            [WriteRecord(b"a", b"1", (), 1), WriteRecord(b"b", b"2", (), 2)],
            codec=Codec.GZIP,
        )
        import gzip

        value_start = 12 + 4 + 2 + (8 if magic == 1 else 0) + 4 + 4  # null key
        inner = gzip.decompress(b.data[value_start:])
        first = struct.unpack_from(">q", inner, 0)[0]
        size = struct.unpack_from(">i", inner, 8)[0]
        second = struct.unpack_from(">q", inner, 12 + size)[0]
        assert [first, second] == expected


def test_legacy_refuses_what_kafka_refuses() -> None:
    with pytest.raises(ValueError, match="headers"):
        encode_legacy_batches(1, 0, [WriteRecord(b"k", b"v", (Header("h", b""),), 1)])
    with pytest.raises(ValueError, match="zstd"):
        encode_legacy_batches(1, 0, [WriteRecord(b"k", b"v", (), 1)], codec=Codec.ZSTD)
    with pytest.raises(ValueError, match="timestamp"):
        encode_batch_v2(0, [WriteRecord(b"k", b"v")])
    with pytest.raises(ValueError):
        encode_batch_v2(0, [])


def test_control_and_empty_batches() -> None:
    c = encode_control_batch(
        9, ControlType.ABORT, producer_id=4, producer_epoch=2, timestamp=77, coordinator_epoch=6
    )
    [(h, [r])] = _parse(c.data)
    assert h.is_control and h.is_transactional and h.base_sequence == -1
    ctrl = decode_control_record(r.key, r.value)
    assert (ctrl.type, ctrl.coordinator_epoch, r.offset, r.timestamp) == (
        ControlType.ABORT,
        6,
        9,
        77,
    )
    e = encode_empty_batch_v2(10, 14, max_timestamp=55, producer_id=4, producer_epoch=2)
    [(h, recs)] = _parse(e.data)
    assert (h.record_count, h.base_offset, h.last_offset, h.first_timestamp) == (0, 10, 14, -1)
    assert recs == [] and h.size == 61


def test_delete_horizon_and_offset_gaps() -> None:
    b = encode_batch_v2(
        10,
        [WriteRecord(b"a", None, (), 500), WriteRecord(b"b", b"x", (), 600)],
        offset_deltas=[1, 4],
        last_offset_delta=6,
        delete_horizon_ms=10_000,
    )
    [(h, recs)] = _parse(b.data)
    assert h.attributes & 0x40 and h.first_timestamp == 10_000
    assert (h.base_offset, h.last_offset) == (10, 16)
    assert [(r.offset, r.timestamp) for r in recs] == [(11, 500), (14, 600)]


# ---------------------------------------------------------------------------------------------
# partition writer: rolls and indexes


def _payload(i: int, n: int = 100) -> bytes:
    return hashlib.sha256(str(i).encode()).digest() * (n // 32) + b"x" * (n % 32)


def test_roll_on_segment_bytes_and_index_rules(tmp_path: Path) -> None:
    clock = ManualClock(1_000_000)
    pw = PartitionWriter(
        tmp_path, "t", 0, segment_bytes=3000, index_interval_bytes=500, clock=clock
    )
    results: list[AppendResult] = []
    for i in range(60):
        clock.advance(10)
        n = 1 + i % 4
        results.append(
            pw.append(
                [(f"k{i}-{j}".encode(), _payload(i * 7 + j, 40 + i)) for j in range(n)],
                codec=Codec.NONE if i % 3 else Codec.GZIP,
            )
        )
    pw.close()
    pdir = tmp_path / "t-0"
    logs = seg_files(pdir, ".log")
    assert len(logs) >= 4
    starts_by_seg: dict[int, set[int]] = {}
    for r in results:
        starts_by_seg.setdefault(r.segment_base_offset, set()).add(r.position)
    sizes = [p.stat().st_size for p in logs]
    for k, log in enumerate(logs):
        base = int(log.name[:20])
        headers = [h for h, _ in read_log(log)]
        assert headers[0].base_offset == base  # a new segment starts at the log end offset
        assert sizes[k] <= 3000
        if k + 1 < len(logs):
            nxt = read_log(logs[k + 1])[0][0]
            # rolled only because the next append would not fit
            assert sizes[k] + nxt.size > 3000
        chunks = chunks_of(headers, starts_by_seg[base])
        assert written_indexes(pdir, base) == index_model(chunks, base, 500)
    # offsets are contiguous across segments
    offsets = [r.offset for r in all_records(pdir)]
    assert offsets == list(range(len(offsets))) and offsets[-1] == pw.log_end_offset - 1


def test_roll_on_segment_ms_uses_message_timestamps(tmp_path: Path) -> None:
    clock = ManualClock(0)
    pw = PartitionWriter(tmp_path, "t", 0, segment_ms=1000, clock=clock)
    # first append's largest timestamp is 100: a later append rolls when its max timestamp
    # exceeds 100 + 1000, whatever the clock says
    for ts in (100, 600, 1100, 1000):
        assert not pw.append([(b"k", b"v")], timestamp=ts).rolled
    r = pw.append([(b"k", b"v")], timestamp=1101)
    assert r.rolled and r.segment_base_offset == 4
    # the new segment's reference is 1101: 2101 stays, 2102 rolls
    assert not pw.append([(b"k", b"v")], timestamp=2101).rolled
    assert pw.append([(b"k", b"v")], timestamp=2102).rolled
    pw.close()
    assert [int(p.name[:20]) for p in seg_files(tmp_path / "t-0", ".log")] == [0, 4, 6]


def test_segment_ms_with_log_append_time_follows_the_clock(tmp_path: Path) -> None:
    clock = ManualClock(50_000)
    pw = PartitionWriter(
        tmp_path,
        "t",
        0,
        segment_ms=1000,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        clock=clock,
    )
    pw.append([(b"k", b"v")], timestamp=1)  # producer timestamps are ignored
    clock.advance(1000)
    assert not pw.append([(b"k", b"v")], timestamp=2).rolled
    clock.advance(1)
    assert pw.append([(b"k", b"v")], timestamp=3).rolled


def test_segment_ms_without_timestamps_uses_segment_age(tmp_path: Path) -> None:
    clock = ManualClock(10_000)
    pw = PartitionWriter(tmp_path, "t", 0, segment_ms=500, message_format=0, clock=clock)
    pw.append([(b"k", b"v")])
    clock.advance(500)
    assert not pw.append([(b"k", b"v")]).rolled  # now - created == 500, not > 500
    clock.advance(1)
    assert pw.append([(b"k", b"v")]).rolled
    pw.close()
    # magic 0 has no timestamps: time indexes stay empty
    for ti in seg_files(tmp_path / "t-0", ".timeindex"):
        assert ti.stat().st_size == 0


def test_roll_when_time_index_is_full(tmp_path: Path) -> None:
    # 36 bytes: 3 time index slots, the last reserved for the roll entry -> full at 2 entries
    clock = ManualClock(0)
    pw = PartitionWriter(
        tmp_path, "t", 0, segment_index_bytes=36, index_interval_bytes=0, clock=clock
    )
    rolls = []
    for i in range(8):
        rolls.append(pw.append([(b"k", b"v" * 10)], timestamp=100 + i).rolled)
    pw.close()
    assert rolls == [False, False, False, True, False, False, True, False]
    for ti in seg_files(tmp_path / "t-0", ".timeindex")[:-1]:
        # two interval entries; the roll entry repeats the last one and is skipped
        assert ti.stat().st_size == 24


def test_time_index_offset_is_earliest_batch_with_max(tmp_path: Path) -> None:
    clock = ManualClock(0)
    pw = PartitionWriter(tmp_path, "t", 0, index_interval_bytes=0, clock=clock)
    # the max is updated before the index check, and the first append is never indexed
    pw.append([(b"a", b"1")], timestamp=500)  # offset 0
    pw.append([(b"a", b"1")], timestamp=400)  # offset 1: indexed with the max so far (500, 0)
    pw.append([(b"a", b"1"), (b"b", b"2")], timestamp=900)  # 2-3: max 900, shallow offset 3
    pw.append([(b"a", b"1")], timestamp=900)  # 4: same max, the earlier batch keeps it
    pw.append([(b"a", b"1")], timestamp=950)  # 5: grows
    pw.close()
    oi, ti = written_indexes(tmp_path / "t-0", 0)
    # batch sizes: 61-byte header + 9 bytes per record ("a"/"1": length, attributes, deltas,
    # key and value lengths and bytes, header count) -> 70, 70, 79, 70, 70
    assert oi == [(1, 70), (3, 140), (4, 219), (5, 289)]
    assert ti == [(500, 0), (900, 3), (950, 5)]


# ---------------------------------------------------------------------------------------------
# transactions, snapshots, closing


def test_transactions_txnindex_and_snapshots(tmp_path: Path) -> None:
    clock = ManualClock(1_000)
    pw = PartitionWriter(tmp_path, "t", 0, clock=clock, segment_bytes=100_000)
    p1 = pw.begin_transaction(1, 0)
    p2 = pw.begin_transaction(2, 5)
    p1.append([(b"a", b"1"), (b"b", b"2")])  # 0-1, txn of p1 starts at 0
    p2.append([(b"c", b"3")])  # 2, txn of p2 starts at 2
    pw.append([(b"plain", b"x")])  # 3
    p1.abort(coordinator_epoch=3)  # 4: LSO = first offset of the other open txn = 2
    p2.append([(b"d", b"4")])  # 5
    p2.commit()  # 6: committed, no txnindex entry
    p1b = pw.begin_transaction(1, 0)
    p1b.append([(b"e", b"5")])  # 7
    p1b.abort()  # 8: no other open txn -> LSO = 9
    p3 = pw.begin_transaction(3, 0)
    p3.append([(b"f", b"6")])  # 9, left open
    pw.roll()
    pw.close()
    pdir = tmp_path / "t-0"
    idx = read_txn_index(pdir / "00000000000000000000.txnindex")
    assert list(idx.entries) == [AbortedTxn(1, 0, 4, 2), AbortedTxn(1, 7, 8, 9)]
    markers = [
        (h.base_offset, decode_control_record(r[0].key, r[0].value).type)
        for h, r in read_log(pdir / "00000000000000000000.log")
        if h.is_control
    ]
    assert markers == [(4, ControlType.ABORT), (6, ControlType.COMMIT), (8, ControlType.ABORT)]
    snap = read_producer_snapshot(pdir / "00000000000000000010.snapshot")
    by_pid = {e.producer_id: e for e in snap.entries}
    assert set(by_pid) == {1, 2, 3}
    assert (by_pid[1].last_sequence, by_pid[1].last_offset, by_pid[1].coordinator_epoch) == (
        2,
        7,
        0,
    )
    assert by_pid[2].epoch == 5 and by_pid[2].last_offset == 5 and by_pid[2].offset_delta == 0
    assert by_pid[3].current_txn_first_offset == 9
    assert by_pid[1].current_txn_first_offset == -1
    # no snapshot at 10 again on close: the LEO did not move past it
    assert [p.name for p in seg_files(pdir, ".snapshot")] == ["00000000000000000010.snapshot"]
    assert pw.last_stable_offset == 9


def test_close_active_leaves_preallocated_indexes_and_torn_tail(tmp_path: Path) -> None:
    clock = ManualClock(0)
    pw = PartitionWriter(
        tmp_path,
        "t",
        0,
        segment_bytes=600,
        segment_index_bytes=1200,
        index_interval_bytes=100,
        clock=clock,
    )
    for i in range(20):
        pw.append([(b"k", _payload(i, 60))], timestamp=10 * i)
    active_base = pw.active.base_offset
    clean_entries = (list(pw.active.offset_index), list(pw.active.time_index))
    pw.close(active=True, torn_tail_bytes=30)
    pdir = tmp_path / "t-0"
    name = f"{active_base:020d}"
    assert (pdir / f"{name}.index").stat().st_size == 1200
    assert (pdir / f"{name}.timeindex").stat().st_size == 1200
    # the zero tails read as absent; no final time index entry was added
    assert written_indexes(pdir, active_base) == clean_entries
    with pytest.raises(TornTailError) as err:
        read_log(pdir / f"{name}.log")
    assert err.value.position == pw.active.size
    with open_log(pdir / f"{name}.log") as lb:
        n = sum(1 for _ in lb.batches(allow_torn_tail=True))
        assert lb.torn_tail_position == pw.active.size and n == len(pw.active.batches)
    # no closing snapshot: only the roll snapshots exist
    snaps = {int(p.name[:20]) for p in seg_files(pdir, ".snapshot")}
    assert snaps == {int(p.name[:20]) for p in seg_files(pdir, ".log")} - {0}
    assert pw.recovery_point == active_base


def test_leader_epochs_and_partition_metadata(tmp_path: Path) -> None:
    pw = PartitionWriter(tmp_path, "t", 3, leader_epoch=2, topic_id="AAAAAAAAAAAAAAAAAAAAAQ")
    pw.append([(b"k", b"v")] * 3)
    pw.become_leader(4)
    pw.append([(b"k", b"v")])
    pw.close()
    pdir = tmp_path / "t-3"
    assert [tuple(e) for e in read_leader_epoch_checkpoint(pdir / "leader-epoch-checkpoint")] == [
        (2, 0),
        (4, 3),
    ]
    assert read_partition_metadata(pdir / "partition.metadata").topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert [h.partition_leader_epoch for h, _ in read_log(pdir / "00000000000000000000.log")] == [
        2,
        4,
    ]


def test_writer_refuses_impossible_appends(tmp_path: Path) -> None:
    pw = PartitionWriter(tmp_path, "t", 0, message_format=1, segment_bytes=200)
    with pytest.raises(ValueError, match="v2"):
        pw.append([(b"k", b"v")], producer_id=1, transactional=True)
    with pytest.raises(ValueError, match=r"segment\.bytes"):
        pw.append([(b"k", b"v" * 300)])
    pw.close()
    with pytest.raises(ValueError, match="closed"):
        pw.append([(b"k", b"v")])


# ---------------------------------------------------------------------------------------------
# brokers, replicas, consumer offsets, compaction


def test_broker_dirs_checkpoints_and_offsets(tmp_path: Path) -> None:
    clock = ManualClock(5_000)
    bw = BrokerWriter(
        tmp_path, 1, log_dirs=("d0", "d1"), cluster_id="c1", clock=clock, offsets_partitions=4
    )
    a = bw.partition("a", 0, segment_bytes=500)
    b = bw.partition("a", 1)
    c = bw.partition("b", 0)
    # new partitions go to the log dir with the fewest partitions
    assert [a.log_dir.name, b.log_dir.name, c.log_dir.name] == ["d0", "d1", "d0"]
    for i in range(10):
        a.append([(b"k", _payload(i))])
    b.append([(b"k", b"v")])
    b.high_watermark = 0
    res = bw.commit_offsets("grp", {("a", 0): 7, ("a", 1): 1}, commit_timestamp=4_000)
    bw.close()
    part = partition_for_group("grp", 4)
    co = bw.partitions[("__consumer_offsets", part)]
    assert res.first_offset == 0 and co.log_end_offset == 2
    [(h, recs)] = read_log(co.dir / "00000000000000000000.log")
    assert (h.producer_id, h.base_sequence) == (-1, 0)
    decoded = [decode_offsets_record(r.key, r.value) for r in recs]
    assert all(isinstance(d, OffsetCommit) for d in decoded)
    assert [(d.topic, d.partition, d.offset, d.commit_timestamp) for d in decoded] == [  # type: ignore[union-attr]
        ("a", 0, 7, 4_000),
        ("a", 1, 1, 4_000),
    ]
    assert {r.timestamp for r in recs} == {5_000}  # records carry the append time
    for d in bw.log_dirs:
        meta = read_meta_properties(d / "meta.properties")
        assert (meta.version, meta.node_id, meta.cluster_id) == (1, 1, "c1")
        assert meta.directory_id is not None
        assert (d / "cleaner-offset-checkpoint").read_bytes() == b""
    d0 = read_offset_checkpoint(tmp_path / "d0" / "recovery-point-offset-checkpoint")
    assert d0[("a", 0)] == 10 and d0[("b", 0)] == 0
    d1 = read_offset_checkpoint(tmp_path / "d1" / "replication-offset-checkpoint")
    assert d1[("a", 1)] == 0
    assert read_offset_checkpoint(tmp_path / "d0" / "log-start-offset-checkpoint") == {}


def test_replicas_hold_the_same_batches_but_roll_and_index_their_own_way(tmp_path: Path) -> None:
    clock = ManualClock(0)
    leader_b = BrokerWriter(tmp_path / "b0", 0, clock=clock)
    follower_b = BrokerWriter(tmp_path / "b1", 1, clock=clock)
    leader = leader_b.partition("r", 0, segment_bytes=2000, index_interval_bytes=300)
    for i in range(40):
        clock.advance(5)
        leader.append([(f"k{i}".encode(), _payload(i, 50 + i))], codec=Codec.SNAPPY)
    follower = follower_b.replicate(
        leader, fetch_max_bytes=1200, segment_bytes=2000, index_interval_bytes=300
    )
    leader_b.close()
    follower_b.close()
    lrec = all_records(leader.dir)
    frec = all_records(follower.dir)
    assert lrec == frec
    fseg = seg_files(follower.dir, ".log")
    lseg = seg_files(leader.dir, ".log")
    assert [p.name for p in fseg] != [p.name for p in lseg]  # fetch chunks roll elsewhere
    # follower indexes follow the chunk rule: an entry may point at an earlier batch's position
    chunk_starts: dict[int, set[int]] = {}
    for seg in follower.segments:
        starts: set[int] = set()
        pos = 0
        # rebuild the chunks replicate() made: at most 1200 bytes (at least one batch)
        size = 0
        for b in seg.batches:
            if size and size + b.size > 1200:
                starts.add(pos)
                size = 0
            if size == 0:
                starts.add(pos)
            size += b.size
            pos += b.size
        chunk_starts[seg.base_offset] = starts
    mismatch_positions = 0
    for log in fseg:
        base = int(log.name[:20])
        headers = [h for h, _ in read_log(log)]
        # segment boundaries also start chunks
        expected = index_model(chunks_of(headers, chunk_starts[base]), base, 300)
        assert written_indexes(follower.dir, base) == expected
        by_pos = {h.position: h for h in headers}
        mismatch_positions += sum(1 for off, pos in expected[0] if by_pos[pos].last_offset != off)
    assert mismatch_positions > 0
    assert [
        tuple(e) for e in read_leader_epoch_checkpoint(follower.dir / "leader-epoch-checkpoint")
    ] == [
        (0, 0),
    ]


def _latest_by_key(records: list[Record]) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for r in records:
        if r.key is not None:
            latest[r.key] = r.offset
    return latest


def test_compaction_keeps_latest_value_per_key(tmp_path: Path) -> None:
    clock = ManualClock(1_000_000)
    pw = PartitionWriter(tmp_path, "c", 0, segment_bytes=800, index_interval_bytes=200, clock=clock)
    keys = [f"key-{i}".encode() for i in range(8)]
    written: list[tuple[int, bytes | None, bytes | None]] = []
    for i in range(120):
        clock.advance(1)
        key = None if i % 29 == 5 else keys[(i * 5) % 8]
        value = None if i % 11 == 3 else f"v{i}".encode()
        r = pw.append([(key, value)], codec=Codec.GZIP if i % 2 else Codec.NONE)
        written.append((r.first_offset, key, value))
    tx = pw.begin_transaction(77, 0)
    tx.append([(keys[0], b"aborted-value")])
    tx.abort()
    for i in range(120, 130):
        pw.append([(keys[i % 8], f"v{i}".encode())])
    before = appended_records(pw)
    active_base = pw.active.base_offset
    result = compact(pw, now=clock())
    pw.close()
    after = all_records(pw.dir)
    # brute force: in [0, firstUncleanable) keep a keyed record iff it is the key's latest
    # (aborted data excluded); everything at or past the cleaned range stays
    end = result.first_uncleanable_offset
    assert end == active_base
    aborted = {r.offset for r in before if r.value == b"aborted-value"}
    cleanable = [r for r in before if r.offset < end and r.offset not in aborted]
    latest = _latest_by_key(cleanable)
    expected = [
        r
        for r in before
        if r.offset >= end
        or (r.key is not None and r.offset not in aborted and latest[r.key] == r.offset)
    ]
    assert [(r.offset, r.key, r.value, r.timestamp) for r in after] == [
        (r.offset, r.key, r.value, r.timestamp) for r in expected
    ]
    assert any(r.value is None for r in after if r.offset < end)  # tombstones kept
    assert len(after) < len(before)
    # cleaned segments keep the first base offset of their group, and the ABORT marker stays
    logs = seg_files(pw.dir, ".log")
    assert {int(p.name[:20]) for p in logs} == {g[0] for g in result.groups} | {active_base}
    for log in logs:
        base = int(log.name[:20])
        parsed = read_log(log)
        if base != active_base:
            # a group whose records all went may leave an empty segment, as the cleaner does
            assert not parsed or parsed[0][0].base_offset >= base
            for h, recs in parsed:
                if any(r.value is None for r in recs):
                    assert h.attributes & 0x40  # the delete horizon was set
    assert pw.cleaner_checkpoint == result.end_offset
    # the offset map's latest offset is fast-forwarded to the end of the dirty range
    assert result.end_offset == end


def test_compaction_drops_tombstones_after_horizon(tmp_path: Path) -> None:
    clock = ManualClock(0)
    pw = PartitionWriter(tmp_path, "c", 0, segment_bytes=400, clock=clock)
    for i in range(30):
        pw.append([(f"k{i % 5}".encode(), None if i == 12 else b"v" * 20)])
    pw.append([(b"k2", None)])  # tombstone for k2 (i % 5 == 2)
    for _ in range(6):
        pw.append([(b"tail", b"t" * 40)])
    compact(pw, now=1_000, delete_retention_ms=500)
    first = [r for r in all_records(pw.dir) if r.key == b"k2"]
    assert [r.value for r in first] == [None]
    for i in range(12):  # new dirty data, so that the next round cleans again
        pw.append([(f"n{i}".encode(), b"w" * 30)])
    compact(pw, now=1_500, delete_retention_ms=500)
    assert [r.value for r in all_records(pw.dir) if r.key == b"k2"] == []  # horizon reached
    pw.close()


def test_demo_cluster_is_deterministic_and_readable(tmp_path: Path) -> None:
    a = write_demo_cluster(tmp_path / "a", seed=3, steps=150)
    b = write_demo_cluster(tmp_path / "b", seed=3, steps=150)

    def digest(root: Path) -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    da, db = digest(a.root), digest(b.root)
    assert da == db and len(da) > 100
    torn = 0
    for log in a.root.rglob("*.log"):
        with open_log(log) as lb:
            for h in lb.batches(allow_torn_tail=True):
                lb.records(h)
            torn += lb.torn_tail_position is not None
    assert torn >= 1
    assert {"orders", "payments", "clicks", "legacy-v1", "legacy-v0", "users"} <= set(a.topics)
    # replicas agree on the data
    for (topic, p), hosts in a.replicas.items():
        dirs = [
            d / f"{topic}-{p}"
            for h in hosts
            for d in a.broker_dirs[h]
            if (d / f"{topic}-{p}").is_dir()
        ]
        assert len(dirs) == len(hosts)
        if topic != "users":  # compaction may differ per replica
            recs = [all_records(d, allow_torn=True) for d in dirs]
            assert all(r == recs[0] for r in recs)


def test_compaction_keeps_an_active_producers_last_batch_empty(tmp_path: Path) -> None:
    clock = ManualClock(0)
    pw = PartitionWriter(tmp_path, "c", 0, segment_bytes=300, clock=clock)
    pw.append([(b"a", b"1"), (b"b", b"2")], producer_id=9, producer_epoch=4)  # 0-1, P9's last
    pw.append([(b"a", b"3")])  # 2
    pw.append([(b"b", b"4")])  # 3
    for _ in range(4):
        pw.append([(b"z", b"x" * 60)])  # 4-7, rolls
    compact(pw, now=clock())
    pw.close()
    first = read_log(pw.dir / "00000000000000000000.log")
    h, recs = first[0]
    # every record of P9's batch is superseded, but the batch is its last: kept header-only
    assert (h.base_offset, h.last_offset, h.record_count, recs) == (0, 1, 0, [])
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (9, 4, 0)
    assert h.first_timestamp == -1 and h.max_timestamp == 0
    from kafka.record import MemoryRecords

    batch = MemoryRecords((pw.dir / "00000000000000000000.log").read_bytes()).next_batch()
    assert batch.validate_crc() and list(batch) == [] and batch.producer_id == 9
