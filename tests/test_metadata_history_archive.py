"""The catalog build keeps the metadata history current: a cluster's archived
``__cluster_metadata`` log (segments and snapshots, archived by the archiver) is replayed into
the history after each catalog build, incrementally, and a re-run adds nothing."""

from __future__ import annotations

import itertools
import struct
import uuid
from pathlib import Path

from kafka_archive.archive.runner import run_archive
from kafka_archive.services.catalog_build import CatalogBuildService
from kafka_archive.services.metadata_history import MetadataHistoryService
from kafka_archive.settings import Settings
from kafka_archive.store import LocalStore

from segment_lib.control import ControlType
from tests.archive.test_metadata_log import T0, _control_batch, _records
from tests.test_cluster_metadata import config_record, topic_record

CLUSTER = "meta"


def _value(o: int) -> bytes:
    """Offset ``o``: even: topic ``t<o>`` (its own id) is created; odd: its retention set."""
    if o % 2:
        return config_record(f"t{o - 1}", "retention.ms", str(o))
    return topic_record(f"t{o}", uuid.UUID(int=o + 1))


def _log_dir(root: Path, bounds: list[int], snapshot: int) -> Path:
    part = root / "__cluster_metadata-0"
    part.mkdir(parents=True, exist_ok=True)
    for lo, hi in itertools.pairwise(bounds):
        (part / f"{lo:020d}.log").write_bytes(_records(lo, [_value(o) for o in range(lo, hi)]))
    last = bounds[-1]
    (part / f"{last:020d}.log").write_bytes(_records(last, [_value(last)]))  # active
    header = struct.pack(">hq", 0, T0 + snapshot - 1) + b"\x00"
    body = [_value(o) for o in range(snapshot)]
    data = _control_batch(0, ControlType.SNAPSHOT_HEADER, header) + _records(1, body)
    data += _control_batch(1 + len(body), ControlType.SNAPSHOT_FOOTER, b"\x00\x00\x00")
    (part / f"{snapshot:020d}-{1:010d}.checkpoint").write_bytes(data)
    (part / "quorum-state").write_text('{"leaderId":1,"leaderEpoch":1,"data_version":0}')
    return root


def test_catalog_build_keeps_the_history_current(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store", fsync=False)
    settings = Settings(store=store.uri, db=str(tmp_path / "catalog.db"))
    log_dir = _log_dir(tmp_path / "n1", [0, 4, 8], snapshot=8)
    run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    with CatalogBuildService(settings) as svc:
        report = svc.build(cluster=CLUSTER)
    assert not report.failed
    (built,) = report.metadata_history
    assert (built["cluster"], built["last_offset"], built["gaps"]) == (CLUSTER, 7, [])
    with MetadataHistoryService(settings) as hist:
        t2 = hist.topic_at(CLUSTER, "t2", T0 + 10)
        assert t2 is not None and t2.configs == {"retention.ms": "3"}
        assert hist.topic_at(CLUSTER, "t8", T0 + 100) is None

    # the log grows: the next build applies only what is new
    _log_dir(tmp_path / "n1", [8, 12], snapshot=12)
    run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    with CatalogBuildService(settings) as svc:
        (again,) = svc.build(cluster=CLUSTER).metadata_history
    assert again["last_offset"] == 11 and again["skipped"] == 0
    assert again["entries"] == 4
    with MetadataHistoryService(settings) as hist:
        t8 = hist.topic_at(CLUSTER, "t8", T0 + 100)
        assert t8 is not None and t8.configs == {"retention.ms": "9"}
    with CatalogBuildService(settings) as svc:
        (idle,) = svc.build(cluster=CLUSTER).metadata_history
    assert idle["changes"] == 0 and idle["entries"] == 0


def _corrupt(store: LocalStore, suffix: str, base: int) -> str:
    """Flip a byte in the middle of the archived object of ``base`` ending in ``suffix`` (its
    manifest's SHA-256 no longer matches); returns its key."""
    keys = [
        o.key
        for o in store.list(CLUSTER)
        if "__cluster_metadata" in o.key and o.key.endswith(suffix) and f"{base:020d}" in o.key
    ]
    assert len(keys) == 1, keys
    path = store.root / keys[0]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return keys[0]


def test_a_damaged_segment_leaves_the_history_around_it(tmp_path: Path) -> None:
    """Issue 20.7: one corrupt ``__cluster_metadata`` segment made the whole history absent;
    the history before and after it is built, the hole is a gap and the object is named in the
    build's problems."""
    store = LocalStore(tmp_path / "store", fsync=False)
    settings = Settings(store=store.uri, db=str(tmp_path / "catalog.db"))
    log_dir = _log_dir(tmp_path / "n1", [0, 4, 8, 12], snapshot=12)
    run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    bad = _corrupt(store, ".log", 4)
    with CatalogBuildService(settings) as svc:
        report = svc.build(cluster=CLUSTER)
    assert not [f for f in report.failed if "metadata history" in f["manifest_key"]], report.failed
    (built,) = report.metadata_history
    assert built["gaps"] == [{"first": 4, "last": 7}] and built["last_offset"] == 11
    (damaged,) = built["damaged"]
    assert damaged["key"] == bad and damaged["kind"] == "segment"
    assert (damaged["first_offset"], damaged["last_offset"]) == (4, 7)
    assert any(p["object_key"] == bad and p["kind"] == "corrupt" for p in report.problems)
    with MetadataHistoryService(settings) as hist:
        t2 = hist.topic_at(CLUSTER, "t2", T0 + 100)
        assert t2 is not None and t2.configs == {"retention.ms": "3"}  # before the bad object
        t8 = hist.topic_at(CLUSTER, "t8", T0 + 100)
        assert t8 is not None and t8.configs == {"retention.ms": "9"}  # after it
        assert hist.topic_at(CLUSTER, "t4", T0 + 100) is None  # in the hole: not invented
        assert t8.resolution_note is not None and bad in t8.resolution_note


def test_a_damaged_snapshot_falls_back_to_the_log(tmp_path: Path) -> None:
    """A garbage KRaft snapshot (``.checkpoint``) where the log's start is not archived: the
    history is built from the archived log (a gap before it), the snapshot named."""
    store = LocalStore(tmp_path / "store", fsync=False)
    settings = Settings(store=store.uri, db=str(tmp_path / "catalog.db"))
    log_dir = _log_dir(tmp_path / "n1", [0, 4, 8, 12], snapshot=12)
    run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    for o in list(store.list(f"{CLUSTER}/__cluster_metadata")):  # the log's start: gone
        if f"{0:020d}" in o.key and "snapshots" not in o.key:
            store.delete(o.key)
    bad = _corrupt(store, ".checkpoint", 12)
    with CatalogBuildService(settings) as svc:
        report = svc.build(cluster=CLUSTER)
    assert not [f for f in report.failed if "metadata history" in f["manifest_key"]], report.failed
    (built,) = report.metadata_history
    assert [d["key"] for d in built["damaged"]] == [bad]
    assert built["snapshots"] == [] and built["last_offset"] == 11
    with MetadataHistoryService(settings) as hist:
        t6 = hist.topic_at(CLUSTER, "t6", T0 + 100)
        assert t6 is not None and t6.configs == {"retention.ms": "7"}
        assert hist.topic_at(CLUSTER, "t2", T0 + 100) is None  # before the archived log
