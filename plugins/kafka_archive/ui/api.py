"""The on-call API and the page's bundle: one FastAPI app that Airflow's API server mounts.

:func:`build_app` makes the app mounted at :data:`URL_PREFIX`: the JSON API under ``/api/v1``
(OpenAPI description at ``/api/v1/openapi.json``), the page's bundle at
:data:`~kafka_archive.ui.page.BUNDLE_PATH` (the page itself is rendered by Airflow's UI at
``/plugin/kafka-archive``; ``/`` redirects there, query kept). Every endpoint needs
a user (:mod:`kafka_archive.ui.access`); reads need read access, launching a replay needs
permission to trigger the replay DAG, moving a consumer group the group-offsets DAG, and a
cookie-authenticated POST must carry
:data:`~kafka_archive.ui.access.CSRF_HEADER`. Answers are the catalog's and the services' own
JSON objects (``to_json()``, what the CLI's ``--json`` prints), wrapped as ``{"items": [...]}``
with the resolved times beside them; failures are ``{error, message, hint}``
(:mod:`kafka_archive.ui.errors`).

The routes are in :mod:`kafka_archive.ui.catalog_routes`, :mod:`kafka_archive.ui.replay_routes`
and :mod:`kafka_archive.ui.group_routes`; they reach the catalog only through the services
(:class:`~kafka_archive.services.catalog_queries.CatalogQueryService`,
:class:`~kafka_archive.services.replay.ReplayService`,
:class:`~kafka_archive.services.group_translation.GroupTranslationService`), one per request, with
the settings
:func:`build_app` was given (in Airflow: read per request, Variables included).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from kafka_archive.settings import Settings
from kafka_archive.ui.access import (
    CSRF_HEADER,
    GROUP_OFFSETS_DAG_ID,
    REPLAY_DAG_ID,
    RESTORE_DAG_ID,
    Access,
    NotAuthenticated,
    Principal,
)
from kafka_archive.ui.context import ApiContext
from kafka_archive.ui.errors import ApiError, install_error_handlers
from kafka_archive.ui.launcher import Launcher
from kafka_archive.ui.page import BUNDLE_PATH, PAGE_ROUTE, bundle_js

__all__ = ["API_PREFIX", "URL_PREFIX", "build_app"]

#: where Airflow mounts the app
URL_PREFIX = "/kafka-archive"
#: the API's version prefix inside the app
API_PREFIX = "/api/v1"


def build_app(
    *,
    settings: Callable[[], Settings],
    access: Access,
    launcher: Launcher,
) -> FastAPI:
    """The app (see the module docstring). ``settings`` is called once per request."""
    from kafka_archive.ui.catalog_routes import catalog_router
    from kafka_archive.ui.group_routes import group_router
    from kafka_archive.ui.replay_routes import replay_router
    from kafka_archive.ui.restore_routes import restore_router
    from kafka_archive.ui.status_routes import status_router

    app = FastAPI(
        title="kafka-archive on-call API",
        version="1",
        description=(
            "The archive's catalog and the replay launcher, for the on-call page. Every "
            "endpoint needs an Airflow user (JWT bearer token, or the Airflow UI's cookie "
            f"plus the header {CSRF_HEADER} on POST)."
        ),
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        servers=[{"url": URL_PREFIX}],
    )
    install_error_handlers(app)

    async def authenticated(request: Request) -> Principal:
        try:
            return await access.authenticate(request)
        except NotAuthenticated as exc:
            raise ApiError(
                401, "not_authenticated", f"log in to Airflow first ({exc})", "open /auth/login"
            ) from None

    async def reader(request: Request) -> Principal:
        who = await authenticated(request)
        if not access.can_read(who):
            raise ApiError(
                403,
                "forbidden",
                f"{who.name} may not read the archive's catalog",
                "ask for read access to the kafka_archive_catalog DAG",
            )
        return who

    def may_trigger(dag_id: str) -> Callable[[Request], Awaitable[Principal]]:
        """The dependency of a state-changing endpoint: a reader, the CSRF header with a
        cookie, and permission to trigger ``dag_id`` (the endpoint creates runs of it)."""

        async def trigger(request: Request) -> Principal:
            who = await reader(request)
            if (
                "authorization" not in request.headers
                and CSRF_HEADER.lower() not in request.headers
            ):
                raise ApiError(
                    403,
                    "csrf",
                    f"a request authenticated by cookie needs the {CSRF_HEADER} header",
                    "send it from the page's script, or use a bearer token",
                )
            if not access.can_trigger(who, dag_id):
                raise ApiError(
                    403,
                    "forbidden",
                    f"{who.name} may not trigger {dag_id}",
                    f"ask for permission to trigger the {dag_id} DAG",
                )
            return who

        return trigger

    ctx = ApiContext(
        settings=settings,
        launcher=launcher,
        reader=reader,
        trigger=may_trigger(REPLAY_DAG_ID),
        group_trigger=may_trigger(GROUP_OFFSETS_DAG_ID),
        restore_trigger=may_trigger(RESTORE_DAG_ID),
    )
    app.include_router(catalog_router(ctx), prefix=API_PREFIX)
    app.include_router(replay_router(ctx), prefix=API_PREFIX)
    app.include_router(group_router(ctx), prefix=API_PREFIX)
    app.include_router(restore_router(ctx), prefix=API_PREFIX)
    app.include_router(status_router(ctx), prefix=API_PREFIX)

    @app.get(f"{API_PREFIX}/openapi.json", include_in_schema=False)
    def openapi(_who: Principal = Depends(reader)) -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get(f"{API_PREFIX}/whoami", tags=["access"])
    def whoami(who: Principal = Depends(reader)) -> dict[str, Any]:
        """The user, whether they may launch replays (``can_trigger``), move consumer groups
        (``can_apply_groups``) and plan or launch restores (``can_restore``)."""
        return {
            "user": who.name,
            "can_trigger": access.can_trigger(who, REPLAY_DAG_ID),
            "can_apply_groups": access.can_trigger(who, GROUP_OFFSETS_DAG_ID),
            "can_restore": access.can_trigger(who, RESTORE_DAG_ID),
        }

    @app.get(BUNDLE_PATH, include_in_schema=False)
    def bundle() -> Response:
        """The page's code (no data: served to anyone, as Airflow serves its own UI's);
        its URL names its content hash, so it may be cached for good."""
        return Response(
            bundle_js(),
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=31536000, immutable"},
        )

    @app.get("/", include_in_schema=False)
    def page(request: Request) -> RedirectResponse:
        """The page's old address (and any link to it) leads to the page in Airflow's UI,
        with its query (cluster, topic, at, group) kept: relative, so a base path is kept."""
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(f"../plugin/{PAGE_ROUTE}/{query}", status_code=307)

    return app
