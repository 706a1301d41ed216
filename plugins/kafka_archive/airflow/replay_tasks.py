"""The bodies of the ``kafka_archive_replay`` DAG's tasks, callable without Airflow.

* :data:`PARAMS_SCHEMA` - the trigger form's fields with their JSON Schema (the DAG turns each
  into an Airflow ``Param``); :func:`spec_from_params` validates a run's params against it and
  builds the :class:`~kafka_archive.replay.planning.plan.ReplaySpec`.
* :func:`resolve_target` - ``target`` is an Airflow connection id (host[:port][,...] are the
  bootstrap servers, ``extra`` holds librdkafka settings - TLS, SASL - and the password becomes
  ``sasl.password``) or plain bootstrap servers. Secrets are resolved inside the task that needs
  them and never go through XCom or the catalog.
* :func:`plan_task`, :func:`execute_task`, :func:`report_task` - plan -> execute -> report.

The work itself is :class:`~kafka_archive.services.replay.ReplayService`'s; the store and the
catalog come from the settings (:mod:`kafka_archive.settings`: ``KAFKA_ARCHIVE_STORE`` /
``KAFKA_ARCHIVE_DB`` in the environment over the Airflow Variables ``kafka_archive_store`` /
``kafka_archive_db`` over the configuration file).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kafka_archive.airflow.kafka_connection import airflow_connection, connection_client_settings
from kafka_archive.airflow.params import (
    NULLABLE_STR,
    ParamsSchema,
    archived_range_params,
    validate_params,
    wait_for_open_transactions_param,
)
from kafka_archive.replay.planning.plan import ReplayPlan, ReplaySpec, TargetSpec
from kafka_archive.replay.target.request_secrets import SECRET_FREE_SETTINGS, refuse_secret_settings
from kafka_archive.services.replay import (
    DEFAULT_SPARK_THRESHOLD_BYTES,
    ReplayService,
    spec_from_request,
)
from kafka_archive.settings import VariableReader, airflow_variable_reader, load_settings

__all__ = [
    "PARAMS_SCHEMA",
    "airflow_connection",
    "airflow_variable_reader",
    "execute_task",
    "plan_task",
    "report_task",
    "resolve_target",
    "spec_from_params",
    "task_service",
]

log = logging.getLogger(__name__)

S = TypeVar("S", bound=ReplayService)


#: name -> (default, JSON Schema, description): the trigger form
PARAMS_SCHEMA: ParamsSchema = {
    **archived_range_params(
        from_default="-2h",
        from_help="Start (inclusive): ISO-8601, epoch ms, -2h / now-30m, offset:N, "
        "offset:P=N,..., earliest.",
    ),
    "target": (
        "",
        {"type": "string", "minLength": 1},
        "Target: an Airflow connection id, or bootstrap servers host:port[,host:port].",
    ),
    "target_config": (
        {},
        SECRET_FREE_SETTINGS,
        "librdkafka settings for the target (security.protocol, sasl.mechanism, ssl.ca.location, "
        "...). Secrets are refused here: put them in the Airflow connection named by target.",
    ),
    "target_topic": (None, NULLABLE_STR, "Target topic (empty: the source topic's name)."),
    "partition_mapping": (
        "same",
        {"type": "string", "enum": ["same", "murmur2", "round-robin"]},
        "same partition | Kafka's default murmur2 key partitioner | round-robin.",
    ),
    "replay_path": (
        "auto",
        {"type": "string", "enum": ["auto", "records", "batch"]},
        "auto: the archived batches sent whole when nothing per record is asked and they are "
        "not small | records | batch: whole batches, small ones too.",
    ),
    "preserve_timestamps": (True, {"type": "boolean"}, "Keep the source timestamps."),
    "provenance_headers": (
        False,
        {"type": "boolean"},
        "Add header kafka-archive.source = cluster/topic/partition/offset.",
    ),
    "key_filter": (None, NULLABLE_STR, "exact:V, prefix:V or regex:P on the UTF-8 key."),
    "rate_limit_mb": (None, {"type": ["null", "number"], "exclusiveMinimum": 0}, "MB/s."),
    "rate_limit_records": (
        None,
        {"type": ["null", "number"], "exclusiveMinimum": 0},
        "Records/s.",
    ),
    "dry_run": (False, {"type": "boolean"}, "Plan only: print the plan, send nothing."),
    "create_topic": (
        False,
        {"type": "boolean"},
        "Create a missing target topic as the source topic was at the replay's start: its "
        "partition count and config overrides (from the metadata history).",
    ),
    "topic_config": (
        {},
        SECRET_FREE_SETTINGS,
        "With create_topic: configs of the created topic, over the source's (e.g. "
        '{"retention.ms": "-1"}).',
    ),
    "no_source_config": (
        False,
        {"type": "boolean"},
        "With create_topic: do not copy the source's configs (partition count still copied).",
    ),
    "replication_factor": (
        None,
        {"type": ["null", "integer"], "minimum": 1},
        "With create_topic: the created topic's replication factor (empty: target default).",
    ),
    "allow_same_topic": (
        False,
        {"type": "boolean"},
        "Allow replaying into the source cluster's own topic.",
    ),
    "force": (False, {"type": "boolean"}, "Replay again even if this replay completed."),
    "allow_gaps": (
        False,
        {"type": "boolean"},
        "Replay around the archive's holes (missing or quarantined offsets) instead of "
        "failing; the run then ends complete-with-gaps.",
    ),
    **wait_for_open_transactions_param(),
    "execution": (
        "auto",
        {"type": "string", "enum": ["auto", "in-process", "spark"]},
        "auto: Spark when the plan reads more than spark_threshold_bytes.",
    ),
    "spark_master": ("local[*]", {"type": "string"}, "Spark master URL for Spark execution."),
    "spark_threshold_bytes": (
        DEFAULT_SPARK_THRESHOLD_BYTES,
        {"type": "integer", "minimum": 0},
        "Plans reading more bytes run on Spark (execution=auto).",
    ),
}


def resolve_target(
    target: str,
    target_config: Mapping[str, str] | None = None,
    connection_getter: Callable[[str], Any] | None = None,
) -> TargetSpec:
    """A :class:`TargetSpec` from a connection id or bootstrap servers (see the docstring)."""
    config = dict(target_config or {})
    conn = None
    if connection_getter is not None and ":" not in target:
        try:
            conn = connection_getter(target)
        except Exception:  # not a connection id: bootstrap servers
            conn = None
    if conn is None:
        return TargetSpec(bootstrap_servers=target, config=config)
    servers, merged = connection_client_settings(conn, config)
    return TargetSpec(bootstrap_servers=servers, config=merged, name=target)


def spec_from_params(params: Mapping[str, Any], target: TargetSpec | None = None) -> ReplaySpec:
    """Validate ``params`` against :data:`PARAMS_SCHEMA` and build the replay spec.

    Raises:
        ReplayConfigError: a secret-named setting (checked first, so the message names the
            key with a hint rather than quoting the schema's pattern).
        jsonschema.ValidationError: anything else the schema refuses.
    """
    refuse_secret_settings(params)
    validate_params(params, PARAMS_SCHEMA, ["cluster", "topic", "from", "target"])
    request = {k: params.get(k) for k in _SPEC_FIELDS}
    request["partitions"] = list(params.get("partitions") or []) or None
    request["source_config"] = not params.get("no_source_config", False)
    return spec_from_request(
        request, target or TargetSpec(bootstrap_servers=params["target"], name=params["target"])
    )


#: the params that are fields of the replay request as they are (see spec_from_request)
_SPEC_FIELDS = (
    "cluster",
    "topic",
    "from",
    "to",
    "target_topic",
    "partition_mapping",
    "replay_path",
    "preserve_timestamps",
    "provenance_headers",
    "key_filter",
    "rate_limit_mb",
    "rate_limit_records",
    "allow_same_topic",
    "allow_gaps",
    "create_topic",
    "topic_config",
    "replication_factor",
    "force",
    "dry_run",
)


def task_service(kind: type[S], variable_getter: VariableReader | None) -> S:
    """A ``kind`` of replay service (:class:`ReplayService`, or a subclass such as the group
    service), its settings read inside the task (Variables included) and the store's
    credentials taken from the configured Airflow connection."""
    from kafka_archive.airflow.store_connection import use_store_connection

    use_store_connection()
    return kind(load_settings(variables=variable_getter))


def plan_task(
    params: Mapping[str, Any],
    *,
    variable_getter: Callable[[str], str | None] | None = None,
    connection_getter: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Plan the replay; returns the (redacted) plan and its summary for XCom. A ``target``
    naming an Airflow connection (read with ``connection_getter``) is recorded as its
    bootstrap servers, named by the connection id: what moving a group afterwards connects to
    (it recorded the connection id as the servers, which nothing could reach)."""
    from kafka_archive.replay.planning.completeness import describe_hole
    from kafka_archive.replay.runner import dry_run_report

    # the plan records the target's identity and servers; its secrets stay in memory (the
    # stored plan and the XCom are redacted) and execute resolves them again
    name = str(params.get("target") or "")
    resolved = resolve_target(name, params.get("target_config"), connection_getter)
    spec = spec_from_params(params, resolved.model_copy(update={"name": name}))
    with task_service(ReplayService, variable_getter) as service:
        # a dry run is never executed: no queued lease holding its data from prune
        plan = service.plan(
            spec,
            register=True,
            lease=not params.get("dry_run"),
            wait_open_txns_s=0
            if params.get("dry_run")
            else int(params.get("wait_for_open_transactions_s") or 0),
            on_wait=_log_wait,
        )
    report = dry_run_report(plan)
    log.info(
        "replay %s: %d partition(s), <= %d records, %d bytes to read",
        plan.replay_id,
        len(plan.partitions),
        plan.total_records,
        plan.total_bytes,
    )
    for p in plan.partitions:
        log.info(
            "  partition %d: offsets [%d, %d), <= %d records, %d bytes in %d object(s)",
            p.partition,
            p.start_offset,
            p.end_offset,
            p.records,
            p.bytes,
            len(p.objects),
        )
    _log_topic_settings(plan)
    for p_, hole in plan.holes:
        # every hole in the task log, whether or not the run will be allowed to go around it
        log.warning("  hole: %s", describe_hole(p_, hole))
    if plan.has_holes:
        log.warning(
            "replay %s: %d hole(s) in the requested range: %s",
            plan.replay_id,
            len(plan.holes),
            "allowed (allow_gaps): the run will end complete-with-gaps"
            if plan.spec.allow_gaps
            else "the execute task refuses to start (set allow_gaps to replay around them)",
        )
    return {
        "replay_id": plan.replay_id,
        "plan_json": plan.to_json(),
        "dry_run": bool(params.get("dry_run")),
        "summary": report.model_dump(mode="json", exclude={"plan"}),
    }


def _log_wait(plan: ReplayPlan) -> None:
    from kafka_archive.replay.planning.stability import incomplete_rows

    for row in incomplete_rows(plan):
        log.warning("waiting for an open transaction: %s", row["message"])


def _log_topic_settings(plan: ReplayPlan) -> None:
    """The target topic's planned configs in the task log (the target itself is checked, and
    its warnings logged, by the execute task before anything is sent)."""
    settings = plan.topic_settings
    if settings is None:
        return
    for note in settings.notes:
        log.warning("replay %s: %s", plan.replay_id, note)
    if plan.spec.create_topic:
        for c in settings.configs:
            log.info("  target topic config %s=%s (%s)", c.name, c.value, c.source)
        for d in settings.dropped:
            log.warning("  not set on the target: %s=%s: %s", d.name, d.value, d.reason)


def execute_task(
    planned: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    connection_getter: Callable[[str], Any] | None = None,
    variable_getter: Callable[[str], str | None] | None = None,
) -> dict[str, Any]:
    """Check the target and replay (in-process or on Spark); returns the report dict."""
    from kafka_archive.services.replay import choose_execution

    refuse_secret_settings(params)  # a run created around the Params' schema: nothing done
    target = resolve_target(params["target"], params.get("target_config"), connection_getter)
    plan = ReplayPlan.from_json(planned["plan_json"])
    # the stored plan is redacted: put the resolved target (with its secrets) back
    plan = plan.with_target(target.model_copy(update={"name": plan.spec.target.name}))
    threshold = int(params.get("spark_threshold_bytes", DEFAULT_SPARK_THRESHOLD_BYTES))
    where = choose_execution(params.get("execution", "auto"), plan.total_bytes, threshold)
    log.info(
        "replay %s -> %s %s",
        plan.replay_id,
        plan.target_topic,
        f"on Spark ({params.get('spark_master')})" if where == "spark" else "in-process",
    )
    with task_service(ReplayService, variable_getter) as service:
        report = service.run(
            plan,
            execution=where,
            spark_master=params.get("spark_master"),
            on_warning=lambda line: log.warning("target topic config: %s", line),
        )
    out = report.model_dump(mode="json")
    out["execution"] = where
    return out


def report_task(planned: Mapping[str, Any], result: Mapping[str, Any] | None) -> dict[str, Any]:
    """Log and return the final report (the plan when it was a dry run)."""
    if result is None:
        summary = dict(planned["summary"])
        log.info("dry run of replay %s: nothing sent", planned["replay_id"])
        return summary
    log.info(
        "replay %s %s: %d records sent this run (%d in total) in %.1f s (%.0f records/s, "
        "%.2f MB/s); skipped %d aborted records and %d control batches; %d filtered; %d in "
        "transactions still open at the end of the archive",
        result["replay_id"],
        result["status"],
        result["records_sent_this_run"],
        result["records_sent"],
        result["duration_s"],
        result["records_per_s"],
        result["mb_per_s"],
        result["skipped_aborted_records"],
        result["skipped_control_batches"],
        result["filtered_records"],
        result["open_txn_records"],
    )
    for hole in result.get("holes") or []:
        log.warning(
            "  hole replayed around (allow_gaps): partition %s offsets %s..%s %s%s: %s",
            hole["partition"],
            hole["first_offset"],
            hole["last_offset"],
            hole["kind"],
            f" object {hole['object_key']}" if hole.get("object_key") else "",
            hole["reason"],
        )
    for p, row in sorted(result["partitions"].items(), key=lambda kv: int(kv[0])):
        log.info(
            "  partition %s: offsets %s..%s, %s records (%s this run), status %s",
            p,
            row["first_offset"],
            row["last_offset"],
            row["records"],
            row["records_this_run"],
            row["status"],
        )
    from kafka_archive.airflow.export_tasks import raise_if_incomplete

    raise_if_incomplete("replay", result["replay_id"], result)
    return dict(result)
