"""Running catalog extraction on Spark (the only Spark-aware module of the platform layer).

:class:`SparkRunner` is a :class:`~kafka_archive.catalog.build.TaskRunner`: it spreads
:class:`~kafka_archive.catalog.build.ExtractTask` s over the executors (one Spark task per
segment object, or small groups of them when there are many) and brings the extracts back to
the driver, which writes them (:func:`~kafka_archive.catalog.build.build_catalog`). Executors
open the object store themselves from the task's URI and read their objects with ranged reads
(boto3 for ``s3://``; no Hadoop S3 connector is involved), so on a cluster they need the
``kafka-archive`` package installed (or shipped with ``--py-files``) and the store's
credentials in their environment (``spark.executorEnv.*`` or an instance role).

Nothing here depends on where Spark runs: ``local[*]``, ``local[2]``, ``spark://host:7077`` or
Kubernetes are all just the master URL.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kafka_archive.catalog.build import ExtractTask, TaskResult, run_extract_task

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["APP_NAME", "SparkRunner", "make_spark_session"]

APP_NAME = "kafka-archive-catalog"
#: at most this many Spark tasks per unit of parallelism in one wave (small segments are grouped)
_TASKS_PER_CORE = 4


def make_spark_session(
    master: str | None = None, *, app_name: str = APP_NAME, conf: dict[str, str] | None = None
) -> SparkSession:
    """A SparkSession for the catalog build.

    ``master``: a Spark master URL; ``None`` keeps the one ``spark-submit`` configured, or
    ``local[*]`` when there is none. In local mode the Python workers run this interpreter (so
    they import the same ``kafka_archive``); on a cluster the executors' own Python is used.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    # spark-submit starts the JVM first and hands its gateway to Python: its --master stands
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        # local workers must import this interpreter's kafka_archive (not PATH's python3)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        builder = builder.config("spark.pyspark.python", sys.executable)
        builder = builder.config("spark.pyspark.driver.python", sys.executable)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


class SparkRunner:
    """Runs extraction tasks on a SparkSession's executors."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self.sc: Any = spark.sparkContext

    @property
    def parallelism(self) -> int:
        return int(self.sc.defaultParallelism)

    def run(self, tasks: Sequence[ExtractTask]) -> Iterator[TaskResult]:
        items = list(tasks)
        if not items:
            return iter(())
        # one Spark task per segment, grouped when a wave holds many small ones
        slices = min(len(items), max(1, self.parallelism * _TASKS_PER_CORE))
        self.sc.setJobDescription(f"catalog: extract {len(items)} segment(s)")
        results: list[TaskResult] = (
            self.sc.parallelize(items, slices).map(run_extract_task).collect()
        )
        return iter(results)
