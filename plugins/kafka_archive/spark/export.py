"""Running an export on Spark: one Spark task per source partition.

:func:`run_export_tasks` ships one :class:`ExportTask` per partition (the partition plan as
JSON plus URIs and store options, never credentials: executors take those from their
environment, as for the catalog build) to the executors; each task opens the archive store and
the output store itself, runs :func:`kafka_archive.export.partition.export_partition` and
returns what it staged as a dict. Writes go through :mod:`kafka_archive.store` (boto3 for
``s3://``), so no Hadoop S3 connector is needed. A retried task re-stages the same file names:
nothing is duplicated. The driver commits (:mod:`kafka_archive.export.manifest`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["APP_NAME", "ExportTask", "export_task", "run_export_tasks"]

APP_NAME = "kafka-archive-export"


@dataclass(frozen=True)
class ExportTask:
    """Everything one executor needs to export one partition."""

    export_id: str
    topic: str
    partition_plan_json: str
    store_uri: str
    #: where the task stages its files: the export's bookkeeping store (beside the output)
    output_uri: str
    topic_id: str | None = None
    store_options: dict[str, Any] = field(default_factory=dict)
    output_options: dict[str, Any] = field(default_factory=dict)
    row_group_rows: int | None = None
    max_rows_per_file: int | None = None
    #: typed values: a :class:`kafka_archive.export.values.ValueSpec` as JSON
    value_spec_json: str | None = None
    #: write in a thread beside the decoding (set by :func:`run_export_tasks`)
    write_thread: bool = True


def export_task(task: ExportTask) -> dict[str, Any]:
    """One Spark task (also callable in-process): export one partition, return its
    :class:`~kafka_archive.export.partition.PartitionExport` as a dict."""
    from kafka_archive.export.partition import (
        DEFAULT_MAX_ROWS_PER_FILE,
        DEFAULT_ROW_GROUP_ROWS,
        export_partition,
    )
    from kafka_archive.export.values import ValueSpec
    from kafka_archive.replay.planning.plan import PartitionPlan
    from kafka_archive.store import open_store

    plan = PartitionPlan.model_validate_json(task.partition_plan_json)
    store = open_store(task.store_uri, **task.store_options)
    output = open_store(task.output_uri, **task.output_options)
    try:
        result = export_partition(
            plan,
            store=store,
            output=output,
            export_id=task.export_id,
            topic=task.topic,
            topic_id=task.topic_id,
            row_group_rows=task.row_group_rows or DEFAULT_ROW_GROUP_ROWS,
            max_rows_per_file=task.max_rows_per_file or DEFAULT_MAX_ROWS_PER_FILE,
            values=None if task.value_spec_json is None else ValueSpec.model_validate_json(
                task.value_spec_json
            ),
            write_thread=task.write_thread,
        )  # fmt: skip
    finally:
        store.close()
        output.close()
    return result.to_dict()


def run_export_tasks(
    tasks: list[ExportTask], *, master: str | None = None, spark: Any = None
) -> list[dict[str, Any]]:
    """Run ``tasks`` as one Spark job (one task each) on ``spark`` or a session for ``master``;
    returns the tasks' results in task order.

    Each task writes in a thread beside its decoding only when every task running at once can
    have a second core (``2 x tasks <= Spark's default parallelism``): Spark gives a task one
    core, and a second busy thread on it costs CPU (GIL hand-offs, each thread evicting the
    other's cache) and gains no wall time (docs/performance.md, "Parquet export", fifth pass).
    """
    if not tasks:
        return []
    from kafka_archive.spark.session import make_spark_session

    session = spark or make_spark_session(master, app_name=APP_NAME)
    sc = session.sparkContext
    sc.setJobDescription(f"export {tasks[0].export_id}: {len(tasks)} partition(s)")
    slots = max(1, int(sc.defaultParallelism))
    threaded = 2 * min(len(tasks), slots) <= slots
    tasks = [replace(t, write_thread=threaded) for t in tasks]
    rows: list[dict[str, Any]] = sc.parallelize(tasks, len(tasks)).map(export_task).collect()
    return rows
