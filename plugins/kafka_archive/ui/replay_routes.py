"""Replay and group endpoints of the on-call API.

* ``POST /replay/preview``: the dry-run plan (records, bytes, objects, holes) through
  :meth:`ReplayService.preview <kafka_archive.services.replay.ReplayService.preview>`; the
  target is resolved server side (a connection id's secrets never leave the server).
* ``POST /replay/launch``: a run of ``kafka_archive_replay`` with the request as its Params,
  validated first against the DAG's own schema (:func:`~kafka_archive.airflow.replay_tasks.
  spec_from_params`); needs trigger permission. ``GET /replay/runs/{run_id}``: its state.
* ``POST /groups/translate/preview`` and ``/apply``: "start group G at T on the target" through
  :class:`~kafka_archive.services.groups.GroupService`; apply commits on the target and needs
  the same permission as launching a replay.
* ``GET /connections``: Airflow connection ids (ids only), the form's target choices.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from kafka_archive.ui.access import Principal
from kafka_archive.ui.catalog_routes import _call
from kafka_archive.ui.context import ApiContext, resolve_time
from kafka_archive.ui.errors import ApiError
from kafka_archive.ui.models import GroupRequest, ReplayRequest

__all__ = ["replay_router"]


def _validated(req: ReplayRequest) -> dict[str, Any]:
    """The request as the DAG's Params, checked by the DAG's own schema and spec rules."""
    import jsonschema

    from kafka_archive.airflow.replay_tasks import spec_from_params

    params = req.params()
    try:
        spec_from_params(params)
    except jsonschema.ValidationError as exc:
        raise ApiError(422, "invalid_params", f"{exc.json_path}: {exc.message}") from None
    except Exception as exc:
        raise _as_api_error(exc) from None
    return params


def _as_api_error(exc: Exception) -> ApiError:
    from kafka_archive.ui.errors import platform_error

    return platform_error(exc)


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
        from kafka_archive.ui.launcher import LaunchError

        params = _validated(req)
        try:
            run = ctx.launcher.trigger(params, user_name=who.name)
        except LaunchError as exc:
            raise ApiError(409, "launch_refused", str(exc), exc.hint) from None
        return {**run.to_json(), "params": params}

    @router.get("/replay/runs/{run_id}")
    def run_state(_: Reader, run_id: str) -> dict[str, Any]:
        """A run of ``kafka_archive_replay``: its state and, once its plan task has run, the
        replay's progress (``replay``: the ``replay status --json`` object), for the page to
        poll."""
        run = ctx.launcher.run(run_id)
        if run is None:
            raise ApiError(404, "not_found", f"no run {run_id!r} of kafka_archive_replay")
        return {**run.to_json(), "replay": _progress(ctx, run.replay_id)}

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

    def translate(req: GroupRequest, *, apply: bool) -> dict[str, Any]:
        from kafka_archive.services.groups import GroupService

        at = _call(resolve_time, req.at, "at") if req.at else None
        commits_at = _call(resolve_time, req.commits_at, "commits_at") if req.commits_at else None
        secrets: dict[str, str] = {}
        if apply and req.target:
            secrets = dict(_call(target, req.target, {}).config)
        with GroupService(_call(ctx.settings)) as svc:
            found = _call(
                svc.translate,
                req.cluster,
                req.topic,
                req.group,
                at_ms=None if at is None else int(str(at["ms"])),
                commits_at_ms=None if commits_at is None else int(str(commits_at["ms"])),
                replay_id=req.replay_id,
                target_topic=req.target_topic,
                apply=apply,
                target_config=secrets,
            )
        # where the offsets go, for the page's confirmation (bootstrap servers and the
        # connection's name only: never its settings)
        where = found.plan.spec.target
        return {
            "at": at,
            "commits_at": commits_at,
            "basis": found.basis,
            "target": {"bootstrap_servers": where.bootstrap_servers, "name": where.name},
            "items": found.to_json(),
        }

    @router.post("/groups/translate/preview")
    def group_preview(_: Trigger, req: GroupRequest) -> dict[str, Any]:
        """Where group G would start on the replay's target (nothing committed)."""
        return translate(req, apply=False)

    @router.post("/groups/translate/apply")
    def group_apply(_: Trigger, req: GroupRequest) -> dict[str, Any]:
        """Commit those positions on the target (the group must be inactive there)."""
        return translate(req, apply=True)

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
