"""Triggering a DAG run and reading its result: shared by the replay and group endpoints."""

from __future__ import annotations

from typing import Any

from kafka_archive.ui.access import Principal
from kafka_archive.ui.context import ApiContext
from kafka_archive.ui.errors import ApiError, api_call
from kafka_archive.ui.launcher import DagRunInfo

__all__ = ["finished_run", "trigger_run"]


def trigger_run(ctx: ApiContext, dag_id: str, params: dict[str, Any], who: Principal) -> DagRunInfo:
    """A run of ``dag_id`` with ``params``, triggered by ``who`` (409 when Airflow refuses:
    a :class:`~kafka_archive.ui.launcher.LaunchError`)."""
    return api_call(ctx.launcher.trigger, dag_id, params, user_name=who.name)


def finished_run(ctx: ApiContext, dag_id: str, run_id: str, result_task: str) -> DagRunInfo:
    """The run ``run_id`` of ``dag_id`` with ``result_task``'s result (404 when none)."""
    run = ctx.launcher.run(dag_id, run_id, result_task=result_task)
    if run is None:
        raise ApiError(404, "not_found", f"no run {run_id!r} of {dag_id}")
    return run
