"""The partitions a query names (:func:`topic_partitions`), or the error saying what the
catalog holds instead."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import Connection, select

from kafka_archive.catalog.query_errors import CatalogQueryError
from kafka_archive.catalog.tables import partitions as pt

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = ["topic_partitions"]


def topic_partitions(
    s: Connection | Session, cluster: str, topic: str, partitions: Sequence[int] | None
) -> list[tuple[int, int]]:
    """(partition row id, partition number) of ``partitions`` of ``topic`` (all when empty),
    in partition order; ``s``: a Core connection or an ORM session (a Core query either way)."""
    q = select(pt.c.id, pt.c.partition).where(pt.c.cluster == cluster, pt.c.topic == topic)
    if partitions:
        q = q.where(pt.c.partition.in_(list(partitions)))
    rows = [(int(a), int(b)) for a, b in s.execute(q.order_by(pt.c.partition))]
    if not rows:
        err = CatalogQueryError(
            f"the catalog has no data for topic {topic!r} of cluster {cluster!r}"
            + (f" partitions {sorted(partitions)}" if partitions else ""),
            hint="run `kafka-archive catalog topics --cluster C` to see what it holds, or "
            "`kafka-archive catalog build` if the archive is newer than the catalog",
        )
        if partitions and _has_topic(s, cluster, topic):
            err.field = "partition"  # the topic is there: the partitions asked are not
        raise err
    if partitions:
        missing = sorted(set(partitions) - {p for _, p in rows})
        if missing:
            err = CatalogQueryError(
                f"topic {topic!r} has no archived partitions {missing}",
                hint="run `kafka-archive catalog topics --cluster C` to list partitions",
            )
            err.field = "partition"  # the catalog API's query parameter, not the topic
            raise err
    return rows


def _has_topic(s: Connection | Session, cluster: str, topic: str) -> bool:
    q = select(pt.c.id).where(pt.c.cluster == cluster, pt.c.topic == topic).limit(1)
    return s.execute(q).first() is not None
