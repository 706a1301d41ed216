"""ListOffsets for a moment of history: :func:`offsets_for_time` and its SQL part,
:func:`offset_intervals`.

Per partition the earliest offset whose timestamp is >= T (control records count, as on the
broker), or -1. One indexed SQL query for all partitions (the first time-index interval whose
running maximum timestamp is >= T), then at most **one ranged read of one interval** per
partition to find the record. The broker answers from the first *segment* whose largest
timestamp is >= T and gives -1 when no record of that segment qualifies (possible only when
compaction left an emptied batch that kept its max timestamp); the catalog reproduces that too,
still with at most one read.

Core only (the tables of :mod:`kafka_archive.catalog.tables` on an engine connection): this is
``catalog offsets``' path, which never imports ``sqlalchemy.orm`` (tests/test_cli_imports.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, select, true

from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.queries.partitions import topic_partitions
from kafka_archive.catalog.query_errors import CatalogQueryError
from kafka_archive.catalog.tables import chain_pieces as cp
from kafka_archive.catalog.tables import partitions as pt
from kafka_archive.catalog.tables import segments as sg
from kafka_archive.catalog.tables import time_index
from kafka_archive.store import ObjectStore
from segment_lib.errors import SegmentError
from segment_lib.log_file import decode_batch, iter_batches

__all__ = ["IntervalToRead", "OffsetAnswer", "offset_intervals", "offsets_for_time"]


@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    """ListOffsets answer for one partition (``offset``/``timestamp`` -1: no such record)."""

    partition: int
    offset: int
    timestamp: int
    #: the topic id of the segment answering (``None``: unknown, or no record)
    topic_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "offset": self.offset,
            "timestamp": self.timestamp,
            "topic_id": self.topic_id,
        }


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
    #: the topic id of the segment holding the interval (``None``: unknown)
    topic_id: str | None = None


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
    with catalog.engine.connect() as s:
        rows = {
            int(r.pid): r
            for r in s.execute(_interval_query(s, cluster, topic, timestamp, partitions))
        }
        if not rows or (partitions and len(rows) < len(set(partitions))):
            topic_partitions(s, cluster, topic, partitions)  # raises the explanatory error
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
                            row.topic_id,
                        ),
                    )
                )
    return out


def _interval_query(
    s: Connection, cluster: str, topic: str, timestamp: int, partitions: Sequence[int] | None
) -> Any:
    """One statement: every partition of the topic with the first time-index interval whose
    running maximum is >= T (NULLs when there is none). Each partition costs one index seek
    on ``(partition_id, running_max_ts, start_offset)`` and one primary-key lookup."""
    ti = time_index.alias("ti")
    cols = (
        ti.c.start_offset,
        ti.c.end_offset,
        ti.c.byte_start,
        ti.c.byte_end,
        ti.c.record_max_ts,
        ti.c.segment_id,
    )
    where = [pt.c.cluster == cluster, pt.c.topic == topic]
    if partitions:
        where.append(pt.c.partition.in_(sorted(set(partitions))))
    if s.dialect.name == "postgresql":
        hit = (
            select(*cols)
            .where(ti.c.partition_id == pt.c.id, ti.c.running_max_ts >= timestamp)
            .order_by(ti.c.running_max_ts, ti.c.start_offset)
            .limit(1)
            .lateral("hit")
        )
        return (
            select(pt.c.id.label("pid"), pt.c.partition, *hit.c, sg.c.object_key, sg.c.topic_id)
            .select_from(pt)
            .outerjoin(hit, true())
            .outerjoin(sg, sg.c.id == hit.c.segment_id)
            .where(*where)
        )
    # SQLite has no LATERAL: join on the correlated "first start offset" instead
    t2 = time_index.alias("t2")
    first = (
        select(t2.c.start_offset)
        .where(t2.c.partition_id == pt.c.id, t2.c.running_max_ts >= timestamp)
        .order_by(t2.c.running_max_ts, t2.c.start_offset)
        .limit(1)
        .correlate(pt)
        .scalar_subquery()
    )
    return (
        select(pt.c.id.label("pid"), pt.c.partition, *cols, sg.c.object_key, sg.c.topic_id)
        .select_from(pt)
        .outerjoin(ti, and_(ti.c.partition_id == pt.c.id, ti.c.start_offset == first))
        .outerjoin(sg, sg.c.id == ti.c.segment_id)
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
        answers.append(OffsetAnswer(part, hit[0], hit[1], iv.topic_id))
    return answers


_INTERVAL_COLUMNS = (
    time_index.c.partition_id,
    time_index.c.start_offset,
    time_index.c.end_offset,
    time_index.c.byte_start,
    time_index.c.byte_end,
    time_index.c.record_max_ts,
    time_index.c.segment_id,
    sg.c.object_key,
    sg.c.topic_id,
)


def _next_in_segment(s: Connection, pid: int, row: Any, timestamp: int) -> Any:
    ti = time_index.c
    piece_hi = s.execute(
        select(cp.c.hi)
        .where(cp.c.partition_id == pid, cp.c.lo <= row.start_offset)
        .order_by(cp.c.lo.desc())
        .limit(1)
    ).scalar_one()
    return s.execute(
        select(*_INTERVAL_COLUMNS)
        .select_from(time_index.join(sg, sg.c.id == ti.segment_id))
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
