"""Who is asking, and may they: the on-call API's access control.

Every endpoint of the API needs a user (no anonymous endpoint). Reads need read access to the
DAG :data:`READ_DAG_ID`; launching a replay needs permission to trigger :data:`REPLAY_DAG_ID`
(create a run of it), previewing and applying group offsets permission to trigger
:data:`GROUP_OFFSETS_DAG_ID`. :class:`AirflowAccess` asks Airflow's auth
manager, the same way Airflow's own API does: the JWT of an ``Authorization: Bearer`` header,
else the ``_token`` cookie the Airflow UI sets (a user already resolved by Airflow's refresh
middleware is honoured the way Airflow honours it).

CSRF: a browser sends the cookie by itself, an ``Authorization`` header never; so a
state-changing request authenticated by the cookie alone must also carry the header
:data:`CSRF_HEADER` (a cross-site form cannot set a custom header, and cross-origin scripts
need a CORS pre-flight this API never grants). The check is the API's
(:func:`kafka_archive.ui.api.build_app`), whatever :class:`Access` is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request

from kafka_archive.errors import KafkaArchiveError

__all__ = [
    "CSRF_HEADER",
    "GROUP_OFFSETS_DAG_ID",
    "READ_DAG_ID",
    "REPLAY_DAG_ID",
    "RESTORE_DAG_ID",
    "Access",
    "AirflowAccess",
    "NotAuthenticated",
    "Principal",
]

#: the DAG whose runs the API creates (replays) and whose trigger permission it checks
REPLAY_DAG_ID = "kafka_archive_replay"
#: planning and launching a whole-cluster restore
RESTORE_DAG_ID = "kafka_archive_restore"
#: the DAG whose runs commit consumer-group offsets on a replay's target ("start G at T")
GROUP_OFFSETS_DAG_ID = "kafka_archive_group_offsets"
#: reading the catalog needs read access to this DAG (the catalog it builds)
READ_DAG_ID = "kafka_archive_catalog"
#: the header a cookie-authenticated POST must carry (its value is not checked)
CSRF_HEADER = "X-Kafka-Archive-Request"


class NotAuthenticated(KafkaArchiveError):
    """No valid credential on the request (401)."""


@dataclass(frozen=True)
class Principal:
    """An authenticated user: ``name`` for audit (the DAG run's triggering user) and the
    auth manager's own user object."""

    name: str
    user: Any


class Access(Protocol):
    """Authentication and the permissions the API needs."""

    async def authenticate(self, request: Request) -> Principal:
        """The request's user; raises :class:`NotAuthenticated` without a valid credential."""
        ...

    def can_read(self, who: Principal) -> bool:
        """May ``who`` read the catalog (and see replays and connection ids)."""
        ...

    def can_trigger(self, who: Principal, dag_id: str) -> bool:
        """May ``who`` create runs of ``dag_id`` (:data:`REPLAY_DAG_ID`: launch a replay;
        :data:`GROUP_OFFSETS_DAG_ID`: move a consumer group)."""
        ...


class AirflowAccess:
    """:class:`Access` through Airflow's auth manager (inside Airflow's API server only)."""

    async def authenticate(self, request: Request) -> Principal:
        from airflow.api_fastapi.core_api.security import get_user
        from fastapi import HTTPException
        from fastapi.security import HTTPAuthorizationCredentials

        creds = None
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token:
            creds = HTTPAuthorizationCredentials(scheme="Bearer", credentials=token.strip())
        try:
            user = await get_user(request, None, creds)
        except HTTPException as exc:
            raise NotAuthenticated(str(exc.detail)) from None
        return Principal(name=str(user.get_name()), user=user)

    @staticmethod
    def _dag(who: Principal, dag_id: str, *, trigger: bool) -> bool:
        from airflow.api_fastapi.app import get_auth_manager
        from airflow.api_fastapi.auth.managers.models.resource_details import (
            DagAccessEntity,
            DagDetails,
        )

        return bool(
            get_auth_manager().is_authorized_dag(
                method="POST" if trigger else "GET",
                access_entity=DagAccessEntity.RUN if trigger else None,
                details=DagDetails(id=dag_id),
                user=who.user,
            )
        )

    def can_read(self, who: Principal) -> bool:
        return self._dag(who, READ_DAG_ID, trigger=False)

    def can_trigger(self, who: Principal, dag_id: str) -> bool:
        return self._dag(who, dag_id, trigger=True)
