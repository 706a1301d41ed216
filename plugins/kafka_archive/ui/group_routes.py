"""Consumer-group endpoints of the on-call API: "start group G at T on the target".

* ``POST /groups/translate/preview``: the positions through
  :class:`~kafka_archive.services.group_translation.GroupTranslationService` (nothing committed).
* ``POST /groups/translate/apply``: the same checks and preview (a bad request fails with the
  same typed error, nothing triggered), then a run of ``kafka_archive_group_offsets`` that
  commits those positions on the target: an auditable DAG run, triggered by the user, with
  relative times pinned to the previewed instant and the target's secrets left in the Airflow
  connection (read by the run's task).
* ``GET /groups/translate/runs/{run_id}``: that run's state and, once applied, the positions
  (read access, as a replay run's state: the page polls it with GETs).

Preview and apply need permission to trigger ``kafka_archive_group_offsets``.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from kafka_archive.timeparse import now_ms
from kafka_archive.ui.access import GROUP_OFFSETS_DAG_ID, Principal
from kafka_archive.ui.context import ApiContext
from kafka_archive.ui.dag_runs import finished_run, trigger_run
from kafka_archive.ui.errors import ApiError
from kafka_archive.ui.errors import api_call as _call
from kafka_archive.ui.models import GroupRequest

__all__ = ["group_router"]


def group_router(ctx: ApiContext) -> APIRouter:
    router = APIRouter(tags=["groups"])
    Reader = Annotated[Principal, Depends(ctx.reader)]
    GroupTrigger = Annotated[Principal, Depends(ctx.group_trigger)]

    def group_preview_of(req: GroupRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request as the group DAG's Params (checked by its schema; a named connection
        must exist) and the preview; raises the typed API error of the first problem."""
        from kafka_archive.airflow.group_tasks import (
            connection_resolver,
            translate,
            validate_params,
        )
        from kafka_archive.services.group_translation import GroupTranslationService

        params = _call(validate_params, req.model_dump(mode="json"))
        if req.target:
            try:
                ctx.launcher.connection(req.target)
            except LookupError:
                raise ApiError(
                    422,
                    "unknown_connection",
                    f"no Airflow connection {req.target!r} for the target",
                    "pick one of the connections, or none to use the replay's own target",
                    field="target",
                ) from None
        # the target as the run's task will resolve it: the connection named, else the one
        # the replay was launched to (its servers shown, a vanished one refused here)
        resolver = connection_resolver(req.target, ctx.launcher.connection)
        with GroupTranslationService(_call(ctx.settings)) as svc:
            return params, _call(translate, svc, params, apply=False, target_resolver=resolver)

    @router.post("/groups/translate/preview")
    def group_preview(_: GroupTrigger, req: GroupRequest) -> dict[str, Any]:
        """Where group G would start on the replay's target (nothing committed)."""
        return group_preview_of(req)[1]

    @router.post("/groups/translate/apply", status_code=201)
    def group_apply(who: GroupTrigger, req: GroupRequest) -> dict[str, Any]:
        """Checked and previewed as ``/preview`` does (a bad request triggers nothing), then a
        run of ``kafka_archive_group_offsets`` that commits the positions on the target (the
        group must be inactive there). The answer: the run (``url``, ``run_id``, ``state``),
        its Params (``params``: relative times pinned to the previewed instant, "the latest
        commits" to the preview's moment, no secrets) and the preview (``preview``: the
        positions it will commit)."""
        if req.at is None and req.commits_at is None:
            # "the latest commits" means those archived by now: pinned, so commits archived
            # between this preview and the run's task cannot change what is committed

            from kafka_archive.timeparse import format_ms

            req = req.model_copy(update={"commits_at": format_ms(now_ms())})
        params, preview = group_preview_of(req)
        for name in ("at", "commits_at"):  # the run commits what was previewed
            if preview[name] is not None:
                params[name] = str(preview[name]["utc"])
        run = trigger_run(ctx, GROUP_OFFSETS_DAG_ID, params, who)
        return {**run.to_json(), "params": params, "preview": preview}

    @router.get("/groups/translate/runs/{run_id}")
    def group_run_state(_: Reader, run_id: str) -> dict[str, Any]:
        """A run of ``kafka_archive_group_offsets``: its state and, once its ``apply`` task
        has committed, what it committed (``applied``: the preview's form, rows marked
        applied; None before)."""
        run = finished_run(ctx, GROUP_OFFSETS_DAG_ID, run_id, "apply")
        applied = run.result if isinstance(run.result, dict) and "items" in run.result else None
        return {**run.to_json(), "applied": applied}

    return router
