"""Questions on-call engineers and replay planning ask the catalog (the Python API of
``kafka-archive catalog``).

* :func:`offsets_for_time` - ListOffsets for a moment of history: per partition the earliest
  offset whose timestamp is >= T (control records count, as on the broker), or -1. One indexed
  SQL query for all partitions (the first time-index interval whose running maximum timestamp
  is >= T), then at most **one ranged read of one interval** per partition to find the record.
  The broker answers from the first *segment* whose largest timestamp is >= T and gives -1 when
  no record of that segment qualifies (possible only when compaction left an emptied batch that
  kept its max timestamp); the catalog reproduces that too, still with at most one read.
* :func:`locate` - where an offset lives: object key, byte range of its batch, its timestamp.
* :func:`stats` - records and bytes per time bucket.
* :func:`gaps` - offsets missing from the archive, overlapping and divergent versions, corrupt
  segments.
* :func:`group_offsets` - a consumer group's committed offsets at a moment, from the
  ``__consumer_offsets`` history decoded from archived segments merged with the history the
  offsets follower read live (:mod:`kafka_archive.groups.follower`);
  :func:`group_commit_history` lists that merged history, each commit once.
* :func:`topics` - what the archive holds per topic and partition, :func:`clusters` per
  cluster (both in :mod:`kafka_archive.catalog.holdings`, which defines ``records``,
  ``offset_span`` and the problem counts every command shows).

Every answer type has ``to_json()`` giving the object the CLI prints with ``--json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, select, true
from sqlalchemy.orm import Session

from kafka_archive.catalog.constants import DEFAULT_HISTOGRAM_MS
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.gaps import GapEntry, gaps
from kafka_archive.catalog.holdings import ClusterHoldings, PartitionHoldings, clusters, topics
from kafka_archive.catalog.models import (
    ChainPiece,
    FollowedCommitRow,
    HistogramBucket,
    OffsetCommitRow,
    Partition,
    Segment,
    TimeIndexEntry,
)
from kafka_archive.store import ObjectStore
from segment_lib.errors import SegmentError
from segment_lib.log_file import decode_batch, iter_batches

__all__ = [
    "CatalogQueryError",
    "ClusterHoldings",
    "GapEntry",
    "GroupCommit",
    "GroupOffset",
    "IntervalToRead",
    "Location",
    "OffsetAnswer",
    "PartitionHoldings",
    "StatsBucket",
    "clusters",
    "gaps",
    "group_commit_history",
    "group_offsets",
    "locate",
    "offset_intervals",
    "offsets_for_time",
    "stats",
    "topics",
]


class CatalogQueryError(LookupError):
    """The catalog cannot answer (unknown topic/partition, offset outside the archive...).

    ``hint`` says what to try instead."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    """ListOffsets answer for one partition (``offset``/``timestamp`` -1: no such record)."""

    partition: int
    offset: int
    timestamp: int

    def to_json(self) -> dict[str, Any]:
        return {"partition": self.partition, "offset": self.offset, "timestamp": self.timestamp}


def _partitions(
    s: Session, cluster: str, topic: str, partitions: Sequence[int] | None
) -> list[tuple[int, int]]:
    q = select(Partition.id, Partition.partition).where(
        Partition.cluster == cluster, Partition.topic == topic
    )
    if partitions:
        q = q.where(Partition.partition.in_(list(partitions)))
    rows = [(int(a), int(b)) for a, b in s.execute(q.order_by(Partition.partition))]
    if not rows:
        raise CatalogQueryError(
            f"the catalog has no data for topic {topic!r} of cluster {cluster!r}"
            + (f" partitions {sorted(partitions)}" if partitions else ""),
            hint="run `kafka-archive catalog topics --cluster C` to see what it holds, or "
            "`kafka-archive catalog build` if the archive is newer than the catalog",
        )
    if partitions:
        missing = sorted(set(partitions) - {p for _, p in rows})
        if missing:
            raise CatalogQueryError(
                f"topic {topic!r} has no archived partitions {missing}",
                hint="run `kafka-archive catalog topics --cluster C` to list partitions",
            )
    return rows


def _first_record_at_or_after(
    data: bytes, ts: int, lo: int, hi: int, path: str
) -> tuple[int, int] | None:
    """First record of ``data`` (whole batches) with offset in lo..hi and timestamp >= ts."""
    try:
        for b in iter_batches(data, 0, verify_crc=True):
            if b.max_timestamp < ts or b.last_offset < lo:
                continue
            if b.base_offset > hi:
                break
            for r in decode_batch(data, b):
                if lo <= r.offset <= hi and r.timestamp >= ts:
                    return r.offset, r.timestamp
    except SegmentError as exc:
        raise exc.with_location(path) from None
    return None


@dataclass(frozen=True, slots=True)
class IntervalToRead:
    """The one interval of one partition that holds the answer: read
    ``object_key[byte_start:byte_end]`` and take the first record with offset in
    ``start_offset..end_offset`` and timestamp >= T."""

    partition: int
    object_key: str
    byte_start: int
    byte_end: int
    start_offset: int
    end_offset: int


def offset_intervals(
    catalog: Catalog,
    cluster: str,
    topic: str,
    timestamp: int,
    partitions: Sequence[int] | None = None,
) -> list[tuple[int, IntervalToRead | None]]:
    """The SQL part of :func:`offsets_for_time`: per partition the interval to read, or
    ``None`` when no record is that late (no read needed)."""
    if timestamp < 0:
        raise ValueError("timestamp must be epoch milliseconds >= 0")
    out: list[tuple[int, IntervalToRead | None]] = []
    with catalog.session() as s:
        rows = {
            int(r.pid): r
            for r in s.execute(_interval_query(s, cluster, topic, timestamp, partitions))
        }
        if not rows or (partitions and len(rows) < len(set(partitions))):
            _partitions(s, cluster, topic, partitions)  # raises the explanatory error
        parts = sorted(((pid, int(r.partition)) for pid, r in rows.items()), key=lambda x: x[1])
        for pid, part in parts:
            row: Any = rows[pid] if rows[pid].start_offset is not None else None
            if row is not None and row.record_max_ts < timestamp:
                # the broker's segment has no qualifying record in this interval (an emptied
                # batch kept the max timestamp): the answer is later in the same segment or -1
                row = _next_in_segment(s, pid, row, timestamp)
            if row is None:
                out.append((part, None))
            else:
                out.append(
                    (
                        part,
                        IntervalToRead(
                            part,
                            row.object_key,
                            row.byte_start,
                            row.byte_end,
                            row.start_offset,
                            row.end_offset,
                        ),
                    )
                )
    return out


def _interval_query(
    s: Session, cluster: str, topic: str, timestamp: int, partitions: Sequence[int] | None
) -> Any:
    """One statement: every partition of the topic with the first time-index interval whose
    running maximum is >= T (NULLs when there is none). Each partition costs one index seek
    on ``(partition_id, running_max_ts, start_offset)`` and one primary-key lookup."""
    ti = TimeIndexEntry.__table__.alias("ti")
    cols = (
        ti.c.start_offset,
        ti.c.end_offset,
        ti.c.byte_start,
        ti.c.byte_end,
        ti.c.record_max_ts,
        ti.c.segment_id,
    )
    where = [Partition.cluster == cluster, Partition.topic == topic]
    if partitions:
        where.append(Partition.partition.in_(sorted(set(partitions))))
    if s.get_bind().dialect.name == "postgresql":
        hit = (
            select(*cols)
            .where(ti.c.partition_id == Partition.id, ti.c.running_max_ts >= timestamp)
            .order_by(ti.c.running_max_ts, ti.c.start_offset)
            .limit(1)
            .lateral("hit")
        )
        return (
            select(Partition.id.label("pid"), Partition.partition, *hit.c, Segment.object_key)
            .select_from(Partition)
            .outerjoin(hit, true())
            .outerjoin(Segment, Segment.id == hit.c.segment_id)
            .where(*where)
        )
    # SQLite has no LATERAL: join on the correlated "first start offset" instead
    t2 = TimeIndexEntry.__table__.alias("t2")
    first = (
        select(t2.c.start_offset)
        .where(t2.c.partition_id == Partition.id, t2.c.running_max_ts >= timestamp)
        .order_by(t2.c.running_max_ts, t2.c.start_offset)
        .limit(1)
        .correlate(Partition)
        .scalar_subquery()
    )
    return (
        select(Partition.id.label("pid"), Partition.partition, *cols, Segment.object_key)
        .select_from(Partition)
        .outerjoin(ti, and_(ti.c.partition_id == Partition.id, ti.c.start_offset == first))
        .outerjoin(Segment, Segment.id == ti.c.segment_id)
        .where(*where)
    )


def offsets_for_time(
    catalog: Catalog,
    store: ObjectStore,
    cluster: str,
    topic: str,
    timestamp: int,
    partitions: Sequence[int] | None = None,
) -> list[OffsetAnswer]:
    """ListOffsets at ``timestamp`` (epoch ms) for each archived partition of ``topic``."""
    answers = []
    for part, iv in offset_intervals(catalog, cluster, topic, timestamp, partitions):
        if iv is None:
            answers.append(OffsetAnswer(part, -1, -1))
            continue
        data = store.get_range(iv.object_key, iv.byte_start, iv.byte_end)
        hit = _first_record_at_or_after(
            data,
            timestamp,
            iv.start_offset,
            iv.end_offset,
            f"{store.uri.rstrip('/')}/{iv.object_key}[{iv.byte_start}:{iv.byte_end}]",
        )
        if hit is None:
            raise CatalogQueryError(
                f"partition {part}: the interval at offset {iv.start_offset} holds no record "
                f"at or after {timestamp} although the catalog says it does",
                hint="the catalog and the archive disagree: rebuild the catalog",
            )
        answers.append(OffsetAnswer(part, hit[0], hit[1]))
    return answers


_INTERVAL_COLUMNS = (
    TimeIndexEntry.partition_id,
    TimeIndexEntry.start_offset,
    TimeIndexEntry.end_offset,
    TimeIndexEntry.byte_start,
    TimeIndexEntry.byte_end,
    TimeIndexEntry.record_max_ts,
    TimeIndexEntry.segment_id,
    Segment.object_key,
)


def _next_in_segment(s: Session, pid: int, row: Any, timestamp: int) -> Any:
    ti = TimeIndexEntry
    piece_hi = s.execute(
        select(ChainPiece.hi)
        .where(ChainPiece.partition_id == pid, ChainPiece.lo <= row.start_offset)
        .order_by(ChainPiece.lo.desc())
        .limit(1)
    ).scalar_one()
    return s.execute(
        select(*_INTERVAL_COLUMNS)
        .join(Segment, Segment.id == ti.segment_id)
        .where(
            ti.partition_id == pid,
            ti.start_offset > row.start_offset,
            ti.start_offset <= piece_hi,
            ti.segment_id == row.segment_id,
            ti.record_max_ts >= timestamp,
        )
        .order_by(ti.start_offset)
        .limit(1)
    ).first()


@dataclass(frozen=True, slots=True)
class Location:
    """Where offset ``offset`` is archived. ``exact`` is False when that offset holds no record
    (compaction removed it): the location is then that of the next record, ``found_offset``."""

    partition: int
    offset: int
    found_offset: int
    exact: bool
    object_key: str
    byte_start: int
    byte_end: int
    batch_base_offset: int
    batch_last_offset: int
    timestamp: int

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "offset": self.offset,
            "found_offset": self.found_offset,
            "exact": self.exact,
            "object_key": self.object_key,
            "byte_start": self.byte_start,
            "byte_end": self.byte_end,
            "batch_base_offset": self.batch_base_offset,
            "batch_last_offset": self.batch_last_offset,
            "timestamp": self.timestamp,
        }


def locate(
    catalog: Catalog, store: ObjectStore, cluster: str, topic: str, partition: int, offset: int
) -> Location:
    """The batch holding ``offset`` (or the next record, see :class:`Location`)."""
    ti = TimeIndexEntry
    cols = (ti.start_offset, ti.end_offset, ti.byte_start, ti.byte_end, Segment.object_key)
    with catalog.session() as s:
        ((pid, _),) = _partitions(s, cluster, topic, [partition])
        row = s.execute(
            select(*cols)
            .join(Segment, Segment.id == ti.segment_id)
            .where(ti.partition_id == pid, ti.start_offset <= offset)
            .order_by(ti.start_offset.desc())
            .limit(1)
        ).first()
        if row is None or row.end_offset < offset:
            row = s.execute(
                select(*cols)
                .join(Segment, Segment.id == ti.segment_id)
                .where(ti.partition_id == pid, ti.start_offset > offset)
                .order_by(ti.start_offset)
                .limit(1)
            ).first()
        if row is None:
            raise CatalogQueryError(
                f"offset {offset} of {topic}-{partition} is past the end of the archive",
                hint="`kafka-archive catalog topics` shows the archived offset ranges",
            )
    data = store.get_range(row.object_key, row.byte_start, row.byte_end)
    path = f"{store.uri.rstrip('/')}/{row.object_key}"
    try:
        for b in iter_batches(data, 0, verify_crc=True):
            if b.last_offset < max(offset, row.start_offset):
                continue
            for r in decode_batch(data, b):
                if r.offset >= max(offset, row.start_offset) and r.offset <= row.end_offset:
                    return Location(
                        partition,
                        offset,
                        r.offset,
                        r.offset == offset,
                        row.object_key,
                        row.byte_start + b.position,
                        row.byte_start + b.next_position,
                        b.base_offset,
                        b.last_offset,
                        r.timestamp,
                    )
    except SegmentError as exc:
        raise exc.with_location(path, row.byte_start) from None
    raise CatalogQueryError(
        f"offset {offset} of {topic}-{partition}: no record found in the interval the catalog "
        "points at",
        hint="the catalog and the archive disagree: rebuild the catalog",
    )


@dataclass(frozen=True, slots=True)
class StatsBucket:
    """Data records and bytes archived with batch timestamps in ``[start_ms, start_ms+width)``."""

    start_ms: int
    width_ms: int
    records: int
    bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start_ms,
            "width_ms": self.width_ms,
            "records": self.records,
            "bytes": self.bytes,
        }


def stats(
    catalog: Catalog,
    cluster: str,
    topic: str,
    start_ms: int,
    end_ms: int,
    bucket_ms: int,
    partitions: Sequence[int] | None = None,
) -> list[StatsBucket]:
    """Buckets of ``bucket_ms`` covering ``[start_ms, end_ms)`` (empty buckets included).

    Batches are counted at their max timestamp with a resolution of one minute, so
    ``bucket_ms`` must be a whole number of minutes.
    """
    if bucket_ms <= 0 or bucket_ms % DEFAULT_HISTOGRAM_MS:
        raise CatalogQueryError(
            f"bucket of {bucket_ms} ms: the catalog counts per minute",
            hint="use a whole number of minutes, e.g. 1m, 5m, 1h",
        )
    if end_ms <= start_ms:
        raise CatalogQueryError(
            "the end of the range must be after its start", hint="e.g. --from -2h --to now"
        )
    first = start_ms - start_ms % bucket_ms
    n = (end_ms - first + bucket_ms - 1) // bucket_ms
    if n > 100_000:
        raise CatalogQueryError(f"{n} buckets is too many", hint="use a larger --bucket")
    h = HistogramBucket
    with catalog.session() as s:
        pids = [pid for pid, _ in _partitions(s, cluster, topic, partitions)]
        rows = s.execute(
            select(h.bucket_ms, func.sum(h.records), func.sum(h.bytes))
            .where(h.partition_id.in_(pids), h.bucket_ms >= first, h.bucket_ms < end_ms)
            .group_by(h.bucket_ms)
        ).all()
    recs = [0] * n
    byts = [0] * n
    for b, r, by in rows:
        i = (int(b) - first) // bucket_ms
        recs[i] += int(r)
        byts[i] += int(by)
    return [StatsBucket(first + i * bucket_ms, bucket_ms, recs[i], byts[i]) for i in range(n)]


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
    offsets follower read (``read_committed``; in effect from their record timestamp). Per
    partition each source's latest entry by then is taken, and the one later in the
    ``__consumer_offsets`` log wins (a group's records all live in one partition of that topic,
    so log positions of both sources are comparable; the same record seen by both is the same
    answer).
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


def _followed_latest(catalog: Catalog, cluster: str, group: str, at_ms: int | None) -> _Latest:
    """As :func:`_archived_latest`, from the offsets follower's rows."""
    fc = FollowedCommitRow
    conds = [fc.cluster == cluster, fc.group_id == group]
    if at_ms is not None:
        conds.append(fc.record_timestamp <= at_ms)
    with catalog.session() as s:
        latest = (
            select(fc.topic, fc.partition, func.max(fc.log_offset).label("lo"))
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
            )
            .join(
                latest,
                and_(
                    fc.topic == latest.c.topic,
                    fc.partition == latest.c.partition,
                    fc.log_offset == latest.c.lo,
                ),
            )
            .where(*conds)
        ).all()
    return {
        (r.topic, r.partition): (
            (int(r.log_offset), int(r.log_offset)),
            r.kind,
            r.committed_offset,
            r.commit_timestamp,
        )
        for r in rows
    }


@dataclass(frozen=True, slots=True)
class GroupCommit:
    """One commit (or offset deletion, ``kind='delete'``) of a group's history.

    ``visible_ts`` is when it took effect (archive: the record, or its COMMIT marker for a
    transactional commit; follower: the record); ``sources`` says who saw it: ``archive``,
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
    ``visible_ts``, exact for transactional commits). Aborted and still-pending transactional
    commits of the archive are left out, as the follower never sees them."""
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
        f_conds = [fc.cluster == cluster, fc.group_id == group]
        if from_ms is not None:
            f_conds.append(fc.record_timestamp >= from_ms)
        if to_ms is not None:
            f_conds.append(fc.record_timestamp <= to_ms)
        for r in s.execute(
            select(
                fc.topic,
                fc.partition,
                fc.kind,
                fc.commit_timestamp,
                fc.committed_offset,
                fc.record_timestamp,
            ).where(*f_conds)
        ):
            key = (r.topic, r.partition, r.kind, r.commit_timestamp, r.committed_offset)
            if key in merged:
                merged[key][1].add("follower")
            else:
                merged[key] = (int(r.record_timestamp), {"follower"})
    out = [
        GroupCommit(t, p, kind, off, cts, vis, tuple(sorted(src)))
        for (t, p, kind, cts, off), (vis, src) in merged.items()
    ]
    out.sort(key=lambda c: (c.visible_ts, c.topic, c.partition, c.commit_timestamp))
    return out
