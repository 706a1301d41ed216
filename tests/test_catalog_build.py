"""The catalog built from a real archive run, on SQLite and on a real PostgreSQL server.

Cross-checks: for writer-made multi-segment, multi-partition archives (out-of-order CreateTime,
LogAppendTime, every codec, idempotent and transactional producers with COMMIT/ABORT markers),
``offsets`` equals segment_lib's broker-equivalent lookup on the original log dirs and a brute
force scan, for random T including before the first and after the last record, with at most
one ranged read per partition. Builds are idempotent, a build killed midway is completed by
the next, segments may arrive in any order, and group offsets at T follow the archived
``__consumer_offsets`` history.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka_archive.archive import run_archive
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.queries import (
    CatalogQueryError,
    gaps,
    group_offsets,
    locate,
    offsets_for_time,
    stats,
    topics,
)
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.store import ObjectStore, open_store
from sqlalchemy import text
from support.catalog_data import (
    History,
    all_records,
    brute_force_offset,
    dump_catalog,
    sample_times,
    write_history,
)
from support.stores import RangeCountingStore

from segment_lib.lookup import find_offset_for_timestamp
from segment_lib.partition import PartitionView

pytest_plugins = ["support.postgres"]

CLUSTER = "c1"
REPO = Path(__file__).resolve().parents[1]


@dataclass
class Archived:
    history: History
    store_uri: str
    store: ObjectStore


@pytest.fixture(scope="module")
def archived(tmp_path_factory: pytest.TempPathFactory) -> Archived:
    root = tmp_path_factory.mktemp("archived")
    hist = write_history(root / "logs")
    store = open_store(str(root / "store"))
    report = run_archive(
        cluster=CLUSTER,
        broker_id=1,
        log_dirs=[str(d) for d in hist.broker.log_dirs],
        store=store,
    )
    assert report.segments_archived > 0
    return Archived(hist, store.uri, store)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def catalog(db_url: str) -> Iterator[Catalog]:
    cat = open_catalog(db_url, create=True)
    yield cat
    cat.close()


def _cross_check(
    cat: Catalog, store: ObjectStore, hist: History, rng: random.Random, n: int
) -> int:
    checked = 0
    for (topic, part), d in sorted(hist.dirs.items()):
        if topic.startswith("__"):
            continue
        recs = list(all_records(d))
        view = PartitionView.open(d)
        for ts in sample_times(recs, rng, n):
            brute = brute_force_offset(recs, ts)
            broker = find_offset_for_timestamp(view, ts)
            counting = RangeCountingStore(store)
            (ans,) = offsets_for_time(cat, counting, CLUSTER, topic, ts, [part])
            assert brute == (broker.offset, broker.timestamp), (topic, part, ts)
            assert (ans.offset, ans.timestamp) == brute, (topic, part, ts)
            assert counting.ranged_reads == (1 if brute[0] >= 0 else 0)
            checked += 1
    return checked


def test_offsets_equal_broker_lookup_and_brute_force(archived: Archived, catalog: Catalog) -> None:
    report = build_catalog(catalog, archived.store_uri, cluster=CLUSTER, interval_bytes=700)
    assert report.segments_added == report.manifests > 20
    assert report.failed == [] and report.corrupt == 0 and report.intervals_added > report.manifests
    assert _cross_check(catalog, archived.store, archived.history, random.Random(11), 25) > 500


def test_offsets_for_all_partitions_read_at_most_once_each(
    archived: Archived, catalog: Catalog
) -> None:
    build_catalog(catalog, archived.store_uri, cluster=CLUSTER, interval_bytes=4096)
    hist = archived.history
    recs = {p: list(all_records(hist.dirs[("orders", p)])) for p in range(3)}
    rng = random.Random(5)
    stamps = sorted(r.timestamp for rs in recs.values() for r in rs)
    for ts in [stamps[0] - 1, stamps[-1] + 1, *rng.sample(stamps, 20)]:
        counting = RangeCountingStore(archived.store)
        answers = offsets_for_time(catalog, counting, CLUSTER, "orders", ts)
        assert [a.partition for a in answers] == [0, 1, 2]
        for a in answers:
            assert (a.offset, a.timestamp) == brute_force_offset(recs[a.partition], ts)
        assert counting.ranged_reads == sum(1 for a in answers if a.offset >= 0)


def test_rerun_adds_nothing(archived: Archived, catalog: Catalog) -> None:
    first = build_catalog(catalog, archived.store_uri, interval_bytes=700)
    before = dump_catalog(catalog)
    again = build_catalog(catalog, archived.store_uri, interval_bytes=700)
    assert again.segments_added == 0 and again.intervals_added == 0 and again.bytes_read == 0
    assert again.already_cataloged == first.manifests
    assert dump_catalog(catalog) == before


def test_interrupted_build_is_completed_by_rerun(
    archived: Archived, catalog: Catalog, tmp_path: Path
) -> None:
    written = 0

    def die_after_three(phase: str, done: int, total: int, nbytes: int) -> None:
        nonlocal written
        if phase == "write":
            written += 1
            if written == 3:
                raise KeyboardInterrupt  # as if the operator or the scheduler killed it

    with pytest.raises(KeyboardInterrupt):
        build_catalog(
            catalog,
            archived.store_uri,
            interval_bytes=700,
            wave_segments=20,
            progress=die_after_three,
        )
    partial = dump_catalog(catalog)
    assert len(partial["segments"]) > 0
    rest = build_catalog(catalog, archived.store_uri, interval_bytes=700)
    assert rest.segments_added > 0 and rest.already_cataloged == len(partial["segments"])
    with open_catalog(tmp_path / "fresh.db", create=True) as fresh:
        build_catalog(fresh, archived.store_uri, interval_bytes=700)
        assert dump_catalog(fresh) == dump_catalog(catalog)
    with catalog.engine.connect() as conn:
        runs = [r[0] for r in conn.execute(text("SELECT status FROM build_runs ORDER BY id"))]
    assert runs == ["failed", "ok"]


def test_killed_process_is_completed_by_rerun(archived: Archived, tmp_path: Path) -> None:
    """A build process killed hard (os._exit) in the middle of its writes."""
    db = tmp_path / "killed.db"
    code = textwrap.dedent(
        f"""
        import os
        from kafka_archive.catalog.db import open_catalog
        from kafka_archive.catalog.build import build_catalog
        n = 0
        def progress(phase, done, total, nbytes):
            global n
            if phase == "write":
                n += 1
                if n == 4:
                    os._exit(9)
        build_catalog(open_catalog({str(db)!r}, create=True), {archived.store_uri!r},
                      interval_bytes=700,
                      wave_segments=16, progress=progress)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ},
    )
    assert proc.returncode == 9, proc.stderr
    cat = open_catalog(db, create=True)
    try:
        partial = dump_catalog(cat)
        assert partial["segments"]
        build_catalog(cat, archived.store_uri, interval_bytes=700)
        ref = open_catalog(tmp_path / "ref.db", create=True)
        build_catalog(ref, archived.store_uri, interval_bytes=700)
        assert dump_catalog(cat) == dump_catalog(ref)
        ref.close()
    finally:
        cat.close()


def _manifest_refs(archived: Archived) -> list[SegmentRef]:
    from kafka_archive.catalog.build import refs_from_manifests

    return refs_from_manifests(archived.store, CLUSTER)


def test_out_of_order_arrival_converges(archived: Archived, catalog: Catalog) -> None:
    refs = _manifest_refs(archived)
    by_part: dict[tuple[str, int], list[SegmentRef]] = {}
    for r in refs:
        by_part.setdefault((r.topic, r.partition), []).append(r)
    late = {
        r.manifest_key
        for rs in by_part.values()
        for r in sorted(rs, key=lambda r: r.base_offset)[::2]
    }
    # newest segments first, the rest later (running maxima must be recomputed)
    build_catalog(
        catalog,
        archived.store_uri,
        refs=[r for r in refs if r.manifest_key not in late],
        interval_bytes=700,
    )
    build_catalog(catalog, archived.store_uri, refs=refs, interval_bytes=700)
    assert _cross_check(catalog, archived.store, archived.history, random.Random(3), 10) > 100


def test_group_offsets_follow_commit_history(archived: Archived, catalog: Catalog) -> None:
    build_catalog(catalog, archived.store_uri, interval_bytes=700)
    rng = random.Random(9)
    commits = archived.history.commits
    groups = sorted({g for g, _t, _p in commits})
    times = sorted(ts for v in commits.values() for ts, _o in v)
    for group in groups:
        for at in [times[0] - 1, *rng.sample(times, 10), times[-1] + 1, None]:
            expected = {}
            for (g, t, p), history in commits.items():
                if g != group:
                    continue
                seen = [(ts, off) for ts, off in history if at is None or ts <= at]
                if seen:
                    expected[(t, p)] = seen[-1]
            if not expected and at is not None:
                assert group_offsets(catalog, CLUSTER, group, at) == []
                continue
            got = group_offsets(catalog, CLUSTER, group, at)
            assert {(o.topic, o.partition): o.offset for o in got} == {
                k: off for k, (_ts, off) in expected.items()
            }, (group, at)
    with pytest.raises(CatalogQueryError):
        group_offsets(catalog, CLUSTER, "no-such-group")


def test_locate_stats_topics(archived: Archived, catalog: Catalog) -> None:
    build_catalog(catalog, archived.store_uri, interval_bytes=700)
    hist = archived.history
    recs = list(all_records(hist.dirs[("orders", 2)]))
    for r in recs[::37]:
        loc = locate(catalog, archived.store, CLUSTER, "orders", 2, r.offset)
        assert loc.exact and loc.found_offset == r.offset and loc.timestamp == r.timestamp
        data = archived.store.get_range(loc.object_key, loc.byte_start, loc.byte_end)
        from segment_lib.log_file import iter_batches

        (batch,) = list(iter_batches(data))
        assert batch.base_offset <= r.offset <= batch.last_offset
    with pytest.raises(CatalogQueryError):
        locate(catalog, archived.store, CLUSTER, "orders", 2, recs[-1].offset + 1)
    held = {(h.topic, h.partition): h for h in topics(catalog, CLUSTER)}
    assert held[("orders", 2)].last_offset == recs[-1].offset
    assert held[("orders", 2)].first_offset == 0
    all_orders = [r for p in range(3) for r in all_records(hist.dirs[("orders", p)])]
    lo = min(r.timestamp for r in all_orders)
    hi = max(r.timestamp for r in all_orders)
    buckets = stats(catalog, CLUSTER, "orders", lo, hi + 1, 300_000)
    assert sum(b.bytes for b in buckets) == sum(
        h.bytes for (t, _p), h in held.items() if t == "orders"
    )
    # data records (not control markers) are counted
    from segment_lib.log_file import open_log

    data_records = 0
    for p in range(3):
        for seg in PartitionView.open(hist.dirs[("orders", p)]).segments:
            with open_log(seg.log) as log:
                data_records += sum(1 for _ in log.iter_records())
    assert sum(b.records for b in buckets) == data_records
    assert gaps(catalog, CLUSTER) == []
