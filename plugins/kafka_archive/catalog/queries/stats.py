"""Records and bytes per time bucket: :func:`stats` (from the catalog's per-minute histogram)
and :func:`fine_stats` (whole seconds: from the archived batches themselves, read through the
time index, for the short windows a chart zooms into)."""

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
from kafka_archive.catalog.tables import segments as sg
from kafka_archive.catalog.tables import time_index
from kafka_archive.store import ObjectStore
from segment_lib.errors import SegmentError
from segment_lib.log_file import iter_batches

#: the most buckets one stats answer holds (its lists are built in memory)
MAX_BUCKETS = 100_000
#: the most archived bytes one :func:`fine_stats` answer reads (all partitions together)
MAX_FINE_BYTES = 64 << 20
#: the smallest bucket: a second
SECOND_MS = 1000

__all__ = ["MAX_FINE_BYTES", "StatsBucket", "fine_stats", "stats"]


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
    ``bucket_ms`` must be a whole number of minutes (:func:`fine_stats` counts per second).
    """
    if bucket_ms <= 0 or bucket_ms % DEFAULT_HISTOGRAM_MS:
        raise CatalogRequestError(
            f"bucket of {bucket_ms} ms: the catalog counts per minute",
            hint="use a whole number of minutes, e.g. 1m, 5m, 1h",
        )
    first, n = _buckets(start_ms, end_ms, bucket_ms)
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


def _buckets(start_ms: int, end_ms: int, bucket_ms: int) -> tuple[int, int]:
    """The first bucket's start and the number of buckets covering ``[start_ms, end_ms)``."""
    if end_ms <= start_ms:
        raise CatalogRequestError(
            "the end of the range must be after its start", hint="e.g. --from -2h --to now"
        )
    first = start_ms - start_ms % bucket_ms
    n = (end_ms - first + bucket_ms - 1) // bucket_ms
    if n > MAX_BUCKETS:
        raise CatalogRequestError(
            f"the range holds {n} buckets of {bucket_ms // SECOND_MS} second(s), "
            f"more than {MAX_BUCKETS}",
            hint="use a larger bucket (--bucket / bucket_ms) or a shorter range (--from/--to)",
        )
    return first, n


def fine_stats(
    catalog: Catalog,
    store: ObjectStore,
    cluster: str,
    topic: str,
    start_ms: int,
    end_ms: int,
    bucket_ms: int,
    partitions: Sequence[int] | None = None,
) -> list[StatsBucket]:
    """As :func:`stats`, for any whole number of seconds: each archived batch counts at its
    max timestamp (data records; a control batch's bytes only), exactly as the histogram
    counts it, but read from the batches themselves.

    Per partition the time-index intervals from the first whose running maximum timestamp is
    >= ``start_ms`` up to the first whose maximum is >= ``end_ms`` are read (a record later in
    the log with an earlier timestamp than that is not counted: producers' clocks rarely go
    back that far). Refused (:class:`CatalogRequestError`) past :data:`MAX_FINE_BYTES` of
    reads: a window that large is drawn per minute."""
    if bucket_ms < SECOND_MS or bucket_ms % SECOND_MS:
        raise CatalogRequestError(
            f"bucket of {bucket_ms} ms: buckets are whole seconds", hint="e.g. 1s, 10s, 1m"
        )
    first, n = _buckets(start_ms, end_ms, bucket_ms)
    reads = _fine_intervals(catalog, cluster, topic, start_ms, end_ms, partitions)
    total = sum(r.byte_end - r.byte_start for r in reads)
    if total > MAX_FINE_BYTES:
        raise CatalogRequestError(
            f"counting per second here reads {total} archived bytes, more than {MAX_FINE_BYTES}",
            hint="use whole minutes (bucket_ms a multiple of 60000) or a shorter range",
        )
    recs = [0] * n
    byts = [0] * n
    for r in reads:
        data = store.get_range(r.object_key, r.byte_start, r.byte_end)
        try:
            for b in iter_batches(data, 0, verify_crc=False):
                in_chain = r.start_offset <= b.last_offset and b.base_offset <= r.end_offset
                if not in_chain or not start_ms <= b.max_timestamp < end_ms:
                    continue
                i = (b.max_timestamp - first) // bucket_ms
                recs[i] += 0 if b.is_control else b.record_count
                byts[i] += b.size
        except SegmentError as exc:
            where = f"{store.uri.rstrip('/')}/{r.object_key}[{r.byte_start}:{r.byte_end}]"
            raise exc.with_location(where) from None
    return [StatsBucket(first + i * bucket_ms, bucket_ms, recs[i], byts[i]) for i in range(n)]


def _fine_intervals(
    catalog: Catalog,
    cluster: str,
    topic: str,
    start_ms: int,
    end_ms: int,
    partitions: Sequence[int] | None,
) -> list[Any]:
    """The time-index intervals :func:`fine_stats` reads (see there), in log order."""
    ti = time_index
    out: list[Any] = []
    with catalog.session() as s:
        for pid, _part in topic_partitions(s, cluster, topic, partitions):
            rows = s.execute(
                select(
                    ti.c.start_offset,
                    ti.c.end_offset,
                    ti.c.byte_start,
                    ti.c.byte_end,
                    ti.c.max_ts,
                    sg.c.object_key,
                )
                .join(sg, sg.c.id == ti.c.segment_id)
                .where(ti.c.partition_id == pid, ti.c.running_max_ts >= start_ms)
                .order_by(ti.c.start_offset)
            )
            for row in rows:
                out.append(row)
                if row.max_ts >= end_ms:
                    break
    return out
