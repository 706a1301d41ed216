"""Catalog reads of the on-call API: clusters, topics, offsets at T, traffic, gaps, group
positions, locate. Each answer item is the catalog's ``to_json()`` object, exactly what the
matching ``kafka-archive catalog ... --json`` command prints one line of."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query

from kafka_archive.services.shared_catalogs import SharedCatalogs
from kafka_archive.ui.access import Principal
from kafka_archive.ui.context import MAX_MS, ApiContext, resolve_time
from kafka_archive.ui.errors import api_call as _call

__all__ = ["catalog_router"]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
#: holes given a time span (each costs two ranged reads)
MAX_HOLE_SPANS = 50
#: the catalog counts traffic per minute
MINUTE_MS = 60_000
SECOND_MS = 1000

Name = Annotated[str, Query(min_length=1, max_length=1000)]
Partitions = Annotated[
    list[Annotated[int, Query(ge=0, le=INT32_MAX)]] | None,
    Query(description="Partition (repeatable; default all)."),
]


def catalog_router(ctx: ApiContext) -> APIRouter:
    from kafka_archive.services.catalog_queries import CatalogQueryService

    router = APIRouter(tags=["catalog"])
    Reader = Annotated[Principal, Depends(ctx.reader)]

    # one engine per catalog for all requests (see shared_catalogs: opening one per request
    # was half the page's CPU time); each request still has its own service and sessions
    catalogs = SharedCatalogs()

    def service(*, store: bool = True) -> CatalogQueryService:
        settings = _call(ctx.settings)
        catalog = _call(catalogs.get, settings.db) if settings.db else None
        return CatalogQueryService(settings if store else _without_store(settings), catalog=catalog)

    @router.get("/time")
    def time(_: Reader, at: Annotated[str, Query(max_length=100)]) -> dict[str, Any]:
        """The UTC instant of a time in any form the CLI takes (ISO-8601, epoch ms, -2h,
        now-30m)."""
        return _call(resolve_time, at, "at")

    @router.get("/counts")
    def counts(_: Reader) -> dict[str, Any]:
        """The labels of the counts every answer shows, with what each counts
        (:mod:`kafka_archive.counts`): ``{"items": [{"label", "meaning"}]}``; the page names
        its numbers with them, as the CLI and the user guide do."""
        from kafka_archive.counts import LEGEND

        return {"items": [{"label": k, "meaning": v} for k, v in LEGEND.items()]}

    @router.get("/clusters")
    def clusters(_: Reader) -> dict[str, Any]:
        """Every cluster of the catalog (``catalog clusters --json``)."""
        with service(store=False) as svc:
            return {"items": [c.to_json() for c in _call(svc.clusters)]}

    @router.get("/clusters/{cluster}/topics")
    def topics(_: Reader, cluster: str) -> dict[str, Any]:
        """What the archive holds per partition (``catalog topics --json``)."""
        with service(store=False) as svc:
            return {"items": [h.to_json() for h in _call(svc.topics, cluster)]}

    @router.get("/clusters/{cluster}/topics/{topic}/offsets")
    def offsets(
        _: Reader,
        cluster: str,
        topic: str,
        at: Annotated[str, Query(max_length=100, description="ISO-8601, epoch ms, -2h, now-30m")],
        partition: Partitions = None,
    ) -> dict[str, Any]:
        """Per partition the earliest offset whose timestamp is >= T (``catalog offsets
        --json``; exact when a store is configured)."""
        when = _call(resolve_time, at, "at")
        with service() as svc:
            answers = _call(svc.offsets, cluster, topic, when["ms"], partition)
        return {"at": when, "items": [a.to_json() for a in answers]}

    @router.get("/clusters/{cluster}/topics/{topic}/stats")
    def stats(
        _: Reader,
        cluster: str,
        topic: str,
        from_: Annotated[str, Query(alias="from", max_length=100)],
        to: Annotated[str, Query(max_length=100)] = "now",
        bucket_ms: Annotated[int, Query(ge=SECOND_MS, le=MAX_MS, multiple_of=SECOND_MS)] = 300_000,
        partition: Partitions = None,
    ) -> dict[str, Any]:
        """Records and bytes per bucket over [from, to) (``catalog stats --json``); buckets
        of whole minutes from the catalog, of seconds from the archived batches (the store)."""
        start = _call(resolve_time, from_, "from")
        end = _call(resolve_time, to, "to")
        with service(store=bucket_ms % MINUTE_MS != 0) as svc:
            buckets = _call(svc.stats, cluster, topic, start["ms"], end["ms"], bucket_ms, partition)
        return {
            "from": start,
            "to": end,
            "bucket_ms": bucket_ms,
            "items": [b.to_json() for b in buckets],
        }

    @router.get("/clusters/{cluster}/gaps")
    def gaps(
        _: Reader, cluster: str, topic: Annotated[str | None, Query(max_length=1000)] = None
    ) -> dict[str, Any]:
        """Holes and integrity problems with their severity (``catalog gaps --json``)."""
        with service(store=False) as svc:
            return {"items": [g.to_json() for g in _call(svc.gaps, cluster, topic)]}

    @router.get("/clusters/{cluster}/topics/{topic}/holes")
    def holes(_: Reader, cluster: str, topic: str) -> dict[str, Any]:
        """The topic's gaps (``catalog gaps --topic --json`` items), each with the times it
        spans where the archive can tell (``time_span``: the last record before it and the
        first after it; needs the store), for drawing them on a time chart."""
        with service() as svc:
            found = _call(svc.gaps, cluster, topic)
            spans = [
                _time_span(svc, cluster, g) if i < MAX_HOLE_SPANS else None
                for i, g in enumerate(found)
            ]
        return {
            "items": [g.to_json() | {"time_span": t} for g, t in zip(found, spans, strict=True)]
        }

    @router.get("/clusters/{cluster}/topics/{topic}/partitions/{partition}/locate")
    def locate(
        _: Reader,
        cluster: str,
        topic: str,
        partition: Annotated[int, Path(ge=0, le=INT32_MAX)],
        offset: Annotated[int, Query(ge=0, le=INT64_MAX)],
    ) -> dict[str, Any]:
        """Where an offset is archived: object, byte range, timestamp (``catalog locate
        --json``; needs the store)."""
        with service() as svc:
            return _call(svc.locate, cluster, topic, partition, offset).to_json()

    @router.get("/clusters/{cluster}/groups/{group}/offsets")
    def group_offsets(
        _: Reader,
        cluster: str,
        group: str,
        at: Annotated[str | None, Query(max_length=100)] = None,
    ) -> dict[str, Any]:
        """The group's committed position per partition at T (default: latest), from the
        archived commit history (``catalog group-offsets --json``), and how far each was
        behind the archive at T (``behind``: the topic's offset at T minus the commit)."""
        when = _call(resolve_time, at, "at") if at else None
        at_ms = None if when is None else int(str(when["ms"]))
        with service() as svc:
            found = _call(svc.group_offsets, cluster, group, at_ms)
            behind = _behind(svc, cluster, found, at_ms)
        return {"at": when, "items": [o.to_json() for o in found], "behind": behind}

    return router


def _without_store(settings: Any) -> Any:
    """The settings with no store: questions answered by the catalog alone."""
    import dataclasses

    return dataclasses.replace(settings, store=None)


def _behind(svc: Any, cluster: str, found: list[Any], at_ms: int | None) -> list[dict[str, Any]]:
    """Per committed partition: the archive's end at ``at_ms`` (the offset at T; past the
    archive's last record, its last offset + 1) and the group's lag behind it."""
    from kafka_archive.catalog.queries import CatalogQueryError

    rows = []
    for topic in sorted({o.topic for o in found}):
        try:
            holdings = {h.partition: h for h in svc.topics(cluster) if h.topic == topic}
            ends: dict[int, tuple[int, bool]] = {
                p: (h.last_offset + 1, True) for p, h in holdings.items() if h.last_offset >= 0
            }
            if at_ms is not None:
                for a in svc.offsets(cluster, topic, at_ms):
                    if a.offset >= 0:
                        ends[a.partition] = (a.offset, bool(a.exact))
        except CatalogQueryError:  # the group reads a topic the archive does not hold
            continue
        for o in (o for o in found if o.topic == topic and o.partition in ends):
            end, exact = ends[o.partition]
            rows.append(
                {
                    "topic": topic,
                    "partition": o.partition,
                    "end_offset": end,
                    "lag": max(end - o.offset, 0),
                    "exact": exact,
                }
            )
    return rows


def _time_span(svc: Any, cluster: str, gap: Any) -> dict[str, int | None] | None:
    """``{"start", "end"}``: the timestamps of the records around ``gap`` (None where there
    is no such record or the store cannot say)."""
    from kafka_archive.catalog.queries import CatalogQueryError
    from kafka_archive.settings import SettingsError
    from kafka_archive.store import StoreError
    from segment_lib.errors import SegmentError

    def ts(offset: int) -> int | None:
        if offset < 0:
            return None
        try:
            return int(svc.locate(cluster, gap.topic, gap.partition, offset).timestamp)
        except (CatalogQueryError, SettingsError, StoreError, SegmentError):
            return None

    if gap.partition is None or gap.start_offset is None:
        return None
    start, end = ts(int(gap.start_offset) - 1), ts(int(gap.end_offset) + 1)
    return None if start is None and end is None else {"start": start, "end": end}
