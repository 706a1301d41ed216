"""What ``catalog topics`` shows per partition, computed when the partition changes and kept in
``partition_totals`` (model :class:`~kafka_archive.catalog.models.PartitionTotals`).

``catalog topics`` aggregated, for the whole cluster on every call, the serving segments
(count, offsets, largest timestamp), the histogram (records, bytes) and each chain's lowest
piece: grouped aggregates over every row of the cluster, 0.15-0.36 s on PostgreSQL at 1e5
segments (docs/performance.md, "Scale curve"). These rows change only where the segments do (a
build's or a prune's per-partition transaction), which rewrites them with
:func:`refresh_totals` for the partitions it touched (the same aggregates, one partition at
a time); ``topics`` reads one row per partition.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, delete, func, insert, select

from kafka_archive.catalog import tables

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = ["refresh_totals"]

_CHUNK = 5_000  # partition ids per IN list


def _i(v: Any) -> int:
    return -1 if v is None else int(v)


def refresh_totals(conn: Connection | Session, partition_ids: Iterable[int] | None) -> None:
    """Rewrite the ``partition_totals`` rows of ``partition_ids`` (``None``: every partition)
    from their segment, histogram and chain rows; a partition with no segment row has none.
    Call it in the transaction that changed them."""
    if partition_ids is None:
        conn.execute(delete(tables.partition_totals))
        _write(conn, None)
        return
    ids = sorted(set(partition_ids))
    for i in range(0, len(ids), _CHUNK):
        chunk = ids[i : i + _CHUNK]
        conn.execute(
            delete(tables.partition_totals).where(tables.partition_totals.c.partition_id.in_(chunk))
        )
        _write(conn, chunk)


def _write(conn: Connection | Session, ids: list[int] | None) -> None:
    # (time_answers reaches this module through catalog.queries: imported here, not on top)
    from kafka_archive.catalog.time_answers import first_pieces_query

    sg, h = tables.segments.c, tables.histogram.c
    serving = sg.status.in_(("canonical", "partial"))
    q_spans = select(
        sg.partition_id,
        func.count(sg.id).filter(serving),
        func.min(sg.first_offset).filter(serving),
        func.max(sg.last_offset).filter(serving),
        func.max(sg.max_timestamp).filter(serving),
    ).group_by(sg.partition_id)
    q_volume = select(h.partition_id, func.sum(h.records), func.sum(h.bytes)).group_by(
        h.partition_id
    )
    q_firsts = first_pieces_query().add_columns(tables.partitions.c.id)
    q_ids = (
        select(sg.partition_id, sg.topic_id)
        .distinct()
        .where(sg.topic_id.is_not(None), sg.status != "pruned")
        .order_by(sg.partition_id, sg.topic_id)
    )
    if ids is not None:
        q_ids = q_ids.where(sg.partition_id.in_(ids))
        q_spans = q_spans.where(sg.partition_id.in_(ids))
        q_volume = q_volume.where(h.partition_id.in_(ids))
        q_firsts = q_firsts.where(tables.partitions.c.id.in_(ids))
    spans = conn.execute(q_spans).all()
    if not spans:
        return
    volume = {int(pid): (int(n or 0), int(b or 0)) for pid, n, b in conn.execute(q_volume)}
    firsts = {int(row[3]): int(row[2]) for row in conn.execute(q_firsts)}
    topic_ids: dict[int, list[str]] = defaultdict(list)
    for pid, tid in conn.execute(q_ids):
        topic_ids[int(pid)].append(str(tid))
    rows = [
        {
            "partition_id": int(pid),
            "segments": int(n or 0),
            "first_offset": _i(fo),
            "last_offset": _i(lo),
            "first_timestamp": firsts.get(int(pid), -1),
            "max_timestamp": _i(mx),
            "records": volume.get(int(pid), (0, 0))[0],
            "bytes": volume.get(int(pid), (0, 0))[1],
            "topic_ids": json.dumps(topic_ids.get(int(pid), [])),
        }
        for pid, n, fo, lo, mx in spans
    ]
    conn.execute(insert(tables.partition_totals), rows)
