"""The partitions a query names (:func:`topic_partitions`), or the error saying what the
catalog holds instead."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from kafka_archive.catalog.models import Partition
from kafka_archive.catalog.query_errors import CatalogQueryError

__all__ = ["topic_partitions"]


def topic_partitions(
    s: Session, cluster: str, topic: str, partitions: Sequence[int] | None
) -> list[tuple[int, int]]:
    """(partition row id, partition number) of ``partitions`` of ``topic`` (all when empty),
    in partition order."""
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
