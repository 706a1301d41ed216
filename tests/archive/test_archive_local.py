"""End-to-end archiving into the local store, on three-broker log dirs written by the writer."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from archive_checks import CountingStore, check_archive, eligible_segments, snapshot
from archive_helpers import archive_cluster
from cluster_data import CLUSTER, Cluster, build_cluster, rolled_segments, sync_tree
from kafka_archive.archive import (
    SegmentStatus,
    iter_manifests,
    run_archive,
)
from kafka_archive.archive.digests import DigestCache
from kafka_archive.archive.discovery import discover_log_dir
from kafka_archive.archive.layout import manifest_key, parse_manifest_key
from kafka_archive.archive.planner import plan_cluster
from kafka_archive.archive.uploader import archive_log_dir
from kafka_archive.store import LocalStore, StoreUnavailable

from segment_lib.checkpoints import format_offset_checkpoint, read_offset_checkpoint
from segment_lib.log_file import iter_batches


def test_happy_path_every_object_matches_its_source(
    cluster: Cluster, local_store: LocalStore
) -> None:
    report = archive_cluster(cluster, local_store)
    assert report.ok, report.summary_line()
    manifests = check_archive(local_store, cluster, CLUSTER)
    assert report.segments_archived == len(manifests) > 0
    assert report.bytes_archived == sum(m.total_bytes for m in manifests)
    assert report.bytes_uploaded == report.bytes_archived  # nothing was there before
    topics = {m.topic for m in manifests}
    assert {"orders", "state", "payments", "__consumer_offsets"} <= topics
    # Replica choice: every orders range comes from the lowest broker id holding it (1).
    assert {m.source.broker_id for m in manifests if m.topic == "orders"} == {1}
    b1_orders = [s for s in eligible_segments(cluster) if s[0] == 1 and s[1] == "orders"]
    assert len([m for m in manifests if m.topic == "orders"]) == len(b1_orders)
    assert report.skipped.get("other_replica", 0) == len(
        [s for s in eligible_segments(cluster) if s[0] in (2, 3) and s[1] == "orders"]
    )
    # Companion files and broker state are captured.
    payments = [m for m in manifests if m.topic == "payments"]
    assert any(m.file("txnindex") is not None for m in payments)
    assert all(m.transactional_batches > 0 for m in payments)
    assert any(m.file("producer_snapshot") is not None for m in manifests)
    for m in manifests:
        assert m.topic_id and m.leader_epochs and m.source.kafka_cluster_id
        assert m.base_offset <= m.first_offset <= m.last_offset < m.end_offset
        # every file's key is content-addressed by its own SHA-256
        for f in m.files:
            assert f.key.rsplit("/", 1)[1].split("-")[1].startswith(f.sha256[:16])
        listed = {o.key for o in local_store.list(CLUSTER + "/") if parse_manifest_key(o.key)}
        assert manifest_key(CLUSTER, m.topic, m.partition, m.base_offset, m.segment_sha256) in (
            listed
        )
    # Active segments are never archived.
    for _b, pdir in cluster.partition_dirs():
        active = sorted(pdir.glob("*.log"))[-1]
        sha = hashlib.sha256(active.read_bytes()).hexdigest()
        assert not any(
            m.segment_sha256 == sha and m.base_offset == int(active.stem)
            for m in manifests
            if m.source.partition_dir == pdir.name
        )


def test_rerun_uploads_nothing_and_duplicates_nothing(
    cluster: Cluster, local_store: LocalStore
) -> None:
    first = archive_cluster(cluster, local_store)
    before = snapshot(local_store)
    counting = CountingStore(local_store)
    second = archive_cluster(cluster, counting)  # type: ignore[arg-type]
    assert second.ok and second.segments_archived == 0 and second.bytes_uploaded == 0
    assert counting.created == [] and counting.writes == []
    assert snapshot(local_store) == before
    assert second.skipped["already_archived"] == first.segments_archived
    check_archive(local_store, cluster, CLUSTER)


def test_single_broker_runs_consult_the_store(cluster: Cluster, local_store: LocalStore) -> None:
    # Broker 2 runs first (e.g. its CLI), then broker 1 and 3: ranges broker 2 archived are not
    # archived again from the others, and the skip names the manifests that cover them.
    r2 = run_archive(cluster=CLUSTER, broker_id=2, log_dirs=cluster.dirs(2), store=local_store)
    assert r2.ok and r2.segments_archived > 0
    r1 = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=cluster.dirs(1), store=local_store)
    r3 = run_archive(cluster=CLUSTER, broker_id=3, log_dirs=cluster.dirs(3), store=local_store)
    assert r1.ok and r3.ok
    other = [s for s in r1.skipped_items + r3.skipped_items if s.reason == "other_replica"]
    assert other and all("manifests/" in s.detail for s in other)
    manifests = check_archive(local_store, cluster, CLUSTER)
    # orders offsets are archived from broker 2 only, except what broker 2 did not cover
    for m in manifests:
        if m.topic == "orders" and m.source.broker_id != 2:
            assert m.overlaps, "a segment archived besides broker 2's must record its overlap"


def test_replicas_archived_once_with_overlaps_recorded(
    cluster: Cluster, local_store: LocalStore
) -> None:
    # Retention removed broker 1's oldest orders-0 segment: those offsets only live on the
    # followers now, which rolled their segments elsewhere.
    pdir = cluster.log_dirs[1][0] / "orders-0"
    base, _end, _ = rolled_segments(pdir)[0]
    for f in pdir.glob(f"{base:020d}.*"):
        f.unlink()
    report = archive_cluster(cluster, local_store)
    assert report.ok
    manifests = check_archive(local_store, cluster, CLUSTER)
    o0 = sorted(
        (m for m in manifests if m.topic == "orders" and m.partition == 0),
        key=lambda m: m.base_offset,
    )
    from_2 = [m for m in o0 if m.source.broker_id == 2]
    assert from_2 and from_2[0].base_offset == 0  # broker 2 (lowest id holding it) fills the gap
    assert all(m.source.broker_id in (1, 2) for m in o0)  # broker 3 never needed
    # No offset is covered by two manifests without both saying so.
    for a in o0:
        for b in o0:
            if a is b:
                continue
            lo, hi = max(a.base_offset, b.base_offset), min(a.end_offset, b.end_offset)
            if lo < hi:
                keys_a = {o.manifest_key: o for o in a.overlaps}
                bkey = manifest_key(CLUSTER, "orders", 0, b.base_offset, b.segment_sha256)
                assert bkey in keys_a, f"{a.base_offset} does not record overlap with {bkey}"
                o = keys_a[bkey]
                assert (o.overlap_start, o.overlap_end) == (lo, hi)
                assert o.relation == "replica" and o.broker_id == b.source.broker_id
    # every offset range archived once: the union has no more than the overlaps it records
    assert any(m.overlaps for m in from_2)


def test_compaction_rewrite_is_a_new_version(
    cluster: Cluster, local_store: LocalStore, tmp_path: Path
) -> None:
    archive_cluster(cluster, local_store)
    old = {m.base_offset: m for m in iter_manifests(local_store, CLUSTER, "state", 0)}
    old_objects = snapshot(local_store)
    sync_tree(build_cluster(tmp_path / "compacted", compact=True).root, cluster.root)
    report = archive_cluster(cluster, local_store)
    assert report.ok and report.segments_archived > 0
    assert {o.topic for o in report.archived} == {"state"}  # nothing else changed
    # the old versions are untouched: same keys, same ETags
    after = snapshot(local_store)
    assert all(after[k] == v for k, v in old_objects.items())
    versions = list(iter_manifests(local_store, CLUSTER, "state", 0))
    new = [
        m
        for m in versions
        if m.base_offset in old and m.segment_sha256 != old[m.base_offset].segment_sha256
    ]
    assert new, "compaction produced no new version"
    for m in new:
        prev = old[m.base_offset]
        assert manifest_key(CLUSTER, "state", 0, prev.base_offset, prev.segment_sha256) in (
            m.supersedes
        )
        assert m.log_file.key != prev.log_file.key
        assert all(o.relation == "previous_version" for o in m.overlaps)
        assert m.record_count < prev.record_count or m.end_offset > prev.end_offset
    check_archive(local_store, cluster, CLUSTER)


def test_active_segment_rolling_between_runs(
    cluster: Cluster, local_store: LocalStore, tmp_path: Path
) -> None:
    state = str(tmp_path / "state")
    first = archive_cluster(cluster, local_store, state_dir=state)
    actives = {}
    for b, pdir in cluster.partition_dirs():
        segs = sorted(pdir.glob("*.log"))
        actives[(b, pdir.name)] = (segs[-1].name, segs[-1].read_bytes())
    sync_tree(build_cluster(tmp_path / "phase2", phase=2).root, cluster.root)
    counting = CountingStore(local_store)
    with DigestCache(state) as cache:
        d = discover_log_dir(CLUSTER, 1, cluster.dirs(1)[0], digests=cache)
    # unchanged rolled segments are not re-read: their digests come from the cache
    assert d.digest_cache_hits > 0
    second = archive_cluster(cluster, counting, state_dir=state)  # type: ignore[arg-type]
    assert second.ok and second.segments_archived > 0
    assert second.skipped["already_archived"] == first.segments_archived
    manifests = check_archive(local_store, cluster, CLUSTER)
    # the segments that were active in run 1 are now rolled and archived, with all their bytes
    for (b, pname), (name, old_bytes) in actives.items():
        if b != 1:
            continue
        m = [m for m in manifests if m.source.partition_dir == pname and m.log_file.name == name]
        assert len(m) == 1, (pname, name)
        data = local_store.get_bytes(m[0].log_file.key)
        assert data.startswith(old_bytes[: len(old_bytes) // 2]) and len(data) >= len(old_bytes)


def _rewrite_checkpoint(path: Path, changes: dict[tuple[str, int], int]) -> None:
    offsets = read_offset_checkpoint(path)
    offsets.update(changes)
    path.write_bytes(format_offset_checkpoint(offsets))


def test_recovery_point_and_high_watermark_gate_segments(
    cluster: Cluster, local_store: LocalStore
) -> None:
    d_a = cluster.log_dirs[1][0]
    segs = rolled_segments(d_a / "orders-0")
    state_segs = rolled_segments(d_a / "state-0")
    rp_file, hw_file = (
        d_a / "recovery-point-offset-checkpoint",
        d_a / "replication-offset-checkpoint",
    )
    rp_orig, hw_orig = rp_file.read_bytes(), hw_file.read_bytes()
    # orders-0: flushed only up to the end of its first segment (minus one offset)
    _rewrite_checkpoint(rp_file, {("orders", 0): segs[0][1] - 1})
    # state-0: committed up to its second segment's end exactly (inclusive bound is fine)
    _rewrite_checkpoint(hw_file, {("state", 0): state_segs[1][1]})
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=cluster.dirs(1), store=local_store)
    assert report.ok
    archived = {(o.topic, o.partition, o.base_offset) for o in report.archived}
    assert not {a for a in archived if a[:2] == ("orders", 0)}
    assert {a for a in archived if a[:2] == ("orders", 1)}  # orders-1 is not gated
    gated_rp = [s for s in report.skipped_items if s.reason == "above_recovery_point"]
    gated_hw = [s for s in report.skipped_items if s.reason == "above_high_watermark"]
    assert {s.base_offset for s in gated_rp} == {s[0] for s in segs}
    assert {s.base_offset for s in gated_hw} == {s[0] for s in state_segs[2:]}
    assert {b for t, _p, b in archived if t == "state"} == {s[0] for s in state_segs[:2]}
    lag = {x.broker_id: x for x in report.lag}[1]
    assert lag.pending_segments == len(segs) + len(state_segs) - 2
    assert lag.lag_seconds > 0 and lag.oldest_pending is not None
    # the lag is the age of the oldest pending segment's .log (its mtime), computed here
    pending_logs = [s[2] for s in segs] + [s[2] for s in state_segs[2:]]
    oldest_ms = min(p.stat().st_mtime_ns for p in pending_logs) // 1_000_000
    assert lag.oldest_pending.mtime_ms == oldest_ms
    assert lag.lag_seconds >= (report.finished_at.timestamp() * 1000 - oldest_ms) / 1000 - 1
    # the broker catches up: the same segments are archived by the next run
    rp_file.write_bytes(rp_orig)
    hw_file.write_bytes(hw_orig)
    again = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=cluster.dirs(1), store=local_store)
    assert {(o.topic, o.partition, o.base_offset) for o in again.archived} == (
        {("orders", 0, s[0]) for s in segs} | {("state", 0, s[0]) for s in state_segs[2:]}
    )
    assert {x.broker_id: x for x in again.lag}[1].pending_segments == 0


def test_partition_missing_from_checkpoints_is_not_archived(
    cluster: Cluster, local_store: LocalStore
) -> None:
    d_a = cluster.log_dirs[1][0]
    hw_file = d_a / "replication-offset-checkpoint"
    offsets = read_offset_checkpoint(hw_file)
    del offsets[("state", 0)]
    hw_file.write_bytes(format_offset_checkpoint(offsets))
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(d_a)], store=local_store)
    assert not [o for o in report.archived if o.topic == "state"]
    assert {s.reason for s in report.skipped_items if s.topic == "state"} >= {"no_checkpoint"}


def test_transient_files_and_directories_are_never_archived(
    cluster: Cluster, local_store: LocalStore
) -> None:
    d_a = cluster.log_dirs[1][0]
    orders = d_a / "orders-0"
    first = rolled_segments(orders)[0][2]
    # retention-deleted, cleaner output and a partition being deleted / moved / stray
    shutil.copy(first, orders / (first.name + ".deleted"))
    shutil.copy(first, d_a / "state-0" / ("00000000000000000000.log.cleaned"))
    for suffix in ("delete", "future", "stray"):
        shutil.copytree(orders, d_a / f"orders-0.0f3c5e2d9b7a4c1e8d6f0a2b4c6e8f0a-{suffix}")
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(d_a)], store=local_store)
    assert report.ok
    reasons = {(s.reason, Path(s.path).name) for s in report.skipped_items}
    assert ("transient_file", first.name + ".deleted") in reasons
    assert ("transient_file", "00000000000000000000.log.cleaned") in reasons
    for suffix in ("delete", "future", "stray"):
        assert ("transient_dir", f"orders-0.0f3c5e2d9b7a4c1e8d6f0a2b4c6e8f0a-{suffix}") in reasons
    for m in iter_manifests(local_store, CLUSTER):
        assert m.source.partition_dir in {"orders-0", "state-0"}
        assert all(
            f.name.endswith((".log", ".index", ".timeindex", ".txnindex", ".snapshot"))
            for f in m.files
        )


def test_swap_file_defers_the_partition(cluster: Cluster, local_store: LocalStore) -> None:
    state = cluster.log_dirs[1][0] / "state-0"
    shutil.copy(state / "00000000000000000000.log", state / "00000000000000000000.log.swap")
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=cluster.dirs(1), store=local_store)
    assert not [o for o in report.archived if o.topic == "state"]
    deferred = [s for s in report.skipped_items if s.reason == "cleaning_in_progress"]
    assert {s.base_offset for s in deferred} == {s[0] for s in rolled_segments(state)}
    assert {x.broker_id: x for x in report.lag}[1].pending_segments == len(deferred)


def _flip_byte_in_batch(log: Path, batch_index: int) -> int:
    """Corrupt one byte inside the payload of a batch; return that batch's position."""
    data = bytearray(log.read_bytes())
    batches = list(iter_batches(bytes(data)))
    target = batches[batch_index]
    data[target.position + target.size - 3] ^= 0x5A
    log.write_bytes(bytes(data))
    return target.position


def test_corrupt_segment_is_quarantined_and_fails(
    cluster: Cluster, local_store: LocalStore
) -> None:
    pay = cluster.log_dirs[2][0] / "payments-0"
    base, _end, log = rolled_segments(pay)[0]
    position = _flip_byte_in_batch(log, 1)
    report = run_archive(cluster=CLUSTER, broker_id=2, log_dirs=cluster.dirs(2), store=local_store)
    assert not report.ok and report.segments_quarantined == 1
    failure = report.failures[0]
    assert failure.status is SegmentStatus.QUARANTINED and failure.base_offset == base
    assert failure.error is not None and failure.error.error == "CrcMismatchError"
    assert failure.error.path == str(log) and failure.error.position == position
    # no manifest for it, but the evidence is in quarantine
    assert not [
        m for m in iter_manifests(local_store, CLUSTER, "payments", 0) if m.base_offset == base
    ]
    assert failure.quarantine_prefix is not None
    record = json.loads(local_store.get_bytes(failure.quarantine_prefix + "error.json"))
    assert record["error"]["position"] == position and record["error"]["path"] == str(log)
    assert local_store.get_bytes(failure.quarantine_prefix + log.name) == log.read_bytes()
    # the other segments are archived normally
    assert any(o.topic == "payments" for o in report.archived)
    # a re-run fails again (it is still corrupt) but uploads nothing new
    counting = CountingStore(local_store)
    again = run_archive(cluster=CLUSTER, broker_id=2, log_dirs=cluster.dirs(2), store=counting)  # type: ignore[arg-type]
    assert not again.ok and again.segments_quarantined == 1
    assert counting.created == []


def test_torn_tail_in_a_rolled_segment_is_corruption(
    cluster: Cluster, local_store: LocalStore
) -> None:
    state = cluster.log_dirs[1][0] / "state-0"
    base, _end, log = rolled_segments(state)[1]
    data = log.read_bytes()
    last = list(iter_batches(data))[-1]
    log.write_bytes(data[: last.position + 20])
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=cluster.dirs(1), store=local_store)
    assert [(f.base_offset, f.error.error if f.error else None) for f in report.failures] == [
        (base, "TornTailError")
    ]
    assert report.failures[0].error.position == last.position  # type: ignore[union-attr]


def test_store_outage_mid_run_then_resume(cluster: Cluster, local_store: LocalStore) -> None:
    class Flaky(CountingStore):
        def put_if_absent(self, key, source, **kw):  # type: ignore[no-untyped-def,override]
            if len(self.created) >= 7:
                raise StoreUnavailable("connection refused", uri=self.uri, key=key)
            return super().put_if_absent(key, source, **kw)

    flaky = Flaky(local_store)
    first = archive_cluster(cluster, flaky, concurrency=1)  # type: ignore[arg-type]
    assert not first.ok and first.segments_failed > 0
    assert any("not attempted" in f.detail for f in first.failures)  # stopped early
    partial = snapshot(local_store)
    counting = CountingStore(local_store)
    second = archive_cluster(cluster, counting)  # type: ignore[arg-type]
    assert second.ok
    assert second.files_reused > 0  # files that arrived before the outage are not sent again
    assert not set(counting.created) & set(partial)
    check_archive(local_store, cluster, CLUSTER)


def test_segment_deleted_or_changed_after_discovery(
    cluster: Cluster, local_store: LocalStore
) -> None:
    d_a = cluster.dirs(1)[0]
    disc = discover_log_dir(CLUSTER, 1, d_a)
    plan = plan_cluster(CLUSTER, [disc], local_store)
    tasks = plan.log_dirs[0].tasks
    gone, changed = tasks[0].candidate, tasks[1].candidate
    for f in gone.path.glob(f"{gone.base_offset:020d}.*"):
        f.unlink()
    with open(changed.log_path, "ab") as fh:
        fh.write(b"\0")
    outcomes = archive_log_dir(local_store, plan.log_dirs[0])
    by_base = {(o.topic, o.base_offset): o for o in outcomes}
    assert by_base[(gone.topic, gone.base_offset)].reason == "vanished"
    assert by_base[(changed.topic, changed.base_offset)].reason == "changed"
    assert all(o.status in (SegmentStatus.ARCHIVED, SegmentStatus.SKIPPED) for o in outcomes)
    assert not [
        m
        for m in iter_manifests(local_store, CLUSTER)
        if (m.topic, m.base_offset)
        in {(gone.topic, gone.base_offset), (changed.topic, changed.base_offset)}
    ]


def test_segment_merged_by_the_cleaner_after_discovery_is_replanned_not_quarantined(
    cluster: Cluster, local_store: LocalStore
) -> None:
    """The log cleaner merges a segment with its successor under the first one's name (keeping
    the group's newest mtime) between discovery's listing and its stat: the file then has the
    size and mtime discovery recorded, but batches past its planned range. That is a source
    that changed, to be re-planned, not corrupt bytes to quarantine (seen on a real broker)."""
    d_a = cluster.dirs(1)[0]
    disc = discover_log_dir(CLUSTER, 1, d_a)
    plan = plan_cluster(CLUSTER, [disc], local_store)
    tasks = plan.log_dirs[0].tasks
    first = tasks[0].candidate
    successor = first.path / f"{first.end_offset:020d}.log"
    assert successor.exists()
    # the merged file: the two segments' bytes under the first name, stamped as discovery saw it
    merged = first.log_path.read_bytes() + successor.read_bytes()
    for f in first.path.glob(f"{first.end_offset:020d}.*"):
        f.rename(f.with_name(f.name + ".deleted"))
    first.log_path.write_bytes(merged)
    object.__setattr__(first.log, "size", len(merged))
    os.utime(first.log_path, ns=(first.log.mtime_ns, first.log.mtime_ns))
    outcomes = archive_log_dir(local_store, plan.log_dirs[0])
    by_base = {(o.topic, o.partition, o.base_offset): o for o in outcomes}
    got = by_base[(first.topic, first.partition, first.base_offset)]
    assert (got.status, got.reason) == (SegmentStatus.SKIPPED, "changed"), got
    assert "merged by the log cleaner" in got.detail
    assert not [o for o in outcomes if o.status == SegmentStatus.QUARANTINED]


def test_dry_run_uploads_nothing(cluster: Cluster, local_store: LocalStore) -> None:
    counting = CountingStore(local_store)
    report = archive_cluster(cluster, counting, dry_run=True)  # type: ignore[arg-type]
    assert report.segments_planned > 0 and report.segments_archived == 0
    assert counting.created == [] and counting.writes == []
    assert snapshot(local_store) == {}
    assert sum(x.pending_segments for x in report.lag) == report.segments_planned


def test_broker_id_mismatch_refuses_the_log_dir(cluster: Cluster, local_store: LocalStore) -> None:
    report = run_archive(cluster=CLUSTER, broker_id=7, log_dirs=cluster.dirs(1), store=local_store)
    assert not report.ok and report.segments_archived == 0
    assert {f.error.error for f in report.log_dir_failures} == {"BrokerIdMismatch"}


def test_missing_log_dir_is_a_failure(tmp_path: Path, local_store: LocalStore) -> None:
    report = run_archive(
        cluster=CLUSTER, broker_id=1, log_dirs=[str(tmp_path / "nope")], store=local_store
    )
    assert not report.ok and report.log_dir_failures[0].error.error == "LogDirNotFound"


@pytest.mark.parametrize("concurrency", [1, 4])
def test_result_does_not_depend_on_concurrency(
    cluster: Cluster, tmp_path: Path, concurrency: int
) -> None:
    store = LocalStore(tmp_path / f"store-{concurrency}", fsync=False)
    report = archive_cluster(cluster, store, concurrency=concurrency)
    keys = sorted(k for k in snapshot(store) if "/manifests/" in k)
    reference = LocalStore(tmp_path / "ref", fsync=False)
    archive_cluster(cluster, reference, concurrency=1)
    assert keys == sorted(k for k in snapshot(reference) if "/manifests/" in k)
    assert report.ok
    assert os.path.isdir(tmp_path / f"store-{concurrency}")


def test_partition_dir_vanishing_during_discovery_is_not_an_error(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from segment_lib.partition import PartitionView

    real_open = PartitionView.open.__func__  # type: ignore[attr-defined]

    def open_or_vanish(cls: type[PartitionView], path: Path) -> PartitionView:
        if Path(path).name == "state-0":  # e.g. renamed to state-0.<id>-delete meanwhile
            raise FileNotFoundError(2, "No such file or directory", str(path))
        result: PartitionView = real_open(cls, path)
        return result

    monkeypatch.setattr(PartitionView, "open", classmethod(open_or_vanish))
    d = discover_log_dir(CLUSTER, 1, cluster.dirs(1)[0])
    assert d.errors == []
    assert [(s.reason, Path(s.path).name) for s in d.skipped if s.reason == "vanished"] == [
        ("vanished", "state-0")
    ]
    assert {c.topic for c in d.candidates} == {"orders"}
