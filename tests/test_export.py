"""Parquet export with Spark: the rows are exactly what replay delivers, read back by
independent readers (pyarrow, DuckDB), locally and on S3 (moto), idempotent across re-runs and
completed by a re-run after a crash.

The archive is :func:`support.catalog_data.archived_catalog`'s history: partition 0 of
``orders`` holds transactions, most of them aborted, with their COMMIT/ABORT control batches;
``events`` is a LogAppendTime topic (120 appends: every round has a committed and an aborted
transaction). Expected rows come two ways: from the replay reader over
the same plan (what a replay sends), and from an oracle written here that walks the raw log
files (committed and non-transactional records; control batches and aborted ones dropped).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from kafka_archive.export import manifest as manifest_mod
from kafka_archive.export.manifest import (
    BOOKKEEPING_SUFFIX,
    MANIFEST_KEY,
    open_export_stores,
    read_manifest,
)
from kafka_archive.export.partition import export_partition
from kafka_archive.export.schema import FILE_SCHEMA, bucket_of
from kafka_archive.replay.execution.reader import BatchRecords, PartitionReader
from kafka_archive.services.export import ExportPlan, ExportRequest, ExportService
from kafka_archive.settings import load_settings
from kafka_archive.store import open_store
from support.catalog_data import History, archived_catalog
from support.cli_json import cli
from support.s3common import unique_prefix

from segment_lib.control import ControlType, decode_control_record
from segment_lib.log_file import open_log
from segment_lib.metadata_files import parse_partition_metadata
from segment_lib.partition import PartitionView

pytest_plugins = ["support.spark", "support.s3server"]
pytestmark = pytest.mark.timeout(600)

C = "east"
#: a row as compared: everything of the schema, partition columns included
Row = tuple[Any, ...]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str, str]:
    return archived_catalog(tmp_path_factory.mktemp("export"), cluster=C, appends=120)


def _service(archive: tuple[History, str, str]) -> ExportService:
    _hist, store_uri, db = archive
    return ExportService(load_settings({"store": store_uri, "db": db}, env={}))


def _plan(archive: tuple[History, str, str], output: str, **request: Any) -> ExportPlan:
    with _service(archive) as svc:
        return svc.plan(ExportRequest.model_validate({"output": output, "cluster": C, **request}))


def _run(archive: tuple[History, str, str], plan: ExportPlan, spark: Any, **kw: Any) -> Any:
    with _service(archive) as svc:
        return svc.run(plan, spark=spark, **kw)


def topic_id_of(pdir: Path) -> str | None:
    """The topic id of a partition directory's ``partition.metadata`` (what the archiver
    catalogs and the export writes into ``topic_id``)."""
    meta = pdir / "partition.metadata"
    return str(parse_partition_metadata(meta.read_bytes()).topic_id) if meta.exists() else None


def _row(topic: str, partition: int, rec: Any, header: Any, topic_id: str | None = None) -> Row:
    bucket = bucket_of(rec.timestamp)
    return (
        topic,
        topic_id,
        partition,
        rec.offset,
        rec.timestamp,
        header.timestamp_type.label,
        rec.key,
        rec.value,
        [(h.key, h.value) for h in rec.headers],
        header.partition_leader_epoch if header.partition_leader_epoch >= 0 else None,
        header.producer_id if header.producer_id >= 0 else None,
        None if bucket is None else bucket[0],
        None if bucket is None else bucket[1],
    )


def replay_rows(archive: tuple[History, str, str], plan: ExportPlan) -> list[Row]:
    """What replay delivers for ``plan``'s range: the replay reader over the same plan."""
    store = open_store(archive[1])
    rows: list[Row] = []
    for pp in plan.replay_plan.partitions:
        tid = topic_id_of(archive[0].dirs[(plan.request.topic, pp.partition)])
        for group in PartitionReader(store, pp):
            assert isinstance(group, BatchRecords)
            rows += [_row(plan.request.topic, pp.partition, r, group.header, tid) for r in group]
    return rows


def oracle_rows(hist: History, topic: str, partition: int, start: int, end: int) -> list[Row]:
    """Committed records of ``[start, end)`` straight from the log files: non-transactional
    records, and transactional ones whose producer's next marker is COMMIT."""
    out: list[Row] = []
    pending: dict[int, list[Row]] = {}
    view = PartitionView.open(hist.dirs[(topic, partition)])
    tid = topic_id_of(hist.dirs[(topic, partition)])
    for seg in view.segments:
        with open_log(seg.log) as log:
            for header, rec in log.iter_records(include_control=True):
                if header.is_control:
                    marker = decode_control_record(rec.key, rec.value)
                    held = pending.pop(header.producer_id, [])
                    if marker.type is ControlType.COMMIT:
                        out += held
                    continue
                row = _row(topic, partition, rec, header, tid)
                if header.is_transactional:
                    pending.setdefault(header.producer_id, []).append(row)
                else:
                    out.append(row)
    return sorted(r for r in out if start <= r[3] < end)


def _normalise(dicts: list[dict[str, Any]]) -> list[Row]:
    rows = []
    for d in dicts:
        ts = d["timestamp"]
        rows.append(
            (
                d["topic"], d["topic_id"], d["partition"], d["offset"],
                None if ts is None else int(ts.timestamp() * 1000),
                d["timestamp_type"], d["key"], d["value"],
                [(h["name"], h["value"]) for h in d["headers"]],
                d["leader_epoch"], d["producer_id"], d["date"], d["hour"],
            )
        )  # fmt: skip
    return sorted(rows, key=lambda r: (r[2], r[3]))


def read_with_pyarrow(root: Path) -> list[Row]:
    """The output directory as a Hive-partitioned dataset (pyarrow skips ``_`` names)."""
    part = ds.partitioning(pa.schema([("date", pa.string()), ("hour", pa.int32())]), flavor="hive")
    table = ds.dataset(str(root), format="parquet", partitioning=part).to_table()
    return _normalise(table.to_pylist())


def meta_dir(root: Path) -> Path:
    """The export's bookkeeping folder beside its output (manifest, staged files)."""
    return root.with_name(root.name + BOOKKEEPING_SUFFIX)


def manifest_of(root: Path) -> Any:
    return read_manifest(open_export_stores(str(root))[1])


def read_glob_with_duckdb(root: Path) -> list[Row]:
    """The whole output as a reader that globs it finds it: ``read_parquet('<output>/**')``
    (every file under it must be a data file: no manifest, staging or sidecar)."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    cur = con.execute(
        f"SELECT * FROM read_parquet('{root}/**', hive_partitioning = true, "
        "hive_types = {'date': VARCHAR, 'hour': INTEGER})"
    )
    names = [c[0] for c in cur.description]
    return _normalise([dict(zip(names, row, strict=True)) for row in cur.fetchall()])


def read_manifest_files_with_duckdb(root: Path, meta: Path | None = None) -> list[Row]:
    """Only the files the manifest lists, read by DuckDB with Hive partition columns."""
    manifest = json.loads(((meta or meta_dir(root)) / MANIFEST_KEY).read_text())
    files = [str(root / f["key"]) for f in manifest["files"]]
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    cur = con.execute(
        "SELECT * FROM read_parquet(?, hive_partitioning = true, "
        "hive_types = {'date': VARCHAR, 'hour': INTEGER})",
        [files],
    )
    names = [c[0] for c in cur.description]
    return _normalise([dict(zip(names, row, strict=True)) for row in cur.fetchall()])


def _data_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet")}


def test_export_rows_are_what_replay_delivers(
    archive: tuple[History, str, str], spark: Any, tmp_path: Path
) -> None:
    hist = archive[0]
    out = tmp_path / "orders"
    plan = _plan(archive, str(out), topic="orders", **{"from": "earliest"})
    report = _run(archive, plan, spark)
    expected = sorted(replay_rows(archive, plan), key=lambda r: (r[2], r[3]))
    # the history makes the export skip something: aborted transactions and markers
    assert report.aborted_records > 0 and report.control_batches > 0
    assert report.status == "committed" and report.rows == len(expected) > 0
    oracle = [
        r
        for p in plan.replay_plan.partitions
        for r in oracle_rows(hist, "orders", p.partition, p.start_offset, p.end_offset)
    ]
    assert expected == sorted(oracle, key=lambda r: (r[2], r[3]))
    assert read_with_pyarrow(out) == expected
    assert read_manifest_files_with_duckdb(out) == expected
    # the manifest is the truth, and the directory holds exactly its files: nothing staged,
    # no manifest or sidecar, so DuckDB's glob of the whole output reads it
    manifest = manifest_of(out)
    assert manifest is not None and manifest.export_id == plan.export_id
    assert _data_files(out) == {f.key for f in manifest.files}
    assert {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} == _data_files(out)
    assert read_glob_with_duckdb(out) == expected
    assert not any((meta_dir(out) / "_staging").rglob("*.parquet"))
    for f in manifest.files:
        data = (out / f.key).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256 and len(data) == f.bytes
        meta = pq.read_metadata(out / f.key)
        assert meta.num_rows == f.rows and meta.schema.to_arrow_schema().equals(FILE_SCHEMA)
    assert sum(f.rows for f in manifest.files) == manifest.rows == report.rows
    # the history's clock jumps (producers an hour behind) spread rows over several hours
    assert len({(f.date, f.hour) for f in manifest.files}) > 1


def test_small_files_keep_every_row_once(
    archive: tuple[History, str, str], spark: Any, tmp_path: Path
) -> None:
    out = tmp_path / "small"
    plan = _plan(archive, str(out), topic="orders", max_rows_per_file=40, **{"from": "earliest"})
    report = _run(archive, plan, spark)
    manifest = manifest_of(out)
    assert manifest is not None
    per_bucket: dict[tuple[int, str | None, int | None], int] = {}
    for f in manifest.files:
        assert f.rows <= 40 + 4  # a batch of the history holds at most 4 records
        key = (f.partition, f.date, f.hour)
        per_bucket[key] = per_bucket.get(key, 0) + 1
    assert max(per_bucket.values()) > 1 and report.files == len(manifest.files)
    expected = sorted(replay_rows(archive, plan), key=lambda r: (r[2], r[3]))
    assert read_with_pyarrow(out) == expected
    assert read_manifest_files_with_duckdb(out) == expected


def test_a_time_range_of_a_log_append_time_topic_matches_replay(
    archive: tuple[History, str, str], spark: Any, tmp_path: Path
) -> None:
    hist = archive[0]
    times = sorted(r[4] for r in oracle_rows(hist, "events", 0, 0, 1 << 62) if r[4] is not None)
    lo, hi = times[len(times) // 4], times[3 * len(times) // 4]
    out = tmp_path / "events"
    plan = _plan(archive, str(out), topic="events", **{"from": str(lo), "to": str(hi)})
    report = _run(archive, plan, spark)
    expected = sorted(replay_rows(archive, plan), key=lambda r: (r[2], r[3]))
    assert 0 < report.rows == len(expected) < len(times) * 2
    assert {r[5] for r in expected} == {"LogAppendTime"}
    assert read_with_pyarrow(out) == expected
    assert read_manifest_files_with_duckdb(out) == expected


def test_rerunning_the_same_export_adds_nothing_and_a_new_range_replaces_the_old(
    archive: tuple[History, str, str], spark: Any, tmp_path: Path
) -> None:
    out = tmp_path / "again"
    first = _plan(archive, str(out), topic="orders", **{"from": "earliest"})
    _run(archive, first, spark)
    before = {p: (out / p).read_bytes() for p in _data_files(out)}
    again = _run(archive, _plan(archive, str(out), topic="orders", **{"from": "earliest"}), spark)
    assert again.status == "already-committed" and again.export_id == first.export_id
    assert {p: (out / p).read_bytes() for p in _data_files(out)} == before
    # a different range into the same output: after its commit only its own files are there
    narrower = _plan(archive, str(out), topic="orders", partitions=[1], **{"from": "earliest"})
    assert narrower.export_id != first.export_id
    _run(archive, narrower, spark)
    expected = sorted(replay_rows(archive, narrower), key=lambda r: (r[2], r[3]))
    assert read_with_pyarrow(out) == expected
    assert {r[2] for r in expected} == {1}


def test_a_crash_mid_export_is_completed_by_running_again(
    archive: tuple[History, str, str],
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "crash"
    plan = _plan(archive, str(out), topic="orders", **{"from": "earliest"})
    expected = sorted(replay_rows(archive, plan), key=lambda r: (r[2], r[3]))
    output, meta = open_export_stores(str(out))
    archive_store = open_store(archive[1])
    # 1. a job that died after staging partition 0, with a torn staged file of partition 1
    staged = export_partition(
        plan.replay_plan.partition(0), store=archive_store, output=meta,
        export_id=plan.export_id, topic="orders",
    )  # fmt: skip
    assert staged.files
    torn = f"_staging/{plan.export_id}/{staged.files[0].key.replace('-p00000-', '-p00001-')}"
    meta.put_bytes(torn, b"PAR1 torn")
    # 2. the next run dies in the commit, after publishing some files but before the manifest
    published: list[str] = []
    real_publish = manifest_mod._publish

    def publish_then_die(store: Any, staging: Any, export_id: str, file: Any) -> None:
        if published:
            raise OSError("killed mid-commit")
        real_publish(store, staging, export_id, file)
        published.append(file.key)

    monkeypatch.setattr(manifest_mod, "_publish", publish_then_die)
    with pytest.raises(OSError, match="killed mid-commit"):
        _run(archive, plan, spark)
    assert published and read_manifest(meta, output) is None
    # 3. the run after that dies after writing the manifest, before cleaning up
    monkeypatch.setattr(manifest_mod, "_publish", real_publish)

    def die(*_a: Any) -> None:
        raise OSError("killed before clean-up")

    monkeypatch.setattr(manifest_mod, "clean_output", die)
    with pytest.raises(OSError, match="killed before clean-up"):
        _run(archive, plan, spark)
    assert any((meta_dir(out) / "_staging").rglob("*.parquet"))
    # 4. running the same export again finishes: every row once, nothing staged left over
    monkeypatch.undo()
    report = _run(archive, plan, spark)
    assert report.status == "already-committed" and report.rows == len(expected)
    assert read_with_pyarrow(out) == expected
    assert read_glob_with_duckdb(out) == expected
    assert not [p for p in (meta_dir(out) / "_staging").rglob("*") if p.is_file()]
    manifest = read_manifest(meta)
    assert manifest is not None and _data_files(out) == {f.key for f in manifest.files}


def test_export_to_s3_matches_the_local_export(
    archive: tuple[History, str, str], spark: Any, moto_s3: Any, aws_env: None, tmp_path: Path
) -> None:
    prefix = unique_prefix("export")
    uri = f"s3://{moto_s3.bucket}/{prefix}"
    options = {"endpoint_url": moto_s3.endpoint_url, "region": "us-east-1"}
    plan = _plan(archive, uri, topic="orders", **{"from": "earliest"})
    report = _run(archive, plan, spark, output_options=options)
    assert report.status == "committed" and report.output == uri
    # read back what the bucket holds (a plain boto3 client), as pyarrow and DuckDB would
    client = moto_s3.client()
    local = tmp_path / "from-s3"
    listed = client.list_objects_v2(Bucket=moto_s3.bucket, Prefix=prefix + "/")
    keys = [o["Key"] for o in listed.get("Contents", [])]
    assert keys and all(k.endswith(".parquet") and "/_staging/" not in k for k in keys)
    for key in keys:
        dest = local / key[len(prefix) + 1 :]
        dest.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(moto_s3.bucket, key, str(dest))
    meta = tmp_path / "meta-from-s3"
    meta.mkdir()
    client.download_file(
        moto_s3.bucket, f"{prefix}{BOOKKEEPING_SUFFIX}/{MANIFEST_KEY}", str(meta / MANIFEST_KEY)
    )
    expected = sorted(replay_rows(archive, plan), key=lambda r: (r[2], r[3]))
    assert read_with_pyarrow(local) == expected
    assert read_manifest_files_with_duckdb(local, meta) == expected
    assert read_glob_with_duckdb(local) == expected
    again = _run(archive, plan, spark, output_options=options)
    assert again.status == "already-committed"
    assert len(
        client.list_objects_v2(Bucket=moto_s3.bucket, Prefix=prefix + "/")["Contents"]
    ) == len(keys)


def test_cli_export_json_then_dry_run_and_errors(
    archive: tuple[History, str, str], spark: Any, tmp_path: Path
) -> None:
    _hist, store_uri, db = archive
    out = tmp_path / "cli"
    base = ["--cluster", C, "--store", store_uri, "--db", db, "--output", str(out)]
    code, lines, text = cli("export", "--topic", "events", "--from", "earliest", *base, "--json")
    assert code == 0, text
    (report,) = lines
    assert report["kind"] == "export" and report["status"] == "committed"
    assert report["rows"] == len(read_with_pyarrow(out)) > 0
    code, lines, text = cli("export", "--topic", "events", "--from", "earliest", *base, "--json")
    assert code == 0 and lines[0]["status"] == "already-committed"
    code, lines, text = cli(
        "export", "--topic", "events", "--from", "earliest", *base, "--dry-run", "--json"
    )
    assert code == 0 and lines[0]["kind"] == "export-plan"
    assert lines[0]["export_id"] == report["export_id"]
    code, lines, text = cli("export", "--topic", "nope", "--from", "earliest", *base, "--json")
    assert code == 1 and "nope" in lines[0]["message"] and "Traceback" not in text
    code, _lines, text = cli(
        "export", "--topic", "events", "--from", "earliest", *base, "--format", "csv"
    )
    assert code == 2 and "parquet" in text and "Traceback" not in text
    code, _lines, text = cli("export", "--topic", "events", "--from", "", *base)
    assert code == 2 and "--from" in text and "Traceback" not in text
    # the same empty start position given to replay (the planner both share) is a usage error
    code, _lines, text = cli(
        "replay", "run", "--cluster", C, "--topic", "events", "--from", "", "--target",
        "127.0.0.1:1", "--store", store_uri, "--db", db, "--dry-run", "--offline",
    )  # fmt: skip
    assert code == 2 and "from is empty" in text and "Traceback" not in text


def test_airflow_task_bodies_plan_export_and_report(
    archive: tuple[History, str, str], spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jsonschema
    from kafka_archive.airflow.export_tasks import (
        export_task,
        plan_task,
        report_task,
        request_from_params,
    )

    _hist, store_uri, db = archive
    monkeypatch.setenv("KAFKA_ARCHIVE_STORE", store_uri)
    monkeypatch.setenv("KAFKA_ARCHIVE_DB", db)
    out = tmp_path / "dag"
    params = {"cluster": C, "topic": "orders", "from": "earliest", "output": str(out),
              "partitions": [0]}  # fmt: skip
    planned = plan_task(params)
    assert planned["summary"]["partitions"][0]["partition"] == 0
    assert report_task(planned, None)["export_id"] == planned["export_id"]  # a dry run
    result = report_task(planned, export_task(planned, params))
    assert result["status"] == "committed" and result["export_id"] == planned["export_id"]
    plan = _plan(archive, str(out), topic="orders", partitions=[0], **{"from": "earliest"})
    assert plan.export_id == planned["export_id"]
    expected = sorted(replay_rows(archive, plan), key=lambda r: (r[2], r[3]))
    assert read_with_pyarrow(out) == expected and result["rows"] == len(expected)
    with pytest.raises(jsonschema.ValidationError):
        request_from_params({**params, "format": "csv"})
    with pytest.raises(jsonschema.ValidationError):
        request_from_params({k: v for k, v in params.items() if k != "output"})


def test_the_spark_job_file_exports_on_its_own_session(
    archive: tuple[History, str, str], tmp_path: Path
) -> None:
    import subprocess
    import sys

    _hist, store_uri, db = archive
    out = tmp_path / "job"
    repo = Path(__file__).resolve().parents[1]
    args = ["--cluster", C, "--topic", "events", "--from", "earliest", "--partitions", "1",
            "--output", str(out), "--store", store_uri, "--db", db,
            "--spark-master", "local[1]"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, str(repo / "spark_jobs" / "export.py"), *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    plan = _plan(archive, str(out), topic="events", partitions=[1], **{"from": "earliest"})
    assert report["export_id"] == plan.export_id and report["status"] == "committed"
    expected = sorted(replay_rows(archive, plan), key=lambda r: (r[2], r[3]))
    assert read_with_pyarrow(out) == expected
    bad = subprocess.run(
        [sys.executable, str(repo / "spark_jobs" / "export.py"), *args[:-2], "--topic", "nope"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert bad.returncode == 1 and json.loads(bad.stdout.splitlines()[-1])["kind"] == "error"


def test_a_running_export_holds_its_lease_and_a_second_run_is_refused(
    archive: tuple[History, str, str], spark: Any, tmp_path: Path
) -> None:
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.replay.bookkeeping.lease import ReplayBusyError, ReplayLease

    out = tmp_path / "busy"
    plan = _plan(archive, str(out), topic="events", **{"from": "earliest"})
    with open_catalog(archive[2]) as cat, ReplayLease(cat.engine, plan.export_id):
        # another live run of the same export (here: this lease) holds it: refused, nothing
        # written, no manifest
        with pytest.raises(ReplayBusyError):
            _run(archive, plan, spark)
        assert manifest_of(out) is None
        assert not _data_files(out)
    report = _run(archive, plan, spark)  # the lease released: the export runs
    assert report.status == "committed" and report.rows > 0


def test_a_running_export_leases_its_offsets_so_prune_leaves_them(
    archive: tuple[History, str, str], spark: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    """The object lease prune honours (kafka_archive.catalog.leases) is held while the export's
    tasks run and released after."""
    import kafka_archive.spark.export as spark_export
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.catalog.leases import live_leases

    plan = _plan(archive, str(tmp_path / "leased"), topic="events", **{"from": "earliest"})
    seen: dict[int, list[tuple[int, int]]] = {}
    real = spark_export.run_export_tasks

    def spy(*args: Any, **kwargs: Any) -> Any:
        with open_catalog(archive[2]) as cat, cat.session() as s:
            seen.update(live_leases(s, C, "events"))
        return real(*args, **kwargs)

    monkeypatch.setattr(spark_export, "run_export_tasks", spy)
    report = _run(archive, plan, spark)
    assert report.status == "committed"
    assert seen and all(ranges for ranges in seen.values())
    with open_catalog(archive[2]) as cat, cat.session() as s:
        assert live_leases(s, C, "events") == {}


class _FakeContext:
    """A SparkContext's surface that ``run_export_tasks`` uses: runs nothing, keeps the tasks."""

    def __init__(self, parallelism: int) -> None:
        self.defaultParallelism = parallelism
        self.tasks: list[Any] = []

    def setJobDescription(self, _text: str) -> None:
        pass

    def parallelize(self, tasks: list[Any], _slices: int) -> _FakeContext:
        self.tasks = list(tasks)
        return self

    def map(self, _fn: Any) -> _FakeContext:
        return self

    def collect(self) -> list[dict[str, Any]]:
        return [{"write_thread": t.write_thread} for t in self.tasks]


@pytest.mark.parametrize(
    ("slots", "tasks", "threaded"),
    [(1, 2, False), (2, 2, False), (2, 1, True), (4, 2, True), (4, 3, False), (8, 20, False)],
)
def test_tasks_write_in_a_thread_only_where_each_can_have_a_second_core(
    slots: int, tasks: int, threaded: bool
) -> None:
    """Spark runs ``defaultParallelism`` tasks at once, a core each: a task's writer thread
    is worth it only when the tasks running at once leave a core free for each thread."""
    from types import SimpleNamespace

    from kafka_archive.spark.export import ExportTask, run_export_tasks

    ctx = _FakeContext(slots)
    task = ExportTask(
        export_id="e-1", topic="t", partition_plan_json="{}", store_uri="file:///s",
        output_uri="file:///o",
    )  # fmt: skip
    given = [task] * tasks
    got = run_export_tasks(given, spark=SimpleNamespace(sparkContext=ctx))
    assert [r["write_thread"] for r in got] == [threaded] * tasks
