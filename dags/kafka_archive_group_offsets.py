"""
# kafka_archive_group_offsets

"Start group G at T on the target": commits a consumer group's offsets on a replay's target
cluster, translated through the replay's offset map. Every move of a group is a DAG run, so
Airflow records who moved which group, where and when. Triggered by the on-call page
(preview first, then apply) or by hand ("Trigger DAG w/ config"); every field is validated by
JSON Schema. The CLI equivalent is `kafka-archive replay translate-group ... --apply`.

## On-call recipes (see `docs/oncall-page.md`, `docs/replay.md`)

* **Region failover, consumers resume where they were 30 minutes ago**: `group` = the group,
  `commits_at = -30m` (its archived commits then), `at` empty.
* **New consumer group, start 10 minutes ago**: `group` = the new group, `at = -10m`.
* **Several replays of the topic**: `replay_id` (or `target_topic`) picks the one whose target
  the group reads; empty: the latest replay of `cluster/topic`.
* **Target with SASL/TLS**: `target` = the Airflow connection holding its secrets (the
  bootstrap servers are the replay's own).

A relative time (`-30m`) is read when the task runs; the on-call page sends the exact instant it
previewed, so the run commits what was shown.

## Task

* `apply`: finds the replay, takes the group's source positions (at `at`, or its archived commits
  as of `commits_at`), maps them through the replay's offset map and commits them on the target
  (the group must have no live members there). Returns the positions (XCom; no secrets).
  Re-running is safe: the same offsets are committed again.

## Configuration

`KAFKA_ARCHIVE_STORE` and `KAFKA_ARCHIVE_DB` (environment, or Airflow Variables
`kafka_archive_store` / `kafka_archive_db`), as for `kafka_archive_replay`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import dag, task
from kafka_archive.airflow import dag_params, protect_task_logs
from kafka_archive.airflow.group_tasks import PARAMS_SCHEMA, apply_task
from kafka_archive.airflow.notify import alerting_args
from kafka_archive.airflow.replay_tasks import airflow_connection, airflow_variable_reader

protect_task_logs()  # this DAG's task logs never show a password, secret key or token

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    # retries are safe: committing the same offsets again is idempotent
    "retries": 1,
    "retry_delay": timedelta(seconds=15),
    "execution_timeout": timedelta(minutes=30),
    **alerting_args(),  # a message for each failed or retried task
}


@dag(
    dag_id="kafka_archive_group_offsets",
    schedule=None,
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    tags=["kafka-archive", "replay", "consumer-groups", "kafka"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
    # cluster, topic and group have no default: the form requires them
    params=dag_params(PARAMS_SCHEMA),
)
def kafka_archive_group_offsets() -> None:
    # one XCom, the whole answer (not one per key: the page reads it whole)
    @task(multiple_outputs=False)
    def apply(params: dict[str, Any] | None = None) -> dict[str, Any]:
        return apply_task(
            params or {},
            connection_getter=airflow_connection,
            variable_getter=airflow_variable_reader(),
        )

    apply()


kafka_archive_group_offsets()
