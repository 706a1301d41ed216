"""Independent checks of an archive against the broker files it came from.

These do not reuse the archiver's own decisions: eligibility comes straight from the
checkpoint files and the partition listing, bytes are compared with the files on disk and
hashed with hashlib here.
"""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from cluster_data import Cluster, rolled_segments
from kafka_archive.archive import iter_manifests
from kafka_archive.archive.manifest import SegmentManifest
from kafka_archive.store import ObjectStore, StoredObject

from segment_lib.checkpoints import read_offset_checkpoint
from segment_lib.names import parse_partition_dir_name


def eligible_segments(
    cluster: Cluster, brokers: Collection[int] | None = None
) -> list[tuple[int, str, int, int, int, Path]]:
    """``(broker, topic, partition, base, end, log path)`` of every rolled segment whose range
    is below the recovery point and the high watermark (read from the checkpoint files)."""
    out = []
    for broker, d in cluster.all_targets():
        if brokers is not None and broker not in brokers:
            continue
        log_dir = Path(d)
        rp = read_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint")
        hw = read_offset_checkpoint(log_dir / "replication-offset-checkpoint")
        for p in sorted(log_dir.iterdir()):
            if not p.is_dir():
                continue
            name = parse_partition_dir_name(p.name)
            if name.state is not None:
                continue
            key = (name.topic, name.partition)
            for base, end, log in rolled_segments(p):
                if key in rp and key in hw and end <= min(rp[key], hw[key]) and end > base:
                    out.append((broker, name.topic, name.partition, base, end, log))
    return out


def check_archive(
    store: ObjectStore,
    cluster: Cluster,
    cluster_name: str,
    brokers: Collection[int] | None = None,
) -> list[SegmentManifest]:
    """Assert: nothing lost, nothing duplicated, every object equal to its source bytes.

    * every manifest's files are in the store with exactly the bytes of the broker file they
      were copied from (compared byte for byte and by a SHA-256 computed here);
    * no two manifests describe the same bytes of the same segment;
    * every eligible rolled segment of every replica (of ``brokers``, default all) is archived:
      its exact bytes have a manifest, or its whole offset range is covered by archived
      segments of its partition.
    """
    manifests = list(iter_manifests(store, cluster_name))
    seen = set()
    newest: dict[tuple[str, str, int], SegmentManifest] = {}
    for m in manifests:
        ident = (m.topic, m.partition, m.base_offset, m.segment_sha256)
        assert ident not in seen, f"duplicate manifest for {ident}"
        seen.add(ident)
        for f in m.files:
            stored = store.get_bytes(f.key)
            assert hashlib.sha256(stored).hexdigest() == f.sha256, f.key
            assert len(stored) == f.size
        src = (m.source.log_dir, m.source.partition_dir, m.base_offset)
        if src not in newest or newest[src].archived_at < m.archived_at:
            newest[src] = m
    # The newest version archived from each broker file must hold exactly that file's bytes
    # (older versions were rewritten by compaction since; their bytes were checked above
    # against the SHA-256 recorded when they were read).
    eligible = {log for *_, log in eligible_segments(cluster)}
    for m in newest.values():
        src_dir = Path(m.source.log_dir) / m.source.partition_dir
        if src_dir / m.log_file.name not in eligible:
            continue  # since deleted, emptied by compaction, or not flushed
        for f in m.files:
            path = src_dir / f.name
            if path.exists():
                assert store.get_bytes(f.key) == path.read_bytes(), f"{f.key} != {path}"
    by_partition: dict[tuple[str, int], list[SegmentManifest]] = defaultdict(list)
    for m in manifests:
        by_partition[(m.topic, m.partition)].append(m)
    for broker, topic, partition, base, end, log in eligible_segments(cluster, brokers):
        ms = by_partition.get((topic, partition), [])
        sha = hashlib.sha256(log.read_bytes()).hexdigest()
        if any(m.base_offset == base and m.segment_sha256 == sha for m in ms):
            continue
        pos = base
        for m in sorted(ms, key=lambda m: m.base_offset):
            if m.base_offset <= pos < m.end_offset:
                pos = m.end_offset
        assert pos >= end, (
            f"broker {broker} {topic}-{partition} [{base}, {end}) is neither archived nor "
            f"covered (covered up to {pos})"
        )
    return manifests


def snapshot(store: ObjectStore) -> dict[str, tuple[int, str | None]]:
    """Every key with its size and ETag (a rewrite changes the ETag)."""
    return {o.key: (o.size, o.etag) for o in store.list("")}


class CountingStore:
    """Wraps a store and counts the writes that really created objects."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.created: list[str] = []
        self.writes: list[str] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def uri(self) -> str:
        return self.inner.uri

    def put_if_absent(self, key: str, source: Any, **kw: Any) -> tuple[StoredObject, bool]:
        obj, created = self.inner.put_if_absent(key, source, **kw)
        with self._lock:
            if created:
                self.created.append(key)
        return obj, created

    def put_file(self, key: str, path: Any, **kw: Any) -> StoredObject:
        with self._lock:
            self.writes.append(key)
        return self.inner.put_file(key, path, **kw)

    def put_bytes(self, key: str, data: bytes, **kw: Any) -> StoredObject:
        with self._lock:
            self.writes.append(key)
        return self.inner.put_bytes(key, data, **kw)

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        return self.inner.list(prefix)


def count_by_reason(skipped: Mapping[str, int], reason: str) -> int:
    return int(skipped.get(reason, 0))
