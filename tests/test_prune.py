"""Retention and prune (issue 13, point 1): policies, what a prune deletes and records, what
it never deletes (leased ranges), a crash mid-prune completed by the next run, and what the
catalog says afterwards (`gaps`, `offsets`, replay plans).

The archive is a real one: :func:`support.catalog_data.archived_catalog` (the broker-faithful
writer's history, archived by the archiver with manifests and side files, cataloged
in-process), copied per test so each one starts from the same state.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.leases import LeaseRange, ObjectLeases
from kafka_archive.catalog.models import ChainPiece, Partition, PrunedRange, Segment
from kafka_archive.catalog.prune import prune
from kafka_archive.catalog.retention import (
    RetentionConfigError,
    RetentionPolicy,
    VersionSpan,
    load_policies,
    select_units,
    units_of,
)
from kafka_archive.settings import SettingsError, load_settings
from kafka_archive.store import ObjectStore, open_store
from sqlalchemy import func, select, update
from support.catalog_data import archived_catalog, assert_coverage_fresh
from typer.testing import CliRunner

pytest_plugins = ["support.s3server", "support.postgres"]

CLUSTER = "c1"


# ---------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prune-archive")
    archived_catalog(root, cluster=CLUSTER, appends=180)
    return root


@pytest.fixture
def archive(pristine: Path, tmp_path: Path) -> tuple[Catalog, ObjectStore, Path]:
    """A fresh copy of the archived, cataloged history: (catalog, store, root)."""
    root = tmp_path / "a"
    shutil.copytree(pristine, root)
    cat = open_catalog(str(root / "catalog.db"))
    store = open_store(str(root / "store"))
    yield cat, store, root
    cat.close()
    store.close()


def _segments(cat: Catalog, topic: str, part: int) -> list[Segment]:
    with cat.session() as s:
        return list(
            s.execute(
                select(Segment)
                .join(Partition, Partition.id == Segment.partition_id)
                .where(Partition.topic == topic, Partition.partition == part)
                .order_by(Segment.base_offset)
            ).scalars()
        )


def _manifest_files(store: ObjectStore, manifest_key: str) -> list[str]:
    doc = json.loads(store.get_bytes(manifest_key))
    return [f["key"] for f in doc["files"]]


def _all_keys(store: ObjectStore) -> set[str]:
    return {o.key for o in store.list("")}


def _age_cutoff(cat: Catalog, topic: str, part: int, keep_from: int) -> int:
    """A moment such that the segments before the ``keep_from``-th of the partition are all
    older and the ``keep_from``-th is not (so an age prune of the partition stops there)."""
    segs = _segments(cat, topic, part)
    older = max(s.max_timestamp for s in segs[:keep_from])
    assert segs[keep_from].max_timestamp > older
    return older + 1


def _expected_prefix(segs: list[Segment], cutoff: int) -> list[Segment]:
    out = []
    for s in segs:
        if s.max_timestamp >= cutoff:
            break
        out.append(s)
    return out


# ---------------------------------------------------------------------------------------------
# policies


def test_policies_come_from_the_settings_and_are_validated(tmp_path: Path) -> None:
    text = '[{"name": "orders-7d", "cluster": "c1", "topic": "orders*", "max_age": "7d"},'
    text += ' {"name": "forever", "topic": "audit", "keep_all": true},'
    text += ' {"name": "small", "max_bytes": "2MiB"}]'
    settings = load_settings(env={"KAFKA_ARCHIVE_RETENTION": text})
    assert settings.sources["retention"] == "environment"
    policies = load_policies(settings.retention)
    assert [p.name for p in policies] == ["orders-7d", "forever", "small"]
    assert policies[0].max_age_ms == 7 * 86_400_000
    assert policies[2].max_size == 2 * 1024 * 1024
    # the configuration file takes a YAML list
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("retention:\n  - {name: a, max_age: 12h}\n")
    from_file = load_settings(env={"KAFKA_ARCHIVE_CONFIG": str(cfg)})
    assert load_policies(from_file.retention)[0].max_age_ms == 12 * 3_600_000
    with pytest.raises(SettingsError, match="not valid JSON"):
        load_settings(env={"KAFKA_ARCHIVE_RETENTION": "[{name: a}"})
    bad = [
        ({"name": "x"}, "give max_age, max_bytes"),
        ({"name": "x", "keep_all": True, "max_age": "1d"}, "keep_all cannot"),
        ({"name": "x", "max_age": "soon"}, "not a duration"),
        ({"name": "x", "max_bytes": "lots"}, "not a size"),
        ({"name": "x", "max_age": "1d", "colour": "red"}, "colour"),
    ]
    for entry, message in bad:
        with pytest.raises(RetentionConfigError, match=message):
            load_policies([entry])
    with pytest.raises(RetentionConfigError, match="second policy named"):
        load_policies([{"name": "x", "max_age": "1d"}, {"name": "x", "max_age": "2d"}])
    with pytest.raises(RetentionConfigError, match="must be a list"):
        load_policies({"name": "x"})


def _v(sid: int, base: int, end: int, newest: int, size: int = 100) -> VersionSpan:
    return VersionSpan(sid, base, end, base, end - 1, newest - 5, newest, newest, size)


def test_units_keep_overlapping_versions_together_and_selection_is_oldest_first() -> None:
    # a compaction rewrite (id 3: offsets 0..199) spans the first two segments: the three
    # versions are one unit; a cut between 100 and 199 would leave half of version 3
    units = units_of(0, [_v(1, 0, 100, 1_000), _v(2, 100, 200, 2_000), _v(3, 0, 200, 2_500)])
    units += units_of(0, [_v(4, 200, 300, 3_000), _v(5, 300, 400, 1_500)])
    assert [sorted(v.segment_id for v in u.versions) for u in units] == [[1, 2, 3], [4], [5]]
    by_part = {0: units}
    age = RetentionPolicy(name="age", max_age=1000)
    # everything newer than 2_600 - 1_000 = 1_600 is kept: unit [1,2,3] (newest 2_500) is not
    # old, so nothing after it goes either, although version 5 is old (prefix only)
    assert select_units(age, by_part, now_ms=2_600)[0] == {}
    # cutoff 2_600: [1,2,3] is old, 4 (3_000) is not: 5 stays although it is old
    chosen, _ = select_units(age, by_part, now_ms=3_600)
    assert [sorted(v.segment_id for v in u.versions) for u in chosen[0]] == [[1, 2, 3]]
    chosen, _ = select_units(age, by_part, now_ms=4_100)
    assert [sorted(v.segment_id for v in u.versions) for u in chosen[0]] == [[1, 2, 3], [4], [5]]
    # size: the oldest next unit across partitions goes until the topic fits
    other = units_of(1, [_v(6, 0, 10, 500), _v(7, 10, 20, 2_800)])
    size = RetentionPolicy(name="size", max_bytes=450)
    chosen, _ = select_units(size, {0: units, 1: other}, now_ms=0)
    # 700 bytes: 6 goes first (newest 500), then [1,2,3] (newest 2_500): 300 left <= 450
    assert {
        p: [sorted(v.segment_id for v in u.versions) for u in us] for p, us in chosen.items()
    } == {
        0: [[1, 2, 3]],
        1: [[6]],
    }
    # a lease on offset 150 holds the first unit, and so everything after it
    chosen, held = select_units(age, by_part, now_ms=4_100, leased={0: [(150, 150)]})
    assert chosen == {} and held[0].first_offset == 0
    assert select_units(RetentionPolicy(name="k", keep_all=True), by_part, now_ms=10**12) == (
        {},
        {},
    )


# ---------------------------------------------------------------------------------------------
# prune on the archive


def test_prune_by_age_deletes_whole_segments_oldest_first_and_records_them(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    cat, store, _root = archive
    cutoff = _age_cutoff(cat, "events", 0, 3)
    before = {p: _segments(cat, "events", p) for p in range(2)}
    expected = {p: _expected_prefix(before[p], cutoff) for p in range(2)}
    doomed_keys = {
        p: {
            k
            for s in expected[p]
            for k in [s.manifest_key, *_manifest_files(store, s.manifest_key)]
        }
        for p in range(2)
    }
    kept_keys = {
        k
        for p in range(2)
        for s in before[p][len(expected[p]) :]
        for k in [s.manifest_key, *_manifest_files(store, s.manifest_key)]
    }
    policy = RetentionPolicy(name="events-age", topic="events", max_age=1000)
    report = prune(cat, store, [policy], now_ms=cutoff + 1000)

    keys = _all_keys(store)
    assert len(expected[0]) == 3
    for p in range(2):
        assert not doomed_keys[p] & keys, f"partition {p}: pruned objects left"
        # every side file (.index, .timeindex, snapshot) and the manifest went with the .log
        assert any(k.endswith(".index") for k in doomed_keys[p]) or not expected[p]
    assert kept_keys <= keys
    # one done range per partition that lost something, recorded with its policy
    with cat.session() as s:
        rows = s.execute(select(PrunedRange).order_by(PrunedRange.partition)).scalars().all()
        assert [(r.partition, r.status, r.policy) for r in rows] == [
            (p, "done", "events-age") for p in range(2) if expected[p]
        ]
        for r in rows:
            segs = expected[r.partition]
            assert r.first_offset == segs[0].base_offset
            assert r.last_offset == segs[-1].end_offset - 1
            assert r.segments == len(segs)
            assert r.pruned_at_ms is not None
        # segment rows stay, marked; the chain starts after the pruned range
        for p in range(2):
            after = _segments(cat, "events", p)
            assert len(after) == len(before[p])
            assert [x.status for x in after[: len(expected[p])]] == ["pruned"] * len(expected[p])
            pid = after[0].partition_id
            lo = s.scalar(select(func.min(ChainPiece.lo)).where(ChainPiece.partition_id == pid))
            first_kept = before[p][len(expected[p])]
            assert lo == first_kept.first_offset
    assert report.segments == sum(len(v) for v in expected.values())
    assert_coverage_fresh(cat)
    # other topics had no policy: untouched
    assert all(s.status != "pruned" for p in range(3) for s in _segments(cat, "orders", p))
    # `catalog verify` does not look for the pruned objects (they are gone on purpose)
    from kafka_archive.catalog.verify import verify_catalog

    checked = verify_catalog(cat, store, CLUSTER)
    assert checked.problems == []
    assert checked.checked == sum(
        1 for p in range(2) for x in _segments(cat, "events", p) if x.status != "pruned"
    ) + sum(
        len(_segments(cat, t, p))
        for t, n in (("orders", 3), ("__consumer_offsets", 3))
        for p in range(n)
    )
    # a second prune finds nothing more
    again = prune(cat, store, [policy], now_ms=cutoff + 1000)
    assert again.ranges == [] and again.completed == []


def test_dry_run_lists_what_would_go_and_its_bytes_and_changes_nothing(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    cat, store, _root = archive
    cutoff = _age_cutoff(cat, "events", 0, 2)
    policy = RetentionPolicy(name="p", topic="events", max_age="1s")
    keys_before = _all_keys(store)
    sizes = {o.key: o.size for o in store.list("")}
    dry = prune(cat, store, [policy], now_ms=cutoff + 1000, dry_run=True)
    assert _all_keys(store) == keys_before
    with cat.session() as s:
        assert s.scalar(select(func.count()).select_from(PrunedRange)) == 0
        assert s.scalar(select(func.count()).where(Segment.status == "pruned")) == 0
    assert dry.dry_run and dry.ranges
    real = prune(cat, store, [policy], now_ms=cutoff + 1000)
    gone = keys_before - _all_keys(store)
    assert [r.to_json() | {"status": None, "pruned_at_ms": None} for r in dry.ranges] == [
        r.to_json() | {"status": None, "pruned_at_ms": None} for r in real.ranges
    ]
    # the bytes announced are those of the data objects that went (manifests not counted)
    assert dry.bytes == sum(sizes[k] for k in gone if "/manifests/" not in k)
    assert {k for r in dry.ranges for k in r.objects} == gone


def test_a_crash_mid_prune_is_completed_by_the_next_run(
    archive: tuple[Catalog, ObjectStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cat, store, _root = archive
    cutoff = _age_cutoff(cat, "events", 0, 3)
    policy = RetentionPolicy(name="p", topic="events", max_age="1s")
    planned = prune(cat, store, [policy], now_ms=cutoff + 1000, dry_run=True)
    doomed = {k for r in planned.ranges for k in r.objects}
    real_delete = type(store).delete
    calls = {"n": 0}

    def dying_delete(self: ObjectStore, key: str) -> None:
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("killed mid-prune")
        real_delete(self, key)  # type: ignore[arg-type]

    monkeypatch.setattr(type(store), "delete", dying_delete)
    with pytest.raises(RuntimeError, match="killed mid-prune"):
        prune(cat, store, [policy], now_ms=cutoff + 1000)
    monkeypatch.setattr(type(store), "delete", real_delete)
    # the range was recorded first: planned, its segments no longer served
    with cat.session() as s:
        rows = s.execute(select(PrunedRange)).scalars().all()
        assert [r.status for r in rows] == ["planned"]
        assert s.scalar(select(func.count()).where(Segment.status == "pruned")) == rows[0].segments
    left = doomed & _all_keys(store)
    assert left and len(left) == len(doomed) - 3
    # the next run finishes it: every object gone, the row done, nothing recorded twice
    again = prune(cat, store, [policy], now_ms=cutoff + 1000)
    assert len(again.completed) == 1
    assert not doomed & _all_keys(store)
    with cat.session() as s:
        rows = s.execute(select(PrunedRange).order_by(PrunedRange.partition)).scalars().all()
    assert sorted((r.partition, r.first_offset, r.last_offset) for r in rows) == sorted(
        (r.partition, r.first_offset, r.last_offset) for r in planned.ranges
    )
    assert all(r.status == "done" for r in rows)


_FREEZING_CLI = """
import os, sys, time
from pathlib import Path
import kafka_archive.store as store_package

real_open_store = store_package.open_store


def open_store(uri, **options):
    store = real_open_store(uri, **options)
    inner, count = store.delete, [0]

    def delete(key):
        inner(key)
        count[0] += 1
        if count[0] == int(os.environ["KA_FREEZE_AFTER_DELETES"]):
            Path(os.environ["KA_FREEZE_MARKER"]).write_text(str(os.getpid()))
            while True:  # until SIGKILL
                time.sleep(60)

    store.delete = delete
    return store


store_package.open_store = open_store
from kafka_archive.cli import main

sys.argv = ["kafka-archive", *sys.argv[1:]]
main()
"""


def test_a_prune_killed_mid_deletion_is_completed_by_the_next_run(
    archive: tuple[Catalog, ObjectStore, Path], tmp_path: Path
) -> None:
    """`archive prune` killed with SIGKILL after its 5th deletion; run again: every object of
    the range gone, one row per range, all done."""
    import os
    import signal
    import subprocess
    import sys
    import time

    cat, store, root = archive
    policy = [{"name": "events-size", "topic": "events", "max_bytes": 1}]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "KAFKA_ARCHIVE_DB": str(root / "catalog.db"),
        "KAFKA_ARCHIVE_STORE": store.uri,
        "KAFKA_ARCHIVE_RETENTION": json.dumps(policy),
        "KA_FREEZE_AFTER_DELETES": "5",
        "KA_FREEZE_MARKER": str(tmp_path / "frozen"),
    }
    planned = prune(cat, store, load_policies(policy), dry_run=True)
    doomed = {k for r in planned.ranges for k in r.objects}
    script = tmp_path / "freezing_cli.py"
    script.write_text(_FREEZING_CLI)
    proc = subprocess.Popen(
        [sys.executable, str(script), "archive", "prune", "--json", "--yes"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(1200):  # the marker says it froze right after a deletion
            if (tmp_path / "frozen").exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert (tmp_path / "frozen").exists(), "the prune never reached its 5th deletion"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(doomed & _all_keys(store)) == len(doomed) - 5
    with cat.session() as s:
        assert [r.status for r in s.execute(select(PrunedRange)).scalars()] == ["planned"]
    rerun = _cli(
        ["archive", "prune", "--json", "--yes"], {k: env[k] for k in env if k.startswith("KAFKA_")}
    )
    assert rerun.exit_code == 0, rerun.output
    assert not doomed & _all_keys(store)
    with cat.session() as s:
        rows = s.execute(select(PrunedRange)).scalars().all()
    assert sorted((r.partition, r.first_offset, r.last_offset, r.status) for r in rows) == sorted(
        (r.partition, r.first_offset, r.last_offset, "done") for r in planned.ranges
    )


def test_a_leased_range_is_never_pruned_and_a_stale_lease_does_not_hold(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    cat, store, _root = archive
    cutoff = _age_cutoff(cat, "events", 0, 3)
    segs = _segments(cat, "events", 0)
    policy = RetentionPolicy(name="p", topic="events", max_age="1s")
    leases = ObjectLeases(cat.engine)
    # a queued replay needs offsets inside the second segment of partition 0
    second = segs[1]
    leases.take(
        "replay:r-test",
        [LeaseRange(CLUSTER, "events", 0, second.first_offset + 1, second.first_offset + 2)],
        queued=True,
    )
    report = prune(cat, store, [policy], now_ms=cutoff + 1000)
    p0 = [r for r in report.ranges if r.partition == 0]
    assert [(r.first_offset, r.last_offset) for r in p0] == [
        (segs[0].base_offset, segs[0].end_offset - 1)
    ]
    assert [(h["partition"], h["first_offset"]) for h in report.held] == [(0, second.base_offset)]
    assert store.exists(second.object_key) and store.exists(second.manifest_key)
    # released: the next prune takes the rest
    leases.release("replay:r-test")
    more = prune(cat, store, [policy], now_ms=cutoff + 1000)
    assert [(r.partition, r.first_offset) for r in more.ranges] == [(0, second.base_offset)]
    assert not store.exists(second.object_key)


def test_a_lease_taken_while_the_prune_plans_rolls_its_record_back(
    archive: tuple[Catalog, ObjectStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: a replay leases its range after the prune planned without seeing it. The
    prune's record transaction looks for leases after writing, so it rolls back: no row, no
    segment marked, no object deleted."""
    import kafka_archive.catalog.prune as prune_module
    from kafka_archive.catalog.leases import live_leases

    cat, store, _root = archive
    cutoff = _age_cutoff(cat, "events", 0, 3)
    segs = _segments(cat, "events", 0)

    def blind_planning(s: Any, cluster: str, topic: str, **kw: Any) -> Any:
        return {} if "now_ms" in kw else live_leases(s, cluster, topic, **kw)

    monkeypatch.setattr(prune_module, "live_leases", blind_planning)
    ObjectLeases(cat.engine).take(
        "replay:r-late",
        [LeaseRange(CLUSTER, "events", 0, segs[0].first_offset, segs[0].first_offset)],
    )
    report = prune(
        cat, store, [RetentionPolicy(name="p", topic="events", max_age="1s")], now_ms=cutoff + 1000
    )
    assert [h["partition"] for h in report.held] == [0]
    assert 0 not in {r.partition for r in report.ranges}
    with cat.session() as s:
        assert [r.partition for r in s.execute(select(PrunedRange)).scalars()] == [1]
    assert all(x.status != "pruned" for x in _segments(cat, "events", 0))
    assert all(store.exists(x.object_key) and store.exists(x.manifest_key) for x in segs)


def test_a_running_lease_of_a_dead_process_does_not_hold(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    import subprocess
    import sys

    from kafka_archive.catalog.models import ObjectLease
    from sqlalchemy import update

    cat, store, _root = archive
    cutoff = _age_cutoff(cat, "events", 0, 3)
    segs = _segments(cat, "events", 0)
    ObjectLeases(cat.engine).take(
        "replay:r-dead",
        [LeaseRange(CLUSTER, "events", 0, segs[0].first_offset, segs[2].last_offset)],
    )
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    with cat.engine.begin() as conn:  # as if the replay had been killed -9
        conn.execute(update(ObjectLease).values(pid=int(dead.stdout)))
    report = prune(
        cat, store, [RetentionPolicy(name="p", topic="events", max_age="1s")], now_ms=cutoff + 1000
    )
    assert report.held == []
    assert any(r.partition == 0 and r.first_offset == segs[0].base_offset for r in report.ranges)


def test_size_policy_prunes_the_oldest_until_the_topic_fits(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    cat, store, _root = archive
    segs = [s for p in range(3) for s in _segments(cat, "orders", p)]
    total = sum(s.size_bytes for s in segs)
    limit = total // 2
    report = prune(cat, store, [RetentionPolicy(name="half", topic="orders", max_bytes=limit)])
    remaining = [s for p in range(3) for s in _segments(cat, "orders", p) if s.status != "pruned"]
    pruned = [s for p in range(3) for s in _segments(cat, "orders", p) if s.status == "pruned"]
    assert sum(s.size_bytes for s in remaining) <= limit
    # oldest first: one segment fewer pruned would not fit, and nothing kept is older than
    # the newest pruned segment of its own partition (prefix per partition)
    newest_pruned = max(pruned, key=lambda s: s.max_timestamp)
    assert sum(s.size_bytes for s in remaining) + newest_pruned.size_bytes > limit
    for p in range(3):
        statuses = [s.status == "pruned" for s in _segments(cat, "orders", p)]
        assert statuses == sorted(statuses, reverse=True)
    assert report.segments == len(pruned)


def test_the_archiver_does_not_archive_pruned_offsets_again(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    """The broker still has the segments a prune removed: the next archive run skips them
    (``pruned``, thanks to the partition's watermark) instead of uploading them again."""
    from kafka_archive.archive import run_archive
    from kafka_archive.archive.pruned import read_watermark
    from kafka_archive.catalog.build import InProcessRunner, build_catalog

    cat, store, root = archive
    log_dir = root / "logs" / "broker-1" / "kafka-logs"
    assert (log_dir / "events-0").is_dir()
    cutoff = _age_cutoff(cat, "events", 0, 3)
    report = prune(
        cat, store, [RetentionPolicy(name="ev", topic="events", max_age="1s")], now_ms=cutoff + 1000
    )
    p0 = next(r for r in report.ranges if r.partition == 0)
    mark = read_watermark(store, CLUSTER, "events", 0)
    assert mark is not None and (mark.pruned_before, mark.policy) == (p0.last_offset + 1, "ev")
    again = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    assert again.segments_archived == 0
    skipped = [i for i in again.skipped_items if i.reason == "pruned"]
    assert len(skipped) == report.segments
    assert build_catalog(cat, store.uri, runner=InProcessRunner()).segments_added == 0


def test_versions_the_catalog_does_not_know_go_with_the_range_and_never_come_back(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    """A version archived but not cataloged yet, inside the pruned range, is deleted with it;
    if it is archived again later, the build leaves it out (its offsets were pruned)."""
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.models import HistogramBucket, TimeIndexEntry
    from sqlalchemy import delete

    cat, store, _root = archive
    cutoff = _age_cutoff(cat, "events", 0, 3)
    segs = _segments(cat, "events", 0)
    late = segs[1]
    saved = {
        k: store.get_bytes(k)
        for k in [late.manifest_key, *_manifest_files(store, late.manifest_key)]
    }
    with cat.session() as s, s.begin():  # as if it had been archived after the last build
        for tbl in (TimeIndexEntry, HistogramBucket, ChainPiece):
            s.execute(delete(tbl).where(tbl.segment_id == late.id))
        s.execute(delete(Segment).where(Segment.id == late.id))
    report = prune(
        cat, store, [RetentionPolicy(name="ev", topic="events", max_age="1s")], now_ms=cutoff + 1000
    )
    p0 = next(r for r in report.ranges if r.partition == 0)
    assert p0.first_offset == segs[0].base_offset and p0.last_offset >= late.end_offset - 1
    assert not set(saved) & _all_keys(store)
    for key, data in saved.items():  # archived once more (another replica, a late upload)
        store.put_bytes(key, data)
    built = build_catalog(cat, store.uri, runner=InProcessRunner())
    assert (built.segments_added, built.pruned_skipped) == (0, 1)


def test_a_version_cataloged_between_plan_and_record_defers_the_partition(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    """A build that catalogs a version inside the planned range after the prune planned it:
    recording that partition is left to the next run (which plans it with the newcomer),
    rather than leave the newcomer serving offsets recorded as pruned."""
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.models import HistogramBucket, TimeIndexEntry
    from kafka_archive.catalog.prune import _record, plan_prune
    from sqlalchemy import delete

    cat, store, _root = archive
    cutoff = _age_cutoff(cat, "events", 0, 3)
    late = _segments(cat, "events", 0)[1]
    with cat.session() as s, s.begin():  # not cataloged yet when the prune plans
        for tbl in (TimeIndexEntry, HistogramBucket, ChainPiece):
            s.execute(delete(tbl).where(tbl.segment_id == late.id))
        s.execute(delete(Segment).where(Segment.id == late.id))
    policy = [RetentionPolicy(name="ev", topic="events", max_age="1s")]
    plans, _held, _kept = plan_prune(cat, store, policy, now_ms=cutoff + 1000)
    p0 = next(p for p in plans if p.partition == 0)
    assert build_catalog(cat, store.uri, runner=InProcessRunner()).segments_added == 1
    assert _record(cat, p0, cutoff) is None
    with cat.session() as s:
        assert s.execute(select(PrunedRange)).first() is None
    report = prune(cat, store, policy, now_ms=cutoff + 1000)
    again = next(r for r in report.ranges if r.partition == 0)
    assert (again.first_offset, again.last_offset) == (p0.first_offset, p0.last_offset)
    assert all(x.status == "pruned" for x in _segments(cat, "events", 0)[:3])


# ---------------------------------------------------------------------------------------------
# what the catalog says afterwards


def _pruned_orders(cat: Catalog, store: ObjectStore) -> tuple[int, list[Segment]]:
    cutoff = _age_cutoff(cat, "events", 0, 3)
    prune(
        cat,
        store,
        [RetentionPolicy(name="events-age", topic="events", max_age="1s")],
        now_ms=cutoff + 1000,
    )
    return cutoff, _segments(cat, "events", 0)


def test_gaps_report_pruned_ranges_as_info_with_policy_and_time(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.catalog.gaps import gaps

    cat, store, _root = archive
    _cutoff, segs = _pruned_orders(cat, store)
    found = [g for g in gaps(cat, CLUSTER, "events") if g.partition == 0]
    pruned = [g for g in found if g.kind == "pruned"]
    assert len(pruned) == 1
    g = pruned[0]
    assert g.severity == "info"
    assert (g.start_offset, g.end_offset) == (segs[0].base_offset, segs[2].end_offset - 1)
    assert g.detail["policy"] == "events-age"
    assert g.detail["reason"].startswith("pruned by policy events-age at ")
    assert not [x for x in found if x.kind == "missing"]


def test_a_hole_the_prune_leaves_before_the_archive_start_is_no_longer_missing(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    """The prune rewrites the partition's coverage rows: a hole right after the pruned
    segments is before the first archived offset now, and ``gaps`` stops reporting it."""
    from kafka_archive.catalog.coverage import refresh_coverage
    from kafka_archive.catalog.gaps import gaps

    cat, store, _root = archive
    segs = _segments(cat, "events", 0)
    with cat.session() as s, s.begin():  # the 4th segment failed its checks (as a build does)
        s.execute(update(Segment).where(Segment.id == segs[3].id).values(status="corrupt"))
        refresh_coverage(s, [segs[3].partition_id])
    hole = (segs[3].base_offset, segs[4].base_offset - 1)

    def kinds() -> list[tuple[str, int, int]]:
        found = gaps(cat, CLUSTER, "events")
        return [(g.kind, g.start_offset, g.end_offset) for g in found if g.partition == 0]

    assert ("missing", *hole) in kinds()
    _pruned_orders(cat, store)  # the three oldest segments go
    after = kinds()
    assert [k for k in after if k[0] == "missing"] == []
    assert ("corrupt", hole[0], hole[0]) in after
    assert_coverage_fresh(cat)


def test_offsets_before_the_retained_range_say_the_data_was_pruned(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.catalog.time_answers import offsets_at

    cat, store, _root = archive
    _cutoff, segs = _pruned_orders(cat, store)
    first_kept = segs[3]
    [answer] = offsets_at(cat, store, CLUSTER, "events", segs[0].first_timestamp, [0])
    assert answer.clamped == "before_start"
    assert answer.offset == first_kept.first_offset
    assert "pruned by policy events-age" in (answer.note or "")
    assert answer.to_json()["pruned"]["policy"] == "events-age"
    # inside the retained range: no note
    [inside] = offsets_at(cat, store, CLUSTER, "events", first_kept.max_timestamp, [0])
    assert inside.note is None


def test_locate_says_an_offset_was_pruned(archive: tuple[Catalog, ObjectStore, Path]) -> None:
    from kafka_archive.catalog.queries import CatalogQueryError, locate

    cat, store, _root = archive
    _cutoff, segs = _pruned_orders(cat, store)
    with pytest.raises(CatalogQueryError, match="was pruned from the archive by policy events-age"):
        locate(cat, store, CLUSTER, "events", 0, segs[1].first_offset)
    kept = locate(cat, store, CLUSTER, "events", 0, segs[3].first_offset)
    assert kept.exact and kept.found_offset == segs[3].first_offset


def test_replay_plans_refuse_pruned_ranges_with_the_reason(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
    from kafka_archive.replay.planning.completeness import ReplayGapsError
    from kafka_archive.replay.planning.plan import (
        ReplaySpec,
        TargetSpec,
        build_plan,
        parse_position,
    )
    from kafka_archive.replay.runner import require_complete

    cat, store, _root = archive
    _cutoff, segs = _pruned_orders(cat, store)
    source = CatalogPlanSource(cat, store)

    def plan(frm: str, *, allow_gaps: bool = False) -> Any:
        spec = ReplaySpec(
            cluster=CLUSTER,
            topic="events",
            partitions=[0],
            **{"from": parse_position(frm)},
            target=TargetSpec(bootstrap_servers="localhost:1"),
            allow_gaps=allow_gaps,
        )
        return build_plan(spec, source)

    # from a moment inside the pruned range: the plan names the pruned hole
    p = plan(str(segs[1].first_timestamp))
    kinds = [(h.kind, h.first_offset) for _part, h in p.holes]
    assert kinds == [("pruned", segs[0].base_offset)]
    with pytest.raises(ReplayGapsError, match="pruned by policy events-age") as refused:
        require_complete(p)
    assert "retention policy deleted" in (refused.value.hint or "")
    # an explicit offset inside it: pruned, not "not archived"
    p = plan(f"offset:{segs[1].first_offset}")
    assert [h.kind for _part, h in p.holes] == ["pruned"]
    # --allow-gaps replays the retained data and names the pruned range
    p = plan(f"offset:{segs[1].first_offset}", allow_gaps=True)
    require_complete(p)
    assert p.partitions[0].start_offset == segs[3].first_offset
    # from earliest: the retained start, nothing refused
    assert plan("earliest").holes == []


def test_a_replay_run_leases_its_ranges_and_refuses_data_pruned_after_planning(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.catalog.models import ObjectLease
    from kafka_archive.replay.planning.completeness import ReplayGapsError
    from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, parse_position
    from kafka_archive.services.replay import ReplayService, lease_ranges

    cat, store, _root = archive
    svc = ReplayService(load_settings(env={}), catalog=cat, store=store)
    spec = ReplaySpec(
        cluster=CLUSTER,
        topic="events",
        partitions=[0],
        **{"from": parse_position("earliest")},
        target=TargetSpec(bootstrap_servers="localhost:1"),
    )
    plan = svc.plan(spec, register=True)  # queued, as the DAG does
    with cat.session() as s:
        leased = s.execute(select(ObjectLease)).scalars().all()
    assert [(x.holder, x.partition, x.first_offset, x.pid) for x in leased] == [
        (f"replay:{plan.replay_id}", 0, plan.partitions[0].start_offset, 0)
    ]
    cutoff = _age_cutoff(cat, "events", 0, 3)
    policy = RetentionPolicy(name="events-age", topic="events", max_age="1s")
    held = prune(cat, store, [policy], now_ms=cutoff + 1000)
    assert 0 in {h["partition"] for h in held.held}  # the queued replay's data stays
    # the lease expires (a queued replay that never ran): the data goes, and the stored plan
    # is refused when it finally runs, naming the policy
    ObjectLeases(cat.engine).release(f"replay:{plan.replay_id}")
    prune(cat, store, [policy], now_ms=cutoff + 1000)
    with pytest.raises(ReplayGapsError, match="pruned by policy events-age"):
        svc.run(plan)
    with cat.session() as s:  # the run's lease is released when it ends
        assert s.scalar(select(func.count()).select_from(ObjectLease)) == 0
    assert lease_ranges(plan)[0].last_offset >= plan.partitions[0].end_offset - 1


def test_the_replay_dag_plan_task_leases_a_queued_replay_but_not_a_dry_run(
    archive: tuple[Catalog, ObjectStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_archive.airflow.replay_tasks import plan_task
    from kafka_archive.catalog.models import ObjectLease

    cat, store, root = archive
    for name in ("KAFKA_ARCHIVE_DB", "KAFKA_ARCHIVE_STORE", "KAFKA_ARCHIVE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    variables = {"kafka_archive_db": str(root / "catalog.db"), "kafka_archive_store": store.uri}
    params = {"cluster": CLUSTER, "topic": "events", "from": "earliest", "target": "localhost:1"}

    def holders() -> list[str]:
        with cat.session() as s:
            return sorted({x.holder for x in s.execute(select(ObjectLease)).scalars()})

    dry = plan_task({**params, "dry_run": True}, variable_getter=variables.get)
    assert holders() == []
    queued = plan_task({**params, "partitions": [1]}, variable_getter=variables.get)
    assert holders() == [f"replay:{queued['replay_id']}"]
    assert dry["replay_id"] != queued["replay_id"]


def test_group_offsets_keep_answering_after_consumer_offsets_segments_are_pruned(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.catalog.queries import group_offsets
    from support.catalog_data import GROUPS

    cat, store, _root = archive
    before = {g: [x.to_json() for x in group_offsets(cat, CLUSTER, g)] for g in GROUPS}
    assert any(before.values())
    report = prune(
        cat, store, [RetentionPolicy(name="co", topic="__consumer_offsets", max_bytes=1)]
    )
    assert report.segments > 0
    after = {g: [x.to_json() for x in group_offsets(cat, CLUSTER, g)] for g in GROUPS}
    assert after == before


def test_a_catalog_build_after_a_prune_brings_nothing_back(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    from kafka_archive.catalog.build import InProcessRunner, build_catalog

    cat, store, _root = archive
    _pruned_orders(cat, store)
    with cat.session() as s:
        chain = s.execute(select(ChainPiece.partition_id, ChainPiece.lo, ChainPiece.hi)).all()
    report = build_catalog(cat, store.uri, runner=InProcessRunner())
    assert report.segments_added == 0
    with cat.session() as s:
        assert (
            s.execute(select(ChainPiece.partition_id, ChainPiece.lo, ChainPiece.hi)).all() == chain
        )


# ---------------------------------------------------------------------------------------------
# the command line and the DAG task


def _cli(args: list[str], env: dict[str, str]) -> Any:
    from kafka_archive.cli import _register_groups, app

    _register_groups()
    return CliRunner().invoke(app, args, env=env)


def test_cli_prune_dry_run_then_prune_then_gaps(
    archive: tuple[Catalog, ObjectStore, Path],
) -> None:
    cat, store, root = archive
    segs = _segments(cat, "events", 0)
    policy = [{"name": "events-size", "topic": "events", "max_bytes": 1}]
    env = {
        "KAFKA_ARCHIVE_DB": str(root / "catalog.db"),
        "KAFKA_ARCHIVE_STORE": store.uri,
        "KAFKA_ARCHIVE_RETENTION": json.dumps(policy),
    }
    dry = _cli(["archive", "prune", "--dry-run", "--json"], env)
    assert dry.exit_code == 0, dry.output
    lines = [json.loads(x) for x in dry.output.splitlines()]
    would = [x for x in lines if x["kind"] == "would_prune"]
    assert {x["partition"] for x in would} == {0, 1}
    assert lines[-1]["kind"] == "prune_summary" and lines[-1]["bytes"] > 0
    assert store.exists(segs[0].object_key)
    done = _cli(["archive", "prune", "--topic", "events", "--json", "--yes"], env)
    assert done.exit_code == 0, done.output
    pruned = [json.loads(x) for x in done.output.splitlines() if '"pruned"' in x]
    assert [(x["partition"], x["segments"]) for x in pruned] == [
        (x["partition"], x["segments"]) for x in would
    ]
    assert not store.exists(segs[0].object_key)
    gaps = _cli(["catalog", "gaps", "--cluster", CLUSTER, "--topic", "events", "--json"], env)
    assert gaps.exit_code == 0, gaps.output
    rows = [json.loads(x) for x in gaps.output.splitlines()]
    assert {(r["kind"], r["severity"], r["policy"]) for r in rows} == {
        ("pruned", "info", "events-size")
    }
    # text output, and bad policies: a clean error, no traceback
    text = _cli(["archive", "prune"], env)
    assert text.exit_code == 0 and "nothing to prune" in text.output
    bad = _cli(["archive", "prune"], {**env, "KAFKA_ARCHIVE_RETENTION": '[{"name": "x"}]'})
    assert bad.exit_code == 1 and "give max_age" in bad.output and "Traceback" not in bad.output
    # the archive command itself still takes its own options
    usage = _cli(["archive", "--cluster", "c"], env)
    assert usage.exit_code == 2


def test_the_dag_task_prunes_with_the_settings(archive: tuple[Catalog, ObjectStore, Path]) -> None:
    from kafka_archive.airflow.prune_tasks import prune_in_task

    cat, store, root = archive
    variables = {
        "kafka_archive_db": str(root / "catalog.db"),
        "kafka_archive_store": store.uri,
        "kafka_archive_retention": json.dumps([{"name": "all", "topic": "events", "max_bytes": 1}]),
    }
    dry = prune_in_task(variables.get, dry_run=True, env={})
    assert dry["segments"] > 0 and dry["dry_run"]
    out = prune_in_task(variables.get, dry_run=False, env={}, yes=True)
    assert out["segments"] == dry["segments"] and out["bytes"] == dry["bytes"]
    assert all(s.status == "pruned" for s in _segments(cat, "events", 0))


# ---------------------------------------------------------------------------------------------
# S3


def test_prune_on_an_s3_store(
    tmp_path: Path, make_s3_store: Callable[..., Any], moto_s3: Any
) -> None:
    from kafka_archive.archive import run_archive
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from support.catalog_data import write_history

    hist = write_history(tmp_path / "logs", appends=30)
    store = make_s3_store()
    run_archive(
        cluster=CLUSTER, broker_id=1, log_dirs=[str(d) for d in hist.broker.log_dirs], store=store
    )
    with open_catalog(str(tmp_path / "cat.db"), create=True) as cat:
        build_catalog(
            cat,
            store.uri,
            runner=InProcessRunner(),
            store_options={"endpoint_url": moto_s3.endpoint_url},
        )
        keys_before = _all_keys(store)
        policy = RetentionPolicy(name="s3-size", topic="orders", max_bytes=1)
        report = prune(cat, store, [policy])
        gone = keys_before - _all_keys(store)
        assert gone == {k for r in report.ranges for k in r.objects}
        assert {r.partition for r in report.ranges} == {0, 1, 2}
        # nothing of the topic is left but each partition's retention watermark
        assert sorted(k for k in _all_keys(store) if "/orders/" in k) == [
            f"{CLUSTER}/orders/{p}/manifests/pruned.json" for p in range(3)
        ]
        with cat.session() as s:
            assert {r.status for r in s.execute(select(PrunedRange)).scalars()} == {"done"}


# ---------------------------------------------------------------------------------------------
# PostgreSQL


def test_prune_on_a_postgresql_catalog(
    archive: tuple[Catalog, ObjectStore, Path], pg_url: str
) -> None:
    """The same prune on PostgreSQL (the record transaction takes the build's advisory lock and
    locks ``object_leases`` there): ranges recorded and done, leases honoured, gaps say so."""
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.gaps import gaps

    sqlite_cat, store, _root = archive
    cutoff = _age_cutoff(sqlite_cat, "events", 0, 3)
    expected = prune(
        sqlite_cat,
        store,
        [RetentionPolicy(name="p", topic="events", max_age="1s")],
        now_ms=cutoff + 1000,
        dry_run=True,
    )
    with open_catalog(pg_url, create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
        segs = _segments(cat, "events", 1)
        ObjectLeases(cat.engine).take(
            "export:e-1",
            [LeaseRange(CLUSTER, "events", 1, segs[0].first_offset, segs[0].first_offset)],
        )
        report = prune(
            cat,
            store,
            [RetentionPolicy(name="p", topic="events", max_age="1s")],
            now_ms=cutoff + 1000,
        )
        assert [(r.partition, r.first_offset, r.last_offset) for r in report.ranges] == [
            (r.partition, r.first_offset, r.last_offset)
            for r in expected.ranges
            if r.partition == 0
        ]
        assert [h["partition"] for h in report.held] == [1]
        assert [
            (g.partition, g.detail["status"])
            for g in gaps(cat, CLUSTER, "events")
            if g.kind == "pruned"
        ] == [(0, "done")]
