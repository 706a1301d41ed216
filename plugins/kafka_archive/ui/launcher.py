"""What the on-call API asks of Airflow besides access: DAG runs and connection ids.

:class:`Launcher` is the API's view of Airflow: create a run of a DAG (the replay DAG, the
group-offsets DAG) with validated Params (so every replay launched and every group moved from
the page is an ordinary, auditable DAG run, triggered by the named user), read a run's state
and one task's result (XCom), list the connection ids a replay may target, and read one
connection server side (a replay preview checks the target with its settings). Connection
secrets never leave :meth:`Launcher.connection`; :meth:`Launcher.connection_ids` returns ids
only.

:class:`AirflowLauncher` does it with Airflow's own models inside the API server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from kafka_archive.errors import KafkaArchiveError

__all__ = ["AirflowLauncher", "DagRunInfo", "LaunchError", "Launcher"]


class LaunchError(KafkaArchiveError):
    """Airflow refused to create the run (unknown or broken DAG, duplicate run id)."""

    http_status = 409
    api_error = "launch_refused"


@dataclass(frozen=True)
class DagRunInfo:
    """A DAG run as the page shows it."""

    dag_id: str
    run_id: str
    state: str
    triggered_by: str | None = None
    #: the return value (XCom) of the task :meth:`Launcher.run` was asked about, None until
    #: that task has run (the replay DAG's ``plan``: the replay id; the group-offsets DAG's
    #: ``apply``: the committed positions). Task results never hold secrets.
    result: Any = None
    #: the DAG is paused: the run waits in ``queued`` until someone unpauses it
    dag_paused: bool = False

    def to_json(self) -> dict[str, Any]:
        """The run without its result (each endpoint shows the part of it it means)."""
        from urllib.parse import quote

        return {
            "dag_id": self.dag_id,
            "run_id": self.run_id,
            "state": self.state,
            "triggered_by": self.triggered_by,
            "dag_paused": self.dag_paused,
            # Airflow 3's UI route of a run
            "url": f"/dags/{quote(self.dag_id)}/runs/{quote(self.run_id, safe='')}",
        }


class Launcher(Protocol):
    def trigger(self, dag_id: str, conf: dict[str, Any], *, user_name: str) -> DagRunInfo:
        """Create a run of ``dag_id`` with ``conf`` as its Params, triggered by
        ``user_name``; raise :class:`LaunchError` when Airflow refuses."""
        ...

    def run(self, dag_id: str, run_id: str, *, result_task: str) -> DagRunInfo | None:
        """A run of ``dag_id``, or None when there is none of that id; its ``result`` is
        what the run's task ``result_task`` returned (its XCom; None before it ran)."""
        ...

    def connection_ids(self) -> list[str]:
        """The ids of Airflow's connections (never their contents)."""
        ...

    def connection(self, conn_id: str) -> Any:
        """One connection (server side only), or raise ``LookupError``."""
        ...


class AirflowLauncher:
    """:class:`Launcher` over Airflow's metadata database (inside the API server)."""

    def trigger(self, dag_id: str, conf: dict[str, Any], *, user_name: str) -> DagRunInfo:
        from airflow.api.common.trigger_dag import trigger_dag
        from airflow.sdk.exceptions import AirflowException
        from airflow.utils.types import DagRunTriggeredByType

        try:
            run = trigger_dag(
                dag_id,
                triggered_by=DagRunTriggeredByType.REST_API,
                triggering_user_name=user_name,
                conf=conf,
                note=f"launched from the kafka-archive on-call page by {user_name}",
            )
        except (AirflowException, ValueError) as exc:
            raise LaunchError(
                f"Airflow refused to start {dag_id}: {exc}",
                hint="check that the DAG is parsed and unpaused (Airflow's DAG list)",
            ) from None
        if run is None:
            raise LaunchError(f"Airflow created no run of {dag_id}")
        return DagRunInfo(
            dag_id, str(run.run_id), str(run.state), user_name, dag_paused=_paused(dag_id)
        )

    def run(self, dag_id: str, run_id: str, *, result_task: str) -> DagRunInfo | None:
        from airflow.models.dagrun import DagRun
        from airflow.utils.session import create_session
        from sqlalchemy import select

        with create_session() as session:
            row = session.scalar(
                select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)
            )
            if row is None:
                return None
            return DagRunInfo(
                dag_id,
                str(row.run_id),
                str(row.state),
                getattr(row, "triggering_user_name", None),
                _task_result(session, dag_id, run_id, result_task),
                _paused(dag_id),
            )

    def connection_ids(self) -> list[str]:
        """The metadata database's connections and those defined by ``AIRFLOW_CONN_<ID>``
        environment variables (other secrets backends cannot be listed; a connection id
        typed into the form is still resolved through all of them)."""
        import os

        from airflow.models import Connection
        from airflow.utils.session import create_session
        from sqlalchemy import select

        with create_session() as session:
            ids = {str(c) for c in session.scalars(select(Connection.conn_id))}
        prefix = "AIRFLOW_CONN_"
        ids |= {
            k[len(prefix) :].lower() for k in os.environ if k.startswith(prefix) and k != prefix
        }
        return sorted(ids)

    def connection(self, conn_id: str) -> Any:
        from airflow.models import Connection

        try:
            return Connection.get_connection_from_secrets(conn_id)
        except Exception as exc:  # Airflow raises its own NotFound types
            raise LookupError(conn_id) from exc


def _task_result(session: Any, dag_id: str, run_id: str, task_id: str) -> Any:
    """The XCom ``task_id`` of the run returned (None before it ran, or unreadable)."""
    from airflow.models.xcom import XComModel
    from sqlalchemy import select

    row = session.scalar(
        select(XComModel.value).where(
            XComModel.dag_id == dag_id,
            XComModel.run_id == run_id,
            XComModel.task_id == task_id,
            XComModel.key == "return_value",
        )
    )
    value = XComModel.deserialize_value(_Row(row)) if row is not None else None
    if isinstance(value, str):  # stored as JSON text by some paths
        import json

        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value


class _Row:
    """What :meth:`XComModel.deserialize_value` reads: an object with ``.value``."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _paused(dag_id: str) -> bool:
    """Whether ``dag_id`` is paused (new DAGs are, by Airflow's default)."""
    from airflow.models.dag import DagModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        paused = session.scalar(select(DagModel.is_paused).where(DagModel.dag_id == dag_id))
    return bool(paused)
