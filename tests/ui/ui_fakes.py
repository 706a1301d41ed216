"""Test doubles for the on-call API's Airflow side: access by token, a recording launcher.

The API's own checks (401 without a user, 403 without a permission, the CSRF header on
cookie-authenticated POSTs) run unchanged against them; only the question "who is this token
and what may they do" is answered here instead of by Airflow's auth manager.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafka_archive.ui.access import NotAuthenticated, Principal
from kafka_archive.ui.launcher import DagRunInfo
from starlette.requests import Request


@dataclass(frozen=True)
class User:
    name: str
    read: bool
    trigger: bool


USERS = {
    "op-token": User("oncall", read=True, trigger=True),
    "viewer-token": User("viewer", read=True, trigger=False),
    "nobody-token": User("stranger", read=False, trigger=False),
}


class TokenAccess:
    """Bearer token or ``_token`` cookie -> one of :data:`USERS`."""

    async def authenticate(self, request: Request) -> Principal:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            token = request.cookies.get("_token", "")
        user = USERS.get(token.strip())
        if user is None:
            raise NotAuthenticated("no valid token")
        return Principal(user.name, user)

    def can_read(self, who: Principal) -> bool:
        return bool(who.user.read)

    def can_trigger(self, who: Principal) -> bool:
        return bool(who.user.trigger)


@dataclass
class Conn:
    host: str
    port: int | None = None
    login: str | None = None
    password: str | None = None
    extra_dejson: dict[str, Any] = field(default_factory=dict)


@dataclass
class RecordingLauncher:
    """Records every trigger; runs are 'queued' until a test sets their state."""

    connections: dict[str, Conn] = field(default_factory=dict)
    triggered: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)
    #: run id -> the replay id its plan task would have returned
    replay_ids: dict[str, str] = field(default_factory=dict)

    def trigger(self, conf: dict[str, Any], *, user_name: str) -> DagRunInfo:
        self.triggered.append((conf, user_name))
        run_id = f"manual__{len(self.triggered)}"
        self.states[run_id] = "queued"
        return DagRunInfo("kafka_archive_replay", run_id, "queued", user_name)

    def run(self, run_id: str) -> DagRunInfo | None:
        state = self.states.get(run_id)
        if state is None:
            return None
        return DagRunInfo(
            "kafka_archive_replay", run_id, state, replay_id=self.replay_ids.get(run_id)
        )

    def connection_ids(self) -> list[str]:
        return sorted(self.connections)

    def connection(self, conn_id: str) -> Any:
        if conn_id not in self.connections:
            raise LookupError(conn_id)
        return self.connections[conn_id]
