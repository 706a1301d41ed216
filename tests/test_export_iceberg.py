"""Iceberg export with Spark: incremental appends to one table per topic, exactly once, read
back by engines that are not ours (pyiceberg, DuckDB, Spark SQL) against an oracle that walks
the raw log files.

The archive grows in stages, as a scheduled export sees it: ``orders`` (two partitions, one
with transactions committed and aborted) is archived a third of its segments at a time, and
``compacted`` is archived, then compacted by the log cleaner (the archive then holds the
original and the cleaner's rewrite of the same offsets), then appended to. Each stage's export
must append exactly the records archived since the table's last export snapshot; a CLI export
killed (SIGKILL, mid-write) leaves the table as it was, and the next run completes it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from kafka_archive.catalog.build import InProcessRunner, build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.export.iceberg import SUMMARY_EXPORT_ID, SUMMARY_OFFSETS, TableName
from kafka_archive.services.export import ExportReport, ExportRequest, ExportService
from kafka_archive.settings import load_settings
from kafka_archive.store import open_store
from kafka_archive_dev.writer import BrokerWriter, ManualClock, WriteRecord, compact
from support.catalog_data import START_MS, archive_partition
from support.s3common import FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION, unique_prefix
from test_export import oracle_rows

from segment_lib.metadata_files import parse_partition_metadata
from segment_lib.partition import PartitionView
from segment_lib.records import Header

pytest_plugins = ["support.spark", "support.s3server", "support.postgres"]
pytestmark = pytest.mark.timeout(900)

C = "east"
REPO = Path(__file__).resolve().parents[1]
Row = tuple[Any, ...]


class Growing:
    """A broker's log dirs archived a stage at a time into one store and catalog."""

    def __init__(self, root: Path, db: str | None = None) -> None:
        import random

        self.root = root
        self.store = open_store(str(root / "store"))
        #: the kafka-archive catalog, and Iceberg's JDBC catalog beside it: SQLite by default
        self.db = db or str(root / "catalog.db")
        self.warehouse = root / "warehouse"
        clock = ManualClock(START_MS)
        b = BrokerWriter(root / "broker", 1, clock=clock)
        rng = random.Random(26)
        self.orders = [b.partition("orders", p, segment_bytes=3_000) for p in range(2)]
        for i in range(240):
            for p, pw in enumerate(self.orders):
                now = clock.advance(rng.randint(1, 30_000))  # spreads rows over many hours
                recs = [
                    WriteRecord(
                        f"k{rng.randint(0, 40)}".encode(),
                        None if i % 31 == 5 else bytes(rng.getrandbits(8) for _ in range(20)),
                        (Header("h", b"x"), Header("trace", None)) if i % 4 == 0 else (),
                        now + rng.randint(-2_000, 100),
                    )
                    for _ in range(rng.randint(1, 3))
                ]
                if p == 0 and i % 9 == 4:
                    tx = pw.begin_transaction(700, 0)
                    tx.append(recs)
                    if i % 18 == 4:
                        tx.commit()
                    else:
                        tx.abort()
                else:
                    pw.append(recs, producer_id=900 + p, producer_epoch=0)
        for pw in self.orders:
            pw.roll()
        self.compacted = b.partition("compacted", 0, segment_bytes=1_200)
        self.clock, self.rng, self.broker = clock, rng, b
        self._append_compacted(150)
        self.compacted.roll()
        self.compacted_before = root / "compacted-before"
        shutil.copytree(self.compacted.dir, self.compacted_before / self.compacted.dir.name)
        self.refs: list[Any] = []

    def _append_compacted(self, n: int) -> None:
        for i in range(n):
            now = self.clock.advance(self.rng.randint(1, 20_000))
            key = f"key-{self.rng.randint(0, 12)}".encode()
            value = None if i % 17 == 3 else b"v" * self.rng.randint(5, 60)
            self.compacted.append([WriteRecord(key, value, (), now)])

    def archive(self, pw: Any, *, share: float = 1.0, suffix: str = "") -> None:
        """Archive ``share`` of the partition's rolled segments (the first ones), with the
        topic id of its ``partition.metadata`` as the archiver records it."""
        import dataclasses

        view = PartitionView.open(pw.dir)
        bases = [s.base_offset for s in view.rolled]
        keep = set(bases[: max(1, round(len(bases) * share))])
        tid = parse_partition_metadata((pw.dir / "partition.metadata").read_bytes()).topic_id
        refs = archive_partition(
            self.store, C, pw.dir, only_bases=keep, manifest_suffix=suffix,
            archived_at_ms=START_MS + 100_000 * (len(self.refs) + 1),
        )  # fmt: skip
        known = {r.object_key for r in self.refs}
        self.refs += [
            dataclasses.replace(r, topic_id=str(tid)) for r in refs if r.object_key not in known
        ]

    def build(self) -> None:
        with open_catalog(self.db, create=True) as cat:
            build_catalog(cat, self.store.uri, refs=self.refs, runner=InProcessRunner())

    def settings(self) -> Any:
        return load_settings({"store": self.store.uri, "db": self.db}, env={})


def _export(g: Growing, topic: str, spark: Any, catalog: str = "lake", **kw: Any) -> ExportReport:
    request = ExportRequest.model_validate(
        {"cluster": C, "topic": topic, "from": "earliest", "output": str(g.warehouse),
         "format": "iceberg", "table": f"{catalog}.{C}.{topic}", **kw}
    )  # fmt: skip
    with ExportService(g.settings()) as svc:
        return svc.run(svc.plan(request), spark=spark)


def _pyiceberg_table(
    g: Growing, topic: str, namespace: str = C, catalog: str = "lake", **props: str
) -> Any:
    from kafka_archive.catalog.db import normalize_url
    from pyiceberg.catalog.sql import SqlCatalog

    # pyiceberg's own SQL catalog over the same database (SQLite, or PostgreSQL via psycopg)
    uri = normalize_url(g.db)
    cat = SqlCatalog(catalog, uri=uri, warehouse=g.warehouse.as_uri(), **props)
    return cat.load_table(f"{namespace}.{topic}")


def _rows(dicts: list[dict[str, Any]]) -> list[Row]:
    out = []
    for d in dicts:
        ts = d["timestamp"]
        ms = d.get("_ms", None if ts is None else int(ts.timestamp() * 1000))
        out.append(
            (
                d["topic"], d["topic_id"], d["partition"], d["offset"],
                ms, d["timestamp_type"], None if d["key"] is None else bytes(d["key"]),
                None if d["value"] is None else bytes(d["value"]),
                [(h["name"], None if h["value"] is None else bytes(h["value"]))
                 for h in d["headers"]],
                d["leader_epoch"], d["producer_id"],
            )
        )  # fmt: skip
    return sorted(out, key=lambda r: (r[2], r[3]))


def read_pyiceberg(g: Growing, topic: str, catalog: str = "lake") -> list[Row]:
    return _rows(_pyiceberg_table(g, topic, catalog=catalog).scan().to_arrow().to_pylist())


def read_duckdb(g: Growing, topic: str) -> list[Row]:
    """DuckDB over the data files pyiceberg plans for the current snapshot: DuckDB's iceberg
    extension is downloaded at run time, which this machine cannot (no network); the tables
    are append-only (no delete files), so the planned files are exactly the table."""
    tasks = list(_pyiceberg_table(g, topic).scan().plan_files())
    assert all(not t.delete_files for t in tasks)
    files = [t.file.file_path.removeprefix("file:") for t in tasks]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    cur = con.execute("SELECT * FROM read_parquet(?)", [files])
    names = [c[0] for c in cur.description]
    return _rows([dict(zip(names, row, strict=True)) for row in cur.fetchall()])


def read_spark(spark: Any, topic: str, catalog: str = "lake") -> list[Row]:
    table = TableName(catalog=catalog, namespace=C, table=topic)
    # unix_millis: Python's conversion of Spark timestamps would use the local time zone
    query = f"SELECT *, unix_millis(`timestamp`) AS _ms FROM {table.spark}"
    return _rows([r.asDict(recursive=True) for r in spark.sql(query).collect()])


def expected(dirs: dict[int, Path], topic: str, ends: dict[int, int], tid: str) -> list[Row]:
    """The oracle: committed records below each partition's exported end, from the log files."""
    rows = []
    for p, d in dirs.items():
        hist = type("H", (), {"dirs": {(topic, p): d}})()
        rows += [(r[0], tid, *r[2:11]) for r in oracle_rows(hist, topic, p, 0, ends[p])]
    return sorted(rows, key=lambda r: (r[2], r[3]))


def _snapshots(g: Growing, topic: str, catalog: str = "lake") -> list[dict[str, str]]:
    t = _pyiceberg_table(g, topic, catalog=catalog)
    return [dict(s.summary.additional_properties) | {"operation": s.summary.operation.value}
            for s in t.snapshots()]  # fmt: skip


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> Growing:
    return Growing(tmp_path_factory.mktemp("iceberg"))


def archived_end(pdir: Path) -> int:
    """Where the archive of a partition ends: the base of its last segment (the broker's
    active one, which the archiver leaves to a later round)."""
    return PartitionView.open(pdir).segments[-1].base_offset


def _tid(pw: Any) -> str:
    return str(parse_partition_metadata((pw.dir / "partition.metadata").read_bytes()).topic_id)


def test_incremental_exports_compaction_and_a_kill_read_back_by_three_engines(
    grown: Growing, spark: Any, tmp_path: Path
) -> None:
    g = grown
    order_dirs = {p: pw.dir for p, pw in enumerate(g.orders)}
    tid = _tid(g.orders[0])

    # stage 1: a third of orders, the compacted topic as written
    for pw in g.orders:
        g.archive(pw, share=1 / 3)
    g.archive(g.compacted)
    g.build()
    r1 = _export(g, "orders", spark)
    c1 = _export(g, "compacted", spark)
    assert r1.status in ("committed", "incomplete") and r1.rows > 0 and c1.rows > 0
    assert read_pyiceberg(g, "orders") == expected(order_dirs, "orders", r1.offsets, tid)
    before = {0: g.compacted_before / g.compacted.dir.name}
    ctid = _tid(g.compacted)
    assert read_pyiceberg(g, "compacted") == expected(before, "compacted", c1.offsets, ctid)
    e1 = archived_end(g.compacted.dir)
    assert c1.offsets == {0: e1} and c1.rows == e1  # one record per offset, none aborted

    # stage 2: two thirds of orders; the cleaner compacts `compacted` (its rewrite is
    # archived beside the original), then more records are appended to it
    for pw in g.orders:
        g.archive(pw, share=2 / 3)
    compact(g.compacted, now=g.clock.advance(1_000))
    g.archive(g.compacted, suffix="-v2")
    g._append_compacted(40)
    g.compacted.roll()
    g.archive(g.compacted, suffix="-v3")
    g.build()
    r2 = _export(g, "orders", spark)
    c2 = _export(g, "compacted", spark)
    assert r2.rows > 0 and all(r2.offsets[p] >= r1.offsets[p] for p in r1.offsets)
    e2 = archived_end(g.compacted.dir)
    assert c2.offsets == {0: e2} and c2.rows == e2 - e1 > 0
    # the compacted topic: its full history once (as written below e1, whatever the cleaner
    # rewrote since, then what was archived after)
    full_c = expected(before, "compacted", {0: e1}, ctid) + [
        r for r in expected({0: g.compacted.dir}, "compacted", {0: e2}, ctid) if r[3] >= e1
    ]
    assert len(full_c) == e2
    assert read_pyiceberg(g, "compacted") == full_c
    assert read_duckdb(g, "compacted") == full_c
    assert read_spark(spark, "compacted") == full_c

    # stage 3: everything; the CLI export is killed while its tasks write
    for pw in g.orders:
        g.archive(pw)
    g.build()
    snaps = _snapshots(g, "orders")
    rows_before = read_pyiceberg(g, "orders")
    _killed_cli_export(g, tmp_path)
    assert _snapshots(g, "orders") == snaps  # no partial snapshot
    assert read_pyiceberg(g, "orders") == rows_before
    r3 = _export(g, "orders", spark)  # the next run appends what the killed one did not
    assert r3.status == "committed" and r3.rows > 0
    ends = {p: archived_end(d) for p, d in order_dirs.items()}
    assert r3.offsets == ends  # to the end of the archive
    want = expected(order_dirs, "orders", r3.offsets, tid)
    assert read_pyiceberg(g, "orders") == want
    assert read_duckdb(g, "orders") == want
    assert read_spark(spark, "orders") == want
    assert want[0][1] == tid and tid != "None"  # the topic id filled in
    assert sum((r1.rows, r2.rows, r3.rows)) == len(want)

    # every export is one snapshot carrying its offsets; nothing new: no snapshot
    snaps = _snapshots(g, "orders")
    assert [s["operation"] for s in snaps] == ["append"] * 3
    assert [json.loads(s[SUMMARY_OFFSETS]) for s in snaps][-1] == {
        str(k): v for k, v in r3.offsets.items()
    }
    assert len({s[SUMMARY_EXPORT_ID] for s in snaps}) == 3
    again = _export(g, "orders", spark)
    assert again.status == "up-to-date" and again.rows == 0
    assert len(_snapshots(g, "orders")) == 3

    _iceberg_compaction_changes_nothing(g, spark, want)


def _iceberg_compaction_changes_nothing(g: Growing, spark: Any, want: list[Row]) -> None:
    # Iceberg's own compaction (a `replace` snapshot without our offsets) changes no row, and
    # the next export still finds the offsets behind it
    spark.sql(f"CALL lake.system.rewrite_data_files(table => '{C}.orders', "
              "options => map('min-input-files', '2'))").collect()  # fmt: skip
    assert _snapshots(g, "orders")[-1]["operation"] == "replace"
    assert read_pyiceberg(g, "orders") == want
    assert read_spark(spark, "orders") == want
    assert _export(g, "orders", spark).status == "up-to-date"


_PAUSE = """
import os, pathlib, time
import kafka_archive.export.batches as b
_orig = b.partition_batches
def _slow(*a, **kw):
    for i, batch in enumerate(_orig(*a, **kw)):
        yield batch
        pathlib.Path(os.environ["KA_TEST_MARK"]).touch()
        time.sleep(600)
b.partition_batches = _slow
"""


def _killed_cli_export(g: Growing, tmp_path: Path) -> None:
    """Run ``kafka-archive export --format iceberg`` in its own process group, wait until a
    Spark task has handed rows to Iceberg's writer, then SIGKILL the whole group."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_PAUSE)
    mark = tmp_path / "mark"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
        "KA_TEST_MARK": str(mark),
    }
    cli = [str(Path(sys.executable).with_name("kafka-archive"))]
    proc = subprocess.Popen(
        [*cli, "export", "--cluster", C, "--topic", "orders", "--from", "earliest",
         "--format", "iceberg", "--table", f"lake.{C}.orders", "--output", str(g.warehouse),
         "--store", g.store.uri, "--db", g.db, "--spark-master", "local[1]", "--json"],
        env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while not mark.exists():
        if proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"the export ended before it was killed ({proc.returncode}): {out[-3000:]}")
        assert time.monotonic() < deadline, "no Spark task started writing"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def test_cli_export_into_an_s3_warehouse(moto_s3: Any, aws_env: None, tmp_path: Path) -> None:
    """``kafka-archive export --format iceberg`` into ``s3://`` (moto's server) through
    Iceberg's S3FileIO, credentials and endpoint from the environment; pyiceberg reads back
    exactly the committed records of the log files (an archive of its own: the test does not
    depend on the module's other tests)."""
    g = Growing(tmp_path / "src")
    g.archive(g.compacted)
    g.build()
    end = archived_end(g.compacted.dir)
    want = expected({0: g.compacted.dir}, "compacted", {0: end}, _tid(g.compacted))
    prefix = unique_prefix("iceberg")
    env = {**os.environ, "AWS_ENDPOINT_URL": moto_s3.endpoint_url}
    cli = [str(Path(sys.executable).with_name("kafka-archive"))]
    proc = subprocess.run(
        [*cli, "export", "--cluster", C, "--topic", "compacted", "--from", "earliest",
         "--format", "iceberg", "--table", "lake.s3.compacted",
         "--output", f"s3://{moto_s3.bucket}/{prefix}", "--store", g.store.uri, "--db", g.db,
         "--spark-master", "local[1]", "--json"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["status"] == "committed" and report["table"] == "lake.s3.compacted"
    assert report["offsets"] == {"0": end}
    keys = [
        o["Key"]
        for o in moto_s3.client().list_objects_v2(Bucket=moto_s3.bucket, Prefix=prefix)["Contents"]
    ]
    assert any("/data/" in k and k.endswith(".parquet") for k in keys)
    assert any("/metadata/" in k and k.endswith(".metadata.json") for k in keys)
    table = _pyiceberg_table(
        g, "compacted", "s3", **{"s3.endpoint": moto_s3.endpoint_url,
        "s3.access-key-id": FAKE_ACCESS_KEY, "s3.secret-access-key": FAKE_SECRET_KEY,
        "s3.region": REGION},
    )  # fmt: skip
    assert _rows(table.scan().to_arrow().to_pylist()) == want
    assert report["rows"] == len(want) == end


def test_jdbc_catalog_in_postgresql(pg_url: str, spark: Any, tmp_path: Path) -> None:
    """The kafka-archive catalog on a real PostgreSQL server, Iceberg's JDBC catalog beside it
    in the same database (through the PostgreSQL JDBC driver ``ensure-iceberg.sh`` resolves):
    two incremental exports, each one snapshot, read back by pyiceberg's ``SqlCatalog`` (over
    psycopg) and by Spark SQL against the log files' committed records."""
    import psycopg

    g = Growing(tmp_path / "src", db=pg_url)
    tid = _tid(g.orders[0])
    dirs = {p: pw.dir for p, pw in enumerate(g.orders)}
    for pw in g.orders:
        g.archive(pw, share=1 / 2)
    g.build()
    r1 = _export(g, "orders", spark, catalog="pglake")
    assert r1.status in ("committed", "incomplete") and r1.rows > 0
    assert read_pyiceberg(g, "orders", "pglake") == expected(dirs, "orders", r1.offsets, tid)
    for pw in g.orders:
        g.archive(pw)
    g.build()
    r2 = _export(g, "orders", spark, catalog="pglake")
    assert r2.status == "committed" and r2.offsets == {p: archived_end(d) for p, d in dirs.items()}
    want = expected(dirs, "orders", r2.offsets, tid)
    assert r1.rows + r2.rows == len(want) and want[0][1] == tid
    assert read_pyiceberg(g, "orders", "pglake") == want
    assert read_spark(spark, "orders", catalog="pglake") == want
    assert [s["operation"] for s in _snapshots(g, "orders", "pglake")] == ["append", "append"]
    # the JDBC catalog's rows are in PostgreSQL, in the catalog's database
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT catalog_name, table_namespace, table_name FROM iceberg_tables"
        ).fetchall()
    assert rows == [("pglake", C, "orders")]
    assert _export(g, "orders", spark, catalog="pglake").status == "up-to-date"
