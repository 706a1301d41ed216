"""The metadata history built from ``__cluster_metadata`` logs real brokers wrote (the shared
fixtures), checked against what the same brokers wrote elsewhere: every partition directory's
``partition.metadata`` names a topic id that the history holds, under the directory's topic
name, alive at the end; and a build that starts from a ``.checkpoint`` snapshot reaches the
same state as the build from the whole log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_archive.catalog.db import open_catalog
from kafka_archive.metadata_history.apply import apply_entries, load_state
from kafka_archive.metadata_history.state import ClusterState

from segment_lib.cluster_metadata import MetadataEntry, iter_metadata_file, parse_snapshot_name


def _metadata_dirs(root: Path) -> list[Path]:
    """The metadata log directories with records (some fixtures hold an empty log)."""
    return sorted(
        p
        for p in root.rglob("__cluster_metadata-0")
        if any(f.stat().st_size for f in p.glob("*.log"))
    )


def _log_entries(meta: Path, after: int = -1) -> Iterator[MetadataEntry]:
    for seg in sorted(meta.glob("*.log")):
        for e in iter_metadata_file(seg, allow_torn_tail=True):
            if e.offset >= after:
                yield e


def _build(tmp: Path, entries: Iterator[MetadataEntry]) -> ClusterState:
    with open_catalog(tmp, create=True) as cat, cat.engine.begin() as conn:
        report = apply_entries(conn, "fx", entries)
        assert report.gaps == []
        return load_state(conn, "fx")


def _topic_ids_on_disk(log_dir: Path) -> dict[str, str]:
    """``topic id -> topic`` of the partition directories beside the metadata log."""
    out = {}
    for pm in log_dir.glob("*/partition.metadata"):
        name = pm.parent.name
        if name.endswith(("-delete", "-future", "-stray")) or name.startswith("__cluster_metadata"):
            continue
        fields = dict(line.split(": ", 1) for line in pm.read_text().splitlines() if ": " in line)
        out[fields["topic_id"]] = name.rsplit("-", 1)[0]
    return out


def test_history_agrees_with_the_brokers_partition_dirs(
    real_broker_data: Path, tmp_path: Path
) -> None:
    dirs = _metadata_dirs(real_broker_data)
    assert dirs, "no __cluster_metadata log in the fixtures"
    checked = 0
    for n, meta in enumerate(dirs):
        state = _build(tmp_path / f"{n}.db", _log_entries(meta))
        on_disk = _topic_ids_on_disk(meta.parent)
        for topic_id, topic in on_disk.items():
            assert state.topics.get(topic_id) == topic, (meta, topic, topic_id)
            checked += 1
        for (topic_id, _p), info in state.partitions.items():
            assert topic_id in state.topics and info.replicas
    assert checked > 0


def _from_snapshot(meta: Path, snapshot: Path, end: int) -> Iterator[MetadataEntry]:
    """The snapshot's records, then the log's from the snapshot's end offset on."""
    yield from iter_metadata_file(snapshot)
    yield from _log_entries(meta, after=end)


def test_a_build_from_a_snapshot_reaches_the_same_state(
    real_broker_data: Path, tmp_path: Path
) -> None:
    with_snapshots = [m for m in _metadata_dirs(real_broker_data) if any(m.glob("*.checkpoint"))]
    if not with_snapshots:
        pytest.fail("no fixture metadata log with a .checkpoint snapshot")
    for n, meta in enumerate(with_snapshots):
        snaps = sorted(
            (p for p in meta.glob("*.checkpoint") if parse_snapshot_name(p.name)),
            key=lambda p: parse_snapshot_name(p.name) or (0, 0),
        )
        latest = snaps[-1]
        end, _epoch = parse_snapshot_name(latest.name) or (0, 0)
        whole = _build(tmp_path / f"whole{n}.db", _log_entries(meta))

        assert _build(tmp_path / f"snap{n}.db", _from_snapshot(meta, latest, end)) == whole
