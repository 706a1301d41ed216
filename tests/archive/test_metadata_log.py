"""The KRaft metadata log in the archive: rolled segments archived up to the newest snapshot
(the committed bound), snapshots verified and archived once, quorum-state kept per node, and
``iter_archived_metadata`` reading it all back in offset order, de-duplicated across nodes, from
a snapshot where the log's start is gone.

The metadata partitions are written here batch by batch (the record values are the hand-made
ones of tests/test_cluster_metadata.py); tests/real_kafka/test_metadata_dump_vs_kafka.py runs
the same over a real cluster's files.
"""

from __future__ import annotations

import json
import struct
from itertools import pairwise
from pathlib import Path

import pytest
from kafka_archive.archive.discovery import SkipReason, discover_log_dir
from kafka_archive.archive.metadata_log import iter_archived_metadata, metadata_coverage
from kafka_archive.archive.metadata_snapshots import (
    archive_metadata_files,
    quorum_state_key,
    snapshot_manifest_prefix,
)
from kafka_archive.archive.runner import run_archive
from kafka_archive.store import LocalStore, StoreError
from kafka_archive_dev.writer.encode import WriteRecord, encode_batch_v2, encode_record_v2

from segment_lib.batch_encode import assemble_v2, v2_attributes
from segment_lib.cluster_metadata import MetadataEntry, iter_metadata_file
from segment_lib.control import ControlType
from segment_lib.records import Codec
from tests.test_cluster_metadata import config_record, topic_record

CLUSTER = "meta"
T0 = 1_700_000_000_000


def _control_batch(offset: int, ctype: ControlType, value: bytes) -> bytes:
    """A KRaft control batch of one record (key: version 0, type)."""
    payload = encode_record_v2(0, 0, struct.pack(">hh", 0, int(ctype)), value, ())
    return assemble_v2(
        base_offset=offset,
        partition_leader_epoch=1,
        attributes=v2_attributes(Codec.NONE, False, False, True, False),
        last_offset_delta=0,
        first_timestamp=T0 + offset,
        max_timestamp=T0 + offset,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        record_count=1,
        payload=payload,
    )


def _records(first: int, values: list[bytes]) -> bytes:
    recs = [WriteRecord(None, v, (), T0 + first + i) for i, v in enumerate(values)]
    return encode_batch_v2(first, recs, partition_leader_epoch=1).data


def value_at(offset: int) -> bytes:
    """The metadata record at ``offset`` of the test log (one per offset)."""
    if offset % 2:
        return config_record(f"topic-{offset}", "retention.ms", str(offset))
    return topic_record(f"topic-{offset}")


def write_segment(part: Path, base: int, end: int) -> None:
    """A segment holding offsets [base, end), one record batch."""
    (part / f"{base:020d}.log").write_bytes(_records(base, [value_at(o) for o in range(base, end)]))


def write_snapshot(part: Path, end: int, *, footer: bool = True) -> Path:
    """A snapshot of the state before ``end``: header, every topic so far, footer."""
    header = struct.pack(">hq", 0, T0 + end - 1) + b"\x00"
    body = [value_at(o) for o in range(end) if o % 2 == 0] or [topic_record("none")]
    data = _control_batch(0, ControlType.SNAPSHOT_HEADER, header) + _records(1, body)
    if footer:
        data += _control_batch(1 + len(body), ControlType.SNAPSHOT_FOOTER, b"\x00\x00\x00")
    path = part / f"{end:020d}-{1:010d}.checkpoint"
    path.write_bytes(data)
    return path


def metadata_log_dir(root: Path, bounds: list[int], snapshots: list[int]) -> Path:
    """A log dir holding only ``__cluster_metadata-0``: segments at ``bounds`` (the last one
    active), the given snapshots, a half-written snapshot and quorum-state."""
    part = root / "__cluster_metadata-0"
    part.mkdir(parents=True)
    for lo, hi in pairwise(bounds):
        write_segment(part, lo, hi)
    write_segment(part, bounds[-1], bounds[-1] + 1)  # the active segment
    for end in snapshots:
        write_snapshot(part, end)
    (part / f"{99:020d}-{1:010d}.checkpoint.part").write_bytes(b"partial")
    (part / "quorum-state").write_text('{"leaderId":1,"leaderEpoch":1,"data_version":0}')
    return root


def _offsets(entries: list[MetadataEntry]) -> list[int]:
    return [e.offset for e in entries if e.record is not None]


def test_segments_wait_for_a_snapshot_then_are_archived_with_it(tmp_path: Path) -> None:
    log_dir = metadata_log_dir(tmp_path / "n1", [0, 3, 6, 9], snapshots=[6])
    found = discover_log_dir(CLUSTER, 1, log_dir)
    assert [(c.base_offset, c.end_offset) for c in found.candidates] == [(0, 3), (3, 6)]
    waiting = [s for s in found.skipped if s.base_offset == 6 and s.reason != SkipReason.ACTIVE]
    assert waiting[0].reason == SkipReason.ABOVE_HIGH_WATERMARK
    assert "newest snapshot ends at 6" in waiting[0].detail

    store = LocalStore(tmp_path / "store", fsync=False)
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    assert report.segments_archived == 2
    assert not report.log_dir_failures
    snaps = list(store.list(snapshot_manifest_prefix(CLUSTER)))
    assert len(snaps) == 1 and "00000000000000000006-0000000001-" in snaps[0].key
    state = json.loads(store.get_bytes(quorum_state_key(CLUSTER, 1)))
    assert state["node_id"] == 1 and state["quorum_state"]["leaderId"] == 1

    # the archive reads back what the node's files hold, in offset order
    part = log_dir / "__cluster_metadata-0"
    local = [e for n in (0, 3) for e in iter_metadata_file(part / f"{n:020d}.log")]
    archived = list(iter_archived_metadata(store, CLUSTER))
    assert archived == local
    assert _offsets(archived) == list(range(6))

    # a re-run archives nothing twice
    again = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    assert again.segments_archived == 0
    assert archive_metadata_files(store, CLUSTER, 1, log_dir).snapshots_already == 1


def test_no_snapshot_no_segment(tmp_path: Path) -> None:
    log_dir = metadata_log_dir(tmp_path / "n1", [0, 3, 6], snapshots=[])
    found = discover_log_dir(CLUSTER, 1, log_dir)
    assert not found.candidates
    assert {s.reason for s in found.skipped if s.base_offset == 0} == {SkipReason.NO_CHECKPOINT}


def test_two_nodes_rolling_differently_read_back_once(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store", fsync=False)
    n1 = metadata_log_dir(tmp_path / "n1", [0, 3, 6, 9, 12], snapshots=[12])
    n2 = metadata_log_dir(tmp_path / "n2", [0, 4, 10, 12], snapshots=[12])
    for node, d in ((1, n1), (2, n2)):
        report = run_archive(cluster=CLUSTER, broker_id=node, log_dirs=[str(d)], store=store)
        assert not report.failures and not report.log_dir_failures
    entries = list(iter_archived_metadata(store, CLUSTER))
    assert _offsets(entries) == list(range(12))
    assert [e.record.data["name"] for e in entries[:1] if e.record] == ["topic-0"]
    after = list(iter_archived_metadata(store, CLUSTER, after_offset=7))
    assert _offsets(after) == list(range(8, 12))


def test_a_snapshot_stands_for_the_log_that_is_gone(tmp_path: Path) -> None:
    """The node kept only offsets 10.. (older segments deleted after its snapshot at 10); a
    damaged newer snapshot is refused, so the reader starts from snapshot 10, then the log."""
    root = tmp_path / "n1"
    log_dir = metadata_log_dir(root, [10, 13, 16, 18], snapshots=[10])
    part = root / "__cluster_metadata-0"
    write_snapshot(part, 16, footer=False)  # committed bound 16, but not archivable
    store = LocalStore(tmp_path / "store", fsync=False)
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    assert report.segments_archived == 2
    (failure,) = report.log_dir_failures
    assert "SnapshotFooter" in failure.error.message
    assert failure.error.path is not None and failure.error.path.endswith(".checkpoint")

    plan = metadata_coverage(store, CLUSTER)
    assert plan.snapshot is not None and plan.snapshot.end_offset == 10
    entries = list(iter_archived_metadata(store, CLUSTER))
    from_snapshot = [e for e in entries if e.snapshot_id is not None]
    assert {e.snapshot_id for e in from_snapshot} == {"10-1"}
    assert {e.offset for e in from_snapshot} == {9}
    assert {e.timestamp_ms for e in from_snapshot} == {T0 + 9}
    assert [e.control for e in from_snapshot if e.control] == ["SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"]
    names = [e.record.data["name"] for e in from_snapshot if e.record is not None]
    assert names == [f"topic-{o}" for o in range(0, 10, 2)]
    log_part = [e for e in entries if e.snapshot_id is None]
    assert _offsets(log_part) == list(range(10, 16))


def test_a_corrupt_archived_segment_is_named(tmp_path: Path) -> None:
    log_dir = metadata_log_dir(tmp_path / "n1", [0, 3, 6], snapshots=[6])
    store = LocalStore(tmp_path / "store", fsync=False)
    run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    (seg,) = metadata_coverage(store, CLUSTER).segments[:1]
    path = store.root / seg.log_file.key
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.chmod(0o644)
    path.write_bytes(bytes(data))
    with pytest.raises(Exception, match=seg.log_file.key.split("/")[-1]):
        list(iter_archived_metadata(store, CLUSTER))


def test_the_catalog_builds_over_an_archived_metadata_log(tmp_path: Path) -> None:
    """The metadata log's segments are cataloged like a partition's; its snapshots and
    quorum-state (not segment manifests) are not mistaken for anything."""
    from kafka_archive.catalog.build import build_catalog
    from kafka_archive.catalog.db import open_catalog

    log_dir = metadata_log_dir(tmp_path / "n1", [0, 3, 6, 9], snapshots=[6])
    store = LocalStore(tmp_path / "store", fsync=False)
    run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    catalog = open_catalog(f"sqlite:///{tmp_path / 'catalog.db'}", create=True)
    try:
        report = build_catalog(catalog, store.uri, cluster=CLUSTER)
    finally:
        catalog.close()
    assert report.segments_added == 2
    assert not report.failed and not report.problems and report.corrupt == 0


def test_a_controller_metadata_dir_is_archived_without_checkpoint_warnings(
    tmp_path: Path,
) -> None:
    log_dir = metadata_log_dir(tmp_path / "controller", [0, 3, 6], snapshots=[6])
    (log_dir / "meta.properties").write_text(
        "version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\nnode.id=1\n"
        "directory.id=AAAAAAAAAAAAAAAAAAAAAQ\n"
    )
    found = discover_log_dir(CLUSTER, 1, log_dir)
    assert [c.base_offset for c in found.candidates] == [0, 3]
    assert not found.warnings
    (log_dir / "orders-0").mkdir()
    assert any("is missing" in w for w in discover_log_dir(CLUSTER, 1, log_dir).warnings)


class _SnapshotRefusingStore(LocalStore):
    """A store that is fine for segments and fails for snapshot objects."""

    def put_if_absent(self, key, source, **kw):  # type: ignore[no-untyped-def]
        if "/snapshots/" in key:
            raise StoreError(f"{key}: refused (test)")
        return super().put_if_absent(key, source, **kw)


def test_a_store_failure_on_snapshots_is_a_reported_failure(tmp_path: Path) -> None:
    log_dir = metadata_log_dir(tmp_path / "n1", [0, 3, 6], snapshots=[6])
    store = _SnapshotRefusingStore(tmp_path / "store", fsync=False)
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(log_dir)], store=store)
    assert report.segments_archived == 2
    (failure,) = report.log_dir_failures
    assert failure.error.error == "StoreError" and "refused (test)" in failure.error.message
    assert not list(store.list(snapshot_manifest_prefix(CLUSTER)))
