"""
# kafka_archive_offsets

Follows every configured cluster's `__consumer_offsets` into the catalog, so that
`kafka-archive catalog group-offsets --at T` knows every commit a consumer group made, even
after the broker's log cleaner compacted the topic (which it does long before segments roll
and are archived). See `docs/catalog.md`, "The offsets follower".

## Task

* `follow` reads each cluster's `__consumer_offsets` (read_committed) from the positions stored
  in the catalog up to its end, and stores the commits and the new positions in one database
  transaction per batch: exactly once, whatever kills the run. Fails if a cluster did not catch
  up within `max_seconds` (what it read is kept).

Every minute, one run at a time: nothing is lost as long as the broker keeps uncompacted
records longer than the interval between runs (with Kafka's defaults, at least until a
100 MiB segment of `__consumer_offsets` rolls). Retries are always safe.

## Configuration

Airflow Variable `kafka_archive_offsets` (JSON: `db_url`, `clusters` = list of `cluster`,
`bootstrap`, `consumer_config`; `max_seconds`), else the environment: `KAFKA_ARCHIVE_DB`,
`KAFKA_ARCHIVE_OFFSETS_CLUSTER`, `KAFKA_ARCHIVE_OFFSETS_BOOTSTRAP`.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import dag, task
from kafka_archive.airflow import protect_task_logs
from kafka_archive.airflow.notify import alerting_args
from kafka_archive.airflow.offsets_tasks import follow_in_task

protect_task_logs()  # this DAG's task logs never show a password, secret key or token

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    "retries": 2,
    "retry_delay": timedelta(seconds=20),
    "execution_timeout": timedelta(minutes=30),
    **alerting_args(),  # a message for each failed or retried task
}


@dag(
    dag_id="kafka_archive_offsets",
    schedule=timedelta(minutes=1),
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["kafka-archive", "catalog", "consumer-groups"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
)
def kafka_archive_offsets() -> None:
    @task
    def follow() -> list[dict[str, Any]]:
        return follow_in_task(logging.getLogger("kafka_archive.offsets_follower").info)

    follow()


DAG = kafka_archive_offsets()
