"""The Iceberg export's pieces that need no Spark: table names, the JDBC catalog's properties,
the schema given to Spark, and reading the exported offsets back from table metadata."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from kafka_archive.export.iceberg import (
    SPARK_ARROW_SCHEMA,
    SUMMARY_EXPORT_ID,
    SUMMARY_OFFSETS,
    default_table,
    jdbc_catalog_properties,
    offsets_from_position,
    parse_table,
    read_table_state,
    spark_schema_ddl,
    state_from_metadata,
    warehouse_uri,
)
from kafka_archive.export.schema import FILE_SCHEMA
from kafka_archive.replay.errors import ReplayConfigError
from sqlalchemy import create_engine, text


def test_table_names() -> None:
    assert str(parse_table("lake.prod.orders")) == "lake.prod.orders"
    assert parse_table("lake.prod.orders-v2").spark == "`lake`.`prod`.`orders-v2`"
    for bad in ("orders", "a.b", "a.b.c.d", "a..c", "a.b.c d", "a.b.`c`"):
        with pytest.raises(ReplayConfigError, match=r"CATALOG\.NAMESPACE\.TABLE"):
            parse_table(bad)
    # Kafka refuses topics differing only by '.' vs '_': mapping one to the other is safe
    assert str(default_table("prod", "orders.eu")) == "kafka_archive.prod.orders_eu"


def test_jdbc_catalog_in_the_kafka_archive_database(tmp_path: Path) -> None:
    props = jdbc_catalog_properties(str(tmp_path / "c.db"), warehouse_uri(str(tmp_path / "w")))
    assert props["type"] == "jdbc" and props["uri"] == f"jdbc:sqlite:{tmp_path / 'c.db'}"
    assert props["warehouse"] == (tmp_path / "w").as_uri()
    pg = jdbc_catalog_properties(
        "postgresql://ka:s3cret@db.example:5433/catalog", "s3://lake/wh",
        s3_endpoint="http://127.0.0.1:9000", s3_region="us-east-1",
    )  # fmt: skip
    assert pg["uri"] == "jdbc:postgresql://db.example:5433/catalog"
    assert "s3cret" not in pg["uri"] and pg["jdbc.password"] == "s3cret"
    assert pg["jdbc.user"] == "ka" and pg["io-impl"].endswith("S3FileIO")
    assert pg["s3.endpoint"] == "http://127.0.0.1:9000" and pg["s3.path-style-access"] == "true"
    with pytest.raises(ReplayConfigError, match="SQLite or PostgreSQL"):
        jdbc_catalog_properties("mysql://x/y", "s3://lake/wh")


def test_spark_schema_is_the_parquet_exports_with_microseconds() -> None:
    assert SPARK_ARROW_SCHEMA.names == FILE_SCHEMA.names
    assert SPARK_ARROW_SCHEMA.field("timestamp").type == pa.timestamp("us", tz="UTC")
    ddl = spark_schema_ddl()
    assert "`offset` BIGINT NOT NULL" in ddl and "`topic_id` STRING," in ddl
    assert "`headers` ARRAY<STRUCT<`name`: STRING, `value`: BINARY>> NOT NULL" in ddl


def _metadata(
    snapshots: list[tuple[int, int | None, dict[str, str]]], current: int
) -> dict[str, Any]:
    return {
        "current-snapshot-id": current,
        "snapshots": [
            {
                "snapshot-id": s,
                "parent-snapshot-id": parent,
                "summary": {"operation": "append", **summ},
            }
            for s, parent, summ in snapshots
        ],
    }


def test_offsets_come_from_the_newest_export_snapshot_of_the_current_history() -> None:
    first = {SUMMARY_OFFSETS: json.dumps({"0": 10, "1": 7}), SUMMARY_EXPORT_ID: "e-1"}
    second = {SUMMARY_OFFSETS: json.dumps({"0": 25, "1": 7}), SUMMARY_EXPORT_ID: "e-2"}
    # 3: a compaction (no offsets) after 2; 9: a rolled-back branch that is not an ancestor
    meta = _metadata(
        [(1, None, first), (2, 1, second), (3, 2, {}), (9, 1, {SUMMARY_OFFSETS: "{}"})], 3
    )
    state = state_from_metadata("file:///m.json", meta)
    assert state.offsets == {0: 25, 1: 7} and state.last_export_id == "e-2"
    assert state.current_snapshot_id == 3 and [s["snapshot-id"] for s in state.history] == [3, 2, 1]
    empty = state_from_metadata("file:///m.json", {"current-snapshot-id": -1, "snapshots": []})
    assert empty.offsets is None and empty.current_snapshot_id is None
    assert offsets_from_position({0: 25, 1: 7}, [2, 1, 0]) == "offset:0=25,1=7,2=0"


def test_read_table_state_from_the_jdbc_rows(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'c.db'}")
    name = parse_table("lake.east.orders")
    assert read_table_state(engine, name).offsets is None  # no iceberg_tables yet
    meta = tmp_path / "00001.metadata.json"
    meta.write_text(json.dumps(_metadata([(5, None, {SUMMARY_OFFSETS: '{"0": 3}'})], 5)))
    with engine.begin() as conn:
        conn.execute(text(
            "CREATE TABLE iceberg_tables (catalog_name TEXT, table_namespace TEXT, "
            "table_name TEXT, metadata_location TEXT, previous_metadata_location TEXT)"
        ))  # fmt: skip
        conn.execute(
            text("INSERT INTO iceberg_tables VALUES ('lake', 'east', 'orders', :m, NULL)"),
            {"m": meta.as_uri()},
        )
    assert read_table_state(engine, name).offsets == {0: 3}
    assert read_table_state(engine, parse_table("lake.east.other")).offsets is None
