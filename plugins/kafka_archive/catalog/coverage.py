"""A partition's coverage problems, computed when its segments change and kept in
``coverage_gaps`` (model :class:`~kafka_archive.catalog.models.CoverageGap`).

What ``catalog gaps`` lists for a partition's segment rows (holes no version covers,
overlapping and divergent versions, corrupt segments: :func:`partition_gaps`) depends on those
rows only, and they change only in a build's or a prune's write. Computing it there
(:func:`refresh_coverage`, in the same transaction) makes reading it a few rows per partition:
rebuilding every partition's chain from all its segment rows on each read made ``catalog
gaps``/``topics`` and the on-call page's first answer grow with the archive
(``benchmarks/bench_ui.py``, ``benchmarks/bench_scale.py``). The migration that added the table
fills it for an older catalog with :func:`refresh_all`.

The rows read here are plain column tuples (no ORM object per segment), in segment id order
within a partition, the order the answers were always computed in.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, delete, insert, select

from kafka_archive.catalog import tables
from kafka_archive.catalog.chain import find_holes, find_overlaps
from kafka_archive.catalog.totals import refresh_totals
from kafka_archive.catalog.versions import version_of_segment

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = [
    "SEGMENT_COLUMNS",
    "Found",
    "SegmentColumns",
    "partition_gaps",
    "refresh_all",
    "refresh_coverage",
    "refresh_partitions",
    "segment_rows",
    "served_incarnation",
]

#: A row of :data:`SEGMENT_COLUMNS` (SQLAlchemy types a row of this many columns loosely).
SegmentColumns = Any

#: One coverage problem of a partition: (kind, start offset, end offset, detail).
Found = tuple[str, int, int, dict[str, Any]]

_sg = tables.segments.c
#: What coverage needs of a segment row, by the names :class:`Segment` has (so a row of them
#: is what :func:`~kafka_archive.catalog.versions.version_of_segment` reads).
SEGMENT_COLUMNS = (
    _sg.partition_id,
    _sg.id,
    _sg.base_offset,
    _sg.end_offset,
    _sg.first_offset,
    _sg.last_offset,
    _sg.archived_at_ms,
    _sg.broker_id,
    _sg.manifest_key,
    _sg.epoch_runs,
    _sg.status,
    _sg.object_key,
    _sg.error,
    _sg.topic_id,
)

_CHUNK = 5_000  # partition ids per IN list, rows per executemany


def segment_rows(
    conn: Connection | Session, partition_ids: Iterable[int] | None = None
) -> Iterator[SegmentColumns]:
    """The :data:`SEGMENT_COLUMNS` of the segments of ``partition_ids`` (``None``: all), by
    partition id then segment id."""
    q = select(*SEGMENT_COLUMNS).order_by(_sg.partition_id, _sg.id)
    if partition_ids is None:
        yield from conn.execute(q)
        return
    ids = sorted(set(partition_ids))
    for i in range(0, len(ids), _CHUNK):
        yield from conn.execute(q.where(_sg.partition_id.in_(ids[i : i + _CHUNK])))


def partition_gaps(segs: Sequence[SegmentColumns]) -> list[Found]:
    """The coverage problems of one partition's segment rows (:data:`SEGMENT_COLUMNS`, in id
    order), in offset order (start, end, kind): ``missing`` offsets no version covers,
    ``overlap``/``divergent`` versions (both judged within the served incarnation of the
    topic: :func:`served_incarnation`), ``corrupt`` segments, ``incarnations``. Corrupt and
    pruned segments are not versions (a pruned range is reported from ``pruned_ranges``)."""
    by_id = {x.id: x for x in segs}
    versions = [
        version_of_segment(x)
        for x in served_incarnation(segs)
        if x.status not in ("corrupt", "pruned")
    ]
    found: list[Found] = []
    for hole in find_holes(versions):
        found.append(
            (
                "missing",
                hole.lo,
                hole.hi,
                {
                    "after_object": by_id[hole.after].object_key if hole.after in by_id else None,
                    "before_object": by_id[hole.before].object_key
                    if hole.before in by_id
                    else None,
                },
            )
        )
    for ov in find_overlaps(versions):
        a, b = by_id[ov.a], by_id[ov.b]
        detail: dict[str, Any] = {
            "objects": [a.object_key, b.object_key],
            "brokers": [a.broker_id, b.broker_id],
            "serving": [x.object_key for x in (a, b) if x.status in ("canonical", "partial")],
        }
        if ov.divergent:
            detail.update(
                first_divergent_offset=ov.first_divergent_offset,
                leader_epochs=[ov.epoch_a, ov.epoch_b],
            )
        found.append(("divergent" if ov.divergent else "overlap", ov.lo, ov.hi, detail))
    for x in segs:
        if x.status == "corrupt":
            found.append(("corrupt", x.base_offset, x.base_offset, _corrupt_detail(x)))
    found.extend(_incarnation_gaps(segs))
    found.sort(key=lambda g: (g[1], g[2], g[0]))
    return found


def served_incarnation(segs: Sequence[SegmentColumns]) -> Sequence[SegmentColumns]:
    """The segments holes and overlaps are judged over: with two incarnations of the topic in
    the partition, those of the one served (and of unknown id): another incarnation's
    offsets are other records, not copies (see :func:`_incarnation_gaps`)."""
    ids = {x.topic_id for x in segs if x.topic_id}
    if len(ids) < 2:
        return segs
    served = {x.topic_id for x in segs if x.topic_id and x.status in ("canonical", "partial")}
    return [x for x in segs if x.topic_id is None or x.topic_id in served]


def _incarnation_gaps(segs: Sequence[SegmentColumns]) -> list[Found]:
    """``incarnations`` (an error): the partition's segments carry more than one topic id, so
    the topic was deleted and re-created and the archive holds both incarnations' offsets
    under one partition. The build serves only the newest incarnation's (``served``); the
    older ones' segments are archived and cataloged but answer nothing."""
    ids: dict[str, list[SegmentColumns]] = defaultdict(list)
    for x in segs:
        if x.topic_id and x.status != "pruned":
            ids[x.topic_id].append(x)
    if len(ids) < 2:
        return []
    spans = {
        tid: [min(x.base_offset for x in xs), max(x.last_offset for x in xs)]
        for tid, xs in sorted(ids.items())
    }
    lo = min(a for a, _b in spans.values())
    hi = max(b for _a, b in spans.values())
    served = sorted(
        {x.topic_id for x in segs if x.topic_id and x.status in ("canonical", "partial")}
    )
    reason = (
        f"{len(ids)} topic ids: the topic was deleted and re-created and each incarnation's "
        f"offsets start again; only {', '.join(served) or 'none'} is served, the others' "
        "segments are archived but answer no query "
        "(`kafka-archive catalog topic-history` shows the incarnations)"
    )
    return [("incarnations", lo, hi, {"topic_ids": spans, "served": served, "reason": reason})]


def _corrupt_detail(x: SegmentColumns) -> dict[str, Any]:
    error = json.loads(x.error or "{}")
    return {
        "object": x.object_key,
        "manifest": x.manifest_key,
        "position": error.get("position"),
        "reason": str(error.get("detail") or error.get("error") or "corrupt"),
        "error": error,
    }


def refresh_coverage(conn: Connection | Session, partition_ids: Iterable[int]) -> None:
    """Rewrite the ``coverage_gaps`` rows of ``partition_ids`` from their segment rows.

    Call it in the transaction that changed their segments (a build's write, a prune), so the
    rows are never out of step with the segments a reader sees."""
    ids = sorted(set(partition_ids))
    cg = tables.coverage_gaps.c
    for i in range(0, len(ids), _CHUNK):
        conn.execute(delete(tables.coverage_gaps).where(cg.partition_id.in_(ids[i : i + _CHUNK])))
    _insert(conn, segment_rows(conn, ids))


def refresh_partitions(conn: Connection | Session, partition_ids: Iterable[int]) -> None:
    """Rewrite everything kept per partition for ``partition_ids``: the coverage rows
    (:func:`refresh_coverage`) and the totals ``catalog topics`` shows
    (:func:`~kafka_archive.catalog.totals.refresh_totals`). What a build's or a prune's write
    calls last, in its transaction."""
    ids = sorted(set(partition_ids))
    refresh_coverage(conn, ids)
    refresh_totals(conn, ids)


def refresh_all(conn: Connection | Session) -> None:
    """Rewrite every partition's ``coverage_gaps`` and ``partition_totals`` rows (one pass
    over all segment rows)."""
    conn.execute(delete(tables.coverage_gaps))
    _insert(conn, segment_rows(conn))
    refresh_totals(conn, None)


def _insert(conn: Connection | Session, rows: Iterable[SegmentColumns]) -> None:
    """Insert the coverage rows of segment ``rows`` (grouped by partition, in id order)."""
    batch: list[dict[str, Any]] = []
    for pid, segs in groupby(rows, key=lambda r: int(r.partition_id)):
        for seq, (kind, lo, hi, detail) in enumerate(partition_gaps(list(segs))):
            batch.append(
                {
                    "partition_id": pid,
                    "seq": seq,
                    "kind": kind,
                    "start_offset": lo,
                    "end_offset": hi,
                    "detail": json.dumps(detail),
                }
            )
        if len(batch) >= _CHUNK:
            conn.execute(insert(tables.coverage_gaps), batch)
            batch = []
    if batch:
        conn.execute(insert(tables.coverage_gaps), batch)
