"""Two archivers over the same log dirs into the same store: each report counts only what that
run wrote, and the reports add up to exactly what is in the store."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from archive_helpers import archive_cluster
from cluster_data import CLUSTER, Cluster
from kafka_archive.archive import ArchiveReport, run_archive
from kafka_archive.archive.discovery import discover_log_dir
from kafka_archive.archive.manifest import utc_now
from kafka_archive.archive.planner import plan_cluster
from kafka_archive.archive.runner import assemble_report
from kafka_archive.archive.uploader import StopSignal, archive_log_dir
from kafka_archive.store import LocalStore, StoredObject


def _store_totals(store: LocalStore) -> tuple[int, int, int]:
    """(manifests, data objects, data bytes) under the cluster, quarantine excluded."""
    objects = [o for o in store.list(CLUSTER + "/") if "/_quarantine/" not in o.key]
    manifests = [o for o in objects if "/manifests/" in o.key]
    data = [o for o in objects if "/manifests/" not in o.key]
    return len(manifests), len(data), sum(o.size for o in data)


def _report_totals(reports: Sequence[ArchiveReport]) -> tuple[int, int, int]:
    return (
        sum(r.segments_archived for r in reports),
        sum(r.files_uploaded for r in reports),
        sum(r.bytes_uploaded for r in reports),
    )


class _LateStore(LocalStore):
    """A store whose first answer about each key is "absent": this run looked before the other
    run's write landed, and writes after it (the race a real pair of archivers runs into)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, fsync=False)
        self._asked: set[str] = set()
        self._lock = threading.Lock()

    def _first_time(self, key: str) -> bool:
        with self._lock:
            first = key not in self._asked
            self._asked.add(key)
            return first

    def head(self, key: str) -> StoredObject | None:
        return None if self._first_time(key) else super().head(key)

    def exists(self, key: str) -> bool:
        return False if self._first_time(key) else super().exists(key)


def test_a_run_that_checked_before_the_other_wrote_counts_nothing_it_did_not_write(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Run A plans and checks against an empty store; run B archives everything meanwhile;
    A's writes then find B's objects. A's report used to count every one of them again."""
    root = tmp_path / "store"
    targets = cluster.all_targets()
    plan_a = plan_cluster(
        CLUSTER,
        [discover_log_dir(CLUSTER, b, d) for b, d in targets],
        LocalStore(root, fsync=False),
    )
    started = utc_now()
    report_b = archive_cluster(cluster, LocalStore(root, fsync=False))
    assert report_b.ok and report_b.segments_archived > 0
    late = _LateStore(root)
    stop = StopSignal()
    outcomes = [o for lp in plan_a.log_dirs for o in archive_log_dir(late, lp, stop=stop)]
    report_a = assemble_report(
        store_uri=late.uri,
        dry_run=False,
        started_at=started,
        discoveries=[],
        plans=[plan_a],
        outcomes=outcomes,
    )
    assert report_a.ok, report_a.summary_line()
    assert (report_a.segments_archived, report_a.files_uploaded, report_a.bytes_uploaded) == (
        0,
        0,
        0,
    )
    assert report_a.skipped.get("already_archived", 0) == report_b.segments_archived
    assert _report_totals([report_a, report_b]) == _store_totals(LocalStore(root, fsync=False))


def _race(cluster: Cluster, root: Path) -> list[ArchiveReport]:
    """Two archivers of broker 1's log dirs started together into the store at ``root``."""
    reports: dict[int, ArchiveReport] = {}
    barrier = threading.Barrier(2)

    def run(n: int) -> None:
        barrier.wait()
        reports[n] = run_archive(
            cluster=CLUSTER,
            broker_id=1,
            log_dirs=cluster.dirs(1),
            store=LocalStore(root, fsync=False),
        )

    threads = [threading.Thread(target=run, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [reports[0], reports[1]]


def test_concurrent_archivers_add_up_to_the_store(cluster: Cluster, tmp_path: Path) -> None:
    for round_ in range(2):  # a fresh store each round: the runs race on every segment
        root = tmp_path / f"store-{round_}"
        reports = _race(cluster, root)
        assert all(r.ok for r in reports)
        manifests, data, size = _store_totals(LocalStore(root, fsync=False))
        assert manifests > 0
        assert _report_totals(reports) == (manifests, data, size)
        # every segment is archived by exactly one run; the other says it already was
        for r in reports:
            assert r.segments_archived + r.skipped.get("already_archived", 0) == manifests
