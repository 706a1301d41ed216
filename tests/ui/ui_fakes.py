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

REPLAY = "kafka_archive_replay"
GROUPS = "kafka_archive_group_offsets"
RESTORE = "kafka_archive_restore"


@dataclass(frozen=True)
class User:
    name: str
    read: bool
    #: the DAGs the user may trigger
    trigger: frozenset[str]


USERS = {
    "op-token": User("oncall", read=True, trigger=frozenset({REPLAY, GROUPS, RESTORE})),
    "viewer-token": User("viewer", read=True, trigger=frozenset()),
    "nobody-token": User("stranger", read=False, trigger=frozenset()),
    # may launch replays, not move consumer groups
    "replayer-token": User("replayer", read=True, trigger=frozenset({REPLAY})),
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

    def can_trigger(self, who: Principal, dag_id: str) -> bool:
        return dag_id in who.user.trigger


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
    #: (conf, user) of every run triggered, any DAG
    triggered: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    #: run id -> the DAG it is a run of
    dags: dict[str, str] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)
    #: run id -> the replay id its plan task would have returned
    replay_ids: dict[str, str] = field(default_factory=dict)
    #: run id -> (task id, what that task returned)
    results: dict[str, tuple[str, Any]] = field(default_factory=dict)

    def trigger(self, dag_id: str, conf: dict[str, Any], *, user_name: str) -> DagRunInfo:
        self.triggered.append((conf, user_name))
        run_id = f"manual__{len(self.triggered)}"
        self.dags[run_id] = dag_id
        self.states[run_id] = "queued"
        return DagRunInfo(dag_id, run_id, "queued", user_name)

    def run(self, dag_id: str, run_id: str, *, result_task: str) -> DagRunInfo | None:
        if self.dags.get(run_id) != dag_id:
            return None
        result = None
        if run_id in self.replay_ids and result_task == "plan":
            result = {"replay_id": self.replay_ids[run_id], "dry_run": False}
        task, returned = self.results.get(run_id, ("", None))
        if task == result_task:
            result = returned
        return DagRunInfo(dag_id, run_id, self.states[run_id], result=result)

    def connection_ids(self) -> list[str]:
        return sorted(self.connections)

    def connection(self, conn_id: str) -> Any:
        if conn_id not in self.connections:
            raise LookupError(conn_id)
        return self.connections[conn_id]
