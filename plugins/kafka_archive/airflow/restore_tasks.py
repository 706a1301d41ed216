"""The bodies of the ``kafka_archive_restore`` DAG's tasks, callable without Airflow.

* :data:`PARAMS_SCHEMA` - the trigger form (the DAG turns each field into an Airflow ``Param``);
  :func:`request_from_params` validates a run's params and builds the
  :class:`~kafka_archive.restore.request.RestoreRequest`.
* :func:`plan_task` - the preflight: the plan with every problem; a run with errors stops here
  (failed, the report in the log and in XCom); ``dry_run`` stops here in any case.
* :func:`run_task` - the restore (:meth:`RestoreService.run`: the same run resumes an unfinished
  restore, so Airflow's retries continue it exactly once).
* :func:`report_task` - the report, logged per topic and group.

The target is an Airflow connection id or bootstrap servers, resolved inside the task that needs
it (:func:`~kafka_archive.airflow.replay_tasks.resolve_target`): secrets never go through XCom or
the catalog.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from kafka_archive.airflow.params import NULLABLE_STR, ParamsSchema, validate_params
from kafka_archive.airflow.replay_tasks import resolve_target
from kafka_archive.replay.planning.plan import TargetSpec
from kafka_archive.replay.target.request_secrets import SECRET_FREE_SETTINGS, refuse_secret_settings
from kafka_archive.restore.request import RestoreRequest

__all__ = ["PARAMS_SCHEMA", "plan_task", "report_task", "request_from_params", "run_task"]

log = logging.getLogger(__name__)

_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}, "maxItems": 10_000}

#: name -> (default, JSON Schema, description): the trigger form (and the on-call page's)
PARAMS_SCHEMA: ParamsSchema = {
    "cluster": ("", {"type": "string", "minLength": 1}, "Source cluster name in the archive."),
    "topics": ([], _STRINGS, "Topics: names, globs (orders-*) or regexes (re:...)."),
    "all_topics": (False, {"type": "boolean"}, "Every user topic of the cluster."),
    "exclude": ([], _STRINGS, "Topics to leave out (names, globs, re:...)."),
    "at": (
        "",
        {"type": "string", "minLength": 1},
        "The moment T: ISO-8601, epoch ms (pin it: a relative time moves on a retry).",
    ),
    "from": ("earliest", {"type": "string", "minLength": 1}, "Where the data starts."),
    "prefix": ("", {"type": "string"}, "Target name prefix."),
    "suffix": ("", {"type": "string"}, "Target name suffix."),
    "rename_regex": (None, NULLABLE_STR, "Rename: a regex applied to each name."),
    "rename_to": ("", {"type": "string"}, "The rename_regex replacement."),
    "groups": (
        None,
        {"type": ["null", "array"], "items": {"type": "string"}},
        "Groups to move (patterns); empty: every group that committed on a selected "
        "topic; [] moves none.",
    ),
    "acls": (False, {"type": "boolean"}, "Restore the ACLs of T too."),
    "principal_map": (
        {},
        {"type": "object", "additionalProperties": {"type": "string"}},
        "Source principal -> target principal for the ACLs.",
    ),
    "target": (
        "",
        {"type": "string", "minLength": 1},
        "Target: an Airflow connection id, or bootstrap servers.",
    ),
    "target_config": (
        {},
        SECRET_FREE_SETTINGS,
        "librdkafka settings for the target (no secrets: use the connection).",
    ),
    "target_principal": (None, NULLABLE_STR, "The principal the target sees (permission check)."),
    "replication_factor": (
        None,
        {"type": ["null", "integer"], "minimum": 1},
        "Created topics' replication factor (empty: the source's at T).",
    ),
    "parallelism": (
        4,
        {"type": "integer", "minimum": 1, "maximum": 256},
        "Topics replayed at once.",
    ),
    "allow_gaps": (False, {"type": "boolean"}, "Restore around holes of the archive."),
    "unverified_permissions": (
        False,
        {"type": "boolean"},
        "Go ahead when permissions cannot be read.",
    ),
    "dry_run": (False, {"type": "boolean"}, "Preflight only."),
    "execution": (
        "in-process",
        {"type": "string", "enum": ["in-process", "spark"]},
        "Where the replays run.",
    ),
    "spark_master": ("local[*]", {"type": "string"}, "Spark master URL for Spark execution."),
}


def request_from_params(params: Mapping[str, Any], target: TargetSpec | None = None) -> Any:
    """Validate ``params`` against :data:`PARAMS_SCHEMA` and build the request.

    Raises:
        ReplayConfigError: a secret-named setting; jsonschema.ValidationError, TimeParseError,
        pydantic.ValidationError: anything else refused.
    """
    from kafka_archive.restore.request import RenameMap
    from kafka_archive.timeparse import parse_time_ms

    refuse_secret_settings(params)
    p = validate_params(params, PARAMS_SCHEMA, ["cluster", "at", "target"])
    return RestoreRequest.model_validate(
        {
            "cluster": p["cluster"],
            "topics": p["topics"],
            "all_topics": p["all_topics"],
            "exclude": p["exclude"],
            "at_ms": parse_time_ms(str(p["at"])),
            "from": p["from"],
            "rename": RenameMap(
                prefix=p["prefix"],
                suffix=p["suffix"],
                regex=p["rename_regex"],
                replacement=p["rename_to"],
            ),
            "groups": p["groups"],
            "acls": p["acls"],
            "principal_map": p["principal_map"],
            "target": target or TargetSpec(bootstrap_servers=p["target"], name=p["target"]),
            "replication_factor": p["replication_factor"],
            "parallelism": p["parallelism"],
            "allow_gaps": p["allow_gaps"],
            "principal": p["target_principal"],
            "unverified_permissions": p["unverified_permissions"],
        }
    )


def _service(variable_getter: Callable[[str], str | None] | None) -> Any:
    from kafka_archive.airflow.store_connection import use_store_connection
    from kafka_archive.services.restore import RestoreService
    from kafka_archive.settings import load_settings

    use_store_connection()
    return RestoreService(load_settings(variables=variable_getter))


def _request(
    params: Mapping[str, Any], connection_getter: Callable[[str], Any] | None
) -> RestoreRequest:
    target = resolve_target(params["target"], params.get("target_config"), connection_getter)
    request: RestoreRequest = request_from_params(params, target)
    return request


def plan_task(
    params: Mapping[str, Any],
    *,
    connection_getter: Callable[[str], Any] | None = None,
    variable_getter: Callable[[str], str | None] | None = None,
) -> dict[str, Any]:
    """The preflight; returns the plan (JSON, no secrets). Raises :class:`RestoreRefused`
    when it holds an error (unless a dry run: then the plan is the answer)."""
    from kafka_archive.services.restore import RestoreRefused

    request = _request(params, connection_getter)
    with _service(variable_getter) as service:
        plan = service.plan(request)
    for p in plan.problems:
        log.log(
            logging.ERROR if p.level == "error" else logging.WARNING,
            "%s %s: %s (%s)",
            p.level,
            p.code,
            p.message,
            p.hint,
        )
    log.info(
        "restore %s: %d topic(s), %d group(s), %d ACL(s); about %s bytes, %s s",
        plan.restore_id,
        len(plan.topics),
        len(plan.groups),
        len(plan.acls),
        plan.estimate.get("bytes"),
        plan.estimate.get("seconds"),
    )
    out: dict[str, Any] = plan.to_json()
    if not plan.ok and not params.get("dry_run"):
        raise RestoreRefused(
            f"the preflight found {len(plan.errors())} problem(s): "
            + "; ".join(p.message for p in plan.errors()),
            hint="fix each (see the task log), then trigger the same run again",
            plan=out,
        )
    return out


def run_task(
    params: Mapping[str, Any],
    *,
    connection_getter: Callable[[str], Any] | None = None,
    variable_getter: Callable[[str], str | None] | None = None,
) -> dict[str, Any]:
    """The restore (a retry continues it); returns the report."""
    request = _request(params, connection_getter)
    execution = params.get("execution", "in-process")
    with _service(variable_getter) as service:
        report = service.run(
            request,
            execution=execution,
            spark_master=params.get("spark_master") if execution == "spark" else None,
            on_event=log.info,
        )
    out: dict[str, Any] = report.to_json()
    return out


def report_task(result: Mapping[str, Any]) -> dict[str, Any]:
    """Log the report; a restore that did not complete fails the task (resumable: clear it)."""
    log.info(
        "restore %s %s in %.1f s: %d records sent this run",
        result["restore_id"],
        result["status"],
        result["duration_s"],
        result["records_this_run"],
    )
    for t in result["topics"]:
        log.info("  %s -> %s: %s, %d records", t["source"], t["target"], t["status"], t["records"])
    for g in result["groups"]:
        log.info("  group %s: %s", g["group"], "applied" if g["applied"] else g["error"])
    if result["status"] not in ("complete", "complete-with-gaps"):
        from kafka_archive.replay.errors import ReplayError

        raise ReplayError(
            f"restore {result['restore_id']} ended {result['status']}",
            hint="clear the run's restore task: it continues where it stopped",
        )
    return dict(result)
