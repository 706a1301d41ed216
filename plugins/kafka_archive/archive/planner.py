"""Planning: which replica's segment archives each offset range, exactly once.

:func:`plan_cluster` takes the discoveries of one cluster's log dirs (all brokers in the DAG; a
single broker from the CLI) and what the store already holds, and returns an
:class:`ArchivePlan`: per log dir the segments to upload (:class:`SegmentTask`, with the
overlaps and earlier versions recorded for its manifest) and every candidate it decided not to
upload, with the reason.

Rules, per partition (all deterministic, so every planner reaches the same plan for the same
inputs):

1. **Same bytes, once.** A candidate whose manifest key (base offset + SHA-256 of its ``.log``)
   exists is ``already_archived``, whichever replica it came from.
2. **Replica choice.** The remaining candidates are taken in the order *lowest broker id, then
   log dir, then base offset* (known-corrupt ones last). A candidate whose whole range
   ``[base_offset, end_offset)`` is already covered - by archived manifests or by segments
   chosen earlier in this plan - is skipped as ``other_replica`` (or ``already_archived`` when
   the covering segments are its own broker's). Otherwise it is archived, and every archived or
   chosen segment intersecting its range is recorded in its manifest's ``overlaps`` (and, for
   segments chosen in the same plan, the overlap is recorded on both sides). So a range is
   archived once; data that only one replica still holds (e.g. after retention on the others)
   is archived from it, with the partial overlap visible.
3. **Compaction rewrites are versions.** A candidate with the *same base offset* as an archived
   segment of the *same broker* but different bytes is that broker's log cleaner output: it is
   archived as a new version (new keys beside the old ones) and ``supersedes`` lists the
   versions it replaces (the same broker's archived segments inside its range). The same
   partition compacted independently on other brokers is ``other_replica``: a range's versions
   follow the broker that archived it first.
4. **Quarantine.** A candidate whose bytes were quarantined as corrupt by an earlier run is
   planned last; if other replicas cover its range it is skipped (``quarantined_replaced``),
   else it is planned again so that its task reports the failure again (the uploader re-detects
   the corruption and does not re-upload the quarantined bytes).

Manifests are read lazily: a partition's manifest keys are listed once; contents are fetched
only for keys with a candidate's base offset (rewrite detection) and, when the in-memory
coverage does not settle a candidate, for keys below its end offset. A
:class:`~kafka_archive.archive.manifest_cache.ManifestCache` avoids fetching any manifest twice.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import Field

from kafka_archive.archive.discovery import (
    LogDirDiscovery,
    SegmentCandidate,
    SkippedItem,
    SkipReason,
)
from kafka_archive.archive.layout import (
    QUARANTINE_ERROR_FILE,
    ManifestKey,
    manifest_key,
    manifest_prefix,
    parse_manifest_key,
    pruned_marker_key,
    quarantine_partition_prefix,
    sha16,
)
from kafka_archive.archive.manifest import InvalidManifest, ManifestOverlap, utc_now
from kafka_archive.archive.manifest_cache import ManifestCache
from kafka_archive.archive.pruned import Watermark, parse_watermark
from kafka_archive.frozen import FrozenModel
from kafka_archive.store import ObjectStore

__all__ = [
    "ArchivePlan",
    "LogDirPlan",
    "SegmentTask",
    "plan_cluster",
]

log = logging.getLogger(__name__)


class SegmentTask(FrozenModel):
    """Upload one segment; ``overlaps``/``supersedes`` go into its manifest."""

    candidate: SegmentCandidate
    manifest_key: str
    overlaps: list[ManifestOverlap] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)
    #: an earlier run quarantined these bytes (the upload is expected to fail again)
    known_corrupt: bool = False


class LogDirPlan(FrozenModel):
    """The uploads assigned to one broker log dir (one mapped archive task)."""

    cluster: str
    broker_id: int
    log_dir: str
    tasks: list[SegmentTask] = Field(default_factory=list)


class ArchivePlan(FrozenModel):
    """The plan for one cluster."""

    cluster: str
    store_uri: str
    planned_at: datetime
    log_dirs: list[LogDirPlan]
    skipped: list[SkippedItem] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    manifests_listed: int = 0
    manifests_fetched: int = 0

    def for_log_dir(self, broker_id: int, log_dir: str) -> LogDirPlan:
        for p in self.log_dirs:
            if p.broker_id == broker_id and p.log_dir == log_dir:
                return p
        return LogDirPlan(cluster=self.cluster, broker_id=broker_id, log_dir=log_dir)


@dataclass(slots=True)
class _Entry:
    """A range known to be archived (``planned=False``) or chosen in this plan."""

    base: int
    end: int
    broker_id: int | None
    sha256: str | None
    key: str
    planned: bool
    overlaps: list[ManifestOverlap] = field(default_factory=list)
    #: the topic id of the partition directory (``None``: unknown); ranges of another topic
    #: id are another incarnation of the topic (deleted and re-created), never a replica
    topic_id: str | None = None


def _covered(base: int, end: int, entries: Iterable[_Entry]) -> bool:
    """Whether the union of the entries' ``[base, end)`` ranges contains ``[base, end)``."""
    pos = base
    for e in sorted(entries, key=lambda e: e.base):
        if e.base > pos:
            break
        pos = max(pos, e.end)
        if pos >= end:
            return True
    return pos >= end


class _PartitionIndex:
    """The archived manifests of one partition: keys listed once, contents on demand."""

    def __init__(
        self, store: ObjectStore, cache: ManifestCache, cluster: str, topic: str, partition: int
    ) -> None:
        self.store = store
        self.cache = cache
        self.keys: list[ManifestKey] = []
        marker = pruned_marker_key(cluster, topic, partition)
        #: offsets below this were pruned by retention (:mod:`kafka_archive.archive.pruned`)
        self.watermark: Watermark | None = None
        for obj in store.list(manifest_prefix(cluster, topic, partition)):
            mk = parse_manifest_key(obj.key)
            if mk is not None:
                self.keys.append(mk)
            elif obj.key == marker:  # listed anyway: read only where something was pruned
                self.watermark = parse_watermark(store.get_bytes(marker))
        self.key_set = {k.key for k in self.keys}
        self.loaded: dict[str, _Entry | None] = {}
        self.warnings: list[str] = []

    def load(self, keys: Iterable[ManifestKey]) -> list[_Entry]:
        out = []
        for mk in keys:
            if mk.key not in self.loaded:
                try:
                    m = self.cache.get(self.store, mk.key)
                    self.loaded[mk.key] = _Entry(
                        m.base_offset,
                        m.end_offset,
                        m.source.broker_id,
                        m.segment_sha256,
                        mk.key,
                        planned=False,
                        topic_id=m.topic_id,
                    )
                except InvalidManifest as exc:
                    self.warnings.append(f"ignoring unreadable manifest: {exc}")
                    self.loaded[mk.key] = None
            entry = self.loaded[mk.key]
            if entry is not None:
                out.append(entry)
        return out


def _quarantined(store: ObjectStore, cluster: str, topic: str, partition: int) -> set[str]:
    """``<base:020d>-<sha16>`` names of this partition's quarantined segments."""
    prefix = quarantine_partition_prefix(cluster, topic, partition)
    out = set()
    for obj in store.list(prefix):
        rest = obj.key[len(prefix) :]
        name, _, file = rest.partition("/")
        if file == QUARANTINE_ERROR_FILE:
            out.add(name)
    return out


def _overlap(c: SegmentCandidate, e: _Entry) -> ManifestOverlap:
    return ManifestOverlap(
        manifest_key=e.key,
        broker_id=e.broker_id,
        base_offset=e.base,
        end_offset=e.end,
        relation="previous_version" if e.broker_id == c.broker_id else "replica",
        overlap_start=max(c.base_offset, e.base),
        overlap_end=min(c.end_offset, e.end),
    )


def _relations(c: SegmentCandidate, entries: Iterable[_Entry]) -> tuple[list[_Entry], list[_Entry]]:
    """Entries intersecting ``c``'s range, and those of them ``c`` is a compaction rewrite of
    (archived by the same broker at the same base offset, with other bytes). Entries of
    another topic id are another incarnation of the topic: their offsets are other records,
    so they neither cover nor overlap ``c``."""
    intersecting = [
        e
        for e in entries
        if e.base < c.end_offset
        and e.end > c.base_offset
        and (e.topic_id is None or c.topic_id is None or e.topic_id == c.topic_id)
    ]
    rewrite_of = [
        e
        for e in intersecting
        if not e.planned
        and e.broker_id == c.broker_id
        and e.base == c.base_offset
        and e.sha256 != c.log_sha256
    ]
    return intersecting, rewrite_of


def _skip(c: SegmentCandidate, reason: SkipReason, detail: str, key: str | None) -> SkippedItem:
    return SkippedItem(
        reason=reason,
        path=str(c.log_path),
        detail=detail,
        cluster=c.cluster,
        broker_id=c.broker_id,
        log_dir=c.log_dir,
        topic=c.topic,
        partition=c.partition,
        base_offset=c.base_offset,
        end_offset=c.end_offset,
        size=c.log.size,
        mtime_ms=c.mtime_ms,
        manifest_key=key,
    )


def _plan_partition(
    store: ObjectStore,
    cache: ManifestCache,
    cluster: str,
    topic: str,
    partition: int,
    candidates: Sequence[SegmentCandidate],
    tasks: dict[tuple[int, str], list[SegmentTask]],
    skipped: list[SkippedItem],
) -> _PartitionIndex:
    index = _PartitionIndex(store, cache, cluster, topic, partition)
    quarantined = _quarantined(store, cluster, topic, partition)
    entries: dict[str, _Entry] = {}
    rest: list[SegmentCandidate] = []
    mark = index.watermark
    for c in candidates:
        key = manifest_key(cluster, topic, partition, c.base_offset, c.log_sha256)
        if mark is not None and c.end_offset <= mark.pruned_before:
            detail = (
                f"offsets [{c.base_offset}, {c.end_offset}) were pruned from the archive by "
                f"retention policy {mark.policy}"
            )
            skipped.append(_skip(c, SkipReason.PRUNED, detail, None))
            continue
        if key in index.key_set:
            skipped.append(_skip(c, SkipReason.ALREADY_ARCHIVED, "manifest exists", key))
            # Same bytes as the archived segment: its range is covered (source unknown until
            # the manifest is fetched, which the coverage test does not need).
            entries.setdefault(
                key,
                _Entry(
                    c.base_offset,
                    c.end_offset,
                    None,
                    c.log_sha256,
                    key,
                    False,
                    topic_id=c.topic_id,
                ),
            )
        else:
            rest.append(c)

    def is_corrupt(c: SegmentCandidate) -> bool:
        return f"{c.base_offset:020d}-{sha16(c.log_sha256)}" in quarantined

    chosen: list[tuple[SegmentTask, _Entry]] = []
    for c in sorted(rest, key=lambda c: (is_corrupt(c), c.broker_id, c.log_dir, c.base_offset)):
        key = manifest_key(cluster, topic, partition, c.base_offset, c.log_sha256)
        # Versions at the same base offset decide whether this is a compaction rewrite.
        for e in index.load(k for k in index.keys if k.base_offset == c.base_offset):
            entries[e.key] = e
        intersecting, rewrite_of = _relations(c, entries.values())
        if rewrite_of or not _covered(c.base_offset, c.end_offset, intersecting):
            # In-memory knowledge does not settle it (or the segment will be archived and its
            # overlaps must be complete): consult every manifest that could intersect the
            # range (ends are only known from the manifests themselves).
            for e in index.load(k for k in index.keys if k.base_offset < c.end_offset):
                entries[e.key] = e
            intersecting, rewrite_of = _relations(c, entries.values())
        corrupt = is_corrupt(c)
        covered = _covered(c.base_offset, c.end_offset, intersecting)
        if corrupt and covered:
            skipped.append(
                _skip(
                    c,
                    SkipReason.QUARANTINED_REPLACED,
                    "quarantined earlier; its range is archived from another replica",
                    None,
                )
            )
            continue
        if not corrupt and not rewrite_of and covered:
            own = all(e.broker_id == c.broker_id for e in intersecting)
            detail = f"offsets [{c.base_offset}, {c.end_offset}) covered by " + ", ".join(
                sorted(e.key for e in intersecting)
            )
            reason = SkipReason.ALREADY_ARCHIVED if own else SkipReason.OTHER_REPLICA
            skipped.append(_skip(c, reason, detail, None))
            continue
        supersedes = sorted(
            e.key
            for e in intersecting
            if not e.planned
            and e.broker_id == c.broker_id
            and e.sha256 != c.log_sha256
            and c.base_offset <= e.base
            and e.end <= c.end_offset
        )
        entry = _Entry(
            c.base_offset, c.end_offset, c.broker_id, c.log_sha256, key, True, topic_id=c.topic_id
        )
        for e in intersecting:
            entry.overlaps.append(_overlap(c, e))
            if e.planned:
                e.overlaps.append(
                    ManifestOverlap(
                        manifest_key=key,
                        broker_id=c.broker_id,
                        base_offset=c.base_offset,
                        end_offset=c.end_offset,
                        relation="replica" if e.broker_id != c.broker_id else "previous_version",
                        overlap_start=max(c.base_offset, e.base),
                        overlap_end=min(c.end_offset, e.end),
                    )
                )
        entries[key] = entry
        task = SegmentTask(
            candidate=c, manifest_key=key, supersedes=supersedes, known_corrupt=corrupt
        )
        chosen.append((task, entry))
    for task, entry in chosen:
        c = task.candidate
        final = task.model_copy(
            update={"overlaps": sorted(entry.overlaps, key=lambda o: o.manifest_key)}
        )
        tasks[(c.broker_id, c.log_dir)].append(final)
    return index


def plan_cluster(
    cluster: str,
    discoveries: Sequence[LogDirDiscovery],
    store: ObjectStore,
    *,
    cache: ManifestCache | None = None,
) -> ArchivePlan:
    """Plan the uploads of one cluster from its log dirs' discoveries (see the module docs)."""
    cache = cache or ManifestCache(None)
    fetched_before = cache.fetched
    by_partition: dict[tuple[str, int], list[SegmentCandidate]] = defaultdict(list)
    for d in discoveries:
        if d.cluster != cluster:
            raise ValueError(f"discovery of cluster {d.cluster!r} passed to plan {cluster!r}")
        for c in d.candidates:
            by_partition[(c.topic, c.partition)].append(c)
    tasks: dict[tuple[int, str], list[SegmentTask]] = defaultdict(list)
    skipped: list[SkippedItem] = []
    warnings: list[str] = []
    listed = 0
    for (topic, partition), cands in sorted(by_partition.items()):
        index = _plan_partition(store, cache, cluster, topic, partition, cands, tasks, skipped)
        listed += len(index.keys)
        warnings.extend(index.warnings)
    log_dirs = [
        LogDirPlan(
            cluster=cluster,
            broker_id=d.broker_id,
            log_dir=d.log_dir,
            tasks=sorted(
                tasks.get((d.broker_id, d.log_dir), []),
                key=lambda t: (t.candidate.topic, t.candidate.partition, t.candidate.base_offset),
            ),
        )
        for d in sorted(discoveries, key=lambda d: (d.broker_id, d.log_dir))
    ]
    return ArchivePlan(
        cluster=cluster,
        store_uri=store.uri,
        planned_at=utc_now(),
        log_dirs=log_dirs,
        skipped=skipped,
        warnings=warnings,
        manifests_listed=listed,
        manifests_fetched=cache.fetched - fetched_before,
    )
