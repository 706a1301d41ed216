"""Replay endpoints of the on-call API (the group endpoints: :mod:`kafka_archive.ui.group_routes`).

* ``POST /replay/preview``: the dry-run plan (records, bytes, objects, holes) through
  :meth:`ReplayService.preview <kafka_archive.services.replay.ReplayService.preview>`; the
  target is resolved server side (a connection id's secrets never leave the server).
* ``POST /replay/launch``: a run of ``kafka_archive_replay`` with the request as its Params,
  validated first against the DAG's own schema (:func:`~kafka_archive.airflow.replay_tasks.
  spec_from_params`); needs trigger permission. ``GET /replay/runs/{run_id}``: its state.
* ``GET /connections``: Airflow connection ids (ids only), the form's target choices.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from kafka_archive.ui.access import REPLAY_DAG_ID, Principal
from kafka_archive.ui.context import ApiContext
from kafka_archive.ui.dag_runs import finished_run as _run
from kafka_archive.ui.dag_runs import trigger_run as _trigger
from kafka_archive.ui.errors import ApiError
from kafka_archive.ui.errors import api_call as _call
from kafka_archive.ui.models import ReplayRequest

__all__ = ["replay_router"]


def _validated(req: ReplayRequest) -> dict[str, Any]:
    """The request as the DAG's Params, checked by the DAG's own schema and spec rules; a
    secret-named setting is refused first (422 naming the keys, never their values)."""
    from kafka_archive.airflow.replay_tasks import spec_from_params
    from kafka_archive.replay.target.request_secrets import SECRET_HINT, secret_settings

    params = req.params()
    found = secret_settings(params)
    if found:
        raise ApiError(
            422,
            "secret_in_request",
            f"secret settings are refused in a replay request: {', '.join(found)}",
            SECRET_HINT,
            field="target_config",
        )
    _call(spec_from_params, params)
    return params


def replay_router(ctx: ApiContext) -> APIRouter:
    router = APIRouter(tags=["replay"])
    Reader = Annotated[Principal, Depends(ctx.reader)]
    Trigger = Annotated[Principal, Depends(ctx.trigger)]

    def target(name: str, config: dict[str, str]) -> Any:
        from kafka_archive.airflow.replay_tasks import resolve_target

        return resolve_target(name, config, ctx.launcher.connection)

    @router.get("/connections")
    def connections(_: Reader) -> dict[str, Any]:
        """Airflow connection ids a replay may target (never their contents)."""
        return {"items": ctx.launcher.connection_ids()}

    @router.post("/replay/preview")
    def preview(
        _: Trigger, req: ReplayRequest, check_target: Annotated[bool, Query()] = True
    ) -> dict[str, Any]:
        """A dry run: the plan, its holes and (``check_target``) what the target would do."""
        from kafka_archive.airflow.replay_tasks import spec_from_params
        from kafka_archive.services.replay import ReplayService

        params = _validated(req)
        with ReplayService(_call(ctx.settings)) as svc:
            spec = _call(spec_from_params, params, target(req.target, req.target_config))
            report = _call(svc.preview, spec, check_target=check_target)
        out = report.model_dump(mode="json")
        parts = out["partitions"].values()
        out["summary"] = {
            "records": sum(int(p["records"]) for p in parts),
            "bytes": sum(int(p["bytes"]) for p in parts),
            "objects": sum(len(p.get("objects") or []) for p in parts),
            "holes": len(out["holes"]),
        }
        return out

    @router.post("/replay/launch", status_code=201)
    def launch(who: Trigger, req: ReplayRequest) -> dict[str, Any]:
        """Trigger ``kafka_archive_replay`` with the request as its Params (an auditable DAG
        run, triggered by the user)."""
        params = _validated(req)
        run = _trigger(ctx, REPLAY_DAG_ID, params, who)
        return {**run.to_json(), "replay_id": None, "params": params}

    @router.get("/replay/runs/{run_id}")
    def run_state(_: Reader, run_id: str) -> dict[str, Any]:
        """A run of ``kafka_archive_replay``: its state and, once its plan task has run, the
        replay's progress (``replay``: the ``replay status --json`` object), for the page to
        poll."""
        run = _run(ctx, REPLAY_DAG_ID, run_id, "plan")
        found = run.result.get("replay_id") if isinstance(run.result, dict) else None
        replay_id = str(found) if found else None
        return {**run.to_json(), "replay_id": replay_id, "replay": _progress(ctx, replay_id)}

    @router.get("/replays")
    def replays(
        _: Reader,
        cluster: Annotated[str | None, Query(max_length=1000)] = None,
        topic: Annotated[str | None, Query(max_length=1000)] = None,
    ) -> dict[str, Any]:
        """Replays in the catalog with their progress (``replay status --json``)."""
        from kafka_archive.services.replay import ReplayService

        with ReplayService(_call(ctx.settings)) as svc:
            return {"items": _call(svc.status, cluster=cluster, topic=topic)}

    return router


def _progress(ctx: ApiContext, replay_id: str | None) -> dict[str, Any] | None:
    """The catalog's progress record of ``replay_id`` (None: not planned yet, or unknown)."""
    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.services.replay import ReplayService

    if not replay_id:
        return None
    with ReplayService(_call(ctx.settings)) as svc:
        try:
            found = svc.status(replay_id=replay_id)
        except ReplayError:
            return None
    return found[0] if found else None
