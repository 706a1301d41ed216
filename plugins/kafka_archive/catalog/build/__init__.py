"""The catalog build: archived segments -> catalog rows, idempotent and crash safe.

The rooms, in the order a build goes through them:

* :mod:`~kafka_archive.catalog.build.driver`: :func:`build_catalog`, which lists what is new,
  runs the waves and records the run (the algorithm, idempotence and failure rules are in its
  docstring);
* :mod:`~kafka_archive.catalog.build.engine`: which engine runs the extraction (in this
  process or Spark, ``auto`` by the size of the increment) and why;
* :mod:`~kafka_archive.catalog.build.tasks`: the executor task protocol (:class:`ExtractTask`,
  :class:`TaskResult`, :func:`run_extract_task`) and the runners (:class:`TaskRunner`,
  :class:`InProcessRunner`; Spark's is :mod:`kafka_archive.spark.session`);
* :mod:`~kafka_archive.catalog.build.store_cache`: one object store per URI per process;
* :mod:`~kafka_archive.catalog.build.plan`: what the canonical chain makes of a wave, per
  partition (reads only);
* :mod:`~kafka_archive.catalog.build.write`: the one transaction per partition (SQL writes);
* :mod:`~kafka_archive.catalog.build.report`: :class:`BuildReport` and the progress callback.

The segments themselves are :class:`~kafka_archive.catalog.refs.SegmentRef` s, listed from the
manifests by :mod:`kafka_archive.catalog._manifests`; the bytes are extracted by
:mod:`kafka_archive.catalog.extract`. This package is the write side: the queries
(:mod:`kafka_archive.catalog.queries`) never import it. Its public API is re-exported here.
"""

from kafka_archive.catalog._manifests import refs_from_manifests
from kafka_archive.catalog.build.driver import VERIFY_ENV, build_catalog, list_increment
from kafka_archive.catalog.build.engine import (
    ENGINES,
    EngineChoice,
    Increment,
    RunnerSelector,
    choose_engine,
)
from kafka_archive.catalog.build.report import BuildReport, ProgressFn
from kafka_archive.catalog.build.tasks import (
    ExtractTask,
    InProcessRunner,
    TaskResult,
    TaskRunner,
    run_extract_task,
)
from kafka_archive.catalog.build.write import partition_id
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.catalog.versions import version_of_segment

__all__ = [
    "ENGINES",
    "VERIFY_ENV",
    "BuildReport",
    "EngineChoice",
    "ExtractTask",
    "InProcessRunner",
    "Increment",
    "ProgressFn",
    "RunnerSelector",
    "SegmentRef",
    "TaskResult",
    "TaskRunner",
    "build_catalog",
    "choose_engine",
    "list_increment",
    "partition_id",
    "refs_from_manifests",
    "run_extract_task",
    "version_of_segment",
]
