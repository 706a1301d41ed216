"""Iceberg tables of an export: names, the JDBC catalog, the schema, and the exported offsets.

``kafka-archive export --format iceberg`` appends a topic's committed records to an Apache
Iceberg table through Spark (:mod:`kafka_archive.spark.iceberg` writes; this module knows the
table and needs no Spark):

* **Catalog**: Iceberg's **JDBC catalog** in the kafka-archive catalog's own database (the
  ``db`` setting: SQLite or PostgreSQL; Iceberg adds its ``iceberg_tables`` and
  ``iceberg_namespace_properties`` tables beside ours). No catalog server is needed, and a
  commit is one compare-and-swap of the table's metadata pointer in SQL, atomic on a local
  disk and on S3 alike (a Hadoop catalog commits by renaming files, which S3 cannot do
  atomically). pyiceberg's ``SqlCatalog``, Spark and Trino's JDBC catalog read the same rows.
* **Table**: ``CATALOG.NAMESPACE.TABLE`` (default ``kafka_archive.<cluster>.<topic>``), one per
  topic, partitioned by ``hours(timestamp)`` and the Kafka ``partition``; the columns are the
  Parquet export's (:data:`~kafka_archive.export.schema.FILE_SCHEMA`), the topic id filled in.
* **Exported offsets**: every export commits one snapshot whose summary carries
  :data:`SUMMARY_OFFSETS`: per Kafka partition the next offset to export (cumulative over all
  exports into the table). The next export reads it back from the newest snapshot of the
  table's current history that has it (a compaction's ``replace`` snapshot carries none and is
  skipped) and exports only what lies beyond: exactly once, since the offsets and the rows are
  committed in the same atomic snapshot.

The offsets are read straight from the catalog database and the table's metadata file
(:func:`read_table_state`): planning and ``--dry-run`` start no Spark.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pyarrow as pa
from pydantic import Field

from kafka_archive.export.schema import FILE_SCHEMA
from kafka_archive.frozen import FrozenModel
from kafka_archive.replay.errors import ReplayConfigError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

__all__ = [
    "DEFAULT_CATALOG",
    "SPARK_ARROW_SCHEMA",
    "SUMMARY_EXPORT_ID",
    "SUMMARY_OFFSETS",
    "TableName",
    "TableState",
    "create_table_sql",
    "default_table",
    "jdbc_catalog_properties",
    "offsets_from_position",
    "parse_table",
    "read_table_state",
    "spark_schema_ddl",
    "table_location",
    "warehouse_uri",
]

DEFAULT_CATALOG = "kafka_archive"
#: snapshot summary keys an export sets (Iceberg keeps string -> string properties)
SUMMARY_OFFSETS = "kafka-archive.offsets"
SUMMARY_EXPORT_ID = "kafka-archive.export-id"
SUMMARY_SOURCE = "kafka-archive.source"
SUMMARY_RANGES = "kafka-archive.ranges"

_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,254}$")

#: the schema of the Arrow batches handed to Spark: the Parquet export's, with microsecond
#: timestamps (Spark's and Iceberg's timestamp unit)
SPARK_ARROW_SCHEMA = pa.schema(
    [
        f.with_type(pa.timestamp("us", tz="UTC")) if pa.types.is_timestamp(f.type) else f
        for f in FILE_SCHEMA
    ]
)


class TableName(FrozenModel):
    """``catalog.namespace.table`` of an Iceberg table."""

    catalog: str
    namespace: str
    table: str

    def __str__(self) -> str:
        return f"{self.catalog}.{self.namespace}.{self.table}"

    @property
    def spark(self) -> str:
        """The name quoted for Spark SQL (names may hold ``-``)."""
        return f"`{self.catalog}`.`{self.namespace}`.`{self.table}`"


def _sanitize(name: str) -> str:
    # Kafka itself refuses topics that differ only by '.' vs '_' (their metrics collide), so
    # mapping '.' to '_' gives distinct topics distinct table names
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def default_table(cluster: str, topic: str, catalog: str = DEFAULT_CATALOG) -> TableName:
    """The table a topic is exported to when ``--table`` is not given."""
    return TableName(catalog=catalog, namespace=_sanitize(cluster), table=_sanitize(topic))


def parse_table(text: str) -> TableName:
    """``CATALOG.NAMESPACE.TABLE`` (letters, digits, ``_`` and ``-`` in each part).

    Raises:
        ReplayConfigError: not three such parts.
    """
    parts = text.split(".")
    if len(parts) != 3 or not all(_PART.match(p) for p in parts):
        raise ReplayConfigError(
            f"--table {text!r} is not CATALOG.NAMESPACE.TABLE",
            hint="e.g. --table kafka_archive.prod.orders (letters, digits, _ and - in each part)",
        )
    return TableName(catalog=parts[0], namespace=parts[1], table=parts[2])


def warehouse_uri(output: str) -> str:
    """The warehouse location Iceberg is given for ``--output``: ``s3://`` as is, a local path
    or ``file://`` URI as an absolute ``file:`` URI."""
    from pathlib import Path

    if output.startswith("s3://"):
        return output.rstrip("/")
    path = output[len("file://") :] if output.startswith("file://") else output
    return Path(path).expanduser().resolve().as_uri()


def table_location(warehouse: str, name: TableName) -> str:
    """Where a new table's files go: ``<warehouse>/<namespace>/<table>``."""
    return f"{warehouse.rstrip('/')}/{name.namespace}/{name.table}"


def jdbc_catalog_properties(
    db_url: str, warehouse: str, *, s3_endpoint: str | None = None, s3_region: str | None = None
) -> dict[str, str]:
    """Iceberg catalog properties of the JDBC catalog in the database ``db_url`` (a SQLAlchemy
    URL of the kafka-archive catalog) with files under ``warehouse``.

    The password of a PostgreSQL URL goes to ``jdbc.password`` (Spark redacts configuration
    keys matching ``password`` in its UI and logs), never into the JDBC URL.
    """
    from kafka_archive.catalog.db import normalize_url

    url = normalize_url(db_url)
    props = {"type": "jdbc", "warehouse": warehouse, "jdbc.schema-version": "V1"}
    if url.startswith("sqlite:///"):
        props["uri"] = "jdbc:sqlite:" + url[len("sqlite:///") :]
    elif url.startswith("postgresql"):
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
        props["uri"] = f"jdbc:postgresql://{host}{port}{parts.path}"
        if parts.username:
            props["jdbc.user"] = parts.username
        if parts.password:
            props["jdbc.password"] = parts.password
    else:
        raise ReplayConfigError(
            "an Iceberg export keeps its JDBC catalog in the kafka-archive catalog database, "
            f"which must be SQLite or PostgreSQL (got {url.split(':', 1)[0]})",
            hint="use --db with a SQLite path or a postgresql:// URL",
        )
    if warehouse.startswith("s3://"):
        props["io-impl"] = "org.apache.iceberg.aws.s3.S3FileIO"
        props["s3.path-style-access"] = "true"
        if s3_endpoint:
            props["s3.endpoint"] = s3_endpoint
        if s3_region:
            props["client.region"] = s3_region
    return props


def spark_schema_ddl() -> str:
    """The Spark DDL of :data:`SPARK_ARROW_SCHEMA` (``NOT NULL`` where the export's is)."""

    def ddl(t: pa.DataType) -> str:
        if pa.types.is_string(t):
            return "STRING"
        if pa.types.is_int32(t):
            return "INT"
        if pa.types.is_int64(t):
            return "BIGINT"
        if pa.types.is_binary(t):
            return "BINARY"
        if pa.types.is_timestamp(t):
            return "TIMESTAMP"
        if pa.types.is_list(t):
            return f"ARRAY<{ddl(t.value_type)}>"
        if pa.types.is_struct(t):
            return "STRUCT<" + ", ".join(f"`{f.name}`: {ddl(f.type)}" for f in t) + ">"
        raise TypeError(t)  # pragma: no cover - FILE_SCHEMA has no other types

    return ", ".join(
        f"`{f.name}` {ddl(f.type)}{'' if f.nullable else ' NOT NULL'}" for f in SPARK_ARROW_SCHEMA
    )


def create_table_sql(name: TableName, location: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` of an export table: partitioned by hour and Kafka
    partition, format v2; written without a shuffle (``write.distribution-mode=none``: each
    Spark task's rows are one Kafka partition's, in offset order, written by a fanout writer)."""
    return (
        f"CREATE TABLE IF NOT EXISTS {name.spark} ({spark_schema_ddl()}) USING iceberg "
        "PARTITIONED BY (hours(`timestamp`), `partition`) "
        f"LOCATION '{location}' "
        "TBLPROPERTIES ('format-version'='2', 'write.distribution-mode'='none', "
        "'write.parquet.compression-codec'='zstd')"
    )


class TableState(FrozenModel):
    """What an export needs to know of its table before writing (``None`` fields: no table)."""

    metadata_location: str | None = None
    current_snapshot_id: int | None = None
    #: next offset per Kafka partition, from the newest export snapshot of the current history
    offsets: dict[int, int] | None = None
    #: the export id of that snapshot
    last_export_id: str | None = None
    #: summaries of the current history, newest first (``snapshot-id`` added to each)
    history: list[dict[str, Any]] = Field(default_factory=list)


def _ancestry(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    snaps = {s["snapshot-id"]: s for s in metadata.get("snapshots") or []}
    out: list[dict[str, Any]] = []
    sid = metadata.get("current-snapshot-id")
    while sid is not None and sid != -1 and sid in snaps:
        snap = snaps[sid]
        out.append({"snapshot-id": sid, **(snap.get("summary") or {})})
        sid = snap.get("parent-snapshot-id")
    return out


def state_from_metadata(location: str, metadata: Mapping[str, Any]) -> TableState:
    """The :class:`TableState` of a table metadata document (Iceberg's ``*.metadata.json``)."""
    history = _ancestry(metadata)
    offsets: dict[int, int] | None = None
    last: str | None = None
    for summary in history:
        if SUMMARY_OFFSETS in summary:
            offsets = {int(k): int(v) for k, v in json.loads(summary[SUMMARY_OFFSETS]).items()}
            last = summary.get(SUMMARY_EXPORT_ID)
            break
    sid = metadata.get("current-snapshot-id")
    return TableState(
        metadata_location=location,
        current_snapshot_id=None if sid in (None, -1) else int(sid),
        offsets=offsets,
        last_export_id=last,
        history=history,
    )


def read_table_state(
    engine: Engine, name: TableName, read: Callable[[str], bytes] | None = None
) -> TableState:
    """The table's state from the JDBC catalog's row and the metadata file it points to
    (``read(location)`` reads an ``s3://`` location; local ``file:`` locations are read here).

    An absent ``iceberg_tables`` table or row is a table not created yet (an empty state).
    """
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    try:
        with engine.connect() as conn:
            row = conn.execute(
                text(
                    "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = :c "
                    "AND table_namespace = :n AND table_name = :t"
                ),
                {"c": name.catalog, "n": name.namespace, "t": name.table},
            ).first()
    except DBAPIError:  # no iceberg_tables yet: no Iceberg table was ever created here
        return TableState()
    if row is None or row[0] is None:
        return TableState()
    location = str(row[0])
    data = _read_location(location, read)
    if location.endswith(".gz.metadata.json"):
        data = gzip.decompress(data)
    return state_from_metadata(location, json.loads(data))


def _read_location(location: str, read: Callable[[str], bytes] | None) -> bytes:
    from pathlib import Path
    from urllib.parse import unquote

    if location.startswith("file:") or "://" not in location:
        path = unquote(urlsplit(location).path) if location.startswith("file:") else location
        return Path(path).read_bytes()
    if read is None:
        raise ReplayConfigError(f"cannot read the table metadata {location}: no store for it")
    return read(location)


def offsets_from_position(previous: Mapping[int, int], partitions: Iterable[int]) -> str:
    """The ``offset:P=N,...`` position that continues a table at ``previous`` (partitions the
    table has never seen start at offset 0, i.e. where the archive of them starts)."""
    return "offset:" + ",".join(f"{p}={previous.get(p, 0)}" for p in sorted(set(partitions)))
