"""Several archived versions of the same offsets: replicas rolled differently, compaction
rewrites, an unclean leader election, and a retention hole. The catalog keeps one canonical
chain (earliest archived first), stays exact, converges whatever the arrival order, and
``gaps`` reports what is missing, overlapping or divergent."""

from __future__ import annotations

import dataclasses
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.queries import gaps, offsets_for_time
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.store import ObjectStore, open_store
from kafka_archive_dev.writer import (
    BrokerWriter,
    ManualClock,
    PartitionWriter,
    WriteRecord,
    compact,
)
from support.catalog_data import (
    START_MS,
    all_records,
    archive_partition,
    assert_coverage_fresh,
    brute_force_offset,
    sample_times,
)

from segment_lib.compression import Codec
from segment_lib.lookup import find_offset_for_timestamp
from segment_lib.partition import PartitionView
from segment_lib.records import Record

pytest_plugins = ["support.postgres"]
C = "c1"


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'catalog.db'}"
    else:
        url = str(request.getfixturevalue("pg_url"))
    cat = open_catalog(url, create=True)
    yield cat
    cat.close()


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return open_store(str(tmp_path / "store"))


def _fill(pw: PartitionWriter, clock: ManualClock, rng: random.Random, n: int, tag: str) -> None:
    for i in range(n):
        now = clock.advance(rng.randint(1, 30))
        recs = [
            WriteRecord(
                f"{tag}{i}-{j}".encode(),
                bytes(rng.randint(20, 80)),
                (),
                now + rng.randint(-2_000, 200),
            )
            for j in range(rng.randint(1, 3))
        ]
        pw.append(recs, codec=rng.choice((Codec.NONE, Codec.LZ4, Codec.ZSTD)))


def _with_ends(refs: list[SegmentRef], pdir: Path) -> list[SegmentRef]:
    """Set each ref's end offset to the next segment's base, as the archive's manifest does."""
    bases = [s.base_offset for s in PartitionView.open(pdir).segments]
    out = []
    for r in refs:
        nxt = [b for b in bases if b > r.base_offset]
        out.append(dataclasses.replace(r, end_offset=nxt[0] if nxt else -1))
    return out


def _check(
    cat: Catalog, store: ObjectStore, topic: str, part: int, recs: list[Record], seed: int
) -> None:
    for ts in sample_times(recs, random.Random(seed), 25):
        (ans,) = offsets_for_time(cat, store, C, topic, ts, [part])
        assert (ans.offset, ans.timestamp) == brute_force_offset(recs, ts), ts


def _replicas(tmp_path: Path) -> tuple[PartitionWriter, PartitionWriter]:
    clock = ManualClock(START_MS)
    lb = BrokerWriter(tmp_path / "b0", 0, clock=clock)
    fb = BrokerWriter(tmp_path / "b1", 1, clock=clock)
    leader = lb.partition("r", 0, segment_bytes=2_000)
    _fill(leader, clock, random.Random(1), 80, "k")
    follower = fb.replicate(leader, fetch_max_bytes=700, segment_bytes=1_500)
    for pw in (leader, follower):
        pw.roll()
    lb.close()
    fb.close()
    return leader, follower


def test_replicas_rolled_differently(tmp_path: Path, catalog: Catalog, store: ObjectStore) -> None:
    leader, follower = _replicas(tmp_path)
    recs = list(all_records(leader.dir))
    assert recs == list(all_records(follower.dir))
    lrefs = archive_partition(store, C, leader.dir, broker_id=0, archived_at_ms=START_MS + 10)
    frefs = archive_partition(store, C, follower.dir, broker_id=1, archived_at_ms=START_MS + 20)
    # the leader's every other segment, the follower's all: many partial overlaps
    first = lrefs[::2]
    # the follower's (later archived) segments arrive first; the leader's then take precedence
    rep1 = build_catalog(catalog, store.uri, refs=frefs, interval_bytes=500)
    assert rep1.re_extracted == 0
    _check(catalog, store, "r", 0, recs, 1)
    assert assert_coverage_fresh(catalog) == []
    rep2 = build_catalog(catalog, store.uri, refs=first + frefs, interval_bytes=500)
    assert rep2.re_extracted > 0  # follower versions lost offsets to the leader's
    _check(catalog, store, "r", 0, recs, 2)
    # the second build's rows include the statuses it changed (who serves an overlap)
    assert assert_coverage_fresh(catalog)
    found = gaps(catalog, C)
    assert found and {g.kind for g in found} == {"overlap"}
    for g in found:
        assert set(g.detail["brokers"]) <= {0, 1}


def test_retention_hole_is_reported(tmp_path: Path, catalog: Catalog, store: ObjectStore) -> None:
    leader, _ = _replicas(tmp_path)
    segs = PartitionView.open(leader.dir).rolled
    lost = segs[3]
    after = segs[4].base_offset
    refs = _with_ends(
        archive_partition(
            store,
            C,
            leader.dir,
            broker_id=0,
            only_bases={s.base_offset for s in segs} - {lost.base_offset},
        ),
        leader.dir,
    )
    build_catalog(catalog, store.uri, refs=refs, interval_bytes=500)
    assert len(assert_coverage_fresh(catalog)) == 1
    found = gaps(catalog, C, "r")
    assert [(g.kind, g.start_offset, g.end_offset) for g in found] == [
        ("missing", lost.base_offset, after - 1)
    ]
    kept = [r for r in all_records(leader.dir) if not lost.base_offset <= r.offset < after]
    _check(catalog, store, "r", 0, kept, 3)


def test_unclean_election_is_divergent(
    tmp_path: Path, catalog: Catalog, store: ObjectStore
) -> None:
    clock = ManualClock(START_MS)
    old_b = BrokerWriter(tmp_path / "old", 0, clock=clock)
    new_b = BrokerWriter(tmp_path / "new", 1, clock=clock)
    old = old_b.partition("u", 0, segment_bytes=1_500)
    rng = random.Random(4)
    _fill(old, clock, rng, 30, "a")
    split = old.log_end_offset
    new = new_b.replicate(old, segment_bytes=1_500)
    _fill(old, clock, rng, 20, "old-only")  # never replicated
    new.become_leader(1)  # unclean: the out-of-sync replica leads with epoch 1
    _fill(new, clock, rng, 25, "new-only")
    for pw in (old, new):
        pw.roll()
    old_b.close()
    new_b.close()
    refs = archive_partition(store, C, old.dir, broker_id=0, archived_at_ms=START_MS + 5)
    refs += archive_partition(
        store, C, new.dir, broker_id=1, archived_at_ms=START_MS + 9, manifest_suffix="-b1"
    )
    build_catalog(catalog, store.uri, refs=refs, interval_bytes=400)
    assert assert_coverage_fresh(catalog)
    div = [g for g in gaps(catalog, C) if g.kind == "divergent"]
    assert div
    assert min(g.detail["first_divergent_offset"] for g in div) == split
    assert all(sorted(g.detail["leader_epochs"]) == [0, 1] for g in div)
    # the chain serves the earliest archived (the old leader) where they diverge, the new
    # leader's segments beyond the old leader's end
    old_recs = list(all_records(old.dir))
    tail = [r for r in all_records(new.dir) if r.offset > old_recs[-1].offset]
    _check(catalog, store, "u", 0, old_recs + tail, 5)


def test_compaction_rewrite_keeps_the_complete_history(
    tmp_path: Path, catalog: Catalog, store: ObjectStore
) -> None:
    clock = ManualClock(START_MS)
    b = BrokerWriter(tmp_path / "b", 0, clock=clock)
    pw = b.partition("compacted", 0, segment_bytes=1_200)
    rng = random.Random(8)
    for i in range(150):
        now = clock.advance(rng.randint(1, 20))
        key = f"key-{rng.randint(0, 12)}".encode()
        pw.append(
            [
                WriteRecord(
                    key,
                    None if i % 17 == 3 else b"v" * rng.randint(5, 60),
                    (),
                    now + rng.randint(-1_500, 100),
                )
            ]
        )
    pw.roll()
    before = tmp_path / "before"
    shutil.copytree(pw.dir, before / pw.dir.name)
    full = list(all_records(pw.dir))
    refs_v1 = archive_partition(store, C, pw.dir, archived_at_ms=START_MS + 100)
    compact(pw, now=clock.advance(1_000))
    b.close()
    compacted = list(all_records(pw.dir))
    assert len(compacted) < len(full)
    refs_v2 = [
        r
        for r in archive_partition(
            store, C, pw.dir, archived_at_ms=START_MS + 200, manifest_suffix="-v2"
        )
        if r.object_key not in {x.object_key for x in refs_v1}
    ]
    assert refs_v2
    # the rewrite first, the original later: the original still wins (earliest archived)
    build_catalog(catalog, store.uri, refs=refs_v2, interval_bytes=300)
    build_catalog(catalog, store.uri, refs=refs_v1 + refs_v2, interval_bytes=300)
    assert assert_coverage_fresh(catalog)
    _check(catalog, store, "compacted", 0, full, 6)
    kinds = {g.kind for g in gaps(catalog, C)}
    assert kinds == {"overlap"}


def test_compacted_only_archive_matches_the_broker(
    tmp_path: Path, catalog: Catalog, store: ObjectStore
) -> None:
    """Only the compacted versions archived: the catalog answers as the broker does on the
    compacted log (which may differ from a brute-force scan when compaction emptied a batch
    that kept its max timestamp)."""
    clock = ManualClock(START_MS)
    b = BrokerWriter(tmp_path / "b", 0, clock=clock)
    pw = b.partition("cmp", 0, segment_bytes=900)
    rng = random.Random(12)
    for i in range(120):
        now = clock.advance(rng.randint(1, 20))
        pid = 42 if i % 5 == 0 else -1
        pw.append(
            [
                WriteRecord(
                    f"k{rng.randint(0, 6)}".encode(),
                    b"x" * rng.randint(1, 40),
                    (),
                    now + rng.randint(-800, 800),
                )
            ],
            producer_id=pid,
        )
    pw.roll()
    compact(pw, now=clock.advance(10_000), delete_retention_ms=0)
    b.close()
    refs = archive_partition(store, C, pw.dir)
    build_catalog(catalog, store.uri, refs=refs, interval_bytes=250)
    view = PartitionView.open(pw.dir)
    recs = list(all_records(pw.dir))
    for ts in sample_times(recs, random.Random(2), 40):
        expect = find_offset_for_timestamp(view, ts)
        (ans,) = offsets_for_time(catalog, store, C, "cmp", ts, [0])
        assert (ans.offset, ans.timestamp) == (expect.offset, expect.timestamp), ts


@pytest.mark.parametrize("later_in_segment", [False, True])
def test_emptied_batch_keeps_the_broker_answer(
    tmp_path: Path, catalog: Catalog, store: ObjectStore, later_in_segment: bool
) -> None:
    """Compaction empties a producer's last batch but keeps it (and its max timestamp, an hour
    ahead). The broker then answers ListOffsets from that segment only: the record after the
    empty batch in the same segment, or -1 - not the first qualifying record of a later
    segment, which a brute-force scan would pick. The catalog does as the broker does, with at
    most one ranged read."""
    hour = 3_600_000
    clock = ManualClock(START_MS)
    b = BrokerWriter(tmp_path / "b", 0, clock=clock)
    pw = b.partition("cmp", 0, segment_bytes=600)
    for i in range(5):
        pw.append([WriteRecord(f"a{i}".encode(), b"x" * 30, (), clock.advance(1))])
    pw.append(
        [WriteRecord(b"hot", b"early", (), START_MS + hour)], producer_id=42, producer_epoch=0
    )
    for i in range(4):
        pw.append([WriteRecord(f"b{i}".encode(), b"x" * 30, (), clock.advance(1))])
    if later_in_segment:
        pw.append([WriteRecord(b"b-late", b"x", (), START_MS + hour - 5)])
    pw.roll()
    pw.append([WriteRecord(b"hot", b"late", (), clock.advance(1))])  # overwrites "hot"
    for i in range(5):
        pw.append([WriteRecord(f"c{i}".encode(), b"x" * 30, (), START_MS + 2 * hour + i)])
    pw.roll()
    compact(pw, now=clock.advance(10_000), delete_retention_ms=0)
    b.close()
    view = PartitionView.open(pw.dir)
    recs = list(all_records(pw.dir))
    target = START_MS + hour // 2
    broker = find_offset_for_timestamp(view, target)
    assert (broker.offset, broker.timestamp) != brute_force_offset(recs, target)  # the quirk
    build_catalog(catalog, store.uri, refs=archive_partition(store, C, pw.dir), interval_bytes=60)

    class Counting:
        reads = 0

        def get_range(self, key: str, start: int, end: int) -> bytes:
            Counting.reads += 1
            return store.get_range(key, start, end)

        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

    for ts in [target, *sample_times(recs, random.Random(1), 10)]:
        Counting.reads = 0
        (ans,) = offsets_for_time(catalog, Counting(), C, "cmp", ts, [0])  # type: ignore[arg-type]
        expect = find_offset_for_timestamp(view, ts)
        assert (ans.offset, ans.timestamp) == (expect.offset, expect.timestamp), ts
        assert Counting.reads == (1 if expect.offset >= 0 else 0)
