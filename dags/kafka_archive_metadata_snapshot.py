"""
# kafka_archive_metadata_snapshot

Snapshots the topics (topic ids, partitions, replicas, leaders), topic configs and ACLs of
clusters whose `__cluster_metadata` log is not archived (ZooKeeper-era clusters, or no access
to the controllers' disks) through the Admin API, into the catalog's metadata history. The
queries (`kafka-archive catalog topic-config / topic-history / acls`) then answer for these
clusters too, at snapshot resolution: the state as of the last snapshot at or before the time
asked. See `docs/metadata-history.md`.

## Task

* `snapshot` records, per configured cluster, what changed since its previous snapshot (one
  transaction each; a retry is safe). A cluster without an authorizer is recorded as "ACLs
  unavailable", not as an error.

Hourly, one run at a time: the schedule is the resolution of the history.

## Configuration

The `metadata_snapshots` setting (Airflow Variable `kafka_archive_metadata_snapshots`, JSON:
`[{"cluster": "legacy", "bootstrap": "kafka-1:9092", "client_config": {...}}]`) and the
catalog (`kafka_archive_db`).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, task
from kafka_archive.airflow import protect_task_logs
from kafka_archive.airflow.metadata_tasks import metadata_snapshot_in_task
from kafka_archive.airflow.notify import alerting_args

protect_task_logs()  # this DAG's task logs never show a password, secret key or token

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    "retries": 2,
    "retry_delay": timedelta(minutes=2),
    "execution_timeout": timedelta(minutes=30),
    **alerting_args(),  # a message for each failed or retried task
}


@dag(
    dag_id="kafka_archive_metadata_snapshot",
    schedule="@hourly",
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["kafka-archive", "metadata-history"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
    params={
        "cluster": Param(None, type=["null", "string"], description="Only this cluster."),
    },
)
def kafka_archive_metadata_snapshot() -> None:
    @task
    def snapshot(params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        params = params or {}
        return metadata_snapshot_in_task(
            cluster=params.get("cluster") or None,
            log=logging.getLogger("kafka_archive.metadata_snapshot").info,
        )

    snapshot()


DAG = kafka_archive_metadata_snapshot()
