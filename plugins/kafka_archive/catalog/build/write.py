"""The build's SQL writes: one transaction per partition and wave (:func:`write_partition`).

It writes the new segment rows, the chain pieces of new and changed versions, the time-index
intervals with their running maximum timestamps (recomputed from the first changed offset on,
so segments may arrive in any order), histogram buckets, and for ``__consumer_offsets`` the
commits and transaction markers, resolving transactional commits against their markers; last,
the partition's coverage problems and totals (``coverage_gaps``, ``partition_totals``:
:mod:`kafka_archive.catalog.coverage`). If
another build changed the partition since it was planned, nothing is written (``deferred``).
Bulk rows go through Core executemany inserts: the ORM's per-row work costs more than the
database's at these row counts.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Table, bindparam, delete, insert, select, text, update
from sqlalchemy.exc import IntegrityError as SqlIntegrityError
from sqlalchemy.orm import Session

from kafka_archive.catalog.build.plan import PartitionPlan, segment_status, version_of_result
from kafka_archive.catalog.build.report import BuildReport
from kafka_archive.catalog.build.tasks import Pieces, TaskResult
from kafka_archive.catalog.constants import CONSUMER_OFFSETS_TOPIC
from kafka_archive.catalog.coverage import refresh_partitions
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.extract import SegmentExtract
from kafka_archive.catalog.models import (
    ChainPiece,
    HistogramBucket,
    OffsetCommitRow,
    Partition,
    Segment,
    TimeIndexEntry,
    TxnMarker,
)
from kafka_archive.timeparse import now_ms

__all__ = ["partition_id", "write_partition"]


def partition_id(session: Session, cluster: str, topic: str, partition: int) -> int:
    """The id of a partition row, created if missing (safe against a concurrent creator)."""
    q = select(Partition.id).where(
        Partition.cluster == cluster, Partition.topic == topic, Partition.partition == partition
    )
    found = session.execute(q).scalar_one_or_none()
    if found is not None:
        return found
    try:
        with session.begin_nested():
            session.execute(
                insert(Partition).values(cluster=cluster, topic=topic, partition=partition)
            )
    except SqlIntegrityError:
        pass
    return session.execute(q).scalar_one()


def _table(model: type[Any]) -> Table:
    """A model's Core table: Core executemany inserts skip the ORM's per-row work."""
    tbl = model.__table__
    assert isinstance(tbl, Table)
    return tbl


def write_partition(catalog: Catalog, plan: PartitionPlan, report: BuildReport) -> str:
    """One transaction: everything this wave changes in one partition."""
    cluster, topic, part = plan.key
    with catalog.session() as s, s.begin():
        pid = partition_id(s, cluster, topic, part)
        if s.get_bind().dialect.name == "postgresql":
            # serialize concurrent builders on this partition
            s.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 7_340_000_000 + pid})
        current = {
            row[0]
            for row in s.execute(
                select(Segment.id).where(Segment.partition_id == pid, Segment.status != "pruned")
            )
        }
        if current != set(plan.existing.refs) - plan.existing.pruned:
            return "deferred"  # another build changed this partition; the next run redoes it
        ids: dict[int, int] = {k: k for k in plan.existing.refs}
        extracts: dict[int, SegmentExtract | None] = {}
        new_ids = _insert_segments(s, pid, plan)
        _take_new(plan, new_ids, ids, extracts, report)
        # existing versions whose share of the chain changed
        changed_lo = _reset_changed(s, pid, plan, extracts, report)
        # chain pieces of new and changed versions
        piece_rows = [
            {"partition_id": pid, "lo": lo, "hi": hi, "segment_id": ids[k]}
            for k, ex in extracts.items()
            for lo, hi in plan.new_pieces.get(k, ())
            if ex is not None
        ]
        if piece_rows:
            s.execute(insert(_table(ChainPiece)), piece_rows)
        interval_rows, hist_rows = _interval_and_histogram_rows(pid, extracts, ids)
        if interval_rows:
            lo = min(r["start_offset"] for r in interval_rows)
            changed_lo = lo if changed_lo is None else min(changed_lo, lo)
        _write_intervals(s, pid, interval_rows, changed_lo)
        report.intervals_added += len(interval_rows)
        if hist_rows:
            s.execute(insert(_table(HistogramBucket)), hist_rows)
        if topic == CONSUMER_OFFSETS_TOPIC:
            report.commits_added += _write_offsets(s, cluster, pid, extracts, ids, changed_lo)
        # the partition's holes, overlaps and totals, from its rows as this wave leaves them
        refresh_partitions(s, [pid])
    return "written"


def _segment_row(pid: int, k: int, r: TaskResult, pieces: Pieces, now: int) -> dict[str, Any]:
    """The ``segments`` row of new version ``k`` (its stats, or placeholders when it has no
    extract: corrupt)."""
    st = r.extract.stats if r.extract is not None else None
    v = version_of_result(k, r)
    row: dict[str, Any] = dict(
        partition_id=pid,
        manifest_key=r.ref.manifest_key,
        object_key=r.ref.object_key,
        sha256=r.ref.sha256,
        broker_id=r.ref.broker_id,
        log_dir=r.ref.log_dir,
        archived_at_ms=r.ref.archived_at_ms,
        base_offset=r.ref.base_offset,
        end_offset=r.ref.end_offset,
        topic_id=r.ref.topic_id,
        status=segment_status(v, pieces, r.corrupt),
        cataloged_at_ms=now,
        error=json.dumps(r.error) if r.error else None,
    )
    if st is not None:
        row.update(
            first_offset=st.first_offset,
            last_offset=st.last_offset,
            first_timestamp=st.first_timestamp,
            max_timestamp=st.max_timestamp,
            offset_of_max_timestamp=st.offset_of_max_timestamp,
            record_count=st.record_count,
            batch_count=st.batch_count,
            size_bytes=st.size_bytes,
            codecs=",".join(st.codecs),
            magics=",".join(str(m) for m in st.magics),
            transactional_batches=st.transactional_batches,
            control_batches=st.control_batches,
            epoch_runs=st.epoch_runs_json(),
        )
    else:
        row.update(
            first_offset=-1,
            last_offset=-1,
            first_timestamp=-1,
            max_timestamp=-1,
            offset_of_max_timestamp=-1,
            record_count=0,
            batch_count=0,
            size_bytes=r.ref.size,
            codecs="",
            magics="",
            transactional_batches=0,
            control_batches=0,
            epoch_runs="[]",
        )
    return row


def _insert_segments(s: Session, pid: int, plan: PartitionPlan) -> list[int]:
    """Insert the rows of the plan's new versions; their ids, in the plan's order."""
    now = now_ms()
    seg_rows = [
        _segment_row(pid, -(i + 1), r, plan.new_pieces.get(-(i + 1), ()), now)
        for i, r in enumerate(plan.new)
    ]
    # one executemany (Core, RETURNING in parameter order) instead of a statement per row:
    # the ORM and per-row compiles cost more than SQLite's work at these row counts
    new_ids: list[int] = []
    if seg_rows:
        seg_tbl = _table(Segment)
        new_ids = [
            row_id
            for (row_id,) in s.execute(
                insert(seg_tbl).returning(seg_tbl.c.id, sort_by_parameter_order=True),
                seg_rows,
            )
        ]
    return new_ids


def _take_new(
    plan: PartitionPlan,
    new_ids: list[int],
    ids: dict[int, int],
    extracts: dict[int, SegmentExtract | None],
    report: BuildReport,
) -> None:
    """Map the new versions to their row ids and pick the extract each contributes (none when
    corrupt or shadowed, the pass-2 one when restricted to pieces)."""
    for i, r in enumerate(plan.new):
        k = -(i + 1)
        pieces = plan.new_pieces.get(k, ())
        ids[k] = new_ids[i]
        report.segments_added += 1
        if r.corrupt:
            report.corrupt += 1
            continue
        if not pieces:
            extracts[k] = None
        elif k in plan.pass2:
            extracts[k] = _pass2_extract(plan.pass2[k], report)
        else:
            extracts[k] = r.extract


def _reset_changed(
    s: Session,
    pid: int,
    plan: PartitionPlan,
    extracts: dict[int, SegmentExtract | None],
    report: BuildReport,
) -> int | None:
    """Drop the rows of cataloged versions whose chain pieces changed, take their pass-2
    extracts and update their status; the lowest offset touched (``None``: none)."""
    changed_lo: int | None = None
    for k, pieces in plan.new_pieces.items():
        if k < 0:
            continue
        old = plan.existing.pieces.get(k, ())
        if pieces == old:
            continue
        report.re_extracted += 1 if pieces else 0
        for tbl in (TimeIndexEntry, HistogramBucket, ChainPiece):
            s.execute(delete(tbl).where(tbl.partition_id == pid, tbl.segment_id == k))
        s.execute(delete(OffsetCommitRow).where(OffsetCommitRow.segment_id == k))
        s.execute(delete(TxnMarker).where(TxnMarker.segment_id == k))
        lo = min((p[0] for p in (*old, *pieces)), default=None)
        if lo is not None:
            changed_lo = lo if changed_lo is None else min(changed_lo, lo)
        extracts[k] = _pass2_extract(plan.pass2[k], report) if pieces else None
        s.execute(
            update(Segment)
            .where(Segment.id == k)
            .values(status=segment_status(plan.existing.versions.get(k), pieces, False))
        )
    return changed_lo


def _interval_and_histogram_rows(
    pid: int, extracts: Mapping[int, SegmentExtract | None], ids: Mapping[int, int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The time-index and histogram rows of the extracts (``running_max_ts`` still -1)."""
    interval_rows: list[dict[str, Any]] = []
    hist_rows: list[dict[str, Any]] = []
    for k, ex in extracts.items():
        if ex is None:
            continue
        sid = ids[k]
        for iv in ex.intervals:
            interval_rows.append(
                {
                    "partition_id": pid,
                    "start_offset": iv.start_offset,
                    "end_offset": iv.end_offset,
                    "segment_id": sid,
                    "byte_start": iv.byte_start,
                    "byte_end": iv.byte_end,
                    "max_ts": iv.max_ts,
                    "record_max_ts": iv.record_max_ts,
                    "running_max_ts": -1,
                    "record_count": iv.record_count,
                }
            )
        for h in ex.histogram:
            hist_rows.append(
                {
                    "partition_id": pid,
                    "bucket_ms": h.bucket_ms,
                    "segment_id": sid,
                    "records": h.records,
                    "bytes": h.bytes,
                }
            )
    return interval_rows, hist_rows


def _pass2_extract(r: TaskResult | None, report: BuildReport) -> SegmentExtract | None:
    if r is None or r.extract is None:
        detail = r.error if r is not None else {"error": "missing pass-2 result"}
        raise RuntimeError(
            f"re-extraction of a segment restricted to its chain pieces failed: {detail}"
        )
    return r.extract


def _write_intervals(
    s: Session, pid: int, new_rows: list[dict[str, Any]], changed_lo: int | None
) -> None:
    """Insert ``new_rows`` and make ``running_max_ts`` right from ``changed_lo`` on."""
    if changed_lo is None:
        return
    prev = s.execute(
        select(TimeIndexEntry.running_max_ts)
        .where(TimeIndexEntry.partition_id == pid, TimeIndexEntry.start_offset < changed_lo)
        .order_by(TimeIndexEntry.start_offset.desc())
        .limit(1)
    ).scalar_one_or_none()
    later = s.execute(
        select(TimeIndexEntry.start_offset, TimeIndexEntry.max_ts, TimeIndexEntry.running_max_ts)
        .where(TimeIndexEntry.partition_id == pid, TimeIndexEntry.start_offset >= changed_lo)
        .order_by(TimeIndexEntry.start_offset)
    ).all()
    merged: list[tuple[int, int, dict[str, Any] | None, int]] = [
        (so, mx, None, rm) for so, mx, rm in later
    ]
    merged.extend((r["start_offset"], r["max_ts"], r, -2) for r in new_rows)
    merged.sort(key=lambda t: t[0])
    cur = -1 if prev is None else prev
    updates = []
    for so, mx, row, old in merged:
        if mx > cur:
            cur = mx
        if row is not None:
            row["running_max_ts"] = cur
        elif old != cur:
            updates.append({"pid": pid, "so": so, "rm": cur})
    if new_rows:
        s.execute(insert(_table(TimeIndexEntry)), new_rows)
    if updates:
        s.connection().execute(
            update(TimeIndexEntry.__table__)  # type: ignore[arg-type]
            .where(
                TimeIndexEntry.__table__.c.partition_id == bindparam("pid"),
                TimeIndexEntry.__table__.c.start_offset == bindparam("so"),
            )
            .values(running_max_ts=bindparam("rm")),
            updates,
        )


def _write_offsets(
    s: Session,
    cluster: str,
    pid: int,
    extracts: Mapping[int, SegmentExtract | None],
    ids: Mapping[int, int],
    changed_lo: int | None,
) -> int:
    """Commits and markers of a ``__consumer_offsets`` partition; then resolve transactional
    commits from ``changed_lo`` on (a later marker can only change those)."""
    commit_rows: list[dict[str, Any]] = []
    marker_rows: list[dict[str, Any]] = []
    for k, ex in extracts.items():
        if ex is None:
            continue
        sid = ids[k]
        for c in ex.commits:
            txn = c.transactional
            commit_rows.append(
                {
                    "cluster": cluster,
                    "group_id": c.group,
                    "topic": c.topic,
                    "partition": c.partition,
                    "kind": c.kind,
                    "committed_offset": c.offset,
                    "leader_epoch": c.leader_epoch,
                    "metadata_text": c.metadata,
                    "commit_timestamp": c.commit_timestamp,
                    "expire_timestamp": c.expire_timestamp,
                    "source_partition_id": pid,
                    "segment_id": sid,
                    "log_offset": c.log_offset,
                    "record_timestamp": c.record_timestamp,
                    "producer_id": c.producer_id,
                    "txn_state": "pending" if txn else "none",
                    "effective_offset": None if txn else c.log_offset,
                    "visible_ts": None if txn else c.record_timestamp,
                }
            )
        for m in ex.markers:
            marker_rows.append(
                {
                    "source_partition_id": pid,
                    "log_offset": m.log_offset,
                    "producer_id": m.producer_id,
                    "committed": int(m.committed),
                    "timestamp": m.timestamp,
                    "segment_id": sid,
                }
            )
    if commit_rows:
        s.execute(insert(_table(OffsetCommitRow)), commit_rows)
    if marker_rows:
        s.execute(insert(_table(TxnMarker)), marker_rows)
    if changed_lo is None:
        return len(commit_rows)
    oc = OffsetCommitRow
    pending = s.execute(
        select(oc.id, oc.producer_id, oc.log_offset, oc.txn_state, oc.effective_offset)
        .where(
            oc.source_partition_id == pid,
            oc.producer_id >= 0,
            (oc.txn_state == "pending")
            | (oc.effective_offset >= changed_lo)
            | (oc.log_offset >= changed_lo),
        )
        .order_by(oc.log_offset)
    ).all()
    if not pending:
        return len(commit_rows)
    producers = {p.producer_id for p in pending}
    start = min(p.log_offset for p in pending)
    markers: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for mk in s.execute(
        select(
            TxnMarker.producer_id, TxnMarker.log_offset, TxnMarker.committed, TxnMarker.timestamp
        )
        .where(
            TxnMarker.source_partition_id == pid,
            TxnMarker.log_offset > start,
            TxnMarker.producer_id.in_(producers),
        )
        .order_by(TxnMarker.log_offset)
    ):
        markers[mk.producer_id].append((mk.log_offset, mk.committed, mk.timestamp))
    updates = []
    for p in pending:
        ms = markers.get(p.producer_id, [])
        i = bisect.bisect_right([m[0] for m in ms], p.log_offset)
        if i < len(ms):
            off, committed, ts = ms[i]
            state = "committed" if committed else "aborted"
            eff, vis = (off, ts) if committed else (None, None)
        else:
            state, eff, vis = "pending", None, None
        updates.append({"i": p.id, "st": state, "eo": eff, "vt": vis})
    tbl = OffsetCommitRow.__table__
    s.connection().execute(
        update(tbl)  # type: ignore[arg-type]
        .where(tbl.c.id == bindparam("i"))
        .values(
            txn_state=bindparam("st"), effective_offset=bindparam("eo"), visible_ts=bindparam("vt")
        ),
        updates,
    )
    return len(commit_rows)
