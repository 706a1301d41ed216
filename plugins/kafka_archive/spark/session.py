"""Running catalog extraction on Spark (the only Spark-aware module of the platform layer).

:class:`SparkRunner` is a :class:`~kafka_archive.catalog.build.TaskRunner`: it spreads
:class:`~kafka_archive.catalog.build.ExtractTask` s over the executors and brings the extracts
back to the driver, which writes them (:func:`~kafka_archive.catalog.build.build_catalog`).

Fixed costs are kept down because at archive sizes of a few GiB they, not the extraction,
decide the wall time: each wave is **one** Spark job of one task per core (each task costs
~40-60 ms beyond its work), each task a group of segments balanced by bytes (largest first
onto the least loaded group) run one after the other by ``mapPartitions`` in one Python
worker, which reuses its store client (:func:`~kafka_archive.catalog.build.run_extract_task`
keeps one per URI per process); the function shipped is a module-level one (pickled by
reference) and the tasks carry only segment references and settings.

Executors open the object store themselves from the task's URI and read their objects with
ranged reads (boto3 for ``s3://``; no Hadoop S3 connector is involved), so on a cluster they
need the ``kafka-archive`` package installed (or shipped with ``--py-files``) and the store's
credentials in their environment (``spark.executorEnv.*`` or an instance role).

Nothing here depends on where Spark runs: ``local[*]``, ``local[2]``, ``spark://host:7077`` or
Kubernetes are all just the master URL.
"""

from __future__ import annotations

import heapq
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_archive.catalog.build import ExtractTask, TaskResult, run_extract_task
from kafka_archive.settings import env_var

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "APP_NAME",
    "SPARK_UI_ENV",
    "SparkRunner",
    "active_session",
    "balanced_groups",
    "local_session_conf",
    "make_spark_session",
]

APP_NAME = "kafka-archive-catalog"
#: set to 1/true/yes to get the Spark web UI of a local session (off by default)
SPARK_UI_ENV = env_var("spark_ui")
_LOOPBACK = "127.0.0.1"
#: Spark tasks per unit of parallelism in one wave. One: each task costs ~40-60 ms on top of
#: its work (an empty job of 1 / 2 / 4 / 16 tasks took ~100 / 150 / 270 / 1000 ms on
#: local[1] and local[2] here), while grouping by bytes already balances the executors
_TASKS_PER_CORE = 1


#: the driver JVM option that selects the packaged quiet log4j2 configuration
QUIET_DRIVER_LOGS = "-Dlog4j2.configurationFile=" + (
    Path(__file__).resolve().with_name("spark_log4j2.properties").as_uri()
)


def local_session_conf(master: str | None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings :func:`make_spark_session` adds for ``master`` (empty unless it is local).

    A local session is reachable from this machine only: the driver's RPC server and block
    manager bind to and advertise 127.0.0.1 (``spark.driver.bindAddress``/``host``; by default
    Spark listens on every interface), and the web UI, which shows the job's configuration and
    environment, is off unless ``$KAFKA_ARCHIVE_SPARK_UI`` is 1/true/yes (then it, too, binds
    to loopback only). Explicit ``conf`` given to :func:`make_spark_session` overrides these.
    """
    if master is None or not master.startswith("local"):
        return {}
    from kafka_archive.settings import load_settings

    ui = load_settings(env=env).spark_ui
    conf = {
        "spark.driver.host": _LOOPBACK,
        "spark.driver.bindAddress": _LOOPBACK,
        "spark.ui.enabled": "true" if ui else "false",
    }
    if ui:
        conf["spark.ui.bindAddress"] = _LOOPBACK  # SPARK_LOCAL_IP's role for the UI (3.x+)
    return conf


def active_session() -> SparkSession | None:
    """The SparkSession already active in this process, if any (``None`` too without
    pyspark): one a caller did not start itself is not its to stop."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def make_spark_session(
    master: str | None = None, *, app_name: str = APP_NAME, conf: dict[str, str] | None = None
) -> SparkSession:
    """A SparkSession for the catalog build.

    ``master``: a Spark master URL; ``None`` keeps the one ``spark-submit`` configured, or
    ``local[*]`` when there is none. In local mode the Python workers run this interpreter (so
    they import the same ``kafka_archive``); on a cluster the executors' own Python is used.
    A local session listens on 127.0.0.1 only, with its web UI off unless asked
    (:func:`local_session_conf`).
    """
    from kafka_archive.extras import require

    # a clear "needs pip install kafka-archive[spark]" instead of a bare ModuleNotFoundError
    require("pyspark.sql", extra="spark", what="running on Spark (catalog build, replay)")
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
    # The driver JVM reads its console log settings at start-up, before any Python call
    # (setLogLevel) could lower them: pass a quiet log4j2 file (errors only) on its command line
    # (a ``spark.driver.extraJavaOptions`` in ``conf`` replaces this).
    builder = builder.config("spark.driver.extraJavaOptions", QUIET_DRIVER_LOGS)
    for k, v in local_session_conf(master).items():
        builder = builder.config(k, v)
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


class SparkRunner:
    """Runs extraction tasks on a SparkSession's executors."""

    #: the engine this runner is, for the build report
    engine = "spark"

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
        groups = balanced_groups(items, max(1, self.parallelism * _TASKS_PER_CORE))
        self.sc.setJobDescription(f"catalog: extract {len(items)} segment(s)")
        results: list[tuple[int, TaskResult]] = (
            self.sc.parallelize(groups, len(groups)).mapPartitions(_run_groups).collect()
        )
        results.sort(key=lambda r: r[0])  # the order of the tasks, whatever ran first
        return iter(r for _i, r in results)


def balanced_groups(
    tasks: Sequence[ExtractTask], groups: int
) -> list[list[tuple[int, ExtractTask]]]:
    """Split ``tasks`` into at most ``groups`` groups of about equal bytes (largest first onto
    the least loaded group), each task with its index."""
    n = min(groups, len(tasks))
    heap: list[tuple[int, int]] = [(0, g) for g in range(n)]
    out: list[list[tuple[int, ExtractTask]]] = [[] for _ in range(n)]
    for i in sorted(range(len(tasks)), key=lambda i: -tasks[i].ref.size):
        load, g = heapq.heappop(heap)
        out[g].append((i, tasks[i]))
        heapq.heappush(heap, (load + tasks[i].ref.size, g))
    for group in out:
        group.sort(key=lambda it: it[0])
    return out


def _run_groups(
    groups: Iterable[list[tuple[int, ExtractTask]]],
) -> Iterator[tuple[int, TaskResult]]:
    """Executor side of one Spark task: its segments, one after the other."""
    for group in groups:
        for i, task in group:
            yield i, run_extract_task(task)
