"""Where an offset lives: :func:`locate` (object key, byte range of its batch, timestamp)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.models import PrunedRange, Segment, TimeIndexEntry
from kafka_archive.catalog.queries.partitions import topic_partitions
from kafka_archive.catalog.query_errors import CatalogQueryError
from kafka_archive.store import ObjectStore
from segment_lib.errors import SegmentError
from segment_lib.log_file import decode_batch, iter_batches

__all__ = ["Location", "locate"]


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
    #: the topic id of the segment holding it (``None``: the broker wrote none)
    topic_id: str | None = None

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
            "topic_id": self.topic_id,
        }


def locate(
    catalog: Catalog, store: ObjectStore, cluster: str, topic: str, partition: int, offset: int
) -> Location:
    """The batch holding ``offset`` (or the next record, see :class:`Location`)."""
    ti = TimeIndexEntry
    cols = (
        ti.start_offset,
        ti.end_offset,
        ti.byte_start,
        ti.byte_end,
        Segment.object_key,
        Segment.topic_id,
    )
    with catalog.session() as s:
        ((pid, _),) = topic_partitions(s, cluster, topic, [partition])
        row = s.execute(
            select(*cols)
            .join(Segment, Segment.id == ti.segment_id)
            .where(ti.partition_id == pid, ti.start_offset <= offset)
            .order_by(ti.start_offset.desc())
            .limit(1)
        ).first()
        if row is None or row.end_offset < offset:
            _refuse_pruned(s, cluster, topic, partition, offset)
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
                        row.topic_id,
                    )
    except SegmentError as exc:
        raise exc.with_location(path, row.byte_start) from None
    raise CatalogQueryError(
        f"offset {offset} of {topic}-{partition}: no record found in the interval the catalog "
        "points at",
        hint="the catalog and the archive disagree: rebuild the catalog",
    )


def _refuse_pruned(s: Session, cluster: str, topic: str, partition: int, offset: int) -> None:
    """An offset a retention policy pruned is an answer of its own, not "the next record"."""
    from kafka_archive.timeparse import format_ms

    pr = PrunedRange
    hit = s.execute(
        select(pr)
        .where(
            pr.cluster == cluster,
            pr.topic == topic,
            pr.partition == partition,
            pr.first_offset <= offset,
            pr.last_offset >= offset,
        )
        .limit(1)
    ).scalar_one_or_none()
    if hit is not None:
        when = format_ms(hit.pruned_at_ms) if hit.pruned_at_ms is not None else "(unfinished)"
        raise CatalogQueryError(
            f"offset {offset} of {topic}-{partition} was pruned from the archive by policy "
            f"{hit.policy} at {when} (offsets {hit.first_offset}..{hit.last_offset})",
            hint=f"the retained data starts after offset {hit.last_offset}; "
            "`kafka-archive catalog gaps` lists the pruned ranges",
        )
