"""The platform's health on the on-call API: ``GET /status`` (what ``kafka-archive status
--json`` prints, from the catalog alone: the API server asks no cluster) and ``GET /metrics``
(the same catalog's Prometheus metrics, for a look by hand or a scrape with a bearer token;
an unauthenticated in-cluster scrape target is ``kafka-archive metrics serve``)."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from kafka_archive.services.shared_catalogs import SharedCatalogs
from kafka_archive.services.status import StatusService
from kafka_archive.ui.access import Principal
from kafka_archive.ui.context import ApiContext
from kafka_archive.ui.errors import api_call

__all__ = ["status_router"]


def status_router(ctx: ApiContext) -> APIRouter:
    router = APIRouter(tags=["status"])
    Reader = Annotated[Principal, Depends(ctx.reader)]
    catalogs = SharedCatalogs()

    def service() -> StatusService:
        settings = api_call(ctx.settings)
        catalog = api_call(catalogs.get, settings.db) if settings.db else None
        return StatusService(settings, catalog=catalog)

    @router.get("/status")
    def status(_: Reader) -> dict[str, Any]:
        """The health view: checks (``ok``/``warn``/``fail``, worst first), last archive per
        broker, catalog freshness, follower positions, integrity problems, running replays,
        prunes (``kafka-archive status --json`` without ``--cluster``)."""
        with service() as svc:
            report: dict[str, Any] = api_call(lambda: svc.status().to_json())
        return report

    @router.get("/metrics", response_class=Response)
    def metrics(_: Reader) -> Response:
        """The catalog's Prometheus metrics in the text exposition format."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        from kafka_archive.metrics.exposition import catalog_registry

        with service() as svc:
            catalog = api_call(svc.resources.catalog)  # MissingSetting: no catalog configured
            body = generate_latest(catalog_registry(lambda: catalog, keep_open=True))
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return router
