"""PartitionView: ordered segments, rolled vs active, transient files, summaries and gaps."""

from __future__ import annotations

import itertools
from pathlib import Path

from kafka.record.memory_records import MemoryRecords
from kafka_archive_dev.writer import ManualClock, PartitionWriter, compact

from segment_lib.compression import Codec
from segment_lib.partition import PartitionView


def _writer(root: Path, **kw: object) -> PartitionWriter:
    return PartitionWriter(
        root,
        "users",
        0,
        segment_bytes=600,
        index_interval_bytes=100,
        clock=ManualClock(1_700_000_000_000),
        **kw,
    )  # type: ignore[arg-type]


def _offsets_by_kafka_python(view: PartitionView) -> list[int]:
    out: list[int] = []
    for seg in view.segments:
        records = MemoryRecords(seg.log.read_bytes())
        while (batch := records.next_batch()) is not None:
            out.extend(r.offset for r in batch)
    return out


def test_segments_are_ordered_with_the_last_one_active(tmp_path: Path) -> None:
    w = _writer(tmp_path)
    for i in range(40):
        w.append([(b"k%d" % i, b"v" * 40)], codec=Codec.GZIP if i % 2 else Codec.NONE)
    w.close(active=True)
    view = PartitionView.open(w.dir)
    bases = [s.base_offset for s in view.segments]
    assert bases == sorted(bases) and len(bases) >= 3
    assert view.active is view.segments[-1] and view.rolled == view.segments[:-1]
    assert (view.topic, view.partition, view.state) == ("users", 0, None)
    summaries = view.summaries()
    assert [s.is_active for s in summaries] == [False] * (len(bases) - 1) + [True]
    # consecutive segments chain exactly: each starts where the previous one ended
    for prev, nxt in itertools.pairwise(summaries):
        assert prev.next_offset == nxt.segment.base_offset == nxt.first_offset
    assert sum(s.record_count for s in summaries) == 40
    assert view.first_offset == 0 and view.log_end_offset == 40
    assert {c for s in summaries for c in s.codecs} == {"none", "gzip"}
    assert view.gaps() == []
    seg = view.segment_for_offset(25)
    assert seg is not None and seg.base_offset <= 25
    assert view.segment_for_offset(-1) is None


def test_transient_files_and_states_are_kept_apart(tmp_path: Path) -> None:
    w = _writer(tmp_path)
    for _i in range(20):
        w.append([(b"k", b"v" * 40)])
    w.close()
    first = PartitionView.open(w.dir).segments[0]
    for suffix in (".deleted", ".swap", ".cleaned"):
        (w.dir / (first.log.name + suffix)).write_bytes(b"\0" * 10)
    (w.dir / "00000000000000999999.log.deleted").write_bytes(b"")
    view = PartitionView.open(w.dir)
    assert {p.name for p in view.transient_files} == {
        first.log.name + ".deleted",
        first.log.name + ".swap",
        first.log.name + ".cleaned",
        "00000000000000999999.log.deleted",
    }
    assert all(s.base_offset != 999999 for s in view.segments)
    moved = w.dir.rename(tmp_path / "users-0.5e4b9b3d41bd4fc4a0b2b0e4a1d7b8a1-future")
    assert PartitionView.open(moved).state == "future"


def test_gaps_after_compaction_are_exactly_the_removed_offsets(tmp_path: Path) -> None:
    w = _writer(tmp_path)
    for i in range(60):
        # every 7th record is the only one of its key and survives; the rest are overwritten
        key = b"once-%d" % i if i % 7 == 0 else b"user-%d" % (i % 5)
        w.append([(key, b"state-%d" % i + b"x" * 30)])
    original = list(range(60))
    compact(w)
    w.close()
    view = PartitionView.open(w.dir)
    kept = _offsets_by_kafka_python(view)
    assert len(kept) < len(original)
    gap_offsets = {o for g in view.gaps() for o in range(g.start, g.end + 1)}
    removed = set(original) - set(kept)
    assert gap_offsets  # compaction removed whole batches
    assert gap_offsets <= removed
    # every gap lies strictly between kept records
    for g in view.gaps():
        assert min(kept) < g.start <= g.end < max(kept)
        assert g.reason in {"between segments", "inside segment"}
