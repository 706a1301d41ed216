"""The archive's manifests as :class:`~kafka_archive.catalog.build.SegmentRef` s.

Listing is one pass over the store (manifest keys carry cluster, topic and partition), so the
build can skip manifests it has cataloged before without fetching them; only new manifests are
read (concurrently: on S3 each read is a round trip).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, NamedTuple

from kafka_archive.archive.layout import cluster_prefix, parse_manifest_key
from kafka_archive.archive.manifest import SegmentManifest, read_manifest
from kafka_archive.store import LocalStore, ObjectStore

if TYPE_CHECKING:
    from kafka_archive.catalog.build import SegmentRef

__all__ = ["ListedManifest", "list_manifests", "read_refs", "ref_from_manifest"]


class ListedManifest(NamedTuple):
    """A manifest key and what its name says."""

    key: str
    cluster: str
    topic: str
    partition: int


def list_manifests(store: ObjectStore, cluster: str | None) -> Iterator[ListedManifest]:
    """Every manifest of ``cluster`` (of every cluster when ``None``), in key order."""
    prefix = cluster_prefix(cluster) if cluster is not None else ""
    for obj in store.list(prefix):
        parsed = parse_manifest_key(obj.key)
        if parsed is None or (cluster is not None and parsed.cluster != cluster):
            continue
        yield ListedManifest(obj.key, parsed.cluster, parsed.topic, parsed.partition)


def ref_from_manifest(m: SegmentManifest, key: str) -> SegmentRef:
    from kafka_archive.catalog.build import SegmentRef

    log = m.log_file
    return SegmentRef(
        cluster=m.cluster,
        topic=m.topic,
        partition=m.partition,
        manifest_key=key,
        object_key=log.key,
        size=log.size,
        sha256=log.sha256,
        crc32c=log.crc32c,
        base_offset=m.base_offset,
        archived_at_ms=int(m.archived_at.timestamp() * 1000),
        broker_id=m.source.broker_id,
        log_dir=m.source.log_dir,
        end_offset=m.end_offset,
    )


def read_refs(
    store: ObjectStore, listed: Iterable[ListedManifest], *, threads: int | None = None
) -> list[SegmentRef]:
    """Fetch and parse the given manifests: concurrently from a remote store, where each read
    is a round trip (default 16 threads); one after the other from a local one, where the
    work is parsing and threads only contend for the GIL (measured: 68 manifests in ~9 ms on
    one thread, 9-25 ms on 16)."""
    items = list(listed)
    if threads is None:
        threads = 1 if isinstance(store, LocalStore) else 16

    def one(item: ListedManifest) -> SegmentRef:
        return ref_from_manifest(read_manifest(store, item.key), item.key)

    if len(items) <= 1 or threads <= 1:
        return [one(i) for i in items]
    with ThreadPoolExecutor(min(threads, len(items))) as pool:
        return list(pool.map(one, items))
