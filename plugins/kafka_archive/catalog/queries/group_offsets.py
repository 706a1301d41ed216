"""A consumer group's committed offsets at a moment (:func:`group_offsets`) and its commit
history (:func:`group_commit_history`).

Both merge two sources: the ``__consumer_offsets`` history decoded from archived segments
(``offset_commits``, with transactional commits resolved against their markers by the build)
and the history the offsets follower read live (``followed_commits``,
:mod:`kafka_archive.offsets_follower.follower`), each commit once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, select

from kafka_archive.catalog.constants import CONSUMER_OFFSETS_TOPIC
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.models import FollowedCommitRow, OffsetCommitRow, Partition
from kafka_archive.catalog.query_errors import CatalogQueryError

__all__ = [
    "GroupCommit",
    "GroupOffset",
    "group_commit_history",
    "group_offsets",
    "groups_by_topic",
]


@dataclass(frozen=True, slots=True)
class GroupOffset:
    """A group's committed offset for one partition at the asked moment."""

    topic: str
    partition: int
    offset: int
    commit_timestamp: int

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "commit_timestamp": self.commit_timestamp,
        }


def group_offsets(
    catalog: Catalog, cluster: str, group: str, at_ms: int | None = None
) -> list[GroupOffset]:
    """The offsets ``group`` had committed at ``at_ms`` (now when ``None``): per partition the
    last commit that had taken effect by then, unless an offset tombstone removed it since.

    Two sources, merged: commits decoded from archived ``__consumer_offsets`` segments (a
    transactional commit takes effect at its COMMIT marker, aborted ones never) and commits the
    offsets follower read (``read_committed``; in effect from their record timestamp, a
    transactional one from its COMMIT marker, which the follower finds in the raw batches). Per
    partition each source's latest entry by then is taken, and the one later in the
    ``__consumer_offsets`` log wins (a group's records all live in one partition of that topic,
    so log positions of both sources are comparable; the same record seen by both is the same
    answer). A transactional commit whose COMMIT/ABORT marker the archive holds counts only as
    the archive resolved it: the follower's row of the same record (dated by the marker the
    follower's raw-batch scan found, or by the record in rows stored before it did) is set
    aside (:func:`_not_resolved_by_archive`), so each commit counts once.
    """
    archived = _archived_latest(catalog, cluster, group, at_ms)
    followed = _followed_latest(catalog, cluster, group, at_ms)
    if not archived and not followed and not _has_commits(catalog, cluster, group):
        raise CatalogQueryError(
            f"no offset commits of group {group!r} in cluster {cluster!r}",
            hint="check the group name; its __consumer_offsets partition must be archived and "
            "cataloged, or followed (kafka-archive catalog follow-offsets)",
        )
    best: dict[tuple[str, int], tuple[tuple[int, int], str, int, int]] = dict(archived)
    for k, v in followed.items():
        if k not in best or v[0] > best[k][0]:
            best[k] = v
    return [
        GroupOffset(t, p, off, ts)
        for (t, p), (_pos, kind, off, ts) in sorted(best.items())
        if kind == "commit"
    ]


_Latest = dict[tuple[str, int], tuple[tuple[int, int], str, int, int]]


def groups_by_topic(
    catalog: Catalog, cluster: str, at_ms: int | None = None
) -> dict[str, set[str]]:
    """``{group: topics}``: every group with a commit in effect by ``at_ms`` (any time when
    ``None``) in ``cluster``, and the topics it committed on (both sources; aborted
    transactional commits excluded)."""
    oc, fc = OffsetCommitRow, FollowedCommitRow
    archived = [
        oc.cluster == cluster,
        oc.kind == "commit",
        oc.txn_state.in_(("none", "committed")),
    ]
    followed = [fc.cluster == cluster, fc.kind == "commit"]
    if at_ms is not None:
        archived.append(oc.visible_ts <= at_ms)
        followed.append(_followed_visible_ts() <= at_ms)
    out: dict[str, set[str]] = {}
    with catalog.session() as s:
        for tbl, conds in ((oc, archived), (fc, followed)):
            rows = s.execute(select(tbl.group_id, tbl.topic).where(*conds).distinct()).all()
            for group, topic in rows:
                out.setdefault(group, set()).add(topic)
    return out


def _has_commits(catalog: Catalog, cluster: str, group: str) -> bool:
    oc, fc = OffsetCommitRow, FollowedCommitRow
    with catalog.session() as s:
        for tbl in (oc, fc):
            found = s.execute(
                select(tbl.id).where(tbl.cluster == cluster, tbl.group_id == group).limit(1)
            ).first()
            if found is not None:
                return True
    return False


def _archived_latest(catalog: Catalog, cluster: str, group: str, at_ms: int | None) -> _Latest:
    """Per (topic, partition): ((effective log offset, log offset), kind, offset, commit ts) of
    the last commit from archived segments in effect at ``at_ms``."""
    oc = OffsetCommitRow
    conds = [
        oc.cluster == cluster,
        oc.group_id == group,
        oc.txn_state.in_(("none", "committed")),
        oc.effective_offset.is_not(None),
    ]
    if at_ms is not None:
        conds.append(oc.visible_ts <= at_ms)
    with catalog.session() as s:
        latest = (
            select(oc.topic, oc.partition, func.max(oc.effective_offset).label("eo"))
            .where(*conds)
            .group_by(oc.topic, oc.partition)
            .subquery()
        )
        rows = s.execute(
            select(
                oc.topic,
                oc.partition,
                oc.kind,
                oc.committed_offset,
                oc.commit_timestamp,
                oc.log_offset,
                oc.effective_offset,
            )
            .join(
                latest,
                and_(
                    oc.topic == latest.c.topic,
                    oc.partition == latest.c.partition,
                    oc.effective_offset == latest.c.eo,
                ),
            )
            .where(*conds)
        ).all()
    best: _Latest = {}
    for r in rows:
        k = (r.topic, r.partition)
        pos = (int(r.effective_offset), int(r.log_offset))
        if k not in best or pos > best[k][0]:
            best[k] = (pos, r.kind, r.committed_offset, r.commit_timestamp)
    return best


def _not_resolved_by_archive(cluster: str) -> ColumnElement[bool]:
    """True for a follower row unless the archive holds the same ``__consumer_offsets`` record
    as a transactional commit it resolved against its marker (``committed``: in effect at the
    marker's offset and time; ``aborted``: never).

    Why: the follower dates a transactional commit by its COMMIT marker (found by its raw-batch
    scan) since revision ``0006_followed_commit_markers``; rows stored before, or whose marker
    the scan did not find, carry the record's own time, which precedes the marker. Where the
    archive knows the marker, its answer is the exact one and the follower's row of the same
    record must not count differently (a pending row, marker not archived yet, decides
    nothing).
    """
    fc, oc, pt = FollowedCommitRow, OffsetCommitRow, Partition
    return ~exists(
        select(oc.id)
        .join(pt, pt.id == oc.source_partition_id)
        .where(
            pt.cluster == cluster,
            pt.topic == CONSUMER_OFFSETS_TOPIC,
            pt.partition == fc.source_partition,
            oc.log_offset == fc.log_offset,
            oc.producer_id >= 0,
            oc.txn_state.in_(("committed", "aborted")),
        )
    )


def _followed_visible_ts() -> ColumnElement[int]:
    """When a follower row took effect: its COMMIT marker's time for a transactional commit
    (``visible_ts``), its record's for the others and for rows stored before the follower
    knew markers (NULL ``visible_ts``)."""
    fc = FollowedCommitRow
    return func.coalesce(fc.visible_ts, fc.record_timestamp)


def _followed_latest(catalog: Catalog, cluster: str, group: str, at_ms: int | None) -> _Latest:
    """As :func:`_archived_latest`, from the offsets follower's rows (those the archive
    resolved as transactional commits left to it: :func:`_not_resolved_by_archive`), each in
    effect from its ``visible_ts`` at its ``effective_offset`` (a transactional commit's
    COMMIT marker, found by the follower's raw-batch scan)."""
    fc = FollowedCommitRow
    eff = func.coalesce(fc.effective_offset, fc.log_offset)
    conds = [fc.cluster == cluster, fc.group_id == group, _not_resolved_by_archive(cluster)]
    if at_ms is not None:
        conds.append(_followed_visible_ts() <= at_ms)
    with catalog.session() as s:
        latest = (
            select(fc.topic, fc.partition, func.max(eff).label("eo"))
            .where(*conds)
            .group_by(fc.topic, fc.partition)
            .subquery()
        )
        rows = s.execute(
            select(
                fc.topic,
                fc.partition,
                fc.kind,
                fc.committed_offset,
                fc.commit_timestamp,
                fc.log_offset,
                eff.label("eo"),
            )
            .join(
                latest,
                and_(
                    fc.topic == latest.c.topic,
                    fc.partition == latest.c.partition,
                    eff == latest.c.eo,
                ),
            )
            .where(*conds)
        ).all()
    best: _Latest = {}
    for r in rows:
        k = (r.topic, r.partition)
        pos = (int(r.eo), int(r.log_offset))
        if k not in best or pos > best[k][0]:
            best[k] = (pos, r.kind, r.committed_offset, r.commit_timestamp)
    return best


@dataclass(frozen=True, slots=True)
class GroupCommit:
    """One commit (or offset deletion, ``kind='delete'``) of a group's history.

    ``visible_ts`` is when it took effect (the record, or its COMMIT marker for a
    transactional commit, for both sources); ``sources`` says who saw it: ``archive``,
    ``follower`` or both. The same commit seen by both sources is listed once.
    """

    topic: str
    partition: int
    kind: str
    offset: int
    commit_timestamp: int
    visible_ts: int
    sources: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "kind": self.kind,
            "offset": self.offset,
            "commit_timestamp": self.commit_timestamp,
            "visible_ts": self.visible_ts,
            "sources": list(self.sources),
        }


def group_commit_history(
    catalog: Catalog,
    cluster: str,
    group: str,
    *,
    from_ms: int | None = None,
    to_ms: int | None = None,
) -> list[GroupCommit]:
    """Every commit of ``group`` in effect between ``from_ms`` and ``to_ms`` (inclusive), from
    both sources, in time order; deduplicated on (topic, partition, kind, commit timestamp,
    offset): a commit both the archive and the follower saw is listed once (with the archive's
    ``visible_ts``, exact for transactional commits; a follower row of a transactional commit
    the archive resolved is never listed at its own record time). Aborted and still-pending
    transactional commits of the archive are left out, as the follower never sees them."""
    oc, fc = OffsetCommitRow, FollowedCommitRow
    merged: dict[tuple[str, int, str, int, int], tuple[int, set[str]]] = {}
    with catalog.session() as s:
        a_conds = [
            oc.cluster == cluster,
            oc.group_id == group,
            oc.txn_state.in_(("none", "committed")),
            oc.visible_ts.is_not(None),
        ]
        if from_ms is not None:
            a_conds.append(oc.visible_ts >= from_ms)
        if to_ms is not None:
            a_conds.append(oc.visible_ts <= to_ms)
        for r in s.execute(
            select(
                oc.topic,
                oc.partition,
                oc.kind,
                oc.commit_timestamp,
                oc.committed_offset,
                oc.visible_ts,
            ).where(*a_conds)
        ):
            key = (r.topic, r.partition, r.kind, r.commit_timestamp, r.committed_offset)
            merged[key] = (int(r.visible_ts), {"archive"})
        f_vis = _followed_visible_ts()
        f_conds = [fc.cluster == cluster, fc.group_id == group]
        if from_ms is not None:
            f_conds.append(f_vis >= from_ms)
        if to_ms is not None:
            f_conds.append(f_vis <= to_ms)
        for f in s.execute(
            select(
                fc.topic,
                fc.partition,
                fc.kind,
                fc.commit_timestamp,
                fc.committed_offset,
                f_vis.label("vis"),
                _not_resolved_by_archive(cluster).label("own"),
            ).where(*f_conds)
        ):
            key = (f.topic, f.partition, f.kind, f.commit_timestamp, f.committed_offset)
            if key in merged:
                merged[key][1].add("follower")
            elif f.own:  # else the archive's row (in effect outside the range) speaks for it
                merged[key] = (int(f.vis), {"follower"})
    out = [
        GroupCommit(t, p, kind, off, cts, vis, tuple(sorted(src)))
        for (t, p, kind, cts, off), (vis, src) in merged.items()
    ]
    out.sort(key=lambda c: (c.visible_ts, c.topic, c.partition, c.commit_timestamp))
    return out
