"""Typed values in the export (``kafka_archive.export.values``): Confluent-framed Avro bodies made
by fastavro (an encoder not ours) with their schemas in a ``_schemas`` topic written as Schema
Registry writes it, and JSON values; what does not decode is kept raw and counted.

The end-to-end test archives both topics with the development writer (real segment files), reads
the registry back from the archived ``_schemas`` through the replay reader, exports ``orders``
with :func:`export_partition` and reads the Parquet files with pyarrow and DuckDB.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Any

import duckdb
import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kafka_archive.export.columns import iter_tables
from kafka_archive.export.partition import export_partition
from kafka_archive.export.schema import FILE_SCHEMA
from kafka_archive.export.values import (
    ValueDecoder,
    ValueFormatError,
    ValueSpec,
    column_schema_for_subject,
    infer_json_schema,
    registry_from_records,
    sniff_format,
)
from kafka_archive.replay.execution.reader import PartitionReader
from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, build_plan, parse_position
from kafka_archive.replay.planning.sources import SegmentsPlanSource
from kafka_archive.store import LocalStore
from kafka_archive_dev.writer.encode import WriteRecord
from kafka_archive_dev.writer.partition_writer import ManualClock, PartitionWriter

V1 = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": "double"},
               {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}],
}  # fmt: skip
V2 = {
    **V1,
    "fields": [*V1["fields"], {"name": "note", "type": ["null", "string"], "default": None},
               {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []}],
}  # fmt: skip


def registry_record(subject: str, version: int, schema_id: int, schema: Any) -> tuple[bytes, bytes]:
    """A ``_schemas`` record as Schema Registry's KafkaStore writes it."""
    key = {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
    value = {"subject": subject, "version": version, "id": schema_id,
             "schema": json.dumps(schema), "deleted": False}  # fmt: skip
    return json.dumps(key, separators=(",", ":")).encode(), json.dumps(value).encode()


def framed(schema_id: int, schema: Any, record: dict[str, Any]) -> bytes:
    """What Confluent's KafkaAvroSerializer writes: magic 0, the id, the Avro body."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), record)
    return b"\x00" + struct.pack(">I", schema_id) + body.getvalue()


REGISTRY_RECORDS = [
    (1_000, *registry_record("orders-value", 1, 1, V1)),
    (1_001, b'{"keytype":"CONFIG","subject":null,"magic":0}', b'{"compatibilityLevel":"BACKWARD"}'),
    (2_000, *registry_record("orders-value", 2, 2, V2)),
    (2_001, b'{"keytype":"NOOP","magic":0}', None),
    (2_002, *registry_record("other-value", 1, 3, {"type": "string"})),
]


def table_of(values: list[bytes | None], timestamps: list[int]) -> pa.Table:
    n = len(values)
    return pa.Table.from_arrays(
        [pa.array(["orders"] * n), pa.nulls(n, pa.string()), pa.array([0] * n, pa.int32()),
         pa.array(range(n), pa.int64()), pa.array(timestamps, pa.timestamp("ms", tz="UTC")),
         pa.array(["CreateTime"] * n), pa.nulls(n, pa.binary()), pa.array(values, pa.binary()),
         pa.array([[]] * n, FILE_SCHEMA.field("headers").type), pa.nulls(n, pa.int32()),
         pa.nulls(n, pa.int64())],
        schema=FILE_SCHEMA,
    )  # fmt: skip


def test_avro_values_decode_with_the_schema_of_their_id_resolved_to_the_newest() -> None:
    registry = registry_from_records(REGISTRY_RECORDS)
    assert [(r.id, r.subject, r.version) for r in registry] == [
        (1, "orders-value", 1), (2, "orders-value", 2), (3, "other-value", 1),
    ]  # fmt: skip
    column = column_schema_for_subject(registry, "orders-value")
    spec = ValueSpec(format="avro", column_schema=column, registry=registry)
    good1 = framed(1, V1, {"id": 7, "amount": 1.5, "at": 1_700_000_000_000})
    good2 = framed(2, V2, {"id": 8, "amount": 2.5, "at": 1_700_000_000_001, "note": "hi",
                           "tags": ["a", "b"]})  # fmt: skip
    values = [good1, good2, None, b"not framed", framed(99, V1, {"id": 1, "amount": 0.0, "at": 0}),
              good1[:-3], good1 + b"\x00"]  # fmt: skip
    decoder = ValueDecoder(spec)
    out = decoder.decode(table_of(values, [3_000] * len(values)))
    assert out.column("value").to_pylist() == values  # the raw bytes are untouched
    typed = out.column("value_typed").to_pylist()
    assert [t and (t["id"], t["amount"], t["note"], t["tags"]) for t in typed] == [
        (7, 1.5, None, []), (8, 2.5, "hi", ["a", "b"]), None, None, None, None, None,
    ]  # fmt: skip
    assert typed[0]["at"].timestamp() == 1_700_000_000  # timestamp-millis is a timestamp column
    assert out.column("value_schema_id").to_pylist() == [1, 2, None, None, 99, 1, 1]
    # the tombstone is neither; unframed, unknown id, truncated, trailing bytes: undecoded
    assert (decoder.decoded, decoder.undecoded) == (2, 4)
    assert out.schema.field("value_typed").type.field("at").type == pa.timestamp("ms", tz="UTC")


def test_an_id_reregistered_later_decodes_with_the_schema_it_had_at_the_records_time() -> None:
    # a registry rebuilt from scratch gave id 1 to another schema after the first one
    later = {"type": "record", "name": "Order", "namespace": "shop",
             "fields": [{"name": "id", "type": "long"}]}  # fmt: skip
    records = [(1_000, *registry_record("orders-value", 1, 1, V1)),
               (5_000, *registry_record("orders-value", 2, 1, later))]  # fmt: skip
    registry = registry_from_records(records)
    column = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                         "fields": [{"name": "id", "type": "long"}]})  # fmt: skip
    decoder = ValueDecoder(ValueSpec(format="avro", column_schema=column, registry=registry))
    old = framed(1, V1, {"id": 7, "amount": 1.5, "at": 0})
    new = framed(1, later, {"id": 9})
    out = decoder.decode(table_of([old, new, old], [2_000, 6_000, 6_000]))
    # the old body read with the later schema leaves bytes over: not decoded, kept raw
    assert out.column("value_typed").to_pylist() == [{"id": 7}, {"id": 9}, None]
    assert decoder.undecoded == 1


def test_json_values_get_an_inferred_schema_and_what_does_not_fit_is_counted() -> None:
    values = [b'{"a": 1, "b": {"c": "x"}}', b'{"a": 2.5, "d": [1, 2]}', b'{"a": "text"}',
              b"not json", b"\xff\xfe", None, b'{"b": {"c": 5}}', b"[1, 2]"]  # fmt: skip
    schema = infer_json_schema(values[:3])
    assert schema is not None
    decoder = ValueDecoder(ValueSpec(format="json", column_schema=json.dumps(schema)))
    out = decoder.decode(table_of(values, [0] * len(values)))
    typed = out.column("value_typed").to_pylist()
    # "a" was a number and a string: JSON text; ints and floats merge to double
    assert typed[0] == {"a": "1", "b": {"c": "x"}, "d": None}
    assert typed[1] == {"a": "2.5", "b": None, "d": [1.0, 2.0]}
    assert typed[2] == {"a": "text", "b": None, "d": None}
    assert typed[3:6] == [None, None, None]
    assert typed[6] == {"a": None, "b": {"c": "5"}, "d": None}
    assert typed[7] is None  # an array where a record is expected
    assert (decoder.decoded, decoder.undecoded) == (4, 3)


def test_a_given_json_schema_is_followed_and_values_that_do_not_fit_are_counted() -> None:
    given = {"type": "record", "name": "v",
             "fields": [{"name": "n", "type": ["null", "long"]}]}  # fmt: skip
    decoder = ValueDecoder(ValueSpec(format="json", column_schema=json.dumps(given)))
    out = decoder.decode(
        table_of([b'{"n": 3}', b'{"n": 1.5}', b'{"n": "x"}', b'{"m": 1}'], [0] * 4)
    )
    assert out.column("value_typed").to_pylist() == [{"n": 3}, None, None, {"n": None}]
    assert (decoder.decoded, decoder.undecoded) == (2, 2)


def test_auto_sniffs_avro_json_or_neither() -> None:
    registry = registry_from_records(REGISTRY_RECORDS)
    avro = framed(1, V1, {"id": 1, "amount": 0.0, "at": 0})
    assert sniff_format([avro, avro, b"{}"], registry) == "avro"
    assert sniff_format([b'{"x": 1}', b"[1]", avro], registry) == "json"
    assert sniff_format([b"\x01\x02", None], registry) is None
    with pytest.raises(ValueFormatError, match="no Avro schema under subject 'nope-value'"):
        column_schema_for_subject(registry, "nope-value")


# -- end to end over archived segments ---------------------------------------------------------


def _archive(root: Path) -> tuple[LocalStore, SegmentsPlanSource]:
    clock = ManualClock(1_700_000_000_000)
    dirs = []
    pw = PartitionWriter(root / "logs", "_schemas", 0, clock=clock)
    for _ts, key, value in REGISTRY_RECORDS:
        pw.append([WriteRecord(key, value, (), clock.advance(10))])
    pw.close()
    dirs.append(pw.dir)
    pw = PartitionWriter(root / "logs", "orders", 0, clock=clock)
    for i in range(30):
        if i % 10 == 9:
            value = b"garbage"
        elif i < 15:
            value = framed(1, V1, {"id": i, "amount": i / 2, "at": 1_700_000_000_000 + i})
        else:
            value = framed(2, V2, {"id": i, "amount": i / 2, "at": 1_700_000_000_000 + i,
                                   "note": f"n{i}", "tags": []})  # fmt: skip
        pw.append([WriteRecord(b"k%d" % i, value, (), clock.advance(5))])
    pw.close()
    dirs.append(pw.dir)
    store = LocalStore(root / "store", fsync=False)
    return store, SegmentsPlanSource.upload_log_dirs(store, "c", dirs)


def _plan(source: SegmentsPlanSource, topic: str) -> Any:
    spec = ReplaySpec.model_validate(
        {"cluster": "c", "topic": topic, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers="x:1", name="x")}
    )  # fmt: skip
    return build_plan(spec, source).partitions[0]


def test_export_reads_schemas_from_the_archive_and_writes_typed_columns(tmp_path: Path) -> None:
    store, source = _archive(tmp_path)
    # the registry, read back from the archived _schemas topic like any topic
    rows = [
        (r["timestamp"], r["key"], r["value"])
        for t in iter_tables(PartitionReader(store, _plan(source, "_schemas"), raw_batches=True),
                             topic="_schemas", topic_id=None, rows_per_table=1000)
        for r in t.select(["key", "value"]).append_column(
            "timestamp", t.column("timestamp").cast(pa.int64())).to_pylist()
    ]  # fmt: skip
    registry = registry_from_records(rows)
    assert {r.id for r in registry} == {1, 2, 3}
    column = column_schema_for_subject(registry, "orders-value")
    spec = ValueSpec(format="avro", column_schema=column, registry=registry)
    out = tmp_path / "out"
    result = export_partition(
        _plan(source, "orders"), store=store, output=LocalStore(out),
        export_id="e-00000000000000aa", topic="orders", values=spec,
    )  # fmt: skip
    assert result.rows == 30 and (result.decoded_values, result.undecoded_values) == (27, 3)
    files = [out / "_staging" / "e-00000000000000aa" / f.key for f in result.files]
    table = pa.concat_tables(pq.read_table(f) for f in files).sort_by("offset")
    assert table.schema.names[: len(FILE_SCHEMA)] == FILE_SCHEMA.names
    typed = table.column("value_typed").to_pylist()
    for i, t in enumerate(typed):
        if i % 10 == 9:
            assert t is None and table.column("value")[i].as_py() == b"garbage"
        else:
            assert (t["id"], t["amount"], t["note"]) == (i, i / 2, None if i < 15 else f"n{i}")
    # DuckDB reads the typed column as a struct
    con = duckdb.connect()
    got = con.execute(
        "SELECT value_typed.id, value_typed.note, value_schema_id FROM read_parquet(?) "
        "WHERE value_typed IS NOT NULL ORDER BY \"offset\"", [[str(f) for f in files]]
    ).fetchall()  # fmt: skip
    assert got[0] == (0, None, 1) and got[-1] == (28, "n28", 2) and len(got) == 27


# -- the service: planning from the catalog, the manifest and the report -------------------------


class _InProcessSpark:
    """What ExportService.run uses of a SparkSession, running the tasks in this process (the
    Spark path itself is tests/test_export.py's)."""

    class _Rdd:
        def __init__(self, items: list[Any]) -> None:
            self.items = items

        def map(self, fn: Any) -> _InProcessSpark._Rdd:
            return _InProcessSpark._Rdd([fn(x) for x in self.items])

        def collect(self) -> list[Any]:
            return self.items

    class _Context:
        #: one task at a time, in this process
        defaultParallelism = 1

        def setJobDescription(self, _d: str) -> None:
            pass

        def parallelize(self, items: list[Any], _n: int) -> _InProcessSpark._Rdd:
            return _InProcessSpark._Rdd(list(items))

    sparkContext = _Context()


@pytest.fixture(scope="module")
def cataloged(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    from kafka_archive.archive import run_archive
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.store import open_store
    from kafka_archive_dev.writer import BrokerWriter

    root = tmp_path_factory.mktemp("values-service")
    clock = ManualClock(1_700_000_000_000)
    broker = BrokerWriter(root / "broker-1", 1, clock=clock, offsets_partitions=1)
    schemas = broker.partition("_schemas", 0, segment_bytes=2_000)
    for _ts, key, value in REGISTRY_RECORDS:
        schemas.append([WriteRecord(key, value, (), clock.advance(10))])
    orders = broker.partition("orders", 0, segment_bytes=2_000)
    logs = broker.partition("logs", 0, segment_bytes=2_000)
    for i in range(40):
        value = b"junk" if i == 5 else framed(1 if i < 20 else 2, V1 if i < 20 else V2,
                                              {"id": i, "amount": 1.0, "at": i})  # fmt: skip
        orders.append([WriteRecord(b"k", value, (), clock.advance(5))])
        logs.append([WriteRecord(None, b'{"level": "info", "n": %d}' % i if i != 3 else b"{",
                                 (), clock.advance(5))])  # fmt: skip
    for pw in broker.partitions.values():
        if pw.active.size:
            pw.roll()
    broker.close()
    store = open_store(str(root / "store"))
    run_archive(cluster="c", broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store)
    db = root / "catalog.db"
    with open_catalog(str(db), create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
    return store.uri, str(db)


@pytest.mark.parametrize(("topic", "fmt", "expected"), [
    ("orders", "auto", ("avro", 39, 1)), ("orders", "avro", ("avro", 39, 1)),
    ("logs", "auto", ("json", 39, 1)), ("logs", "json", ("json", 39, 1)),
])  # fmt: skip
def test_the_service_plans_values_from_the_archive_and_reports_the_counts(
    cataloged: tuple[str, str], tmp_path: Path, topic: str, fmt: str, expected: tuple[Any, ...]
) -> None:
    from kafka_archive.export.manifest import open_export_stores, read_manifest
    from kafka_archive.services.export import ExportRequest, ExportService
    from kafka_archive.settings import load_settings

    store_uri, db = cataloged
    out = tmp_path / "out"
    with ExportService(load_settings({"store": store_uri, "db": db}, env={})) as svc:
        request = ExportRequest.model_validate(
            {"cluster": "c", "topic": topic, "from": "earliest", "output": str(out),
             "value_format": fmt}
        )  # fmt: skip
        plan = svc.plan(request)
        raw = svc.plan(request.model_copy(update={"value_format": None}))
        assert plan.export_id != raw.export_id  # typed values are another export
        report = svc.run(plan, spark=_InProcessSpark())
    assert (report.value_format, report.decoded_values, report.undecoded_values) == expected
    output, meta = open_export_stores(str(out))
    manifest = read_manifest(meta, output)
    assert manifest is not None and manifest.undecoded_values == expected[2]
    assert "value_typed" in manifest.columns and report.rows == 40
    con = duckdb.connect()
    (n,) = con.execute(
        "SELECT count(*) FROM read_parquet(?) WHERE value_typed IS NOT NULL",
        [[str(out / f.key) for f in manifest.files]],
    ).fetchone()  # type: ignore[misc]
    assert n == 39


def test_avro_without_an_archived_registry_is_refused_with_a_hint(
    cataloged: tuple[str, str], tmp_path: Path
) -> None:
    from kafka_archive.services.export import ExportRequest, ExportService
    from kafka_archive.settings import load_settings

    store_uri, db = cataloged
    with ExportService(load_settings({"store": store_uri, "db": db}, env={})) as svc:
        request = ExportRequest.model_validate(
            {"cluster": "c", "topic": "logs", "from": "earliest", "output": str(tmp_path),
             "value_format": "avro"}
        )  # fmt: skip
        with pytest.raises(ValueFormatError, match="no Avro schema under subject 'logs-value'"):
            svc.plan(request)


def test_cli_dry_run_names_the_value_format_and_refusals_are_one_line(
    cataloged: tuple[str, str], tmp_path: Path
) -> None:
    from support.cli_json import cli

    store_uri, db = cataloged
    base = ["export", "--cluster", "c", "--from", "earliest", "--store", store_uri, "--db", db,
            "--output", str(tmp_path / "o"), "--dry-run", "--json"]  # fmt: skip
    code, lines, text = cli(*base, "--topic", "orders", "--value-format", "auto")
    assert code == 0, text
    assert lines[0]["kind"] == "export-plan" and lines[0]["value_format"] == "avro"
    code, lines, text = cli(*base, "--topic", "logs", "--value-format", "avro")
    assert code == 1 and "logs-value" in lines[0]["message"] and "Traceback" not in text
    code, lines, text = cli(*base, "--topic", "logs", "--value-format", "xml")
    assert code == 1 and "unknown value format" in lines[0]["message"]
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "record", "name": "v", "fields": [{"name": "n", "type": "long"}]}')
    code, lines, text = cli(*base, "--topic", "logs", "--value-format", "json",
                            "--value-schema", str(schema))  # fmt: skip
    assert code == 0 and lines[0]["value_format"] == "json", text
    code, lines, text = cli(*base, "--topic", "logs", "--value-format", "json",
                            "--value-schema", str(tmp_path / "missing.json"))  # fmt: skip
    assert code == 2 and "--value-schema" in text and "Traceback" not in text


def test_typed_values_are_refused_for_an_iceberg_export(
    cataloged: tuple[str, str], tmp_path: Path
) -> None:
    """An Iceberg table holds the raw columns: --value-format with --format iceberg is refused
    in one line (CLI usage error before anything is read; the service too, for the DAG)."""
    from kafka_archive.replay.errors import ReplayConfigError
    from kafka_archive.services.export import ExportRequest, ExportService
    from kafka_archive.settings import load_settings
    from support.cli_json import cli

    store_uri, db = cataloged
    base = ["export", "--cluster", "c", "--topic", "orders", "--from", "earliest",
            "--store", store_uri, "--db", db, "--output", str(tmp_path / "w"), "--format",
            "iceberg", "--dry-run", "--json"]  # fmt: skip
    code, _lines, text = cli(*base, "--value-format", "auto")
    assert code == 2 and "--format parquet" in text and "Traceback" not in text, text
    with ExportService(load_settings({"store": store_uri, "db": db}, env={})) as svc:
        request = ExportRequest.model_validate(
            {"cluster": "c", "topic": "orders", "from": "earliest", "output": str(tmp_path),
             "format": "iceberg", "value_format": "json"}
        )  # fmt: skip
        with pytest.raises(ReplayConfigError, match="for --format parquet only"):
            svc.plan(request)
