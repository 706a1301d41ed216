"""The body of the ``kafka_archive_group_offsets`` DAG's task, callable without Airflow:
"start group G at T on the target" (``replay translate-group --apply``) as a DAG run.

* :data:`PARAMS_SCHEMA` - the trigger form's fields with their JSON Schema (the DAG turns each
  into an Airflow ``Param``; :class:`kafka_archive.ui.models.GroupRequest` has the same
  fields); :func:`validate_params` checks a run's params against it.
* :func:`translate` - the positions (and, with ``apply``, the commit on the target) as one
  JSON object: ``{at, commits_at, basis, target, items}``, the on-call API's preview answer and
  the task's XCom alike. It holds the target's bootstrap servers and connection name, never
  its settings.
* :func:`apply_task` - the DAG's ``apply`` task: the target's servers and secrets come from the
  Airflow connection named by ``target``, else from the one the replay was launched to
  (:func:`connection_resolver`, resolved inside the task; secrets never go through XCom).

Re-running is safe: committing the same offsets for the same group again is idempotent (the
positions are a function of the catalog's offset map and the pinned time), so a retried or
re-triggered run leaves the group where the first one put it. The group must be inactive on
the target (Kafka refuses commits to a group with live members: the run fails, typed, with a
hint).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kafka_archive.airflow.params import NULLABLE_STR, ParamsSchema
from kafka_archive.airflow.params import validate_params as check_params
from kafka_archive.services.group_translation import GroupTranslationService, TargetResolver

if TYPE_CHECKING:
    from kafka_archive.replay.planning.plan import TargetSpec

__all__ = [
    "PARAMS_SCHEMA",
    "apply_task",
    "connection_resolver",
    "target_secrets",
    "translate",
    "validate_params",
]

log = logging.getLogger(__name__)


#: name -> (default, JSON Schema, description): the trigger form
PARAMS_SCHEMA: ParamsSchema = {
    "cluster": ("", {"type": "string", "minLength": 1}, "Source cluster name in the archive."),
    "topic": ("", {"type": "string", "minLength": 1}, "Source topic (the replayed one)."),
    "group": ("", {"type": "string", "minLength": 1}, "The consumer group to position."),
    "at": (
        None,
        NULLABLE_STR,
        "Start the group at this source time: ISO-8601, epoch ms, -2h / now-30m (a relative "
        "time is read when the task runs; the on-call page sends the instant it previewed).",
    ),
    "commits_at": (
        None,
        NULLABLE_STR,
        "Without 'at': the group's archived commits as of this time (empty: the latest).",
    ),
    "replay_id": (None, NULLABLE_STR, "The replay whose offset map translates (empty: latest)."),
    "target_topic": (None, NULLABLE_STR, "Pick the replay by its target topic (empty: any)."),
    "target": (
        None,
        NULLABLE_STR,
        "Airflow connection id of the target (its servers and secrets: SASL password, TLS "
        "key); empty: the replay's own target (its connection, if it was launched to one).",
    ),
}


def validate_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` checked against :data:`PARAMS_SCHEMA` (raises
    ``jsonschema.ValidationError``), with every field present (absent ones at their default).
    """
    return check_params(params, PARAMS_SCHEMA, ["cluster", "topic", "group"])


def translate(
    service: GroupTranslationService,
    params: Mapping[str, Any],
    *,
    apply: bool,
    target_config: Mapping[str, str] | None = None,
    target_resolver: TargetResolver | None = None,
) -> dict[str, Any]:
    """Group ``params["group"]``'s positions on the replay's target (committed there with
    ``apply``) as ``{at, commits_at, basis, target, items}``: the resolved times
    (``{input, ms, utc}`` or None), what the positions were based on, where they go (bootstrap
    servers and connection name only: the servers ``target_resolver`` resolves, e.g. of an
    Airflow connection, over the replay's recorded ones) and one ``translate-group --json``
    object per partition.

    Raises:
        TimeParseError: ``at``/``commits_at`` unreadable or outside 1970..9999.
        ReplayError: no such replay, no archived commits, the target refused (typed, hinted).
    """
    from kafka_archive.timeparse import resolve_time

    at = resolve_time(params["at"], "at") if params.get("at") else None
    commits_at = (
        resolve_time(params["commits_at"], "commits_at") if params.get("commits_at") else None
    )
    found = service.translate(
        params["cluster"],
        params["topic"],
        params["group"],
        at_ms=None if at is None else int(str(at["ms"])),
        commits_at_ms=None if commits_at is None else int(str(commits_at["ms"])),
        replay_id=params.get("replay_id"),
        target_topic=params.get("target_topic"),
        apply=apply,
        target_config=target_config,
        target_resolver=target_resolver,
    )
    where = found.target
    return {
        "at": at,
        "commits_at": commits_at,
        "basis": found.basis,
        "target": {"bootstrap_servers": where.bootstrap_servers, "name": where.name},
        "items": found.to_json(),
    }


def target_secrets(target: str | None, connection_getter: Callable[[str], Any]) -> dict[str, str]:
    """The librdkafka settings of Airflow connection ``target``, its bootstrap servers as
    ``bootstrap.servers`` (host, port, extra, login and password as
    :func:`~kafka_archive.airflow.replay_tasks.resolve_target` reads them); ``{}`` without
    one.

    Raises:
        GroupTranslationError: ``target`` names no connection (a typo would otherwise commit
            without the secrets and fail later with a less helpful error); ``field``:
            ``target``.
    """
    from kafka_archive.airflow.replay_tasks import resolve_target
    from kafka_archive.replay.errors import GroupTranslationError

    if not target:
        return {}
    try:
        conn = connection_getter(target)
    except Exception:  # Airflow raises its own not-found types
        raise GroupTranslationError(
            f"no Airflow connection {target!r} for the target",
            hint="create it (Admin > Connections), or leave 'target' empty to use the "
            "replay's own target",
            field="target",
        ) from None
    spec = resolve_target(target, None, lambda _id: conn)
    return {**spec.config, "bootstrap.servers": spec.bootstrap_servers}


def connection_resolver(
    target: str | None, connection_getter: Callable[[str], Any]
) -> TargetResolver:
    """The settings of the target a group is moved on, from Airflow connections: those of
    ``target`` when given (it must exist), else, when the replay was launched to a connection
    (its recorded name has no ``host:port``), that connection's, servers included; a replay
    recorded with servers and no connection keeps them. A ``target`` that names no
    connection is refused here, before anything else is read."""

    from kafka_archive.replay.errors import GroupTranslationError

    named = target_secrets(target, connection_getter) if target else None  # a typo: now

    def resolve(recorded: TargetSpec) -> dict[str, str]:
        if named is not None:
            return named
        name = recorded.name or ""
        if not name or ":" in name:
            return {}
        try:
            return target_secrets(name, connection_getter)
        except GroupTranslationError:
            if not recorded.recorded_as_connection():
                return {}  # a plain host name, as recorded
            raise GroupTranslationError(
                f"the replay's target is the Airflow connection {name!r}, which does not "
                "exist (any more)",
                hint="name the connection of the target as 'target'",
                missing="bootstrap servers",
                field="target",
            ) from None

    return resolve


def apply_task(
    params: Mapping[str, Any],
    *,
    connection_getter: Callable[[str], Any],
    variable_getter: Callable[[str], str | None] | None = None,
) -> dict[str, Any]:
    """Commit group ``params["group"]``'s translated positions on the replay's target; returns
    :func:`translate`'s object (the run's XCom: no secret in it). Idempotent (see the module
    docstring)."""
    from kafka_archive.airflow.replay_tasks import task_service

    checked = validate_params(params)
    resolver = connection_resolver(checked["target"], connection_getter)
    with task_service(GroupTranslationService, variable_getter) as service:
        out = translate(service, checked, apply=True, target_resolver=resolver)
    where = out["target"]
    log.info(
        "group %s committed on %s (%s), %s:",
        checked["group"],
        where["name"] or where["bootstrap_servers"],
        where["bootstrap_servers"],
        out["basis"],
    )
    for row in out["items"]:
        log.info(
            "  %s[%s] -> offset %s (exact: %s, replay %s)",
            row["topic"],
            row["partition"],
            row["offset"],
            row["exact"],
            row["replay_id"],
        )
    return out
