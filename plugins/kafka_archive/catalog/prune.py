"""Prune: delete what the retention policies select, record first, never what a job needs.

One prune, per topic a policy applies to (:mod:`kafka_archive.catalog.retention` says what
goes; :mod:`kafka_archive.catalog.leases` what must stay):

1. **Finish** what an earlier prune left ``planned`` (it died after recording, before or while
   deleting): delete the objects its row lists, mark it ``done``.
2. **Plan**: per partition, the prefix of units the policy selects, minus what a live lease
   holds; the object keys of every version in it, read from their manifests (the manifest
   first, then ``.log``, indexes, snapshot); keys a retained manifest also lists are kept.
3. **Record**, in one catalog transaction per partition: a ``pruned_ranges`` row (``planned``,
   with its object list), the segments marked ``pruned`` (rows kept), their chain pieces, time
   index intervals and histogram buckets removed, the time index's running maxima recomputed
   (the consumer-group commits decoded from a pruned ``__consumer_offsets`` segment stay: they
   are the groups' history, not records, so ``group-offsets`` keeps answering); then a last
   look for leases (a lease taken meanwhile rolls it back).
   From here on no query serves these offsets and ``catalog gaps`` says they were pruned.
4. **Delete**: first raise the partition's retention watermark in the store
   (:mod:`kafka_archive.archive.pruned`: the archiver never archives those offsets again, even
   while the broker still has them), then the objects (manifests first: a half-deleted segment
   is never discoverable). Versions the catalog does not know yet whose offsets all lie in the
   range go too (:func:`_uncataloged`), and a build never catalogs such a version later;
5. **Mark** the row ``done`` with ``pruned_at_ms``.

A crash anywhere leaves either nothing (before 3 commits) or a ``planned`` row whose objects
the next run deletes (deleting a key that is already gone is not an error): nothing is lost
that was not meant to go, nothing is recorded twice. ``dry_run`` does 1's listing and 2 only.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import delete, insert, select, text, update
from sqlalchemy.orm import Session

from kafka_archive import timeparse
from kafka_archive.catalog.coverage import refresh_partitions
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.leases import live_leases
from kafka_archive.catalog.models import (
    ChainPiece,
    HistogramBucket,
    Partition,
    PrunedRange,
    Segment,
    TimeIndexEntry,
)
from kafka_archive.catalog.prune_share import PruneNeedsConfirmation, TopicShare, over_limit
from kafka_archive.catalog.retention import (
    KEPT_INTERNAL,
    RetentionPolicy,
    Unit,
    VersionSpan,
    is_internal_topic,
    policy_for,
    select_units,
    units_of,
)
from kafka_archive.errors import InternalSignal
from kafka_archive.store import ObjectStore
from kafka_archive.timeparse import format_ms

__all__ = [
    "PartitionPrune",
    "PruneReport",
    "below_watermark",
    "plan_prune",
    "prune",
    "pruned_ranges",
    "pruned_watermarks",
]

#: called with one event dict per step (``kind``: ``completed``, ``pruned``, ``held``)
EventFn = Callable[[dict[str, Any]], None]


@dataclass(slots=True)
class PartitionPrune:
    """What one partition loses in this prune (one ``pruned_ranges`` row)."""

    cluster: str
    topic: str
    partition: int
    policy: str
    reason: str
    first_offset: int
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    segment_ids: list[int]
    objects: list[str]
    bytes: int
    status: str = "planned"
    pruned_at_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["segments"] = len(out.pop("segment_ids"))
        out["objects"] = len(self.objects)
        return out


@dataclass(slots=True)
class PruneReport:
    """What a prune did (or, ``dry_run``, would do)."""

    dry_run: bool
    ranges: list[PartitionPrune] = field(default_factory=list)
    completed: list[dict[str, Any]] = field(default_factory=list)
    held: list[dict[str, Any]] = field(default_factory=list)
    kept_topics: int = 0
    #: per topic the plan deletes from: its share (:mod:`kafka_archive.catalog.prune_share`)
    shares: list[TopicShare] = field(default_factory=list)
    #: a dry run's topics above the limit (a real run raises instead)
    needs_confirmation: list[TopicShare] = field(default_factory=list)
    #: internal topics (``__cluster_metadata``, ...) a catch-all policy matched but does not
    #: name: kept (:func:`kafka_archive.catalog.retention.policy_for`)
    kept_internal: list[dict[str, str]] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.ranges)

    @property
    def segments(self) -> int:
        return sum(len(r.segment_ids) for r in self.ranges)

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "segments": self.segments,
            "bytes": self.bytes,
            "objects": sum(len(r.objects) for r in self.ranges),
            "ranges": [r.to_json() for r in self.ranges],
            "completed": self.completed,
            "held": self.held,
            "kept_topics": self.kept_topics,
            "shares": [x.to_json() for x in self.shares],
            "needs_confirmation": [x.to_json() for x in self.needs_confirmation],
            "kept_internal": self.kept_internal,
        }


# ---------------------------------------------------------------------------------------------
# planning


def _span(s: Segment) -> VersionSpan:
    return VersionSpan(
        s.id,
        s.base_offset,
        s.end_offset,
        s.first_offset,
        s.last_offset,
        s.first_timestamp,
        s.max_timestamp,
        s.archived_at_ms,
        s.size_bytes,
    )


def _manifest_objects(store: ObjectStore, seg: Segment) -> tuple[list[str], list[str], int]:
    """(manifest keys, data keys, bytes) of one version, from its manifest; a manifest that
    cannot be read any more leaves the keys the catalog knows."""
    from kafka_archive.archive.manifest import read_manifest

    try:
        m = read_manifest(store, seg.manifest_key)
    except Exception:  # gone or unreadable: what the catalog knows is all there is
        return [seg.manifest_key], [seg.object_key], int(seg.size_bytes)
    return [seg.manifest_key], [f.key for f in m.files], m.total_bytes


def _topics(s: Session, cluster: str | None, topic: str | None) -> list[tuple[str, str]]:
    q = select(Partition.cluster, Partition.topic).distinct()
    if cluster is not None:
        q = q.where(Partition.cluster == cluster)
    if topic is not None:
        q = q.where(Partition.topic == topic)
    return [(str(c), str(t)) for c, t in s.execute(q.order_by(Partition.cluster, Partition.topic))]


def _uncataloged(
    store: ObjectStore, key: tuple[str, str, int], last: int, known: set[str]
) -> tuple[list[str], list[str], int]:
    """(manifest keys, data keys, bytes) of archived versions the catalog does not know (not
    built yet, or archived again after an earlier prune) whose offsets all lie at or below
    ``last``: they go with the range, or a build would serve pruned offsets again."""
    from kafka_archive.archive.layout import manifest_prefix, parse_manifest_key
    from kafka_archive.archive.manifest import read_manifest

    manifests: list[str] = []
    data: list[str] = []
    nbytes = 0
    for obj in store.list(manifest_prefix(*key)):
        mk = parse_manifest_key(obj.key)
        if mk is None or obj.key in known or mk.base_offset > last:
            continue
        try:
            m = read_manifest(store, obj.key)
        except Exception:  # unreadable: the catalog build records it as a problem
            continue
        if max(m.last_offset, m.end_offset - 1, m.base_offset) <= last:
            manifests.append(obj.key)
            data += [f.key for f in m.files]
            nbytes += m.total_bytes
    return manifests, data, nbytes


def _partition_plan(
    store: ObjectStore,
    policy: RetentionPolicy,
    key: tuple[str, str, int],
    chosen: Sequence[Unit],
    by_id: dict[int, Segment],
    retained: Sequence[Segment],
    known: set[str],
) -> PartitionPrune:
    cluster, topic, part = key
    ids = [v.segment_id for u in chosen for v in u.versions]
    manifests: list[str] = []
    data: list[str] = []
    nbytes = 0
    for sid in ids:
        mk, dk, n = _manifest_objects(store, by_id[sid])
        manifests += mk
        data += dk
        nbytes += n
    last = max(u.last_offset for u in chosen)
    mk, dk, n = _uncataloged(store, key, last, known)
    manifests += mk
    data += dk
    nbytes += n
    shared: set[str] = set()
    for seg in retained:  # content-addressed keys may be shared with a neighbour
        if seg.base_offset <= last + 1:
            shared.update(_manifest_objects(store, seg)[1])
    objects = list(dict.fromkeys(manifests + [k for k in data if k not in shared]))
    fts = [u.first_timestamp for u in chosen if u.first_timestamp >= 0]
    newest = max(u.newest_ms for u in chosen)
    return PartitionPrune(
        cluster,
        topic,
        part,
        policy.name,
        f"{policy.describe()} (newest record pruned: {format_ms(newest)})",
        min(u.first_offset for u in chosen),
        last,
        min(fts, default=-1),
        max(u.max_timestamp for u in chosen),
        ids,
        objects,
        nbytes,
    )


@dataclass(slots=True)
class _Plan:
    ranges: list[PartitionPrune] = field(default_factory=list)
    held: list[dict[str, Any]] = field(default_factory=list)
    kept: int = 0
    shares: list[TopicShare] = field(default_factory=list)
    kept_internal: list[dict[str, str]] = field(default_factory=list)


def plan_prune(
    catalog: Catalog,
    store: ObjectStore,
    policies: Sequence[RetentionPolicy],
    *,
    cluster: str | None = None,
    topic: str | None = None,
    now_ms: int | None = None,
) -> tuple[list[PartitionPrune], list[dict[str, Any]], int]:
    """What the policies delete now: per partition, one :class:`PartitionPrune`; the units
    leases hold (as dicts); and how many topics no policy (or ``keep_all``) lets shrink."""
    plan = _plan(catalog, store, policies, cluster=cluster, topic=topic, now_ms=now_ms)
    return plan.ranges, plan.held, plan.kept


def _plan(
    catalog: Catalog,
    store: ObjectStore,
    policies: Sequence[RetentionPolicy],
    *,
    cluster: str | None = None,
    topic: str | None = None,
    now_ms: int | None = None,
) -> _Plan:
    """:func:`plan_prune`, with each topic's share and the internal topics kept."""
    now = timeparse.now_ms() if now_ms is None else now_ms
    out = _Plan()
    plans = out.ranges
    held_out = out.held
    with catalog.session() as s:
        for c, t in _topics(s, cluster, topic):
            policy = policy_for(policies, c, t)
            if policy is None and is_internal_topic(t):
                unnamed = policy_for(policies, c, t, internal=True)
                if unnamed is not None and not unnamed.keep_all:
                    out.kept_internal.append(
                        {"cluster": c, "topic": t, "policy": unnamed.name, "reason": KEPT_INTERNAL}
                    )
            if policy is None or policy.keep_all:
                out.kept += 1
                continue
            rows = s.execute(
                select(Segment, Partition.partition)
                .join(Partition, Partition.id == Segment.partition_id)
                .where(Partition.cluster == c, Partition.topic == t, Segment.status != "pruned")
            ).all()
            known: dict[int, set[str]] = defaultdict(set)
            for mkey, part in s.execute(
                select(Segment.manifest_key, Partition.partition)
                .join(Partition, Partition.id == Segment.partition_id)
                .where(Partition.cluster == c, Partition.topic == t)
            ):
                known[int(part)].add(str(mkey))
            by_id: dict[int, Segment] = {}
            spans: dict[int, list[VersionSpan]] = defaultdict(list)
            for seg, part in rows:
                by_id[seg.id] = seg
                spans[int(part)].append(_span(seg))
            units = {p: units_of(p, vs) for p, vs in sorted(spans.items())}
            chosen, held = select_units(
                policy, units, now_ms=now, leased=live_leases(s, c, t, now_ms=now)
            )
            if chosen:
                out.shares.append(
                    TopicShare(
                        c,
                        t,
                        policy.name,
                        sum(u.log_bytes for us in chosen.values() for u in us),
                        sum(u.log_bytes for us in units.values() for u in us),
                    )
                )
            for p, u in sorted(held.items()):
                held_out.append(
                    {
                        "cluster": c,
                        "topic": t,
                        "partition": p,
                        "first_offset": u.first_offset,
                        "last_offset": u.last_offset,
                        "policy": policy.name,
                        "reason": "a running, queued or unfinished replay or an export holds a "
                        "lease on it (an unfinished replay keeps it until it completes or "
                        "`kafka-archive replay abandon ID` releases it)",
                    }
                )
            for p, us in sorted(chosen.items()):
                gone = {v.segment_id for u in us for v in u.versions}
                retained = [by_id[v.segment_id] for v in spans[p] if v.segment_id not in gone]
                plans.append(
                    _partition_plan(store, policy, (c, t, p), us, by_id, retained, known[p])
                )
    return out


# ---------------------------------------------------------------------------------------------
# acting


class _Leased(InternalSignal):
    """A lease was taken on the range while it was being recorded (rolls it back)."""


def _fix_running_max(s: Session, pid: int) -> None:
    """Recompute the partition's time-index running maxima from its (new) first interval."""
    rows = s.execute(
        select(TimeIndexEntry.start_offset, TimeIndexEntry.max_ts, TimeIndexEntry.running_max_ts)
        .where(TimeIndexEntry.partition_id == pid)
        .order_by(TimeIndexEntry.start_offset)
    ).all()
    cur = -1
    for so, mx, old in rows:
        cur = max(cur, int(mx))
        if int(old) != cur:
            s.execute(
                update(TimeIndexEntry)
                .where(TimeIndexEntry.partition_id == pid, TimeIndexEntry.start_offset == so)
                .values(running_max_ts=cur)
            )


def _record(catalog: Catalog, pp: PartitionPrune, now: int) -> int | None:
    """Step 3 (module docstring): the ``planned`` row and the catalog marked, in one
    transaction. ``None``: another prune recorded these segments first."""
    try:
        with catalog.session() as s, s.begin():
            pid = s.execute(
                select(Partition.id).where(
                    Partition.cluster == pp.cluster,
                    Partition.topic == pp.topic,
                    Partition.partition == pp.partition,
                )
            ).scalar_one()
            if s.get_bind().dialect.name == "postgresql":
                # the catalog build's lock on this partition, and no lease insert meanwhile
                s.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 7_340_000_000 + pid})
                s.execute(text("LOCK TABLE object_leases IN SHARE ROW EXCLUSIVE MODE"))
            ids = pp.segment_ids
            still = s.execute(
                select(Segment.id).where(Segment.id.in_(ids), Segment.status != "pruned")
            ).all()
            if len(still) != len(ids):
                return None
            # a version cataloged since the plan that holds offsets of the range would be left
            # serving pruned offsets: leave the partition to the next run (which plans it anew)
            sg = Segment
            newcomer = s.execute(
                select(sg.id)
                .where(
                    sg.partition_id == pid,
                    sg.status != "pruned",
                    sg.id.not_in(ids),
                    sg.base_offset <= pp.last_offset,
                    (sg.last_offset >= pp.first_offset) | (sg.end_offset > pp.first_offset),
                )
                .limit(1)
            ).first()
            if newcomer is not None:
                return None
            row_id = s.execute(
                insert(PrunedRange)
                .values(
                    cluster=pp.cluster,
                    topic=pp.topic,
                    partition=pp.partition,
                    first_offset=pp.first_offset,
                    last_offset=pp.last_offset,
                    first_timestamp=pp.first_timestamp,
                    max_timestamp=pp.max_timestamp,
                    policy=pp.policy,
                    reason=pp.reason,
                    segments=len(ids),
                    bytes=pp.bytes,
                    objects=json.dumps(pp.objects),
                    status="planned",
                    planned_at_ms=now,
                    pruned_at_ms=None,
                )
                .returning(PrunedRange.id)
            ).scalar_one()
            s.execute(update(Segment).where(Segment.id.in_(ids)).values(status="pruned"))
            for tbl in (TimeIndexEntry, HistogramBucket, ChainPiece):
                s.execute(delete(tbl).where(tbl.partition_id == pid, tbl.segment_id.in_(ids)))
            _fix_running_max(s, pid)
            refresh_partitions(s, [pid])  # pruned segments: no longer versions, nor counted
            for lo, hi in live_leases(s, pp.cluster, pp.topic).get(pp.partition, []):
                if lo <= pp.last_offset and pp.first_offset <= hi:
                    raise _Leased
            return int(row_id)
    except _Leased:
        return None


def _raise_watermark(store: ObjectStore, key: tuple[str, str, int], last: int, policy: str) -> None:
    """Tell the archiver not to archive offsets up to ``last`` again (before any deletion)."""
    from kafka_archive.archive.pruned import Watermark, advance_watermark

    advance_watermark(store, *key, Watermark(last + 1, policy, timeparse.now_ms()))


def _delete_objects(store: ObjectStore, keys: Sequence[str]) -> None:
    for key in keys:
        store.delete(key)


def _mark_done(catalog: Catalog, row_id: int, now: int) -> None:
    with catalog.session() as s, s.begin():
        s.execute(
            update(PrunedRange)
            .where(PrunedRange.id == row_id)
            .values(status="done", pruned_at_ms=now)
        )


def pruned_ranges(
    catalog: Catalog,
    cluster: str | None = None,
    topic: str | None = None,
    *,
    status: str | None = None,
) -> list[PrunedRange]:
    """The recorded pruned ranges, in cluster/topic/partition/offset order."""
    q = select(PrunedRange)
    if cluster is not None:
        q = q.where(PrunedRange.cluster == cluster)
    if topic is not None:
        q = q.where(PrunedRange.topic == topic)
    if status is not None:
        q = q.where(PrunedRange.status == status)
    with catalog.session() as s:
        return list(
            s.execute(
                q.order_by(
                    PrunedRange.cluster,
                    PrunedRange.topic,
                    PrunedRange.partition,
                    PrunedRange.first_offset,
                )
            ).scalars()
        )


def _summary(r: PrunedRange) -> dict[str, Any]:
    return {
        "cluster": r.cluster,
        "topic": r.topic,
        "partition": r.partition,
        "first_offset": r.first_offset,
        "last_offset": r.last_offset,
        "policy": r.policy,
        "segments": r.segments,
        "bytes": r.bytes,
        "objects": len(json.loads(r.objects)),
    }


def prune(
    catalog: Catalog,
    store: ObjectStore,
    policies: Sequence[RetentionPolicy],
    *,
    cluster: str | None = None,
    topic: str | None = None,
    dry_run: bool = False,
    now_ms: int | None = None,
    on_event: EventFn | None = None,
    max_share: int | None = None,
) -> PruneReport:
    """Apply ``policies`` to the archive (``cluster``/``topic``: only those); see the module
    docstring for the steps and what a crash leaves. ``dry_run``: change nothing, report
    what would go (and the ``planned`` ranges a run would finish).

    ``max_share``: a percentage; when the plan deletes more than that of any topic, nothing
    new is deleted (:mod:`kafka_archive.catalog.prune_share`; ``None``: no limit, as for a
    confirmed run). A dry run lists those topics in ``needs_confirmation`` instead.

    Raises:
        PruneNeedsConfirmation: the plan is above ``max_share`` (not in a dry run).
    """
    emit = on_event or (lambda _e: None)
    report = PruneReport(dry_run=dry_run)
    for row in pruned_ranges(catalog, cluster, topic, status="planned"):
        summary = _summary(row)
        if not dry_run:
            key = (row.cluster, row.topic, row.partition)
            _raise_watermark(store, key, row.last_offset, row.policy)
            _delete_objects(store, json.loads(row.objects))
            _mark_done(catalog, row.id, timeparse.now_ms())
        report.completed.append(summary)
        emit({"kind": "completed", **summary})
    plan = _plan(catalog, store, policies, cluster=cluster, topic=topic, now_ms=now_ms)
    plans, held = plan.ranges, plan.held
    report.held = held
    report.kept_topics = plan.kept
    report.shares = plan.shares
    report.kept_internal = plan.kept_internal
    too_much = over_limit(plan.shares, max_share)
    if too_much and max_share is not None:
        if not dry_run:  # before anything of this plan is recorded or deleted
            raise PruneNeedsConfirmation(too_much, max_share)
        report.needs_confirmation = too_much
    for h in held:
        emit({"kind": "held", **h})
    for pp in plans:
        if dry_run:
            report.ranges.append(pp)
            emit({"kind": "would_prune", **pp.to_json()})
            continue
        row_id = _record(catalog, pp, timeparse.now_ms())
        if row_id is None:
            report.held.append(
                {
                    "cluster": pp.cluster,
                    "topic": pp.topic,
                    "partition": pp.partition,
                    "first_offset": pp.first_offset,
                    "last_offset": pp.last_offset,
                    "policy": pp.policy,
                    "reason": "leased or pruned by another run while this one recorded it",
                }
            )
            continue
        _raise_watermark(store, (pp.cluster, pp.topic, pp.partition), pp.last_offset, pp.policy)
        _delete_objects(store, pp.objects)
        done = timeparse.now_ms()
        _mark_done(catalog, row_id, done)
        pp.status, pp.pruned_at_ms = "done", done
        report.ranges.append(pp)
        emit({"kind": "pruned", **pp.to_json()})
    return report


def pruned_watermarks(s: Session) -> dict[tuple[str, str, int], int]:
    """Per partition: every offset up to this one (inclusive) was pruned (for the build)."""
    from sqlalchemy import func

    pr = PrunedRange
    rows = s.execute(
        select(pr.cluster, pr.topic, pr.partition, func.max(pr.last_offset)).group_by(
            pr.cluster, pr.topic, pr.partition
        )
    )
    return {(str(c), str(t), int(p)): int(hi) for c, t, p, hi in rows}


def below_watermark(ref: Any, pruned_to: dict[tuple[str, str, int], int]) -> bool:
    """Whether every offset of archived segment ``ref`` (a build's ``SegmentRef``) was pruned:
    the build leaves such a version out (serving it would contradict ``pruned_ranges``)."""
    hi = pruned_to.get(ref.partition_key)
    return hi is not None and 0 <= ref.end_offset - 1 <= hi
