"""Batches the log cleaner stamped with a delete horizon (KIP-534, issue 20 point 5).

The cleaner stores the horizon in the batch's ``firstTimestamp`` field (attribute bit 6) and
takes the records' timestamp deltas against it, so that field is a moment *after* the
cleaning, not the first record's time. Every place that derives "the first record's time" of
a segment from it (catalog extraction on both paths, the segment summary, the archiver's scan,
the replay's planned segments) must decode the first record instead; the catalog's first time
then never comes after its last, and ``offsets --at`` does not call a moment inside the
archive "before the archive's first record".
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from kafka_archive.archive.uploader.scan import scan_log
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.extract import extract_segment
from kafka_archive.catalog.holdings import topics
from kafka_archive.catalog.time_answers import offsets_at
from kafka_archive.replay.planning.sources import segment_ref_from_bytes
from kafka_archive.store import open_store
from kafka_archive_dev.writer import (
    BrokerWriter,
    ManualClock,
    PartitionWriter,
    WriteRecord,
    compact,
)
from kafka_archive_dev.writer.encode import encode_batch_v2
from support.catalog_data import START_MS, all_records, archive_partition

from segment_lib.compression import Codec
from segment_lib.log_file import decode_batch, iter_batches, open_log
from segment_lib.partition import PartitionView
from segment_lib.record_batch import first_record_timestamp, has_delete_horizon
from segment_lib.records import BatchHeader

C = "c1"
HORIZON = START_MS + 86_400_000  # a day after the records: the cleaner's "now + retention"


def _header(data: bytes) -> BatchHeader:
    (h,) = list(iter_batches(data))
    return h


@pytest.mark.parametrize("codec", list(Codec))
def test_first_record_timestamp_decodes_the_first_record_under_a_horizon(codec: Codec) -> None:
    recs = [
        WriteRecord(b"k%d" % i, None if i == 1 else b"v", (), START_MS + 10 * i) for i in range(3)
    ]
    flagged = encode_batch_v2(5, recs, codec=codec, delete_horizon_ms=HORIZON).data
    h = _header(flagged)
    assert has_delete_horizon(h) and h.first_timestamp == HORIZON  # what the bytes hold
    assert first_record_timestamp(flagged, h) == START_MS  # the first record's time
    assert [r.timestamp for r in decode_batch(flagged, h)] == [
        START_MS,
        START_MS + 10,
        START_MS + 20,
    ]
    plain = encode_batch_v2(5, recs, codec=codec).data
    hp = _header(plain)
    assert not has_delete_horizon(hp)
    assert first_record_timestamp(plain, hp) == hp.first_timestamp == START_MS


def test_first_record_timestamp_under_log_append_time_is_the_batch_time() -> None:
    recs = [WriteRecord(b"k", None, (), START_MS)]
    data = encode_batch_v2(0, recs, log_append_time=START_MS + 7, delete_horizon_ms=HORIZON).data
    assert first_record_timestamp(data, _header(data)) == START_MS + 7


def _cleaned_partition(tmp_path: Path) -> PartitionWriter:
    """A compacted partition with tombstones, cleaned once a day after it was written: its
    cleaned batches that keep a tombstone carry the horizon (cleaning time + retention)."""
    clock = ManualClock(START_MS)
    b = BrokerWriter(tmp_path / "b", 0, clock=clock)
    pw = b.partition("customers", 0, segment_bytes=700)
    rng = random.Random(20)
    for i in range(90):
        now = clock.advance(rng.randint(1, 30))
        # every tenth a tombstone of a key never written again: kept by the cleaner, with
        # the horizon on its batch (the others, of six keys, mostly removed)
        key = b"gone-%d" % i if i % 10 == 0 else b"key-%d" % rng.randint(0, 5)
        value = None if i % 10 == 0 or i % 7 == 0 else b"x" * rng.randint(1, 30)
        codec = (Codec.NONE, Codec.GZIP, Codec.LZ4, Codec.ZSTD)[i % 4]
        pw.append([WriteRecord(key, value, (), now)], codec=codec)
    pw.roll()
    compact(pw, now=clock.advance(3_600_000), delete_retention_ms=86_400_000)
    b.close()
    return pw


def _first_batches(pw: PartitionWriter) -> list[tuple[Path, BatchHeader, int]]:
    """(segment, its first batch, that batch's first record's timestamp) of every rolled
    segment holding a batch."""
    out = []
    for seg in PartitionView.open(pw.dir).rolled:
        with open_log(seg.log) as lb:
            hs = list(lb.batches())
            if hs:
                recs = decode_batch(lb.data, hs[0])
                out.append((seg.log, hs[0], recs[0].timestamp if recs else -1))
    return out


def test_segment_first_times_come_from_the_records(tmp_path: Path) -> None:
    pw = _cleaned_partition(tmp_path)
    firsts = _first_batches(pw)
    flagged = [(log, h, ts) for log, h, ts in firsts if has_delete_horizon(h)]
    assert flagged, "the case this test is about: a segment starting with a horizon batch"
    view = PartitionView.open(pw.dir)
    by_log = {s.log: s for s in view.rolled}
    for log, h, ts in firsts:
        assert ts < HORIZON + 3_600_000 <= h.first_timestamp or not has_delete_horizon(h)
        data = log.read_bytes()
        seg = by_log[log]
        # catalog extraction, the compiled fast path and the per-batch general path
        fast = extract_segment(data, topic="customers").stats
        general = extract_segment(data, topic="customers", pieces=[(0, 1 << 62)]).stats
        assert fast.first_timestamp == general.first_timestamp == ts, log
        assert fast.first_timestamp <= fast.max_timestamp
        # the segment summary, the archiver's manifest scan, the replay's planned segment
        assert view.summary(seg).first_timestamp == ts
        assert scan_log(log, seg.base_offset, 1 << 62).first_timestamp == ts
        assert segment_ref_from_bytes(data, "k").first_timestamp == ts


def test_fed_in_small_chunks_the_first_time_is_still_the_records(tmp_path: Path) -> None:
    from kafka_archive.catalog.extract import SegmentExtractor

    pw = _cleaned_partition(tmp_path)
    log, _h, ts = next(f for f in _first_batches(pw) if has_delete_horizon(f[1]))
    data = log.read_bytes()
    for chunk in (1, 13, 97):
        ex = SegmentExtractor(topic="customers", size=len(data))
        for i in range(0, len(data), chunk):
            ex.feed(data[i : i + chunk])
        assert ex.finish().stats.first_timestamp == ts


def test_catalog_first_time_and_offsets_notes_after_cleaning(tmp_path: Path) -> None:
    """The demo's symptom: the partition's first time after its last, and ``offsets --at``
    a moment inside the archive answered with "before the archive's first record"."""
    pw = _cleaned_partition(tmp_path)
    store = open_store(str(tmp_path / "store"))
    refs = archive_partition(store, C, pw.dir)
    recs = list(all_records(pw.dir))
    with open_catalog(str(tmp_path / "catalog.db"), create=True) as cat:
        build_catalog(cat, store.uri, refs=refs)
        (held,) = [h for h in topics(cat, C) if h.topic == "customers"]
        first = min(r.timestamp for r in recs if r.offset == held.first_offset)
        assert held.first_timestamp == first <= held.max_timestamp
        # every record's own moment lies inside the archive: no "before the first" note
        for r in recs:
            (ans,) = offsets_at(cat, store, C, "customers", r.timestamp, [0])
            assert ans.clamped is None and ans.note is None, (r, ans.note)
            assert ans.offset <= r.offset
        (before,) = offsets_at(cat, store, C, "customers", first - 1, [0])
        assert before.note is not None and "before the archive's first record" in before.note
        assert before.offset == held.first_offset
