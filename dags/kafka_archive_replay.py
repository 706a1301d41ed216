"""
# kafka_archive_replay

Re-produces an archived time (or offset) range of a topic into a target Kafka cluster,
**exactly once**, resumable, near the producer's line rate. Triggered by hand from the UI
("Trigger DAG w/ config") or the API; every field of the form is validated by JSON Schema.

## On-call recipes (see `docs/replay.md`)

* **Consumer bug, re-consume from two hours ago**: `from = -2h`, `target` = the cluster,
  `target_topic` = a fresh topic (the source topic itself needs `allow_same_topic`).
* **Region failover, start 30 minutes back**: `from = -30m`, `target` = the other region's
  connection, `target_topic` empty (same name); then `kafka-archive replay translate-group`.
* **New consumer group, last 10 minutes**: `from = -10m`; then `translate-group --at -10m
  --apply` for the new group.

## Tasks

* `plan`: resolves the range against the catalog: per partition the start/end offsets, record
  and byte counts, the archived objects and byte ranges to read (logged; a dry run stops here
  and `report` shows the plan).
* `execute`: checks the target (not the source's own topic unless allowed, the topic exists or
  is created with the source's partition count, the mapping can hold) and replays: in-process
  for small plans, on Spark (one task per source partition) when the plan reads more than
  `spark_threshold_bytes` or `execution = spark`. Each partition's transactional producer
  commits data and progress together, so a retried task resumes where the last committed
  transaction ended: nothing lost, nothing duplicated.
* `report`: records sent per partition, skipped control batches and aborted records, records of
  transactions still open at the end of the archive, duration and rate.

## Configuration

`KAFKA_ARCHIVE_STORE` and `KAFKA_ARCHIVE_DB` (environment, or Airflow Variables
`kafka_archive_store` / `kafka_archive_db`). The target is an Airflow connection id (host =
bootstrap servers, extra = librdkafka settings such as `security.protocol`, `sasl.mechanism`,
`ssl.ca.location`; login/password become `sasl.username`/`sasl.password`) or plain bootstrap
servers with `target_config` settings. Secrets stay in the connection: they never go through
XCom or the catalog.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import dag, task
from airflow.sdk.exceptions import AirflowSkipException
from kafka_archive.airflow import dag_params, protect_task_logs
from kafka_archive.airflow.notify import alerting_args
from kafka_archive.airflow.replay_tasks import (
    PARAMS_SCHEMA,
    airflow_connection,
    airflow_variable_reader,
    execute_task,
    plan_task,
    report_task,
)

protect_task_logs()  # this DAG's task logs never show a password, secret key or token

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    # retries are safe: the replay resumes from its last committed transaction
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
    "execution_timeout": timedelta(hours=12),
    **alerting_args(),  # a message for each failed or retried task
}


@dag(
    dag_id="kafka_archive_replay",
    schedule=None,
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    tags=["kafka-archive", "replay", "kafka"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
    # fields without a usable default (cluster, topic, target) are required in the form
    params=dag_params(PARAMS_SCHEMA),
)
def kafka_archive_replay() -> None:
    @task(retries=1)
    def plan(params: dict[str, Any] | None = None) -> dict[str, Any]:
        return plan_task(
            params or {},
            variable_getter=airflow_variable_reader(),
            connection_getter=airflow_connection,
        )

    @task
    def execute(planned: dict[str, Any], params: dict[str, Any] | None = None) -> dict[str, Any]:
        if planned["dry_run"]:
            raise AirflowSkipException(f"dry run: replay {planned['replay_id']} only planned")
        return execute_task(
            planned,
            params or {},
            connection_getter=airflow_connection,
            variable_getter=airflow_variable_reader(),
        )

    @task(trigger_rule="none_failed", retries=0)
    def report(planned: dict[str, Any], result: dict[str, Any] | None) -> dict[str, Any]:
        return report_task(planned, result)

    # At parse time a TaskFlow call returns an XComArg (a reference Airflow resolves to the
    # upstream task's return value when the downstream task runs), not the dict the task
    # bodies are typed with; Any says so once instead of casting at every call.
    planned: Any = plan()
    result: Any = execute(planned)
    report(planned, result)


kafka_archive_replay()
