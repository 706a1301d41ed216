"""
# kafka_archive_fetch

Archives clusters whose disks we cannot read (managed services, Kubernetes, tiered storage)
over the Kafka protocol: the fetch archiver (`kafka-archive archive fetch`), its record batches
kept byte for byte in broker-identical segments. See `docs/archive.md`, "The fetch archiver".

## Tasks

* `workers` reads how many fetch tasks to run (`workers` of the Variable, default 1).
* `fetch` (mapped: one per worker) archives every configured cluster **until caught up**: every
  selected partition up to the high watermark it had when the run first asked it, then the open
  segments are uploaded (at most `max_seconds` per cluster; a cluster not caught up by then
  fails the task, with what it fetched uploaded). Holes (data the broker deleted before it was
  archived) are logged and reported, not a failure. Progress is what the store holds, so a run
  killed at any point loses and doubles nothing, and retries are always safe.

With `workers` > 1 the fetch tasks run at once, on as many Airflow workers as the executor gives,
and share every cluster's partitions as members of its Kafka consumer group (`group`, default
`kafka-archive-fetch-<cluster>`; needs `Read` on the group): each partition is archived by one
task; a task that dies hands its partitions to the others once its session times out.

Every 5 minutes, one run at a time. Each run uploads its open segments, so the schedule is the
trade-off between archive lag and segment count: every 5 minutes makes at most one small
segment per partition per run (288 a day) on a quiet topic, where a busy topic rolls full
`segment.bytes` segments anyway; every minute would cut the lag to a minute but make five
times as many small objects (catalog rows, store requests, listings). For a lag of seconds, run the
archiver continuously instead (the Helm chart's `fetchArchivers`: one long-running process per
cluster, which rolls segments by `segment.bytes` and `segment.ms` like a broker).

Why a scheduled catch-up task and not a deferrable operator: a deferred task waits in the
triggerer, whose triggers all share one asyncio event loop and must only await. The fetch loop
is the opposite: blocking socket calls (kafka-python's protocol layer), CRC checks and segment
building on the CPU, segment files on local disk and per-partition state (open segment, index
entries, leader epochs, transaction ranges) in memory until each segment is uploaded. Run in a
trigger it would stall every other trigger of the triggerer, and a triggerer restart would drop
its state. So Airflow runs it as what fits a worker slot, a bounded catch-up that ends with
everything uploaded, and a Kubernetes Deployment runs it continuously.

## Configuration

Airflow Variable `kafka_archive_fetch` (JSON: `store`; `clusters` = list of `cluster`,
`bootstrap`, `topics`, `client_config` (librdkafka settings, secrets refused), `connection` (an
Airflow connection holding the secrets), `secret_env` (setting -> worker environment variable),
`group`; `max_seconds`, default 240; `workers`, default 1), else the settings:
`KAFKA_ARCHIVE_STORE`, `KAFKA_ARCHIVE_FETCH_CLUSTER`, `KAFKA_ARCHIVE_FETCH_BOOTSTRAP`,
`KAFKA_ARCHIVE_FETCH_TOPICS`. The store's credentials: `kafka_archive_aws_conn_id` as for every
DAG.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import dag, task
from kafka_archive.airflow import protect_task_logs
from kafka_archive.airflow.fetch_tasks import fetch_in_task, fetch_workers_in_task
from kafka_archive.airflow.notify import alerting_args

protect_task_logs()  # this DAG's task logs never show a password, secret key or token

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "execution_timeout": timedelta(minutes=30),
    **alerting_args(),  # a message for each failed or retried task
}


@dag(
    dag_id="kafka_archive_fetch",
    schedule=timedelta(minutes=5),
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["kafka-archive", "archive", "fetch"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
)
def kafka_archive_fetch() -> None:
    @task
    def workers() -> list[int]:
        return fetch_workers_in_task()

    @task
    def fetch(worker: int) -> list[dict[str, Any]]:
        return fetch_in_task(logging.getLogger(f"kafka_archive.fetch.{worker}").info)

    fetch.expand(worker=workers())


DAG = kafka_archive_fetch()
