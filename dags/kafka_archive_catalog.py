"""
# kafka_archive_catalog

Catalogs every archived segment that is not cataloged yet, so that `kafka-archive catalog ...`
(and replay planning) can answer "which offset was current at time T" exactly, for any moment
of archived history. See `docs/catalog.md`.

Scheduled on the Asset `kafka-archive://archive/segments`, which the archive DAG
(`kafka_archive_segments`) updates whenever it archived new segments. Also runnable by hand.

## Tasks

The engine follows the increment (setting `catalog_engine`, default `auto`): the build lists
the new segments first and extracts them in the task's own process unless they reach the Spark
threshold (`catalog_spark_threshold_bytes`, default 4GiB, or `catalog_spark_threshold_segments`,
default 1000); `in-process` or `spark` force one.

* `choose` reads the configuration and picks where Spark would run:
  * `build_local` - no master configured (or a `local[...]` one): the build runs in this task,
    with a local Spark session only when the engine picks Spark (SQLite or PostgreSQL
    catalog). The embedded, single-machine default.
  * `spark_submit` - a cluster master is configured (`spark://...`, `k8s://...`, `yarn`): an
    increment below the threshold is built in this task, in-process; otherwise `spark-submit`
    runs `spark_jobs/build_catalog.py` on the cluster, as Airflow's SparkSubmitOperator would;
    the task streams its log and reads its JSON report.
* `report` logs what the build added (segments, intervals, commits, bytes) and which engine ran
  and why (`engine`, `engine_reason`), and returns it (its XCom).

The build is idempotent: a re-run adds nothing, a run killed midway is completed by the next,
so retries (with exponential backoff) are always safe. One run at a time.

## Configuration

Airflow Variable `kafka_archive_catalog` (JSON: `store_uri`, `db_url`, `spark_master`,
`cluster`, `interval_bytes`, `store_options`, `spark_conf`, `spark_submit`, `application`,
`py_files`, `catalog_engine`, `catalog_spark_threshold_bytes`,
`catalog_spark_threshold_segments`), else the environment: `KAFKA_ARCHIVE_STORE`,
`KAFKA_ARCHIVE_DB`, `KAFKA_ARCHIVE_SPARK_MASTER`, `KAFKA_ARCHIVE_CATALOG_ENGINE`, ....
Store credentials come from the environment, instance roles, or the
Airflow connection named by `KAFKA_ARCHIVE_AWS_CONN_ID` / Variable `kafka_archive_aws_conn_id`
(for a cluster, pass them to executors with `spark_conf` `spark.executorEnv.*` or roles).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import Asset, dag, task
from kafka_archive.airflow import protect_task_logs
from kafka_archive.airflow.archive_dag import ARCHIVE_SEGMENTS_ASSET_URI
from kafka_archive.airflow.catalog_tasks import build_in_task, report_task, task_config
from kafka_archive.airflow.notify import alerting_args, run_deadline

protect_task_logs()  # this DAG's task logs never show a password, secret key or token
log = logging.getLogger("kafka_archive.catalog.spark_submit")

DEFAULT_ARGS: dict[str, Any] = {
    "owner": "kafka-archive",
    "retries": 2,
    "retry_delay": timedelta(minutes=1),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=15),
    "execution_timeout": timedelta(hours=12),
    **alerting_args(),  # a message for each failed or retried task
}


@dag(
    dag_id="kafka_archive_catalog",
    schedule=[Asset(ARCHIVE_SEGMENTS_ASSET_URI)],
    start_date=datetime(2024, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    tags=["kafka-archive", "catalog", "spark"],
    doc_md=__doc__,
    default_args=DEFAULT_ARGS,
    deadline=run_deadline("catalog_deadline"),  # unset: no deadline
)
def kafka_archive_catalog() -> None:
    @task.branch
    def choose() -> str:
        return "build_local" if task_config().mode() == "local" else "spark_submit"

    @task
    def build_local() -> dict[str, Any]:
        return build_in_task("local", log.info)

    @task
    def spark_submit() -> dict[str, Any]:
        return build_in_task("submit", log.info)

    @task(trigger_rule="none_failed_min_one_success")
    def report() -> dict[str, Any]:
        from airflow.sdk import get_current_context

        pulled = get_current_context()["ti"].xcom_pull(task_ids=["build_local", "spark_submit"])
        return report_task(pulled if isinstance(pulled, list) else [pulled])

    runs = [build_local(), spark_submit()]
    choose() >> runs
    runs >> report()


DAG = kafka_archive_catalog()
