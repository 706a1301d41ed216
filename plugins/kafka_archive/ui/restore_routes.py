"""Restore endpoints of the on-call API (the page's "Restore" form; docs/restore.md).

* ``POST /restore/plan``: the preflight (``restore plan --json``): every topic, group and ACL
  the restore would move, every problem with what to do, the estimate. The target is resolved
  server side (a connection id's secrets never leave the server). Nothing is written.
* ``POST /restore/launch``: a run of ``kafka_archive_restore`` with the request as its Params,
  validated first against the DAG's own schema; ``GET /restore/runs/{run_id}``: its state,
  with the plan (once the plan task ran) and the restore's progress.
* ``GET /restores``: every restore in the catalog with each topic's replay status
  (``restore status --json``).

Plan and launch need permission to trigger ``kafka_archive_restore``; the others, read access.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from kafka_archive.ui.access import RESTORE_DAG_ID, Principal
from kafka_archive.ui.context import ApiContext
from kafka_archive.ui.dag_runs import finished_run, trigger_run
from kafka_archive.ui.errors import ApiError
from kafka_archive.ui.errors import api_call as _call
from kafka_archive.ui.models import RestoreRequestBody

__all__ = ["restore_router"]


def _validated(req: RestoreRequestBody) -> dict[str, Any]:
    """The request as the DAG's Params, checked by the DAG's own rules; a secret-named setting
    is refused first (422 naming the keys, never their values)."""
    from kafka_archive.airflow.restore_tasks import request_from_params
    from kafka_archive.replay.target.request_secrets import SECRET_HINT, secret_settings

    params = req.params()
    found = secret_settings(params)
    if found:
        raise ApiError(
            422,
            "secret_in_request",
            f"secret settings are refused in a restore request: {', '.join(found)}",
            SECRET_HINT,
        )
    _call(request_from_params, params)
    return params


def restore_router(ctx: ApiContext) -> APIRouter:
    router = APIRouter(tags=["restore"])
    Reader = Annotated[Principal, Depends(ctx.reader)]
    Trigger = Annotated[Principal, Depends(ctx.restore_trigger or ctx.trigger)]

    @router.post("/restore/plan")
    def plan(
        _: Trigger, req: RestoreRequestBody, check_target: Annotated[bool, Query()] = True
    ) -> dict[str, Any]:
        """The preflight of the restore (``restore plan --json``; ``check_target`` false: the
        catalog's side only, as ``--offline``)."""
        from kafka_archive.airflow.replay_tasks import resolve_target
        from kafka_archive.airflow.restore_tasks import request_from_params
        from kafka_archive.services.restore import RestoreService

        params = _validated(req)
        target = resolve_target(req.target, req.target_config, ctx.launcher.connection)
        with RestoreService(_call(ctx.settings)) as svc:
            request = _call(request_from_params, params, target)
            found = _call(svc.plan, request, check_target=check_target)
        out: dict[str, Any] = found.to_json()
        return out

    @router.post("/restore/launch", status_code=201)
    def launch(who: Trigger, req: RestoreRequestBody) -> dict[str, Any]:
        """Trigger ``kafka_archive_restore`` with the request as its Params (an auditable DAG
        run, triggered by the user; its plan task runs the same preflight)."""
        params = _validated(req)
        run = trigger_run(ctx, RESTORE_DAG_ID, params, who)
        return {**run.to_json(), "params": params}

    @router.get("/restore/runs/{run_id}")
    def run_state(_: Reader, run_id: str) -> dict[str, Any]:
        """A run of ``kafka_archive_restore``: its state, its plan (once the plan task has
        run) and the restore's progress, for the page to poll."""
        run = finished_run(ctx, RESTORE_DAG_ID, run_id, "plan")
        plan = run.result if isinstance(run.result, dict) else None
        restore_id = str(plan["restore_id"]) if plan and plan.get("restore_id") else None
        return {**run.to_json(), "restore_id": restore_id, "restore": _progress(ctx, restore_id)}

    @router.get("/restores")
    def restores(_: Reader) -> dict[str, Any]:
        """Every restore in the catalog, newest first (``restore status --json``)."""
        from kafka_archive.services.restore import RestoreService

        with RestoreService(_call(ctx.settings)) as svc:
            return {"items": _call(svc.status)}

    return router


def _progress(ctx: ApiContext, restore_id: str | None) -> dict[str, Any] | None:
    """The catalog's record of ``restore_id`` (None: not started yet, or unknown)."""
    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.services.restore import RestoreService

    if not restore_id:
        return None
    with RestoreService(_call(ctx.settings)) as svc:
        try:
            found = svc.status(restore_id)
        except ReplayError:
            return None
    return found[0] if found else None
