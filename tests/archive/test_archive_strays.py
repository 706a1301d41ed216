"""Discovery reports odd files instead of passing over them, and stray segments never become
"the active segment" (archive/strays.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cluster_data import CLUSTER, Cluster
from kafka_archive.archive import run_archive
from kafka_archive.archive.discovery import LogDirDiscovery, discover_log_dir
from kafka_archive.store import LocalStore

from segment_lib.checkpoints import format_offset_checkpoint, read_offset_checkpoint
from segment_lib.partition import PartitionView


def _skipped(d: LogDirDiscovery, reason: str) -> dict[str, str]:
    return {Path(s.path).name: s.detail for s in d.skipped if s.reason == reason}


def _candidates(d: LogDirDiscovery) -> set[tuple[str, int, int, int]]:
    return {(c.topic, c.partition, c.base_offset, c.end_offset) for c in d.candidates}


def _active(d: LogDirDiscovery, topic: str, partition: int) -> list[int | None]:
    return [
        s.base_offset
        for s in d.skipped
        if s.reason == "active" and s.topic == topic and s.partition == partition
    ]


def _next_offset(orders: Path) -> int:
    view = PartitionView.open(orders)
    assert view.active is not None
    return view.summary(view.active).next_offset


def _checkpoints_at_log_end(log_dir: Path, topic: str, partition: int, offset: int) -> None:
    """Recovery point and high watermark as a broker that flushed and replicated everything."""
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        path = log_dir / name
        entries = read_offset_checkpoint(path)
        entries[(topic, partition)] = offset
        path.write_bytes(format_offset_checkpoint(entries))


def test_odd_segment_names_are_reported_not_ignored(cluster: Cluster) -> None:
    d_a = cluster.log_dirs[1][0]
    orders = d_a / "orders-0"
    before = discover_log_dir(CLUSTER, 1, d_a)
    first = sorted(orders.glob("*.log"))[0]
    odd = ("48.log", "8589934592.log", "99999999999999999999.log", "copy-of-0.index", "x.snapshot")
    for name in odd:
        shutil.copy(first, orders / name)
    shutil.copy(first, d_a / first.name)  # a segment dropped in the log dir itself
    after = discover_log_dir(CLUSTER, 1, d_a)
    reported = _skipped(after, "odd_name")
    assert set(reported) == {*odd, first.name}
    assert "does not fit an int64" in reported["99999999999999999999.log"]
    assert "is not a segment file name" in reported["48.log"]
    assert "outside any partition directory" in reported[first.name]
    assert all(s.topic == "orders" for s in after.skipped if Path(s.path).name in odd)
    # nothing else changes: the same candidates, the same active segment
    assert _candidates(after) == _candidates(before)
    assert _active(after, "orders", 0) == _active(before, "orders", 0)
    assert after.errors == []


def test_stray_segment_with_a_huge_offset_does_not_become_the_active_segment(
    cluster: Cluster, tmp_path: Path
) -> None:
    d_a = cluster.log_dirs[1][0]
    orders = d_a / "orders-0"
    real_active = PartitionView.open(orders).active
    assert real_active is not None
    end = _next_offset(orders)
    # the broker flushed and replicated everything: a segment rolled at the stray's offset
    # would be archivable, so taking the stray as active would archive the live segment
    _checkpoints_at_log_end(d_a, "orders", 0, end)
    before = discover_log_dir(CLUSTER, 1, d_a)
    assert _active(before, "orders", 0) == [real_active.base_offset]
    strays = {
        "09223372036854775000.log": b"",  # empty, far beyond the log end
        "00000000099999999999.log": b"not a kafka log at all, just text\n" * 4,
    }
    for name, data in strays.items():
        (orders / name).write_bytes(data)
    after = discover_log_dir(CLUSTER, 1, d_a)
    reported = _skipped(after, "stray_segment")
    assert set(reported) == set(strays)
    assert "not a Kafka log" in reported["00000000099999999999.log"]
    assert "beyond the recovery point" in reported["09223372036854775000.log"]
    assert f"{real_active.name} stays the active segment" in reported["09223372036854775000.log"]
    assert _active(after, "orders", 0) == [real_active.base_offset]
    assert _candidates(after) == _candidates(before)
    assert real_active.base_offset not in {c.base_offset for c in after.candidates}
    # end to end: the live segment is not archived, the report says why
    store = LocalStore(tmp_path / "store", fsync=False)
    report = run_archive(cluster=CLUSTER, broker_id=1, log_dirs=[str(d_a)], store=store)
    assert not [
        o
        for o in report.archived
        if o.topic == "orders" and o.partition == 0 and o.base_offset == real_active.base_offset
    ]
    assert {Path(s.path).name for s in report.skipped_items if s.reason == "stray_segment"} == set(
        strays
    )


def test_stray_segment_copied_from_elsewhere_is_detected(cluster: Cluster) -> None:
    """A real segment copied to a higher base offset (its first batch does not start there),
    and an empty file named inside the active segment's range (segments never overlap)."""
    d_a = cluster.log_dirs[1][0]
    orders = d_a / "orders-0"
    real_active = PartitionView.open(orders).active
    assert real_active is not None
    end = _next_offset(orders)
    old = sorted(orders.glob("*.log"))[0]  # offsets from 0: not where its new name says
    shutil.copy(old, orders / f"{end + 1000:020d}.log")
    d = discover_log_dir(CLUSTER, 1, d_a)
    assert "its first batch holds offset" in _skipped(d, "stray_segment")[f"{end + 1000:020d}.log"]
    assert _active(d, "orders", 0) == [real_active.base_offset]
    os.unlink(orders / f"{end + 1000:020d}.log")
    # an empty file named inside the live segment's offsets
    inside = real_active.base_offset + 1
    assert inside < end
    (orders / f"{inside:020d}.log").write_bytes(b"")
    d = discover_log_dir(CLUSTER, 1, d_a)
    assert "segments never overlap" in _skipped(d, "stray_segment")[f"{inside:020d}.log"]
    assert _active(d, "orders", 0) == [real_active.base_offset]


def test_a_real_roll_is_not_mistaken_for_a_stray(cluster: Cluster) -> None:
    """The broker rolls a new, empty segment at the log end offset: it is the active segment
    and the previous one is rolled, even when the checkpoints have not caught up yet."""
    d_a = cluster.log_dirs[1][0]
    orders = d_a / "orders-0"
    previous = PartitionView.open(orders).active
    assert previous is not None
    end = _next_offset(orders)
    (orders / f"{end:020d}.log").write_bytes(b"")
    d = discover_log_dir(CLUSTER, 1, d_a)
    assert _skipped(d, "stray_segment") == {}
    assert _active(d, "orders", 0) == [end]
    _checkpoints_at_log_end(d_a, "orders", 0, end)
    d = discover_log_dir(CLUSTER, 1, d_a)
    assert ("orders", 0, previous.base_offset, end) in _candidates(d)


def test_symlinks_in_the_log_dir_are_reported_not_followed(cluster: Cluster) -> None:
    d_a = cluster.log_dirs[1][0]
    before = discover_log_dir(CLUSTER, 1, d_a)
    os.symlink(d_a / "loop-b", d_a / "loop-a")
    os.symlink(d_a / "loop-a", d_a / "loop-b")
    os.symlink(d_a / "orders-0", d_a / "orders-7")
    os.symlink(d_a / "nowhere", d_a / "dangling-0")
    d = discover_log_dir(CLUSTER, 1, d_a)
    reported = _skipped(d, "symlink")
    assert set(reported) == {"loop-a", "loop-b", "orders-7", "dangling-0"}
    assert "loop" in reported["loop-a"] and "loop" in reported["loop-b"]
    assert "to a directory" in reported["orders-7"]
    assert "dangling" in reported["dangling-0"]
    assert d.errors == [] and _candidates(d) == _candidates(before)
