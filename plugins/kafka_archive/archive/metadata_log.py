"""Reading back the archived KRaft metadata log of one cluster, in offset order.

:func:`iter_archived_metadata` yields every archived metadata entry of a cluster
(:class:`~segment_lib.cluster_metadata.MetadataEntry`: decoded metadata records and KRaft
control records) so that replaying them in order rebuilds the cluster's metadata:

* **The log.** Every archived ``__cluster_metadata`` segment (from any node: each controller
  and combined node rolls its own copy of the Raft log at its own offsets) is read in base
  offset order and each offset is yielded once. The Raft log is replicated: a committed offset
  holds the same record on every node, so de-duplicating by offset is exact.
* **A snapshot first, when the log's start is gone.** If the archived log does not reach back
  to offset 0 (or to ``after_offset + 1``), the state before it is only in a snapshot: the
  newest archived snapshot whose end offset ``E`` lies within the archived log's contiguous
  range that reaches the newest offset (so no record between the snapshot and the log is
  missing) is yielded first, then the log's records from ``E`` on. A snapshot's records are
  yielded with ``snapshot_id`` set, ``offset`` ``E - 1`` (the state they hold is that after
  offset ``E - 1``; inside a snapshot file they carry the snapshot's own positions) and
  ``timestamp_ms`` its header's ``lastContainedLogTimestamp``. Without a usable snapshot the
  log is yielded from its first archived offset, and :class:`MetadataGap` describes the hole
  (``gaps`` of :func:`metadata_coverage`).

Every archived object read is checked against its manifest's SHA-256 and its batches' CRCs.
**A damaged object does not hide the rest** (given a ``damaged`` list): a segment or snapshot
whose bytes fail a check is recorded there (:class:`DamagedMetadataObject`: its key, the
offsets it should have given, why) and skipped; another node's copy of the same offsets is read
instead when one is archived, else the history goes on after the hole (which the history build
reports as a gap). A damaged snapshot is replaced by the next usable one, or by the log from its
first archived offset.
Objects are read one at a time, whole (mapped from a local store, in memory from S3: a
metadata segment is at most ``metadata.log.segment.bytes``, 1 GiB by default, and usually a few
MiB). SCRAM secrets are never decoded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import NamedTuple

from kafka_archive.archive.digests import digest_buffer
from kafka_archive.archive.discovery import METADATA_TOPIC
from kafka_archive.archive.manifest import SegmentManifest, iter_manifests
from kafka_archive.archive.metadata_snapshots import (
    SnapshotManifest,
    parse_snapshot_manifest,
    snapshot_manifest_prefix,
)
from kafka_archive.store import ObjectStore
from segment_lib.cluster_metadata import MetadataEntry
from segment_lib.cluster_metadata.files import iter_metadata_buffer
from segment_lib.log_file import LogBuffer

__all__ = [
    "DamagedMetadataObject",
    "MetadataCoverage",
    "MetadataGap",
    "iter_archived_metadata",
    "metadata_coverage",
]


class MetadataGap(NamedTuple):
    """Offsets ``[start, end)`` of the metadata log that no archived segment holds."""

    start: int
    end: int


class DamagedMetadataObject(NamedTuple):
    """An archived metadata segment or snapshot skipped because its bytes failed a check.

    ``first_offset``..``last_offset`` (inclusive) are the offsets it should have given that
    were not read from it (a snapshot: the offset its state stands for); ``reason`` names the
    check and the byte when known."""

    key: str
    kind: str  # "segment" | "snapshot"
    first_offset: int
    last_offset: int
    reason: str
    position: int | None = None


class MetadataCoverage(NamedTuple):
    """What :func:`iter_archived_metadata` will read: the snapshot it starts from (or None),
    the segments after it, and the holes of the archived log."""

    snapshot: SnapshotManifest | None
    segments: list[SegmentManifest]
    gaps: list[MetadataGap]


def _snapshots(store: ObjectStore, cluster: str) -> list[SnapshotManifest]:
    out = []
    for obj in store.list(snapshot_manifest_prefix(cluster)):
        if obj.key.endswith(".json"):
            out.append(parse_snapshot_manifest(store.get_bytes(obj.key), key=obj.key))
    return out


def _segments(store: ObjectStore, cluster: str) -> list[SegmentManifest]:
    found = [m for m in iter_manifests(store, cluster, METADATA_TOPIC, 0) if m.last_offset >= 0]
    return sorted(found, key=lambda m: (m.base_offset, m.end_offset))


def metadata_coverage(
    store: ObjectStore,
    cluster: str,
    *,
    after_offset: int | None = None,
    exclude: frozenset[str] = frozenset(),
) -> MetadataCoverage:
    """The plan of :func:`iter_archived_metadata` (see the module docstring); the snapshots
    whose object key is in ``exclude`` (found damaged) are not chosen."""
    segments = _segments(store, cluster)
    start = 0 if after_offset is None else after_offset + 1
    # contiguous runs of archived offsets [lo, hi)
    runs: list[list[int]] = []
    for m in segments:
        lo, hi = m.base_offset, m.end_offset
        if runs and lo <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], hi)
        else:
            runs.append([lo, hi])
    gaps: list[MetadataGap] = []
    cursor = start
    for lo, hi in runs:
        if hi <= cursor:
            continue
        if lo > cursor:
            gaps.append(MetadataGap(cursor, lo))
        cursor = hi
    snapshot: SnapshotManifest | None = None
    if gaps and runs:
        lo, hi = runs[-1]
        usable = [
            s
            for s in _snapshots(store, cluster)
            if lo <= s.end_offset <= hi and s.key not in exclude
        ]
        if usable:
            snapshot = max(usable, key=lambda s: (s.end_offset, s.archived_at))
            gaps = [g for g in gaps if g.start >= snapshot.end_offset]
    elif not runs:
        every = [s for s in _snapshots(store, cluster) if s.key not in exclude]
        if every and (after_offset is None or max(s.end_offset for s in every) > start):
            snapshot = max(every, key=lambda s: (s.end_offset, s.archived_at))
    first = snapshot.end_offset if snapshot is not None else start
    return MetadataCoverage(snapshot, [m for m in segments if m.end_offset > first], gaps)


def _read(store: ObjectStore, key: str, size: int, sha256: str) -> memoryview:
    """The object's bytes (mapped, not copied, from a local store), checked against the
    manifest's SHA-256."""
    data = store.get_range_view(key, 0, size)
    if digest_buffer(data).sha256 != sha256:
        raise ValueError(f"{key}: the stored bytes do not match the manifest's SHA-256")
    return data


def _entries(data: memoryview, where: str, snapshot_id: str | None) -> Iterator[MetadataEntry]:
    with LogBuffer(data, where) as log:
        yield from iter_metadata_buffer(log, snapshot_id=snapshot_id)


def iter_archived_metadata(
    store: ObjectStore,
    cluster: str,
    *,
    after_offset: int | None = None,
    damaged: list[DamagedMetadataObject] | None = None,
) -> Iterator[MetadataEntry]:
    """Every archived metadata entry of ``cluster`` in offset order, de-duplicated across
    nodes; a snapshot first where the log's start is not archived (module docstring).
    ``after_offset``: only entries after it (an incremental build). ``damaged``: where a
    damaged object is recorded and skipped (module docstring); without it the first one
    raises.

    Raises:
        SegmentError: an archived object is damaged (CRC, framing), naming it and the byte
            (only without ``damaged``).
        ValueError: an object's bytes do not match its manifest (only without ``damaged``),
            or a snapshot manifest is unreadable.
    """
    from segment_lib.errors import SegmentError

    bad_snapshots: set[str] = set()
    while True:
        plan = metadata_coverage(
            store, cluster, after_offset=after_offset, exclude=frozenset(bad_snapshots)
        )
        snap = plan.snapshot
        if snap is None:
            break
        sid = f"{snap.end_offset}-{snap.epoch}"
        at = snap.end_offset - 1
        try:
            # read whole before yielding: a snapshot is one state, never applied in part
            data = _read(store, snap.key, snap.size, snap.sha256)
            snapshot_entries = list(_entries(data, snap.key, sid))
        except (SegmentError, ValueError) as exc:
            if damaged is None:
                raise
            damaged.append(_damaged(snap.key, "snapshot", at, at, exc))
            bad_snapshots.add(snap.key)
            continue
        for e in snapshot_entries:
            yield dataclasses.replace(e, offset=at, timestamp_ms=snap.last_contained_log_timestamp)
        break
    last = -1 if after_offset is None else after_offset
    if snap is not None:
        last = max(last, snap.end_offset - 1)
    for m in plan.segments:
        log_file = m.log_file
        if m.end_offset <= last + 1:
            continue
        try:
            data = _read(store, log_file.key, log_file.size, log_file.sha256)
            for e in _entries(data, log_file.key, None):
                if e.offset > last:
                    yield e
                    last = e.offset
        except (SegmentError, ValueError) as exc:
            if damaged is None:
                raise
            # the entries before the damage were checked (per batch) and are kept
            damaged.append(_damaged(log_file.key, "segment", last + 1, m.end_offset - 1, exc))


def _damaged(key: str, kind: str, first: int, last: int, exc: Exception) -> DamagedMetadataObject:
    position = getattr(exc, "position", None)
    return DamagedMetadataObject(
        key,
        kind,
        first,
        max(first, last),
        f"{type(exc).__name__}: {exc}",
        position if isinstance(position, int) else None,
    )
