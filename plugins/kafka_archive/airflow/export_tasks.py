"""The bodies of the ``kafka_archive_export`` DAG's tasks, callable without Airflow.

* :data:`PARAMS_SCHEMA` - the trigger form's fields with their JSON Schema (the DAG turns each
  into an Airflow ``Param``); :func:`request_from_params` validates a run's params against it
  and builds the :class:`~kafka_archive.services.export.ExportRequest`.
* :func:`plan_task` -> :func:`export_task` -> :func:`report_task`.

The work is :class:`~kafka_archive.services.export.ExportService`'s; the archive store and the
catalog come from the settings (``KAFKA_ARCHIVE_STORE`` / ``KAFKA_ARCHIVE_DB`` in the environment
over the Airflow Variables ``kafka_archive_store`` / ``kafka_archive_db`` over the configuration
file), the Spark master from the run's ``spark_master`` param or the ``spark_master`` setting.
Retries are safe: a retried export re-stages the same files and commits once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from kafka_archive.airflow.params import (
    NULLABLE_STR,
    ParamsSchema,
    archived_range_params,
    validate_params,
    wait_for_open_transactions_param,
)
from kafka_archive.services.export import ExportPlan, ExportRequest, ExportService
from kafka_archive.settings import VariableReader, airflow_variable_reader, load_settings

__all__ = [
    "PARAMS_SCHEMA",
    "airflow_variable_reader",
    "export_task",
    "plan_task",
    "report_task",
    "request_from_params",
]

log = logging.getLogger(__name__)


#: name -> (default, JSON Schema, description): the trigger form
PARAMS_SCHEMA: ParamsSchema = {
    **archived_range_params(
        from_default="-24h",
        from_help="Start (inclusive): ISO-8601, epoch ms, -2h, offset:N, offset:P=N,..., earliest.",
    ),
    "output": (
        "",
        {"type": "string", "minLength": 1},
        "Where to write: s3://bucket/prefix or a directory the Spark executors share "
        "(format iceberg: the warehouse of new tables).",
    ),
    "format": (
        "parquet",
        {"type": "string", "enum": ["parquet", "iceberg"]},
        "Output format: Parquet files, or appends to an Iceberg table (each run appends what "
        "is new since the table's last export snapshot: schedule it).",
    ),
    "table": (
        None,
        NULLABLE_STR,
        "Format iceberg: CATALOG.NAMESPACE.TABLE; empty: kafka_archive.<cluster>.<topic>.",
    ),
    "allow_gaps": (
        False,
        {"type": "boolean"},
        "Export around the archive's holes instead of failing.",
    ),
    **wait_for_open_transactions_param(),
    "dry_run": (False, {"type": "boolean"}, "Plan only: log the plan, write nothing."),
    "spark_master": (
        None,
        NULLABLE_STR,
        "Spark master URL; empty: the spark_master setting, else local[*].",
    ),
}


def request_from_params(params: Mapping[str, Any]) -> ExportRequest:
    """Validate ``params`` against :data:`PARAMS_SCHEMA` and build the export request."""
    validate_params(params, PARAMS_SCHEMA, ["cluster", "topic", "from", "output"])
    return ExportRequest.model_validate(
        {
            "cluster": params["cluster"],
            "topic": params["topic"],
            "from": params["from"],
            "to": params.get("to") or None,
            "partitions": list(params.get("partitions") or []) or None,
            "output": params["output"],
            "format": params.get("format", "parquet"),
            "table": params.get("table") or None,
            "allow_gaps": bool(params.get("allow_gaps")),
        }
    )


def _service(variable_getter: VariableReader | None) -> ExportService:
    from kafka_archive.airflow.store_connection import use_store_connection

    use_store_connection()
    return ExportService(load_settings(variables=variable_getter))


def plan_task(
    params: Mapping[str, Any], *, variable_getter: Callable[[str], str | None] | None = None
) -> dict[str, Any]:
    """Plan the export; returns the plan (JSON) and its summary for XCom."""
    request = request_from_params(params)
    with _service(variable_getter) as service:
        plan = service.plan(
            request,
            wait_open_txns_s=0 if params.get("dry_run") else _wait_s(params),
            on_wait=_log_wait,
        )
    summary = plan.summary()
    log.info(
        "export %s of %s/%s to %s: <= %d records, %d bytes to read",
        plan.export_id,
        request.cluster,
        request.topic,
        request.output,
        summary["records_at_most"],
        summary["bytes"],
    )
    return {
        "export_id": plan.export_id,
        "plan_json": plan.model_dump_json(by_alias=True),
        "dry_run": bool(params.get("dry_run")),
        "summary": summary,
    }


def _wait_s(params: Mapping[str, Any]) -> int:
    return int(params.get("wait_for_open_transactions_s") or 0)


def _log_wait(plan: Any) -> None:
    from kafka_archive.replay.planning.stability import incomplete_rows

    for row in incomplete_rows(plan):
        log.warning("waiting for an open transaction: %s", row["message"])


def export_task(
    planned: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    variable_getter: Callable[[str], str | None] | None = None,
) -> dict[str, Any]:
    """Run the export on Spark and commit it; returns the report dict."""
    plan = ExportPlan.model_validate_json(planned["plan_json"])
    with _service(variable_getter) as service:
        report = service.run(plan, spark_master=params.get("spark_master") or None)
    return report.model_dump(mode="json")


def raise_if_incomplete(kind: str, ident: str, result: Mapping[str, Any]) -> None:
    """Fail the task (a typed error with what to do) when the run ended ``incomplete``: it
    stopped at the archive's last stable offset, a transaction open where the archive ends."""
    from kafka_archive.replay.planning.stability import IncompleteRunError

    if result.get("status") != "incomplete":
        return
    rows = result.get("incomplete") or []
    for row in rows:
        log.warning("  incomplete: %s", row["message"])
    raise IncompleteRunError(
        f"{kind} {ident} is incomplete: " + "; ".join(r["message"] for r in rows),
        hint=result.get("hint") or None,
    )


def report_task(planned: Mapping[str, Any], result: Mapping[str, Any] | None) -> dict[str, Any]:
    """Log and return the final report (the plan's summary when it was a dry run)."""
    if result is None:
        log.info("dry run of export %s: nothing written", planned["export_id"])
        return dict(planned["summary"])
    log.info(
        "export %s %s: %d rows in %d file(s), %d bytes, %.1f s (%.0f rows/s); skipped %d "
        "aborted records, %d control batches, %d records of open transactions; manifest %s",
        result["export_id"],
        result["status"],
        result["rows"],
        result["files"],
        result["bytes_written"],
        result["duration_s"],
        result["rows_per_s"],
        result["aborted_records"],
        result["control_batches"],
        result["open_txn_records"],
        result["manifest"],
    )
    raise_if_incomplete("export", result["export_id"], result)
    return dict(result)
