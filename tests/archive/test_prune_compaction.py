"""Retention on an archive holding compaction rewrites: every version of the same offsets goes
together, and a partial prune never cuts through a version (tests/test_prune.py has the rest).

The archive is the archive tests' three-broker cluster, archived, then its ``state-0``
compacted by the writer's log cleaner (same base offsets, new bytes: new versions beside the
old ones, with ``supersedes``) and archived again."""

from __future__ import annotations

import shutil
from pathlib import Path

from archive_helpers import archive_cluster
from cluster_data import CLUSTER, Cluster, build_cluster, sync_tree
from kafka_archive.catalog.build import InProcessRunner, build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.models import Partition, PrunedRange, Segment
from kafka_archive.catalog.prune import prune
from kafka_archive.catalog.retention import RetentionPolicy
from kafka_archive.store import LocalStore
from sqlalchemy import select


def _state_rows(db: str) -> list[Segment]:
    with open_catalog(db) as cat, cat.session() as s:
        return list(
            s.execute(
                select(Segment)
                .join(Partition, Partition.id == Segment.partition_id)
                .where(Partition.topic == "state", Partition.partition == 0)
                .order_by(Segment.base_offset, Segment.id)
            ).scalars()
        )


def _span(x: Segment) -> tuple[int, int]:
    lo = x.base_offset if x.first_offset < 0 else min(x.base_offset, x.first_offset)
    return lo, max(x.last_offset, x.end_offset - 1, x.base_offset)


def test_every_version_of_compacted_offsets_goes_together(
    cluster: Cluster, local_store: LocalStore, tmp_path: Path
) -> None:
    archive_cluster(cluster, local_store)
    sync_tree(build_cluster(tmp_path / "compacted", compact=True).root, cluster.root)
    archive_cluster(cluster, local_store)
    db = str(tmp_path / "catalog.db")
    with open_catalog(db, create=True) as cat:
        build_catalog(cat, local_store.uri, runner=InProcessRunner())
    rows = _state_rows(db)
    bases = [x.base_offset for x in rows]
    assert len(bases) > len(set(bases)), "no compaction rewrite in the archive"
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "store", copy / "store")
    shutil.copy(db, copy / "catalog.db")

    # half the topic's bytes: the cut falls between units, never through a version
    total = sum(x.size_bytes for x in rows)
    with open_catalog(db) as cat:
        report = prune(
            cat, local_store, [RetentionPolicy(name="half", topic="state", max_bytes=total // 2)]
        )
    [pruned] = report.ranges
    after = _state_rows(db)
    gone = [x for x in after if x.status == "pruned"]
    kept = [x for x in after if x.status != "pruned"]
    assert gone and kept
    assert all(_span(x)[1] <= pruned.last_offset for x in gone)
    assert all(_span(x)[0] > pruned.last_offset for x in kept)
    # every version at a pruned base offset went: the rewrite and the version it superseded
    assert {x.base_offset for x in gone}.isdisjoint({x.base_offset for x in kept})
    for x in gone:
        assert not local_store.exists(x.object_key) and not local_store.exists(x.manifest_key)
    for x in kept:
        assert local_store.exists(x.object_key) and local_store.exists(x.manifest_key)

    # everything: no object of state-0 is left but its watermark
    store2 = LocalStore(copy / "store", fsync=False)
    with open_catalog(str(copy / "catalog.db")) as cat:
        prune(cat, store2, [RetentionPolicy(name="all", topic="state", max_bytes=1)])
        with cat.session() as s:
            [row] = s.execute(select(PrunedRange)).scalars().all()
    assert (row.first_offset, row.segments, row.status) == (0, len(rows), "done")
    left = sorted(o.key for o in store2.list(f"{CLUSTER}/state/0/"))
    assert left == [f"{CLUSTER}/state/0/manifests/pruned.json"]
