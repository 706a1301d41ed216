"""Writing an export into an Iceberg table on Spark (``kafka-archive export --format iceberg``).

:func:`append_to_table` turns one export's :class:`~kafka_archive.spark.export.ExportTask` s
(one per source partition: the *export units*) into a DataFrame with ``mapInArrow``: each
Spark task runs :func:`kafka_archive.export.batches.partition_batches` for its unit on the
executor and yields Arrow record batches (no row goes through the driver), and
``DataFrameWriterV2.append`` commits them as **one** Iceberg snapshot, with the exported offsets
in the snapshot summary (``snapshot-property.*`` write options). The commit is the driver's,
after every task succeeded: a job killed or failed before it leaves no snapshot (its data files
are orphans no reader of the table sees; Iceberg's ``remove_orphan_files`` deletes them).

Spark needs Iceberg's runtime on its classpath *when the JVM starts*:
:func:`iceberg_session_conf` gives the ``spark.jars`` of the folder ``scripts/ensure-iceberg.sh``
resolves (the ``iceberg_jars`` setting, or that script's default cache folder) and Iceberg's SQL
extensions. :func:`configure_catalog` points the session's catalog ``CATALOG`` at the JDBC
catalog (:func:`kafka_archive.export.iceberg.jdbc_catalog_properties`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_archive.errors import KafkaArchiveError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from kafka_archive.export.iceberg import TableName
    from kafka_archive.spark.export import ExportTask

__all__ = [
    "APP_NAME",
    "IcebergRuntimeError",
    "append_to_table",
    "configure_catalog",
    "find_iceberg_jars",
    "iceberg_session_conf",
]

APP_NAME = "kafka-archive-export-iceberg"
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


class IcebergRuntimeError(KafkaArchiveError):
    """Iceberg's Spark runtime is not on this Spark's classpath (or not for its version)."""

    default_hint = (
        "run scripts/ensure-iceberg.sh (it prints the jars' folder) and set "
        "KAFKA_ARCHIVE_ICEBERG_JARS to it, or start Spark with Iceberg's runtime "
        "(spark-submit --packages org.apache.iceberg:iceberg-spark-runtime-<spark>_2.13:<v>)"
    )


def find_iceberg_jars(folder: str | None = None) -> list[str]:
    """The jars of ``folder`` (the ``iceberg_jars`` setting), else of the newest complete
    folder ``scripts/ensure-iceberg.sh`` resolved for this PySpark's Spark line into its
    default cache; ``[]`` when there is none."""
    if folder:
        return sorted(str(p) for p in Path(folder).expanduser().glob("*.jar"))
    try:
        import pyspark

        line = ".".join(pyspark.__version__.split(".")[:2])
    except ImportError:
        return []
    cache = Path(os.environ.get("KAFKA_ARCHIVE_CACHE") or Path.home() / ".cache/kafka-archive")
    done = sorted(cache.glob(f"iceberg-*-spark-{line}/libs/.complete"))
    return sorted(str(p) for p in done[-1].parent.glob("*.jar")) if done else []


def iceberg_session_conf(jars: list[str]) -> dict[str, str]:
    """SparkSession settings that load Iceberg: its jars and SQL extensions (procedures such
    as ``rewrite_data_files``)."""
    conf = {"spark.sql.extensions": EXTENSIONS}
    if jars:
        conf["spark.jars"] = ",".join(jars)
    return conf


def configure_catalog(spark: SparkSession, catalog: str, props: Mapping[str, str]) -> None:
    """Point the session's catalog ``catalog`` at ``props`` (an Iceberg ``SparkCatalog``); a
    catalog of that name already loaded with other properties is reloaded."""
    prefix = f"spark.sql.catalog.{catalog}"
    wanted = {prefix: "org.apache.iceberg.spark.SparkCatalog"}
    wanted.update({f"{prefix}.{k}": v for k, v in props.items()})
    changed = any(spark.conf.get(k, None) != v for k, v in wanted.items())
    for k, v in wanted.items():
        spark.conf.set(k, v)
    if changed:
        # the session caches loaded catalogs by name: drop them so the new settings apply
        spark._jsparkSession.sessionState().catalogManager().reset()


def _require_iceberg(spark: SparkSession) -> None:
    jvm: Any = spark.sparkContext._jvm
    try:
        jvm.java.lang.Class.forName(
            "org.apache.iceberg.spark.SparkCatalog", True, jvm.Thread.currentThread()
            .getContextClassLoader()
        )  # fmt: skip
    except Exception as exc:
        raise IcebergRuntimeError(
            f"this Spark {spark.version} has no Iceberg runtime on its classpath"
        ) from exc


def _export_units(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side of ``mapInArrow``: each input row is one export unit (a task as JSON);
    yields its records as Arrow batches of the table's schema."""
    from kafka_archive.export.batches import partition_batches
    from kafka_archive.export.iceberg import SPARK_ARROW_SCHEMA
    from kafka_archive.replay.planning.plan import PartitionPlan
    from kafka_archive.spark.export import ExportTask
    from kafka_archive.store import open_store

    for batch in batches:
        for text in batch.column(0).to_pylist():
            task = ExportTask(**json.loads(text))
            plan = PartitionPlan.model_validate_json(task.partition_plan_json)
            store = open_store(task.store_uri, **task.store_options)
            try:
                yield from partition_batches(
                    plan,
                    store=store,
                    topic=task.topic,
                    topic_id=task.topic_id,
                    schema=SPARK_ARROW_SCHEMA,
                )
            finally:
                store.close()


def append_to_table(
    spark: SparkSession,
    table: TableName,
    location: str,
    tasks: list[ExportTask],
    snapshot_properties: Mapping[str, str],
) -> None:
    """Create ``table`` at ``location`` if it does not exist, then append every task's rows
    as one snapshot carrying ``snapshot_properties`` (see the module docstring). The session's
    catalog must be configured (:func:`configure_catalog`)."""
    from dataclasses import asdict

    from kafka_archive.export.iceberg import create_table_sql, spark_schema_ddl

    _require_iceberg(spark)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS `{table.catalog}`.`{table.namespace}`")
    spark.sql(create_table_sql(table, location))
    sc = spark.sparkContext
    sc.setJobDescription(f"export {tasks[0].export_id} to {table}: {len(tasks)} unit(s)")
    units = sc.parallelize([(json.dumps(asdict(t)),) for t in tasks], len(tasks))
    frame = spark.createDataFrame(units, "unit STRING").mapInArrow(
        _export_units, spark_schema_ddl()
    )
    writer = frame.writeTo(table.spark).option("fanout-enabled", "true")
    for key, value in snapshot_properties.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    writer.append()
