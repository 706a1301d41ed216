"""The Parquet export's output holds only data files: the manifest and staged files live in
the bookkeeping folder beside it, and a local output has no sidecar files, so DuckDB's
``read_parquet('<output>/**')`` reads it (no Spark here: the commit is driven directly)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kafka_archive.export.manifest import (
    MANIFEST_KEY,
    ExportFile,
    PartitionRange,
    bookkeeping_uri,
    clean_output,
    commit,
    manifest_for,
    open_export_stores,
    read_manifest,
    staged_key,
)
from kafka_archive.store.errors import StoreConfigError

EXPORT_ID = "e-0123456789abcdef"


def test_bookkeeping_is_beside_the_output() -> None:
    assert bookkeeping_uri("file:///data/orders") == "file:///data/orders.kafka-archive"
    assert bookkeeping_uri("s3://lake/kafka/orders/") == "s3://lake/kafka/orders.kafka-archive"
    with pytest.raises(StoreConfigError, match="prefix"):
        bookkeeping_uri("s3://lake")


def _stage(meta: object, key: str, rows: int) -> ExportFile:
    table = pa.table({"offset": pa.array(range(rows), pa.int64())})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = sink.getvalue().to_pybytes()
    sha = hashlib.sha256(data).hexdigest()
    meta.put_bytes(staged_key(EXPORT_ID, key), data, sha256=sha)  # type: ignore[attr-defined]
    return ExportFile(
        key=key, partition=0, date="2024-05-01", hour=13, rows=rows, bytes=len(data),
        sha256=sha, first_offset=0, last_offset=rows - 1,
    )  # fmt: skip


def test_a_committed_output_is_only_data_files_and_reads_by_glob(tmp_path: Path) -> None:
    out = tmp_path / "orders"
    output, meta = open_export_stores(str(out))
    # an output an earlier version wrote: its manifest and staging inside the output
    legacy = manifest_for(
        export_id="e-ffffffffffffffff", cluster="c", topic="t",
        ranges=[PartitionRange(partition=0, start_offset=0, end_offset=1)], files=[],
    )  # fmt: skip
    output.put_bytes(MANIFEST_KEY, legacy.to_json())
    output.put_bytes("_staging/e-ffffffffffffffff/x.parquet", b"PAR1")
    found = read_manifest(meta, output)
    assert found is not None and found.export_id == legacy.export_id
    assert read_manifest(meta) is None  # nothing in the bookkeeping folder yet
    keys = [f"date=2024-05-01/hour=13/part-{EXPORT_ID}-p00000-0000{i}.parquet" for i in (0, 1)]
    files = [_stage(meta, k, 3 + i) for i, k in enumerate(keys)]
    manifest = manifest_for(
        export_id=EXPORT_ID, cluster="c", topic="t",
        ranges=[PartitionRange(partition=0, start_offset=0, end_offset=7)], files=files,
    )  # fmt: skip
    commit(output, meta, manifest)
    on_disk = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert on_disk == sorted(keys)  # no manifest, no staging, no .ka-meta sidecar
    got = read_manifest(meta, output)
    assert got is not None and got.export_id == EXPORT_ID
    assert not list(meta.list("_staging/"))
    count = duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{out}/**')").fetchall()
    assert count == [(7,)]
    assert clean_output(output, meta, manifest) == []  # nothing left to clean
