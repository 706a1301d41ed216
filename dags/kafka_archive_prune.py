"""
# kafka_archive_prune

Applies the archive's retention policies: deletes whole archived segments that no policy
keeps any more, oldest first, with every archived version of the same offsets. See
`docs/archive.md`, "Retention and prune".

## Task

* `prune` records each pruned range in the catalog first (`catalog gaps` then says "pruned by
  policy X at T"), deletes the objects, then marks the range done. It never deletes what a
  running or queued replay or export holds a lease on. A run killed at any point is finished by
  the next one, so retries are always safe.

Daily, one run at a time. Trigger with `{"dry_run": true}` to see in the task log what would
go, how many bytes, and which share of each topic.

A run that would delete more than the `prune_max_share` setting (default 50%) of any topic
deletes nothing and fails, naming the topics and their shares: check with a dry run, then
trigger with `{"yes": true}` (or raise the setting). Internal topics (`__cluster_metadata`,
`__consumer_offsets`, `_schemas`, ...) are pruned only by a policy that names them.

## Configuration

The `retention` setting (Airflow Variable `kafka_archive_retention`, JSON, or
`KAFKA_ARCHIVE_RETENTION`, or `retention` in the configuration file), and the catalog and
store settings (`kafka_archive_db`, `kafka_archive_store`, `kafka_archive_aws_conn_id`). No
policy: nothing is deleted. Never use bucket lifecycle rules on the archive instead.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException
from kafka_archive.airflow import protect_task_logs
from kafka_archive.airflow.notify import alerting_args
from kafka_archive.airflow.prune_tasks import PruneNeedsConfirmation, prune_in_task

protect_task_logs()  # this DAG's task logs never show a password, secret key or token

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    "retries": 2,
    "retry_delay": timedelta(minutes=2),
    "execution_timeout": timedelta(hours=6),
    **alerting_args(),  # a message for each failed or retried task
}


@dag(
    dag_id="kafka_archive_prune",
    schedule="@daily",
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["kafka-archive", "retention"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
    params={
        "dry_run": Param(False, type="boolean", description="List what would go; delete nothing."),
        "cluster": Param(None, type=["null", "string"], description="Only this cluster."),
        "topic": Param(None, type=["null", "string"], description="Only this topic."),
        "yes": Param(
            False,
            type="boolean",
            description="Confirm a prune that deletes more than the prune_max_share setting "
            "(default 50%) of a topic; without it such a run deletes nothing and fails.",
        ),
    },
)
def kafka_archive_prune() -> None:
    @task
    def prune(params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = params or {}
        try:
            return prune_in_task(
                dry_run=bool(params.get("dry_run")),
                cluster=params.get("cluster") or None,
                topic=params.get("topic") or None,
                yes=params.get("yes") is True,
                log=logging.getLogger("kafka_archive.prune").info,
            )
        except PruneNeedsConfirmation as exc:  # a retry would refuse again: fail at once
            raise AirflowFailException(f"{exc}. {exc.hint}") from None

    prune()


DAG = kafka_archive_prune()
