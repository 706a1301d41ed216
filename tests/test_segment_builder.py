"""segment_lib.segment_builder: refusals, its own roll rules, the transaction index, files.

Byte-for-byte agreement with real brokers' segments is in ``test_segment_builder_real.py``;
here the builder is fed batches made by the dev encoder (``kafka_archive_dev.writer``) and,
for its roll rule, a real broker's batches without being told where that broker rolled.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from kafka_archive_dev.writer import (
    ManualClock,
    PartitionWriter,
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
    encode_legacy_batches,
)

from segment_lib.control import ControlType
from segment_lib.errors import (
    CrcMismatchError,
    OffsetGapError,
    OffsetOverlapError,
    TornTailError,
    UnsupportedFormatError,
)
from segment_lib.log_file import open_log
from segment_lib.segment_builder import (
    BuiltSegment,
    IndexRule,
    SegmentBuilder,
    SegmentConfig,
)
from segment_lib.segment_state import INT32_MAX
from segment_lib.txn_index import AbortedTxn, read_txn_index


def batch(
    base: int, n: int = 1, *, ts: int = 1_000, epoch: int = 0, size: int = 10, **kw: object
) -> bytes:
    """A magic-2 batch of ``n`` records at ``base`` (each value ``size`` bytes)."""
    records = [WriteRecord(b"k", bytes(size), (), ts) for _ in range(n)]
    return encode_batch_v2(base, records, partition_leader_epoch=epoch, **kw).data  # type: ignore[arg-type]


def marker(offset: int, pid: int, ctype: ControlType, ts: int = 1_000) -> bytes:
    return encode_control_batch(offset, ctype, producer_id=pid, producer_epoch=0, timestamp=ts).data


def txn(base: int, pid: int, n: int = 1) -> bytes:
    return batch(base, n, producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True)


def bases(segments: Sequence[BuiltSegment]) -> list[int]:
    return [s.base_offset for s in segments]


# ---------------------------------------------------------------------------------------------
# refusals: nothing of a refused append is written


def test_torn_trailing_batch_is_refused_and_names_where_whole_batches_end() -> None:
    b = SegmentBuilder()
    whole = batch(0) + batch(1)
    with pytest.raises(TornTailError) as exc:
        b.append(whole + batch(2)[:-7])
    assert exc.value.position == len(whole)
    assert b.next_offset is None and b.active is None  # nothing taken
    b.append((whole + batch(2)[:-7])[: exc.value.position])  # what the message says to do
    assert b.next_offset == 2


def test_crc_mismatch_names_the_batch_position() -> None:
    first, second = batch(0), bytearray(batch(1))
    second[-1] ^= 0x01  # a record byte: covered by the CRC-32C
    b = SegmentBuilder()
    with pytest.raises(CrcMismatchError) as exc:
        b.append(first + bytes(second))
    assert exc.value.position == len(first)
    assert "offset 1" in str(exc.value) and f"at byte {len(first)}" in str(exc.value)
    assert b.next_offset is None and b.close() == []


def test_overlap_is_refused_naming_the_offsets() -> None:
    b = SegmentBuilder()
    b.append(batch(0, 3))  # 0..2
    for again in (batch(0, 3), batch(2, 2), batch(1)):
        with pytest.raises(OffsetOverlapError) as exc:
            b.append(again)
        assert exc.value.expected_offset == 3
        assert f"{exc.value.base_offset}..{exc.value.last_offset}" in str(exc.value)
    # an overlap later in one append refuses all of it
    with pytest.raises(OffsetOverlapError):
        b.append(batch(3) + batch(3))
    assert b.next_offset == 3
    b.append(batch(3))
    assert [s.next_offset for s in b.close()] == [4]


def test_gap_refused_unless_allowed_then_recorded() -> None:
    b = SegmentBuilder()
    b.append(batch(0, 3))
    with pytest.raises(OffsetGapError) as exc:
        b.append(batch(5))
    assert (exc.value.expected_offset, exc.value.base_offset) == (3, 5)
    assert "3..4" in str(exc.value)

    # a compacted log: whole batches removed between the ones left
    compacted = SegmentBuilder(allow_gaps=True)
    compacted.append(batch(0, 3) + batch(10) + batch(11, 2))
    compacted.append(batch(20))
    assert compacted.gaps == [(3, 10), (13, 20)]
    (seg,) = compacted.close()
    assert (seg.base_offset, seg.next_offset, seg.batch_count) == (0, 21, 4)


def test_start_offset_may_lie_inside_the_first_batch() -> None:
    # a fetch at offset 5 returns the whole batch holding it
    b = SegmentBuilder(start_offset=5)
    b.append(batch(3, 4))  # 3..6
    assert bases(b.close()) == [3]
    with pytest.raises(OffsetOverlapError):
        SegmentBuilder(start_offset=5).append(batch(0, 5))  # 0..4: before the start
    with pytest.raises(OffsetGapError):
        SegmentBuilder(start_offset=5).append(batch(7))


def test_only_magic_2_batches() -> None:
    legacy = b"".join(m.data for m in encode_legacy_batches(1, 0, [WriteRecord(b"k", b"v", (), 5)]))
    with pytest.raises(UnsupportedFormatError) as exc:
        SegmentBuilder().append(batch(0) + legacy)
    assert exc.value.position == len(batch(0)) + 16  # the magic byte
    with pytest.raises(ValueError, match="no batch"):
        SegmentBuilder().append(b"")


def test_closed_builder_takes_nothing() -> None:
    b = SegmentBuilder()
    b.append(batch(0))
    b.close()
    with pytest.raises(ValueError, match="closed"):
        b.append(batch(1))


# ---------------------------------------------------------------------------------------------
# rolling


def test_size_roll_keeps_every_log_within_segment_bytes() -> None:
    one = len(batch(0))
    b = SegmentBuilder(config=SegmentConfig(segment_bytes=3 * one + 5))
    infos = [b.append(batch(i)) for i in range(8)]
    segs = b.close()
    assert bases(segs) == [0, 3, 6]
    assert [s.log_size for s in segs] == [3 * one, 3 * one, 2 * one]
    assert [i.rolled for i in infos] == [False, False, False, True, False, False, True, False]
    assert [s.file_name(".log") for s in segs][1] == "00000000000000000003.log"


def test_time_roll_from_the_first_batch_timestamp_with_jitter() -> None:
    def rolls(jitter: int, stamps: list[int]) -> list[int]:
        cfg = SegmentConfig(segment_ms=1000, roll_jitter_ms=jitter)
        b = SegmentBuilder(config=cfg)
        for i, ts in enumerate(stamps):
            b.append(batch(i, ts=ts))
        return bases(b.close())

    # a roll when max timestamp - first batch's max timestamp > segment.ms - jitter
    assert rolls(0, [100, 600, 1100, 1101, 2101, 2102]) == [0, 3, 5]
    assert rolls(100, [100, 600, 1001, 1002]) == [0, 2]
    # out-of-order timestamps: measured from the first batch's, not the smallest
    assert rolls(0, [500, 300, 1400, 1501]) == [0, 3]


def test_time_roll_without_timestamps_uses_now() -> None:
    cfg = SegmentConfig(segment_ms=1000)
    b = SegmentBuilder(config=cfg)
    b.append(batch(0, ts=-1), now_ms=10_000)
    b.append(batch(1, ts=-1), now_ms=11_000)  # waited 1000: not more than segment.ms
    b.append(batch(2, ts=-1), now_ms=11_001)
    b.append(batch(3, ts=-1))  # without now: such a segment does not roll by time
    assert bases(b.close()) == [0, 2]


def test_roll_when_an_offset_no_longer_fits_the_relative_offset() -> None:
    b = SegmentBuilder(allow_gaps=True)
    b.append(batch(0))
    b.append(batch(INT32_MAX))  # relative offset INT32_MAX: still fits
    b.append(batch(INT32_MAX + 1))
    assert bases(b.close()) == [0, INT32_MAX + 1]


def test_roll_when_an_index_is_full() -> None:
    # 24-byte indexes: 3 offset entries, 2 time entries of which TimeIndex.isFull reserves the
    # last for the roll entry; with index.interval.bytes 0 every batch after the first indexes
    cfg = SegmentConfig(segment_index_bytes=24, index_interval_bytes=0)
    b = SegmentBuilder(config=cfg)
    for i in range(5):
        b.append(batch(i, ts=100 + i))
    segs = b.close()
    assert bases(segs) == [0, 2, 4]
    assert segs[0].offset_index == ((1, len(batch(0))),)
    assert segs[0].time_index == ((101, 1),)  # the roll entry repeats no timestamp


def test_size_rule_alone_finds_a_real_brokers_rolls(real_broker_data: Path) -> None:
    """dipendrasaini's invoice-0 (Kafka 3.x, four ~1 MB segments), fed batch by batch with no
    forced roll: segment.bytes = 1000000, the only round value in the range that reproduces
    all three of its rolls (999252 <= segment.bytes < 999252 + 2538), gives its file names and
    .log bytes."""
    pdir = real_broker_data / "dipendrasaini__kafka-learnning-series/tmp/kafka-logs/invoice-0"
    logs = sorted(pdir.glob("*.log"))
    b = SegmentBuilder(config=SegmentConfig(segment_bytes=1_000_000))
    for log in logs:
        with open_log(log) as lb:
            for h in lb.batches():
                b.append(lb.data[h.position : h.next_position])
    segs = b.close()
    assert [s.file_name(".log") for s in segs] == [p.name for p in logs]
    assert [s.log for s in segs] == [p.read_bytes() for p in logs]


def test_per_append_rule_splits_an_append_larger_than_segment_bytes() -> None:
    one = len(batch(0))
    cfg = SegmentConfig(segment_bytes=2 * one, index_rule=IndexRule.PER_APPEND)
    b = SegmentBuilder(config=cfg)
    b.append(b"".join(batch(i) for i in range(5)))
    assert bases(b.close()) == [0, 2, 4]


def test_forced_roll_names_the_next_segment() -> None:
    b = SegmentBuilder(allow_gaps=True, base_offset=0)
    b.append(batch(4))  # a compacted first segment named below its first batch
    b.roll(5)
    b.append(batch(9))
    with pytest.raises(ValueError, match="below the next offset"):
        b.roll(3)
    b.roll(12)
    with pytest.raises(ValueError, match="above the next batch"):
        b.append(batch(10))
    assert bases(b.close()) == [0, 5]


# ---------------------------------------------------------------------------------------------
# indexes, transactions, epochs


def test_sparse_indexes_per_batch() -> None:
    cfg = SegmentConfig(index_interval_bytes=100)
    b = SegmentBuilder(config=cfg)
    sizes = []
    for i, ts in enumerate([50, 40, 60, 60, 55]):
        data = batch(2 * i, 2, ts=ts, size=40)
        sizes.append(len(data))
        b.append(data)
    (seg,) = b.close()
    assert min(sizes) > 100  # so every batch after the first is indexed
    pos = [sum(sizes[:i]) for i in range(5)]
    assert seg.offset_index == tuple((2 * i + 1, pos[i]) for i in range(1, 5))
    # (max timestamp so far, last offset of the batch holding it), only when it grows; the
    # closing entry repeats none
    assert seg.time_index == ((50, 1), (60, 5))


def test_time_index_record_offsets() -> None:
    records = [WriteRecord(b"k", b"v", (), ts) for ts in (5, 9, 9, 7)]
    data = encode_batch_v2(0, records).data
    for record_offsets, expected in ((False, 3), (True, 1)):
        b = SegmentBuilder(config=SegmentConfig(time_index_record_offsets=record_offsets))
        b.append(data)
        assert b.close()[0].time_index == ((9, expected),)


def test_txnindex_entries_as_the_producer_state_manager_computes_them() -> None:
    b = SegmentBuilder()
    b.append(txn(0, pid=1, n=2))  # 0-1: txn of 1 starts at 0
    b.append(txn(2, pid=2))  # 2: txn of 2 starts at 2
    b.append(batch(3))
    b.append(marker(4, 1, ControlType.ABORT))  # LSO: the other open txn, at 2
    b.append(marker(5, 2, ControlType.COMMIT))  # committed: no entry
    b.append(marker(6, 4, ControlType.ABORT))  # a marker without data: no entry
    b.roll()
    b.append(txn(7, pid=1))
    b.append(txn(8, pid=3))
    assert b.open_transactions() == {1: 7, 3: 8}
    b.append(marker(9, 1, ControlType.ABORT))  # in the second segment; LSO 8 (pid 3)
    b.append(marker(10, 3, ControlType.ABORT))  # nothing else open: LSO = 11
    segs = b.close()
    assert segs[0].aborted == (AbortedTxn(1, 0, 4, 2),)
    assert segs[1].aborted == (AbortedTxn(1, 7, 9, 8), AbortedTxn(3, 8, 10, 11))
    assert b.open_transactions() == {}


def test_open_transactions_carry_over_to_the_next_run() -> None:
    first = SegmentBuilder()
    first.append(txn(0, pid=1) + txn(1, pid=2))
    first.close()
    carried = first.open_transactions()
    second = SegmentBuilder(start_offset=2, open_transactions=carried)
    second.append(marker(2, 2, ControlType.ABORT))
    assert second.close()[0].aborted == (AbortedTxn(2, 1, 2, 0),)
    # without them the marker completes nothing Kafka would index
    alone = SegmentBuilder(start_offset=2)
    alone.append(marker(2, 2, ControlType.ABORT))
    assert alone.close()[0].aborted == ()


def test_agrees_with_the_dev_writers_partition(tmp_path: Path) -> None:
    """The dev writer (its own producer entries decide which transactions complete; both share
    segment_lib's OngoingTxns and SegmentIndexes) wrote these files as a leader; the builder,
    fed its batches, writes the same ``.txnindex``, ``.index`` and ``.timeindex`` bytes. Real
    brokers' transaction indexes: tests/real_kafka/test_segment_builder_real_kafka.py."""
    clock = ManualClock(1_000)
    pw = PartitionWriter(tmp_path, "t", 0, clock=clock, index_interval_bytes=150)
    p1, p2 = pw.begin_transaction(1, 0), pw.begin_transaction(2, 5)
    p1.append([(b"a", b"1" * 50), (b"b", b"2")])
    p2.append([(b"c", b"3" * 80)])
    pw.append([(b"plain", b"x" * 100)])
    p1.abort(coordinator_epoch=3)
    p2.append([(b"d", b"4")])
    pw.roll()
    p2.commit()
    p1b = pw.begin_transaction(1, 0)
    p1b.append([(b"e", b"5" * 120)])
    clock.advance(10)
    p1b.abort()
    pw.close()
    pdir = tmp_path / "t-0"
    b = SegmentBuilder(config=SegmentConfig(index_interval_bytes=150))
    for log in sorted(pdir.glob("*.log")):
        b.roll(int(log.stem))
        b.append(log.read_bytes())
    segs = b.close()
    assert len(segs) == 2
    for seg in segs:
        assert seg.log == (pdir / seg.file_name(".log")).read_bytes()
        assert seg.index_bytes() == (pdir / seg.file_name(".index")).read_bytes()
        assert seg.time_index_bytes() == (pdir / seg.file_name(".timeindex")).read_bytes()
        txn_file = pdir / seg.file_name(".txnindex")
        assert seg.txn_index_bytes() == (txn_file.read_bytes() if txn_file.exists() else b"")
    assert [len(s.aborted) for s in segs] == [1, 1]
    assert any(s.offset_index for s in segs)


def test_leader_epochs() -> None:
    b = SegmentBuilder()
    for i, epoch in enumerate([0, 0, 2, 2, 5, -1, 5]):
        b.append(batch(i, epoch=epoch))
    assert [tuple(e) for e in b.leader_epochs] == [(0, 0), (2, 2), (5, 4)]
    carried = SegmentBuilder(start_offset=7, leader_epochs=b.leader_epochs)
    carried.append(batch(7, epoch=5) + batch(8, epoch=6))
    assert [tuple(e) for e in carried.leader_epochs] == [(0, 0), (2, 2), (5, 4), (6, 8)]


# ---------------------------------------------------------------------------------------------
# files


def test_directory_output_equals_memory_output(tmp_path: Path) -> None:
    cfg = SegmentConfig(segment_bytes=3 * len(batch(0)), index_interval_bytes=0)
    feed = [batch(0), txn(1, pid=7), marker(2, 7, ControlType.ABORT), batch(3), batch(4)]
    mem, disk = SegmentBuilder(config=cfg), SegmentBuilder(tmp_path, cfg)
    for data in feed:
        mem.append(data)
        disk.append(data)
    mem_segs, disk_segs = mem.close(), disk.close()
    assert [s.log for s in disk_segs] == [None, None]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(
        [s.file_name(x) for s in mem_segs for x in (".log", ".index", ".timeindex")]
        + [mem_segs[0].file_name(".txnindex")]  # only where an aborted transaction is
    )
    for seg in mem_segs:
        assert (tmp_path / seg.file_name(".log")).read_bytes() == seg.log
        assert (tmp_path / seg.file_name(".index")).read_bytes() == seg.index_bytes()
        assert (tmp_path / seg.file_name(".timeindex")).read_bytes() == seg.time_index_bytes()
    assert read_txn_index(tmp_path / mem_segs[0].file_name(".txnindex")).entries == (
        AbortedTxn(7, 1, 2, 3),
    )
    # a segment file already there is never overwritten
    with pytest.raises(FileExistsError):
        SegmentBuilder(tmp_path).append(batch(0))
