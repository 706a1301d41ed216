"""Per-segment extraction and the canonical chain, without a database.

The extractor's stats must equal segment_lib's own header scan, chunked feeding must not change
anything, intervals must tile the segment's batches, corrupt or cut bytes must raise typed
errors naming the object and the byte, and pieces must clip exactly.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_archive.catalog.chain import (
    Version,
    compute_pieces,
    find_holes,
    find_overlaps,
    running_max,
)
from kafka_archive.catalog.extract import (
    SegmentExtract,
    SegmentExtractor,
    extract_segment,
    speedups,
)
from kafka_archive.catalog.extract import fast_path as fast_path_mod
from kafka_archive.catalog.integrity import ObjectChecksum
from kafka_archive_dev.writer import BrokerWriter, ManualClock, WriteRecord, compact
from support.catalog_data import START_MS, History, write_history

from segment_lib.errors import CrcMismatchError, SegmentError, TornTailError
from segment_lib.log_file import open_log
from segment_lib.partition import PartitionView


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return write_history(tmp_path_factory.mktemp("hist"), appends=90)


def _segments(history: History, topic: str, part: int) -> list[Path]:
    return [s.log for s in PartitionView.open(history.dirs[(topic, part)]).rolled]


def test_stats_equal_segment_lib_summary(history: History) -> None:
    for (topic, _part), d in history.dirs.items():
        view = PartitionView.open(d)
        for seg in view.rolled:
            ex = extract_segment(seg.log.read_bytes(), topic=topic)
            s = view.summary(seg)
            st_ = ex.stats
            assert (st_.first_offset, st_.last_offset) == (s.first_offset, s.last_offset)
            assert (st_.first_timestamp, st_.max_timestamp) == (
                s.first_timestamp,
                s.max_timestamp,
            )
            assert st_.offset_of_max_timestamp == s.offset_of_max_timestamp
            assert (st_.record_count, st_.batch_count, st_.size_bytes) == (
                s.record_count,
                s.batch_count,
                s.size_bytes,
            )
            assert set(st_.codecs) == set(s.codecs)
            assert (st_.transactional_batches, st_.control_batches) == (
                s.transactional_batches,
                s.control_batches,
            )


def test_intervals_tile_the_batches_and_respect_the_size_limit(history: History) -> None:
    for log in _segments(history, "orders", 0):
        data = log.read_bytes()
        with open_log(log) as lb:
            batches = list(lb.batches())
        ex = extract_segment(data, topic="orders", interval_bytes=600)
        # contiguous byte ranges from 0 to the end, each starting at a batch
        assert ex.intervals[0].byte_start == 0
        assert ex.intervals[-1].byte_end == len(data)
        for a, b in zip(ex.intervals, ex.intervals[1:], strict=False):
            assert a.byte_end == b.byte_start
            assert a.end_offset < b.start_offset
        starts = {b.position for b in batches}
        for iv in ex.intervals:
            assert iv.byte_start in starts
            inside = [b for b in batches if iv.byte_start <= b.position < iv.byte_end]
            assert len(inside) == 1 or iv.byte_end - iv.byte_start <= 600
            assert iv.max_ts == max(b.max_timestamp for b in inside)
            assert iv.start_offset == inside[0].base_offset
            assert iv.end_offset == inside[-1].last_offset
            assert iv.record_count == sum(b.record_count for b in inside)


@pytest.mark.parametrize("chunk", [1, 7, 61, 4096])
def test_chunked_feeding_gives_the_same_result(history: History, chunk: int) -> None:
    log = _segments(history, "orders", 0)[1]
    data = log.read_bytes()
    whole = extract_segment(data, topic="orders", interval_bytes=500)
    ex = SegmentExtractor(topic="orders", interval_bytes=500, size=len(data))
    for i in range(0, len(data), chunk):
        ex.feed(data[i : i + chunk])
    got = ex.finish()
    assert got.stats == whole.stats
    assert got.intervals == whole.intervals
    assert got.histogram == whole.histogram


def test_corrupt_batch_names_object_and_byte(history: History) -> None:
    log = _segments(history, "orders", 1)[0]
    data = bytearray(log.read_bytes())
    with open_log(log) as lb:
        third = list(lb.batches())[2]
    data[third.position + 70] ^= 0xFF  # inside the CRC-covered part
    with pytest.raises(CrcMismatchError) as err:
        ex = SegmentExtractor(topic="orders", path="mem://seg.log", size=len(data))
        for i in range(0, len(data), 100):
            ex.feed(bytes(data[i : i + 100]))
        ex.finish()
    assert err.value.path == "mem://seg.log"
    assert err.value.position == third.position


def test_truncated_segment_is_a_torn_tail_error(history: History) -> None:
    log = _segments(history, "orders", 1)[0]
    data = log.read_bytes()
    with open_log(log) as lb:
        last = list(lb.batches())[-1]
    cut = data[: last.position + 20]
    # the object size is unknown: detected at finish
    ex = SegmentExtractor(topic="orders", path="obj")
    ex.feed(cut)
    with pytest.raises(TornTailError) as err:
        ex.finish()
    assert err.value.position == last.position and err.value.path == "obj"
    # known size: a batch declaring more bytes than the object has is reported at once
    with pytest.raises(TornTailError) as err2:
        extract_segment(cut, topic="orders", path="obj")
    assert err2.value.position == last.position


def test_pieces_clip_offsets_records_and_timestamps(history: History) -> None:
    log = _segments(history, "orders", 0)[2]
    data = log.read_bytes()
    with open_log(log) as lb:
        recs = [r for _h, r in lb.iter_records(include_control=True)]
    lo, hi = recs[3].offset, recs[-4].offset
    holes = (recs[10].offset, recs[12].offset)
    pieces = [(lo, holes[0] - 1), (holes[1] + 1, hi)]
    ex = extract_segment(data, topic="orders", pieces=pieces, interval_bytes=400)
    assert ex.stats == extract_segment(data, topic="orders").stats  # stats are whole-segment
    for iv in ex.intervals:
        assert any(a <= iv.start_offset <= iv.end_offset <= b for a, b in pieces)
        inside = [r for r in recs if iv.start_offset <= r.offset <= iv.end_offset]
        assert iv.record_count == len(inside)
        assert iv.record_max_ts == max(r.timestamp for r in inside)
    covered = sum(iv.record_count for iv in ex.intervals)
    assert covered == sum(1 for r in recs if any(a <= r.offset <= b for a, b in pieces))


def test_consumer_offsets_commits_and_markers(history: History) -> None:
    commits = []
    markers = []
    for (topic, _part), d in history.dirs.items():
        if topic != "__consumer_offsets":
            continue
        for seg in PartitionView.open(d).rolled:
            ex = extract_segment(seg.log.read_bytes(), topic=topic)
            commits += ex.commits
            markers += ex.markers
    plain = [c for c in commits if not c.transactional]
    expected_plain = sum(
        len(v) for (g, _t, _p), v in history.commits.items() if g != "exactly-once"
    )
    assert len(plain) == expected_plain
    txn = [c for c in commits if c.transactional]
    assert len(txn) == 6 and {c.group for c in txn} == {"exactly-once"}
    assert sorted(m.committed for m in markers) == [False] * 3 + [True] * 3
    assert {m.producer_id for m in markers} == {c.producer_id for c in txn}
    # every plain commit's record timestamp is a time history recorded for that group
    recorded = {(g, t, p, ts, off) for (g, t, p), v in history.commits.items() for ts, off in v}
    for c in plain:
        assert (c.group, c.topic, c.partition, c.record_timestamp, c.offset) in recorded


def test_extraction_refuses_bad_settings() -> None:
    with pytest.raises(ValueError):
        SegmentExtractor(topic="t", interval_bytes=0)


# ---------------------------------------------------------------------------------------------
# the fast path (whole segment, in windows: the compiled summary booking in C, or without it
# the compiled header scan with the headers booked as columns) against the general per-batch
# path (taken with pieces; one piece covering everything changes nothing)

_EVERYTHING = [(0, 1 << 62)]


@pytest.fixture(params=["summary", "headers"])
def fast_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test with the compiled summary (the default) and without it (header scan)."""
    if request.param == "headers":
        monkeypatch.setattr(speedups, "summarize", None)
    elif speedups.summarize is None:  # pragma: no cover - depends on the build
        pytest.skip("segment_lib._summary is not built (or no hardware CRC-32C)")
    return str(request.param)


def _fed(
    data: bytes,
    topic: str,
    chunk: int,
    *,
    pieces: list[tuple[int, int]] | None = None,
    interval_bytes: int = 1 << 20,
    histogram_ms: int = 60_000,
) -> SegmentExtract:
    ex = SegmentExtractor(
        topic=topic,
        pieces=pieces,
        size=len(data),
        interval_bytes=interval_bytes,
        histogram_ms=histogram_ms,
    )
    for i in range(0, len(data), chunk):
        ex.feed(data[i : i + chunk])
    return ex.finish()


def _same(a: SegmentExtract, b: SegmentExtract) -> None:
    assert a.stats == b.stats
    assert a.intervals == b.intervals
    assert a.histogram == b.histogram


@pytest.mark.parametrize("window", [None, 61, 5000])
def test_fast_path_equals_general_path(
    history: History, monkeypatch: pytest.MonkeyPatch, window: int | None, fast_path: str
) -> None:
    if window is not None:  # windows smaller than a batch, and cutting batches everywhere
        monkeypatch.setattr(fast_path_mod, "_WINDOW", window)
    rng = random.Random(window or 0)
    checked = 0
    for (topic, _part), d in sorted(history.dirs.items()):
        if topic == "__consumer_offsets":  # always the general path
            continue
        for seg in PartitionView.open(d).rolled:
            data = seg.log.read_bytes()
            for ib in (300, 1 << 20):
                hist_ms = rng.choice([1, 1000, 60_000])
                ref = _fed(data, topic, len(data) or 1, pieces=_EVERYTHING,
                           interval_bytes=ib, histogram_ms=hist_ms)  # fmt: skip
                chunk = rng.choice([len(data) or 1, 97, 4096])
                fast = _fed(data, topic, chunk, interval_bytes=ib, histogram_ms=hist_ms)
                _same(fast, ref)
                checked += 1
    assert checked > 40


def test_fast_path_equals_general_path_after_compaction(tmp_path: Path, fast_path: str) -> None:
    """Compaction leaves batches emptied of records that keep their max timestamp (producer
    state): interval record maxima must skip them exactly as the general path does."""
    clock = ManualClock(START_MS)
    b = BrokerWriter(tmp_path / "b", 0, clock=clock)
    pw = b.partition("cmp", 0, segment_bytes=900)
    rng = random.Random(12)
    for i in range(160):
        now = clock.advance(rng.randint(1, 20))
        rec = WriteRecord(f"k{rng.randint(0, 6)}".encode(), b"x" * rng.randint(1, 40), (),
                          now + rng.randint(-800, 800))  # fmt: skip
        pw.append([rec], producer_id=42 if i % 5 == 0 else -1)
    pw.roll()
    compact(pw, now=clock.advance(10_000), delete_retention_ms=0)
    b.close()
    empty = 0
    for seg in PartitionView.open(pw.dir).rolled:
        data = seg.log.read_bytes()
        with open_log(seg.log) as lb:
            empty += sum(1 for h in lb.batches() if h.record_count == 0)
        for ib in (100, 250, 1 << 20):
            ref = _fed(data, "cmp", len(data) or 1, pieces=_EVERYTHING, interval_bytes=ib)
            _same(_fed(data, "cmp", 53, interval_bytes=ib), ref)
    assert empty > 0  # the case this test is about


def test_fast_path_equals_general_path_on_real_broker_data(
    real_broker_data: Path, fast_path: str
) -> None:
    """Real brokers' segments (several Kafka versions, magic 0/1 among them, active segments
    with preallocated tails): same rows, or the same error at the same byte."""
    logs = sorted(real_broker_data.rglob("*.log"))
    assert logs
    for log in logs:
        data = log.read_bytes()
        results: list[SegmentExtract | tuple[type[SegmentError], int | None]] = []
        for pieces in (None, _EVERYTHING):
            try:
                results.append(_fed(data, "t", 1 << 20, pieces=pieces, interval_bytes=4096))
            except SegmentError as exc:
                results.append((type(exc), exc.position))
        fast, ref = results
        if isinstance(ref, SegmentExtract):
            assert isinstance(fast, SegmentExtract), log
            _same(fast, ref)
        else:
            assert fast == ref, log


@pytest.mark.parametrize("batch_crc", [True, False])
def test_extractor_checksum_sees_every_byte_once(
    history: History, monkeypatch: pytest.MonkeyPatch, fast_path: str, batch_crc: bool
) -> None:
    """Also when the compiled summary continues the CRC-32C itself (in the same pass as the
    batch CRCs, or alone with ``batch_crc=False``) and hands parts back to Python."""
    monkeypatch.setattr(fast_path_mod, "_WINDOW", 1000)
    data = b"".join(s.read_bytes() for s in _segments(history, "orders", 2)[:1])
    for topic in ("orders", "__consumer_offsets"):  # the fast and the general path
        for chunk in (1, 333, 4096, len(data)):
            ck = ObjectChecksum("crc32c")
            ex = SegmentExtractor(topic=topic, size=len(data), checksum=ck, batch_crc=batch_crc)
            for i in range(0, len(data), chunk):
                ex.feed(data[i : i + chunk])
            ex.finish()
            assert ck.hexdigest() == f"{crc32c.crc32c(data):08x}"


@pytest.mark.parametrize("batch_crc", [True, False])
def test_extractor_checksum_sees_every_byte_of_bad_bytes(
    history: History, fast_path: str, batch_crc: bool
) -> None:
    """A damaged batch stops the extraction; the checksum has still seen every byte fed (the
    object's CRC-32C decides whether the damage is the store's or the segment's)."""
    data = bytearray(_segments(history, "orders", 2)[0].read_bytes())
    with open_log(_segments(history, "orders", 2)[0]) as lb:
        batches = list(lb.batches())
    rng = random.Random(5)
    for _ in range(12):
        bad = bytearray(data)
        b = rng.choice(batches)
        bad[b.position + rng.randrange(b.size)] ^= 1 << rng.randrange(8)
        for chunk in (97, 5000, len(bad)):
            ck = ObjectChecksum("crc32c")
            ex = SegmentExtractor(topic="orders", size=len(bad), checksum=ck, batch_crc=batch_crc)
            fed = 0
            try:
                for i in range(0, len(bad), chunk):
                    ex.feed(bytes(bad[i : i + chunk]))
                    fed = i + len(bad[i : i + chunk])
                ex.finish()
            except SegmentError:
                fed = min(len(bad), fed + chunk)  # the chunk that raised was checksummed
            assert ck.crc == crc32c.crc32c(bytes(bad[:fed]))


def test_fast_path_equals_general_path_at_extreme_offsets(fast_path: str) -> None:
    """Base offsets near 2^63 (a last offset beyond int64 makes the compiled summary hand the
    rest to Python: same rows), negative offsets and timestamps, header-only batches."""
    from segment_lib.record_batch import BATCH_HEADER, CRC_START
    from segment_lib.records import LOG_OVERHEAD

    def batch(base: int, delta: int, epoch: int, max_ts: int, count: int) -> bytes:
        head = bytearray(
            BATCH_HEADER.pack(
                base, BATCH_HEADER.size - LOG_OVERHEAD, epoch, 2, 0, 0, delta, max_ts, max_ts,
                -1, -1, -1, count,
            )
        )  # fmt: skip
        head[CRC_START - 4 : CRC_START] = crc32c.crc32c(bytes(head[CRC_START:])).to_bytes(4)
        return bytes(head)

    top = (1 << 63) - 1
    cases = [
        [batch(-5, 0, 0, -3, 0), batch(-1, 2, 0, 10, 3), batch(4, 1, 1, 7, 2)],
        [batch(top - 9, 9, 0, 5, 1), batch(top - 9, 10, 0, 6, 1), batch(top, 0, 1, 9, 1)],
        [batch(top - 3, 100, 2, 1, 1), batch(top - 1, 0, 2, 8, 1), batch(7, 0, 2, 2, 0)],
    ]
    everything = [(-(1 << 64), 1 << 65)]
    for parts in cases:
        data = b"".join(parts)
        for chunk in (len(data), 61, 7):
            ref = _fed(data, "t", len(data), pieces=everything, interval_bytes=130)
            _same(_fed(data, "t", chunk, interval_bytes=130), ref)


# ---------------------------------------------------------------------------------------------
# the chain


def _v(
    key: int,
    lo: int,
    hi: int,
    at: int,
    broker: int = 1,
    runs: tuple[tuple[int, int, int], ...] = (),
) -> Version:
    return Version(key, lo, hi, at, broker, f"m{key}", lo, -1, runs)


def test_pieces_prefer_earliest_archived_and_fill_around() -> None:
    old = _v(1, 0, 99, at=10)
    merged = _v(2, 0, 299, at=20)  # a later compaction merged 0..299
    other = _v(3, 250, 400, at=15, broker=2)
    pieces = compute_pieces([merged, other, old])
    assert pieces[1] == [(0, 99)]
    assert pieces[3] == [(250, 400)]
    assert pieces[2] == [(100, 249)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 60), st.integers(0, 30), st.integers(0, 5), st.integers(0, 3)),
        min_size=1,
        max_size=12,
    ),
    st.randoms(use_true_random=False),
)
def test_pieces_are_disjoint_cover_everything_and_ignore_arrival_order(
    specs: list[tuple[int, int, int, int]], rnd: random.Random
) -> None:
    versions = [_v(i + 1, lo, lo + ln, at, br) for i, (lo, ln, at, br) in enumerate(specs)]
    pieces = compute_pieces(versions)
    shuffled = versions[:]
    rnd.shuffle(shuffled)
    assert compute_pieces(shuffled) == pieces
    claimed = sorted(p for ps in pieces.values() for p in ps)
    for a, b in itertools.pairwise(claimed):
        assert a[1] < b[0]
    covered = {o for lo, hi in claimed for o in range(lo, hi + 1)}
    assert covered == {o for v in versions for o in range(v.first_offset, v.last_offset + 1)}
    for v in versions:
        assert all(v.first_offset <= lo <= hi <= v.last_offset for lo, hi in pieces[v.key])
    # growing the set only shrinks existing claims
    more = compute_pieces([*versions, _v(99, 0, 70, at=0)])
    for v in versions:
        before = {o for lo, hi in pieces[v.key] for o in range(lo, hi + 1)}
        after = {o for lo, hi in more[v.key] for o in range(lo, hi + 1)}
        assert after <= before


def test_overlaps_tell_replicas_from_divergence() -> None:
    a = _v(1, 0, 199, 10, 1, runs=((0, 0, 99), (1, 100, 199)))
    same = _v(2, 150, 299, 11, 2, runs=((1, 150, 250), (2, 251, 299)))
    diverged = _v(3, 120, 260, 12, 3, runs=((0, 120, 140), (3, 141, 260)))
    ovs = {(o.a, o.b): o for o in find_overlaps([a, same, diverged])}
    assert not ovs[(1, 2)].divergent and (ovs[(1, 2)].lo, ovs[(1, 2)].hi) == (150, 199)
    d = ovs[(1, 3)]
    assert d.divergent and d.first_divergent_offset == 120 and (d.epoch_a, d.epoch_b) == (1, 0)
    assert ovs[(3, 2)].divergent and ovs[(3, 2)].first_divergent_offset == 150


def test_holes_use_segment_ranges() -> None:
    v1 = Version(1, 0, 90, 1, 1, "a", 0, 100)  # compaction emptied 91..99: not a hole
    v2 = Version(2, 100, 199, 1, 1, "b", 100, 200)
    v3 = Version(3, 305, 399, 1, 1, "c", 300, 400)  # 200..299 never archived
    assert [(h.lo, h.hi) for h in find_holes([v3, v1, v2])] == [(200, 299)]


def test_running_max() -> None:
    assert running_max(5, [1, 7, 3, 9, 9, 2]) == [5, 7, 7, 9, 9, 9]
