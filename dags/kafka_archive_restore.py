"""
# kafka_archive_restore

Restores many topics of an archived cluster **as they were at one moment T** into a target
cluster, in one resumable run: each topic created with its partition count and configs at T,
optionally the ACLs of T (with a principal map), the data of every partition before T exactly
once (committed records only, in parallel), then every selected consumer group's position at T
translated onto the restored topics. The region-failover runbook: `docs/restore.md`.

## Tasks

* `plan`: the preflight. Target reachable; the principal's permissions (create topics, write,
  transactional ids, alter ACLs, group offsets: checked from the target's answers, never
  assumed); replication factors vs brokers; name collisions; holes and pruned ranges; bytes
  and time. Every problem is in the task log with what to do; any error stops the run here
  (`dry_run`: always stops here, the plan is the answer).
* `restore`: ACLs, `_schemas` first (Schema Registry ids stay the same), then the topics through
  a bounded pool, each group once its topics are in. A retry (or a new run of the same Params)
  continues an unfinished restore: each topic's replay resumes after its last committed
  transaction.
* `report`: per topic and partition records, bytes and time, groups, the recovery point.

## Configuration

`KAFKA_ARCHIVE_STORE` / `KAFKA_ARCHIVE_DB` (environment or Airflow Variables). The target is an
Airflow connection id (host = bootstrap servers, extra = librdkafka settings, login/password =
SASL) or bootstrap servers: secrets never go through XCom or the catalog. Pin `at` (an absolute
time): a relative one would move on a retry.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import dag, task
from airflow.sdk.exceptions import AirflowSkipException
from kafka_archive.airflow import dag_params, protect_task_logs
from kafka_archive.airflow.notify import alerting_args
from kafka_archive.airflow.replay_tasks import airflow_connection, airflow_variable_reader
from kafka_archive.airflow.restore_tasks import PARAMS_SCHEMA, plan_task, report_task, run_task

protect_task_logs()  # this DAG's task logs never show a password, secret key or token

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    # retries are safe: the restore continues, each topic's replay exactly once
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
    "execution_timeout": timedelta(hours=24),
    **alerting_args(),
}


@dag(
    dag_id="kafka_archive_restore",
    schedule=None,
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    tags=["kafka-archive", "restore", "kafka"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
    params=dag_params(PARAMS_SCHEMA),
)
def kafka_archive_restore() -> None:
    @task(retries=0)
    def plan(params: dict[str, Any] | None = None) -> dict[str, Any]:
        return plan_task(
            params or {},
            connection_getter=airflow_connection,
            variable_getter=airflow_variable_reader(),
        )

    @task
    def restore(planned: dict[str, Any], params: dict[str, Any] | None = None) -> dict[str, Any]:
        if (params or {}).get("dry_run"):
            raise AirflowSkipException(f"dry run: restore {planned['restore_id']} only planned")
        return run_task(
            params or {},
            connection_getter=airflow_connection,
            variable_getter=airflow_variable_reader(),
        )

    @task(retries=0)
    def report(result: dict[str, Any]) -> dict[str, Any]:
        return report_task(result)

    planned: Any = plan()
    result: Any = restore(planned)
    report(result)


kafka_archive_restore()
