"""Records and bytes per time bucket: :func:`stats` (from the catalog's per-minute histogram)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from kafka_archive.catalog.constants import DEFAULT_HISTOGRAM_MS
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.models import HistogramBucket
from kafka_archive.catalog.queries.partitions import topic_partitions
from kafka_archive.catalog.query_errors import CatalogRequestError

#: the most buckets one stats answer holds (its lists are built in memory)
MAX_BUCKETS = 100_000

__all__ = ["StatsBucket", "stats"]


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
        raise CatalogRequestError(
            f"bucket of {bucket_ms} ms: the catalog counts per minute",
            hint="use a whole number of minutes, e.g. 1m, 5m, 1h",
        )
    if end_ms <= start_ms:
        raise CatalogRequestError(
            "the end of the range must be after its start", hint="e.g. --from -2h --to now"
        )
    first = start_ms - start_ms % bucket_ms
    n = (end_ms - first + bucket_ms - 1) // bucket_ms
    if n > MAX_BUCKETS:
        raise CatalogRequestError(
            f"the range holds {n} buckets of {bucket_ms // DEFAULT_HISTOGRAM_MS} minute(s), "
            f"more than {MAX_BUCKETS}",
            hint="use a larger bucket (--bucket / bucket_ms) or a shorter range (--from/--to)",
        )
    h = HistogramBucket
    with catalog.session() as s:
        pids = [pid for pid, _ in topic_partitions(s, cluster, topic, partitions)]
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
