"""Catalog integrity (issue 10): identity checks, remembered problems, stale builds, verify.

Every test works on a private copy of one small archive (3 ``orders`` partitions, 2 ``events``
partitions, ``__consumer_offsets``) and damages it the way the issue's reports did: a manifest
of one partition pointing at another partition's ``.log``, a manifest claiming offsets or
leader epochs the bytes do not hold, a manifest that is not JSON, a flipped byte, a deleted
object, a build killed without a trace.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.archive import run_archive
from kafka_archive.archive.layout import manifest_key
from kafka_archive.catalog.build import build_catalog, refs_from_manifests
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.models import BuildRun
from kafka_archive.catalog.queries import gaps, topics
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.catalog.verify import verify_catalog
from kafka_archive.store import open_store
from sqlalchemy import text
from support.catalog_data import archived_history

CLUSTER = "c1"


@pytest.fixture(scope="module")
def archive_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("problems")
    _hist, _store, archived = archived_history(root, cluster=CLUSTER, appends=60)
    assert archived > 5
    return root / "store"


@pytest.fixture
def store_dir(archive_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(archive_dir, root)
    return root


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    cat = open_catalog(tmp_path / "catalog.db", create=True)
    yield cat
    cat.close()


def _refs(store_dir: Path, topic: str, partition: int) -> list[SegmentRef]:
    refs = [
        r
        for r in refs_from_manifests(open_store(str(store_dir)), CLUSTER)
        if (r.topic, r.partition) == (topic, partition) and r.record_count
    ]
    assert refs
    return refs


def _manifest(store_dir: Path, ref: SegmentRef) -> dict[str, Any]:
    return dict(json.loads((store_dir / ref.manifest_key).read_text()))


def _put(store_dir: Path, key: str, data: bytes) -> None:
    (store_dir / key).parent.mkdir(parents=True, exist_ok=True)
    (store_dir / key).write_bytes(data)


def _segment_rows(cat: Catalog, manifest_key: str) -> int:
    with cat.engine.connect() as conn:
        return int(
            conn.execute(
                text("SELECT count(*) FROM segments WHERE manifest_key = :k"), {"k": manifest_key}
            ).scalar_one()
        )


def _problems(cat: Catalog) -> list[dict[str, Any]]:
    with cat.engine.connect() as conn:
        rows = conn.execute(text("SELECT * FROM integrity_problems ORDER BY id")).mappings()
        return [dict(r) for r in rows]


def _holdings(cat: Catalog, topic: str, partition: int) -> int:
    (h,) = [h for h in topics(cat, CLUSTER) if (h.topic, h.partition) == (topic, partition)]
    return h.problems


# ---------------------------------------------------------------------------------------------
# identity


def test_manifest_pointing_at_another_partitions_object_is_misfiled(
    store_dir: Path, catalog: Catalog
) -> None:
    """The reported case: a manifest of partition 1 whose .log is partition 2's object, with
    that object's own checksums. It is refused and recorded; everything else is cataloged."""
    victim = _refs(store_dir, "orders", 2)[0]
    m = _manifest(store_dir, victim)
    m["partition"] = 1
    bogus = manifest_key(CLUSTER, "orders", 1, victim.base_offset, m["segment_sha256"])
    _put(store_dir, bogus, json.dumps(m).encode())

    report = build_catalog(catalog, str(store_dir), cluster=CLUSTER)

    assert _segment_rows(catalog, bogus) == 0  # never indexed, never served
    assert _segment_rows(catalog, victim.manifest_key) == 1  # its own manifest is fine
    assert report.segments_added == report.manifests - 1
    (problem,) = report.problems
    assert problem["kind"] == "misfiled" and problem["manifest_key"] == bogus
    assert "belongs to c1/orders/2" in problem["reason"]
    (row,) = _problems(catalog)
    assert (row["kind"], row["subject_key"], row["object_key"]) == (
        "misfiled",
        bogus,
        victim.object_key,
    )
    (gap,) = [g for g in gaps(catalog, CLUSTER, "orders") if g.kind == "misfiled"]
    assert (gap.partition, gap.start_offset) == (1, victim.base_offset)
    assert gap.detail["object"] == victim.object_key and gap.detail["manifest"] == bogus
    # partition 1's own segments hold those offsets (or not): "served" says which
    own = [r for r in _refs(store_dir, "orders", 1) if r.manifest_key != bogus]
    held = {o for r in own for o in range(r.base_offset, r.end_offset)}
    assert gap.detail["served"] == all(
        o in held for o in range(gap.start_offset, gap.end_offset + 1)
    )
    assert _holdings(catalog, "orders", 1) == 1
    # a re-run finds it again (still refused) and keeps one row for it
    again = build_catalog(catalog, str(store_dir), cluster=CLUSTER)
    assert len(again.problems) == 1 and len(_problems(catalog)) == 1


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("end_offset", "base+1", "outside the manifest's range"),
        ("batch_leader_epochs", [77], "leader epoch"),
        ("record_count", 1, "record count"),
    ],
)
def test_bytes_that_contradict_their_manifest_are_misfiled(
    store_dir: Path, catalog: Catalog, field: str, value: Any, reason: str
) -> None:
    victim = max(_refs(store_dir, "orders", 0), key=lambda r: r.record_count)
    m = _manifest(store_dir, victim)
    m[field] = victim.base_offset + 1 if value == "base+1" else value
    _put(store_dir, victim.manifest_key, json.dumps(m).encode())

    report = build_catalog(catalog, str(store_dir), cluster=CLUSTER)

    assert _segment_rows(catalog, victim.manifest_key) == 0
    (problem,) = report.problems
    assert problem["kind"] == "misfiled" and reason in problem["reason"]
    assert _holdings(catalog, "orders", 0) == 1


# ---------------------------------------------------------------------------------------------
# remembered problems


def test_a_manifest_that_is_not_json_does_not_stop_the_build(
    store_dir: Path, catalog: Catalog
) -> None:
    good = _refs(store_dir, "events", 1)[0]
    bad = manifest_key(CLUSTER, "events", 1, 999_999, "ab" * 32)
    _put(store_dir, bad, b"{ this is not json")

    report = build_catalog(catalog, str(store_dir), cluster=CLUSTER)

    assert report.segments_added == report.manifests - 1 > 0
    (problem,) = report.problems
    assert problem["kind"] == "unreadable-manifest" and "not JSON" in problem["reason"]
    (gap,) = [g for g in gaps(catalog, CLUSTER, "events") if g.kind == "unreadable-manifest"]
    assert (gap.partition, gap.start_offset, gap.detail["manifest"]) == (1, 999_999, bad)
    assert _holdings(catalog, "events", 1) == 1
    # a manifest that fails its schema is recorded too; once it parses again it is cataloged
    # and its problem deleted
    data = (store_dir / good.manifest_key).read_bytes()
    _put(store_dir, good.manifest_key, json.dumps({**json.loads(data), "files": 3}).encode())
    with open_catalog(store_dir.parent / "second.db", create=True) as cat:
        build_catalog(cat, str(store_dir), cluster=CLUSTER)
        assert {p["subject_key"] for p in _problems(cat)} == {bad, good.manifest_key}
        _put(store_dir, good.manifest_key, data)
        build_catalog(cat, str(store_dir), cluster=CLUSTER)
        assert {p["subject_key"] for p in _problems(cat)} == {bad}
        assert _segment_rows(cat, good.manifest_key) == 1


def test_corrupt_and_missing_objects_are_recorded_with_position(
    store_dir: Path, catalog: Catalog
) -> None:
    corrupt, missing = _refs(store_dir, "orders", 1)[1:3]  # not the first: a hole is after it
    path = store_dir / corrupt.object_key
    original = path.read_bytes()
    flipped = bytearray(original)
    flipped[7] ^= 1  # low byte of the first batch's base offset: covered by no batch CRC
    path.write_bytes(bytes(flipped))
    (store_dir / missing.object_key).unlink()

    report = build_catalog(catalog, str(store_dir), cluster=CLUSTER)

    by_kind = {p["kind"]: p for p in report.problems}
    assert set(by_kind) == {"corrupt", "unreadable"}
    assert by_kind["corrupt"]["position"] == 7
    assert by_kind["corrupt"]["object_key"] == corrupt.object_key
    assert by_kind["unreadable"]["object_key"] == missing.object_key
    shown = {g.kind: g for g in gaps(catalog, CLUSTER, "orders") if g.partition == 1}
    assert shown["corrupt"].detail["position"] == 7
    assert shown["corrupt"].start_offset == corrupt.base_offset
    assert shown["corrupt"].detail["served"] is False  # nothing else holds those offsets
    assert shown["unreadable"].detail["object"] == missing.object_key
    assert "missing" in shown  # the hole itself
    # topics counts what gaps lists (issue 11): corrupt, unreadable and the hole, all errors
    assert _holdings(catalog, "orders", 1) == 3 == len(shown)
    # repaired: cataloged, and the problem is gone
    path.write_bytes(original)
    build_catalog(catalog, str(store_dir), cluster=CLUSTER)
    assert [p["kind"] for p in _problems(catalog)] == ["unreadable"]


# ---------------------------------------------------------------------------------------------
# stale builds


def test_killed_builds_are_marked_stale_by_the_next(store_dir: Path, catalog: Catalog) -> None:
    import socket
    import time

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    now = int(time.time() * 1000)
    host = socket.gethostname()
    runs = {
        "dead_pid": BuildRun(owner_host=host, owner_pid=dead.pid, heartbeat_ms=now),
        "silent": BuildRun(owner_host="elsewhere", owner_pid=1, heartbeat_ms=now - 3_600_000),
        "legacy": BuildRun(started_at_ms=now - 3_600_000),
        "alive": BuildRun(owner_host="elsewhere", owner_pid=1, heartbeat_ms=now),
    }
    with catalog.session() as s, s.begin():
        for run in runs.values():
            run.store_uri, run.status, run.summary = str(store_dir), "running", "{}"
            run.started_at_ms = run.started_at_ms or now
            s.add(run)
        s.flush()
        ids = {name: run.id for name, run in runs.items()}

    report = build_catalog(catalog, str(store_dir), cluster=CLUSTER)

    assert sorted(report.stale_runs) == sorted(ids[n] for n in ("dead_pid", "silent", "legacy"))
    with catalog.engine.connect() as conn:
        status = dict(conn.execute(text("SELECT id, status FROM build_runs")).all())
    assert [status[ids[n]] for n in ("dead_pid", "silent", "legacy", "alive")] == [
        "stale",
        "stale",
        "stale",
        "running",
    ]
    assert status[report.run_id] == "ok"


# ---------------------------------------------------------------------------------------------
# verify


def test_verify_finds_what_changed_in_the_store(store_dir: Path, catalog: Catalog) -> None:
    report = build_catalog(catalog, str(store_dir), cluster=CLUSTER)
    assert report.problems == [] and report.failed == []
    store = open_store(str(store_dir))
    clean = verify_catalog(catalog, store, CLUSTER, deep=True)
    assert clean.problems == [] and clean.checked == report.segments_added

    gone, rotten = _refs(store_dir, "orders", 2)[:2]
    gone_bytes = (store_dir / gone.object_key).read_bytes()
    (store_dir / gone.object_key).unlink()
    path = store_dir / rotten.object_key
    original = path.read_bytes()
    data = bytearray(original)
    data[len(data) // 2] ^= 0x20
    path.write_bytes(bytes(data))

    shallow = verify_catalog(catalog, store, CLUSTER)
    assert [(p.kind, p.object_key) for p in shallow.problems] == [
        ("missing-object", gone.object_key)
    ]
    deep = verify_catalog(catalog, store, CLUSTER, deep=True)
    kinds = {p.kind: p for p in deep.problems}
    assert set(kinds) == {"missing-object", "corrupt"}
    assert kinds["corrupt"].object_key == rotten.object_key
    assert kinds["corrupt"].position is not None
    # recorded: gaps and topics show them; a shallow run does not clear what deep found
    verify_catalog(catalog, store, CLUSTER)
    shown = {g.kind for g in gaps(catalog, CLUSTER, "orders") if g.partition == 2}
    assert {"missing-object", "corrupt"} <= shown
    assert _holdings(catalog, "orders", 2) == 2
    # repaired: a deep run clears them
    (store_dir / gone.object_key).write_bytes(gone_bytes)
    path.write_bytes(original)
    assert verify_catalog(catalog, store, CLUSTER, deep=True).problems == []
    assert _problems(catalog) == []


# ---------------------------------------------------------------------------------------------
# the Airflow task and the Spark job say so too


def test_airflow_build_task_fails_on_refused_manifests(store_dir: Path, tmp_path: Path) -> None:
    from kafka_archive.airflow.catalog_tasks import CatalogJobError, _raise_for

    bad = manifest_key(CLUSTER, "orders", 0, 5, "ef" * 32)
    _put(store_dir, bad, b"[]")
    with open_catalog(tmp_path / "dag.db", create=True) as cat:
        report = build_catalog(cat, str(store_dir), cluster=CLUSTER).to_json()
    assert report["failed"] == 0 and report["problems"] == 1
    with pytest.raises(CatalogJobError, match="1 manifest\\(s\\) refused") as err:
        _raise_for(report, "the build")
    assert bad in str(err.value)
    _raise_for({**report, "problems": 0, "problem_list": []}, "the build")  # clean: no error


def test_spark_job_refuses_a_bogus_master(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "spark_jobs" / "build_catalog.py"
    spec = importlib.util.spec_from_file_location("build_catalog_job", path)
    assert spec is not None and spec.loader is not None
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    code = job.main(["--store", "/x", "--db", "/y.db", "--spark-master", "locl[2]"])
    assert code == 2 and "not a Spark master URL" in capsys.readouterr().err


def test_a_working_build_renews_its_heartbeat(
    store_dir: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_archive.catalog import problems

    monkeypatch.setattr(problems, "HEARTBEAT_MS", 0)  # beat on every result
    seen: list[int] = []

    def progress(phase: str, done: int, total: int, nbytes: int) -> None:
        with catalog.engine.connect() as conn:
            row = conn.execute(
                text("SELECT status, heartbeat_ms, owner_pid FROM build_runs ORDER BY id DESC")
            ).first()
        assert row is not None and row.status == "running" and row.owner_pid == os.getpid()
        seen.append(int(row.heartbeat_ms))

    build_catalog(catalog, str(store_dir), cluster=CLUSTER, progress=progress)
    assert len(seen) > 3 and seen[-1] > seen[0]


def test_legacy_message_formats_are_not_misfiled(tmp_path: Path) -> None:
    """Magic 0/1 batches carry no partition leader epoch (-1) and their manifests record none:
    the identity check must not call them misfiled (the demo cluster's legacy-v0/v1 topics)."""
    from kafka_archive_dev.writer.demo import write_demo_cluster

    demo = write_demo_cluster(tmp_path / "cluster", brokers=1)
    store = open_store(str(tmp_path / "store"))
    for broker, dirs in demo.broker_dirs.items():
        run_archive(cluster="c", broker_id=broker, log_dirs=[str(d) for d in dirs], store=store)
    cat = open_catalog(tmp_path / "catalog.db", create=True)
    try:
        summary = build_catalog(cat, store.uri, cluster="c")
        assert gaps(cat, "c", "legacy-v0") == [] and gaps(cat, "c", "legacy-v1") == []
        held = {t.topic for t in topics(cat, "c")}
    finally:
        cat.close()
    assert {"legacy-v0", "legacy-v1"} <= held
    assert summary.failed == [] and summary.problems == [], summary
