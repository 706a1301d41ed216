"""
# kafka_archive_export

Writes an archived time (or offset) range of a topic as **Parquet** files, with Spark: one row
per record a replay of the same range would deliver (committed records only; control batches
and aborted transactions left out), under `date=YYYY-MM-DD/hour=HH` directories. Triggered by
hand from the UI ("Trigger DAG w/ config") or the API; every field is validated by JSON Schema.

## Tasks

* `plan`: resolves the range against the catalog exactly as a replay would and derives the
  export id (logged; a dry run stops here).
* `export`: one Spark task per partition stages its files in `<output>.kafka-archive/_staging/`
  (the output itself holds only data files); the driver publishes them and writes the
  manifest `<output>.kafka-archive/_kafka_archive_export.json` last. With `format` iceberg,
  the run appends to the table (`table`) what is new since its last export snapshot, as one
  snapshot: trigger it on a schedule for an incremental table. Retries
  are safe: the same files are staged again, rows are never duplicated, and an export already
  committed is not written again.
* `report`: rows, files, bytes, what was skipped, the manifest's location.

Schema, layout and how to read the output (pyarrow, DuckDB, Spark SQL): `docs/export.md`.

## Configuration

`KAFKA_ARCHIVE_STORE` and `KAFKA_ARCHIVE_DB` (environment, or Airflow Variables
`kafka_archive_store` / `kafka_archive_db`); `s3://` outputs use the same credentials as the
archive store (the `aws_conn_id` setting, or the worker's AWS environment).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import dag, task
from airflow.sdk.exceptions import AirflowSkipException
from kafka_archive.airflow import dag_params, protect_task_logs
from kafka_archive.airflow.export_tasks import (
    PARAMS_SCHEMA,
    airflow_variable_reader,
    export_task,
    plan_task,
    report_task,
)
from kafka_archive.airflow.notify import alerting_args

protect_task_logs()  # this DAG's task logs never show a password, secret key or token

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    # retries are safe: staged files are replaced and the manifest is committed once
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
    "execution_timeout": timedelta(hours=12),
    **alerting_args(),  # a message for each failed or retried task
}


@dag(
    dag_id="kafka_archive_export",
    schedule=None,
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    tags=["kafka-archive", "export", "parquet", "iceberg"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
    params=dag_params(PARAMS_SCHEMA),
)
def kafka_archive_export() -> None:
    @task(retries=1)
    def plan(params: dict[str, Any] | None = None) -> dict[str, Any]:
        return plan_task(params or {}, variable_getter=airflow_variable_reader())

    @task
    def export(planned: dict[str, Any], params: dict[str, Any] | None = None) -> dict[str, Any]:
        if planned["dry_run"]:
            raise AirflowSkipException(f"dry run: export {planned['export_id']} only planned")
        return export_task(planned, params or {}, variable_getter=airflow_variable_reader())

    @task(trigger_rule="none_failed", retries=0)
    def report(planned: dict[str, Any], result: dict[str, Any] | None) -> dict[str, Any]:
        return report_task(planned, result)

    # At parse time a TaskFlow call returns an XComArg, not the dict the bodies are typed with
    planned: Any = plan()
    result: Any = export(planned)
    report(planned, result)


kafka_archive_export()
