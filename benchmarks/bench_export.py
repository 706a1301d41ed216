"""Parquet (and Iceberg) export throughput against a raw read of the same archived bytes and
against Spark writing the same rows from memory; Spark ``local[1]`` vs ``local[2]``.

Source: ``--partitions`` partitions of ``--records`` records each (``--value-bytes`` values,
16-byte keys, one header, ``--batch`` records per batch, codec ``--codec``), written by
``kafka_archive_dev.writer`` and put in a local object store; the plan is the replay planner's over
it (``earliest`` to the end), the same one ``kafka-archive export`` makes from the catalog.

For each Spark master (``local[1]``, then ``local[2]``; Python workers warmed before timing),
after one unrecorded warm-up repetition, ``--reps`` repetitions run every kind once, in an
order rotated per repetition (interleaved), each as one Spark job of one task per partition:

* ``export``: :meth:`kafka_archive.services.export.ExportService.run` into a fresh local output
  directory: the tasks read and CRC-check the archived bytes, decode, drop control batches and
  aborted transactions, convert to Arrow, write Parquet (zstd), stage each file through the
  store layer; the driver publishes the files and writes the manifest. Timed whole (wall), and
  per task (``task_s``, reported by the tasks);
* ``iceberg``: the same rows exported into a fresh Iceberg table (``--format iceberg``, local
  warehouse, the JDBC catalog in the run's SQLite catalog; creating the table included), one
  snapshot: Python decodes into Arrow as for Parquet, the JVM writes (``mapInArrow``, Iceberg's
  Parquet writer). Timed whole (wall); its CPU only as the whole tree's (below). Needs Iceberg's
  jars (``scripts/ensure-iceberg.sh``);
* ``iceberg-memory``: Spark writing the same rows into a fresh Iceberg table from a cached
  DataFrame (built untimed by the export's producer, one Spark partition per Kafka partition):
  the same table definition, fanout writer and single snapshot, without the archive read, the
  decode and the Python -> JVM hand-over. Timed whole (wall), CPU as the whole tree's;
* ``read-bytes``: (a) the raw read: each task reads its partition's planned byte ranges from the
  store and walks the batch headers with CRC checks (what any reader of the archive must do),
  nothing decoded;
* ``memory-write``: (b) each task first builds its partition's rows as Arrow tables in memory
  (the export's own conversion, untimed), then - timed inside the task - writes them the way the
  export does (pyarrow ParquetWriter, zstd, the same row groups, SHA-256, ``put_file`` to the
  staging prefix). Its figure is the tasks' slowest timed part, so it leaves out Spark's per-job
  cost (~0.1-0.2 s), which ``export``'s wall time includes: compare it with ``export_task``.

Every kind but ``iceberg`` records the CPU seconds its tasks used (``time.process_time`` in
each task, summed), and every kind the CPU of the whole process tree (this process, the Spark
JVM, its Python workers; ``/proc``), the only CPU figure that covers the JVM's share (Iceberg
against the Parquet export; for ``memory-write`` it includes the untimed table building).
Task CPU-seconds (rows per CPU-second) are what the work costs whatever else the machine runs,
while the wall figures (and the ``local[2]`` / ``local[1]`` ratio) depend on how busy the 2
cores are; the result file records the load average before and after.

Figures are medians over the repetitions, rows/s = exported rows / seconds. Results go to
``benchmarks/results/export-<UTC time>.json``.

    .venv/bin/python benchmarks/bench_export.py --reps 5
    .venv/bin/python benchmarks/bench_export.py --partitions 2 --records 100000 --reps 3
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _data  # noqa: E402
from kafka_archive.catalog.db import open_catalog  # noqa: E402
from kafka_archive.export.manifest import PartitionRange, export_id_for, staged_key  # noqa: E402
from kafka_archive.replay.planning.plan import (  # noqa: E402
    ReplaySpec,
    TargetSpec,
    build_plan,
    parse_position,
)
from kafka_archive.replay.planning.sources import SegmentsPlanSource  # noqa: E402
from kafka_archive.services.export import ExportPlan, ExportRequest, ExportService  # noqa: E402
from kafka_archive.services.export_plan import plan_ranges  # noqa: E402
from kafka_archive.settings import load_settings  # noqa: E402
from kafka_archive.store import LocalStore  # noqa: E402
from kafka_archive_dev.writer.encode import WriteRecord  # noqa: E402
from kafka_archive_dev.writer.partition_writer import ManualClock, PartitionWriter  # noqa: E402

from segment_lib.compression import Codec  # noqa: E402
from segment_lib.records import Header  # noqa: E402

CLUSTER, TOPIC = "bench-src", "bench"
KINDS = ("export", "iceberg", "iceberg-memory", "read-bytes", "memory-write")
_tables = itertools.count()


def tree_cpu() -> float:
    """CPU seconds used so far by this process and every live descendant (the Spark JVM of a
    local master, its Python daemon and workers), each with its reaped children's: Linux
    ``/proc``. What a whole run costs, the JVM's share included (Iceberg writes in the JVM)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}  # pid -> (ppid, cpu)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2 :].split()
            # after the name: state ppid ... utime(12) stime(13) cutime(14) cstime(15)
            cpu = sum(int(x) for x in fields[11:15]) / tick
            stats[int(entry)] = (int(fields[1]), cpu)
    mine, total, frontier = {os.getpid()}, 0.0, [os.getpid()]
    while frontier:
        pid = frontier.pop()
        total += stats.get(pid, (0, 0.0))[1]
        kids = [c for c, (pp, _) in stats.items() if pp == pid and c not in mine]
        mine.update(kids)
        frontier += kids
    return total


def add_source_args(ap: argparse.ArgumentParser, *, reps: int) -> None:
    """The options of the source both export benchmarks write (:func:`write_source`), the
    repetitions and where results go."""
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--records", type=int, default=200_000, help="per partition")
    ap.add_argument("--value-bytes", type=int, default=256)
    ap.add_argument("--batch", type=int, default=500, help="records per source batch")
    ap.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))


def write_source(root: Path, args: argparse.Namespace) -> list[Path]:
    values = bytes(range(256)) * (args.value_bytes // 256 + 2)
    dirs = []
    for p in range(args.partitions):
        clock = ManualClock(1_700_000_000_000)
        pw = PartitionWriter(
            root, TOPIC, p, segment_bytes=64 << 20, clock=clock, index_interval_bytes=1 << 20
        )
        for start in range(0, args.records, args.batch):
            n = min(args.batch, args.records - start)
            recs = [
                WriteRecord(
                    f"key-{p}-{start + i:010d}".encode(),
                    values[(start + i) % 256 : (start + i) % 256 + args.value_bytes],
                    (Header("source", b"bench"),),
                    clock.advance(1),
                )
                for i in range(n)
            ]
            pw.append(recs, codec=Codec[args.codec.upper()])
        pw.close()
        dirs.append(pw.dir)
    return dirs


# -- Spark task bodies (pickled by value with this script) -----------------------------------


def _warm(x: int) -> int:
    import kafka_archive.export.partition
    import kafka_archive.spark.export  # noqa: F401

    return x


def read_bytes_task(args: tuple[str, str]) -> dict[str, Any]:
    """(a) read the partition's planned byte ranges and CRC-check every batch."""
    from kafka_archive.replay.planning.plan import PartitionPlan
    from kafka_archive.store import open_store

    from segment_lib.log_file import iter_batches

    store_uri, plan_json = args
    plan = PartitionPlan.model_validate_json(plan_json)
    store = open_store(store_uri)
    t0, c0 = time.perf_counter(), time.process_time()
    batches = nbytes = 0
    for obj in plan.objects:
        data = store.get_range(obj.key, obj.start, obj.end)
        nbytes += len(data)
        batches += sum(1 for _ in iter_batches(memoryview(data)))
    return {"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0,
            "batches": batches, "bytes": nbytes}  # fmt: skip


def memory_write_task(args: tuple[str, str, str, str]) -> dict[str, Any]:
    """(b) rows already in memory as Arrow tables -> Parquet files staged as the export does."""
    import pyarrow.parquet as pq
    from kafka_archive.export.partition import COMPRESSION, DEFAULT_ROW_GROUP_ROWS
    from kafka_archive.export.schema import FILE_SCHEMA, RowBuffer, bucket_dir, bucket_of
    from kafka_archive.replay.execution.reader import BatchRecords, PartitionReader
    from kafka_archive.replay.planning.plan import PartitionPlan
    from kafka_archive.store import open_store

    store_uri, output_uri, export_id, plan_json = args
    plan = PartitionPlan.model_validate_json(plan_json)
    store, output = open_store(store_uri), open_store(output_uri)
    buffers: dict[Any, RowBuffer] = {}
    tables: dict[Any, list[Any]] = {}
    for group in PartitionReader(store, plan):  # untimed: put the rows in memory
        assert isinstance(group, BatchRecords)
        for rec in group:
            b = bucket_of(rec.timestamp)
            buf = buffers.setdefault(b, RowBuffer(TOPIC, None, plan.partition))
            buf.add(rec, group.header)
            if len(buf) >= DEFAULT_ROW_GROUP_ROWS:
                tables.setdefault(b, []).append(buf.take())
    for b, buf in buffers.items():
        if len(buf):
            tables.setdefault(b, []).append(buf.take())
    rows = sum(t.num_rows for ts in tables.values() for t in ts)
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        for seq, (b, ts) in enumerate(sorted(tables.items(), key=lambda kv: str(kv[0]))):
            path = Path(tmp) / f"{seq}.parquet"
            with pq.ParquetWriter(path, FILE_SCHEMA, compression=COMPRESSION) as writer:
                for t in ts:
                    writer.write_table(t)
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            key = f"{bucket_dir(b)}/part-{export_id}-p{plan.partition:05d}-{seq:05d}.parquet"
            output.put_file(staged_key(export_id, key), path, sha256=sha)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"seconds": seconds, "cpu": cpu, "rows": rows}


# -- the driver --------------------------------------------------------------------------------


def memory_frame(session: Any, store: LocalStore, plan: ExportPlan) -> Any:
    """The rows as a cached Spark DataFrame, one Spark partition per Kafka partition (built
    untimed, by the export's own producer): what ``iceberg-memory`` writes."""
    import pyarrow as pa
    from kafka_archive.export.batches import partition_batches
    from kafka_archive.export.iceberg import SPARK_ARROW_SCHEMA

    schema = SPARK_ARROW_SCHEMA
    table = pa.Table.from_batches(
        [b for p in plan.replay_plan.partitions
         for b in partition_batches(p, store=store, topic=TOPIC, schema=schema)],
        schema,
    )  # fmt: skip
    n = len(plan.replay_plan.partitions)
    frame = session.createDataFrame(table).repartitionByRange(n, "partition")
    frame = frame.cache()
    frame.count()
    return frame


def run_kind(
    kind: str,
    session: Any,
    plan: ExportPlan,
    settings: Any,
    store: LocalStore,
    tmp: Path,
    frame: Any = None,
) -> dict[str, float]:
    sc = session.sparkContext
    parts = plan.replay_plan.partitions
    out = Path(tempfile.mkdtemp(dir=tmp, prefix=f"{kind}-"))
    cpu0 = tree_cpu()
    t0 = time.perf_counter()
    if kind == "export":
        request = plan.request.model_copy(update={"output": str(out)})
        with ExportService(settings) as svc:
            report = svc.run(plan.model_copy(update={"request": request}), spark=session)
        wall = time.perf_counter() - t0
        return {
            "wall": wall,
            "task": max(report.task_s.values()),
            "cpu": sum(report.task_cpu_s.values()),
            "tree_cpu": tree_cpu() - cpu0,
        }
    if kind == "iceberg":
        # a fresh table each time (an export into the same table would find nothing new);
        # creating it is part of the figure
        table = f"bench.ice.t{next(_tables)}"
        request = ExportRequest.model_validate(
            {"cluster": CLUSTER, "topic": TOPIC, "from": "earliest", "output": str(out),
             "format": "iceberg", "table": table}
        )  # fmt: skip
        ranges = plan_ranges(plan.replay_plan)
        iplan = ExportPlan(
            export_id=export_id_for(CLUSTER, TOPIC, ranges, fmt=f"iceberg:{table}"),
            request=request,
            replay_plan_json=plan.replay_plan_json,
            table=table,
        )
        with ExportService(settings) as svc:
            ireport = svc.run(iplan, spark=session)
        assert ireport.status == "committed" and ireport.rows > 0, ireport
        wall = time.perf_counter() - t0
        # the rows are written by the JVM: only the whole tree's CPU says what it cost
        return {"wall": wall, "task": wall, "cpu": float("nan"), "tree_cpu": tree_cpu() - cpu0}
    if kind == "iceberg-memory":
        # Spark writing the same rows from memory into a fresh Iceberg table, as the export's
        # append does (same table definition, fanout writer, one snapshot), without the
        # archive read, the decode and the Python -> JVM hand-over
        from kafka_archive.export.iceberg import (
            TableName,
            create_table_sql,
            jdbc_catalog_properties,
            table_location,
            warehouse_uri,
        )
        from kafka_archive.spark.iceberg import configure_catalog

        name = TableName(catalog="bench", namespace="ice", table=f"m{next(_tables)}")
        warehouse = warehouse_uri(str(out))
        configure_catalog(session, "bench", jdbc_catalog_properties(settings.db, warehouse))
        session.sql("CREATE NAMESPACE IF NOT EXISTS `bench`.`ice`")
        session.sql(create_table_sql(name, table_location(warehouse, name)))
        frame.writeTo(name.spark).option("fanout-enabled", "true").append()
        wall = time.perf_counter() - t0
        return {"wall": wall, "task": wall, "cpu": float("nan"), "tree_cpu": tree_cpu() - cpu0}
    if kind == "read-bytes":
        tasks: list[Any] = [(store.uri, p.model_dump_json()) for p in parts]
        rows = sc.parallelize(tasks, len(tasks)).map(read_bytes_task).collect()
    else:
        tasks = [(store.uri, str(out), plan.export_id, p.model_dump_json()) for p in parts]
        rows = sc.parallelize(tasks, len(tasks)).map(memory_write_task).collect()
    wall = time.perf_counter() - t0
    return {
        "wall": wall,
        "task": max(r["seconds"] for r in rows),
        "cpu": sum(r["cpu"] for r in rows),
        "tree_cpu": tree_cpu() - cpu0,
    }


def measure(
    cores: int, plan: ExportPlan, settings: Any, store: LocalStore, tmp: Path, reps: int
) -> dict[str, dict[str, list[float]]]:
    from kafka_archive.spark.iceberg import find_iceberg_jars, iceberg_session_conf
    from kafka_archive.spark.session import make_spark_session

    jars = find_iceberg_jars(None)  # scripts/ensure-iceberg.sh's cache
    if not jars:
        raise SystemExit("no Iceberg jars: run scripts/ensure-iceberg.sh first")
    session = make_spark_session(
        f"local[{cores}]",
        conf={"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
              **iceberg_session_conf(jars)},
    )  # fmt: skip
    session.sparkContext.setLogLevel("ERROR")
    session.sparkContext.parallelize(range(cores * 2), cores * 2).map(_warm).collect()
    frame = memory_frame(session, store, plan)
    got: dict[str, dict[str, list[float]]] = {
        k: {"wall": [], "task": [], "cpu": [], "tree_cpu": []} for k in KINDS
    }
    for rep in range(-1, reps):
        order = KINDS[rep % len(KINDS) :] + KINDS[: rep % len(KINDS)]
        for kind in order:
            r = run_kind(kind, session, plan, settings, store, tmp, frame)
            if rep < 0:
                continue
            got[kind]["wall"].append(r["wall"])
            got[kind]["task"].append(r["task"])
            got[kind]["cpu"].append(r["cpu"])
            got[kind]["tree_cpu"].append(r["tree_cpu"])
            print(f"local[{cores}] rep {rep} {kind:13s} wall {r['wall']:6.2f} s  "
                  f"slowest task {r['task']:6.2f} s  task cpu {r['cpu']:6.2f} s  "
                  f"all cpu {r['tree_cpu']:6.2f} s", flush=True)  # fmt: skip
    frame.unpersist()
    session.stop()
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_source_args(ap, reps=3)
    args = ap.parse_args()

    tmp = _data.scratch_dir("bench-export-")
    dirs = write_source(tmp / "logs", args)
    store = LocalStore(tmp / "store", fsync=False)
    source = SegmentsPlanSource.upload_log_dirs(store, CLUSTER, dirs)
    db = f"sqlite:///{tmp / 'catalog.db'}"
    open_catalog(db, create=True).close()  # the export's lease lives in the catalog
    settings = load_settings({"store": store.uri, "db": db}, env={})
    spec = ReplaySpec.model_validate(
        {"cluster": CLUSTER, "topic": TOPIC, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers="export:", name="export")}
    )  # fmt: skip
    replay_plan = build_plan(spec, source)
    ranges = [
        PartitionRange(partition=p.partition, start_offset=p.start_offset, end_offset=p.end_offset)
        for p in replay_plan.partitions
    ]
    plan = ExportPlan(
        export_id=export_id_for(CLUSTER, TOPIC, ranges),
        request=ExportRequest.model_validate(
            {"cluster": CLUSTER, "topic": TOPIC, "from": "earliest", "output": str(tmp / "x")}
        ),
        replay_plan_json=replay_plan.to_json(),
    )
    total_rows = args.partitions * args.records
    archived = replay_plan.total_bytes
    print(f"source: {total_rows} records, {archived / 1e6:.1f} MB archived", flush=True)
    results: dict[str, Any] = {}
    load_before = os.getloadavg()
    for cores in (1, 2):
        got = measure(cores, plan, settings, store, tmp, args.reps)
        med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in got.items()}
        results[f"local[{cores}]"] = {
            "export_wall_s": med["export"]["wall"],
            "export_task_s": med["export"]["task"],
            "read_bytes_wall_s": med["read-bytes"]["wall"],
            "read_bytes_task_s": med["read-bytes"]["task"],
            "memory_write_task_s": med["memory-write"]["task"],
            "export_rows_per_s": total_rows / med["export"]["wall"],
            "export_task_rows_per_s": total_rows / med["export"]["task"],
            "read_bytes_rows_per_s": total_rows / med["read-bytes"]["wall"],
            "read_bytes_mb_per_s": archived / 1e6 / med["read-bytes"]["wall"],
            "memory_write_rows_per_s": total_rows / med["memory-write"]["task"],
            "ratio_export_vs_read_bytes": med["read-bytes"]["wall"] / med["export"]["wall"],
            "ratio_export_task_vs_memory_write": med["memory-write"]["task"]
            / med["export"]["task"],
            # CPU seconds of all tasks: what the work costs, whatever else the machine runs
            "export_rows_per_cpu_s": total_rows / med["export"]["cpu"],
            "read_bytes_rows_per_cpu_s": total_rows / med["read-bytes"]["cpu"],
            "memory_write_rows_per_cpu_s": total_rows / med["memory-write"]["cpu"],
            # Iceberg: the same rows appended to a fresh table (one snapshot), vs the Parquet
            # export; CPU of the whole process tree (driver, JVM, Python workers) for both
            "iceberg_wall_s": med["iceberg"]["wall"],
            "iceberg_rows_per_s": total_rows / med["iceberg"]["wall"],
            "iceberg_rows_per_all_cpu_s": total_rows / med["iceberg"]["tree_cpu"],
            "export_rows_per_all_cpu_s": total_rows / med["export"]["tree_cpu"],
            "ratio_iceberg_vs_export_wall": med["export"]["wall"] / med["iceberg"]["wall"],
            "ratio_iceberg_vs_export_all_cpu": med["export"]["tree_cpu"]
            / med["iceberg"]["tree_cpu"],
            "ratio_iceberg_vs_read_bytes_wall": med["read-bytes"]["wall"] / med["iceberg"]["wall"],
            # vs Spark writing the same rows from a cached DataFrame into Iceberg
            "iceberg_memory_wall_s": med["iceberg-memory"]["wall"],
            "ratio_iceberg_vs_iceberg_memory_wall": med["iceberg-memory"]["wall"]
            / med["iceberg"]["wall"],
            "ratio_iceberg_vs_iceberg_memory_all_cpu": med["iceberg-memory"]["tree_cpu"]
            / med["iceberg"]["tree_cpu"],
            "raw": got,
        }
    l1, l2 = results["local[1]"], results["local[2]"]
    summary = {
        "export_speedup_local2_vs_local1": l1["export_wall_s"] / l2["export_wall_s"],
        "memory_write_speedup_local2_vs_local1": l1["memory_write_task_s"]
        / l2["memory_write_task_s"],
        "iceberg_speedup_local2_vs_local1": l1["iceberg_wall_s"] / l2["iceberg_wall_s"],
        "read_bytes_speedup_local2_vs_local1": l1["read_bytes_wall_s"] / l2["read_bytes_wall_s"],
    }
    doc = {
        "kind": "export",
        "args": vars(args),
        "rows": total_rows,
        "archived_bytes": archived,
        "results": {k: {m: v for m, v in r.items() if m != "raw"} for k, r in results.items()},
        "raw": {k: r["raw"] for k, r in results.items()},
        "summary": summary,
        # the machine is shared: how busy it was (1/5/15-minute load averages) before and after
        "load_avg": {"before": load_before, "after": os.getloadavg()},
        "machine": _data.machine(),
    }
    path = _data.result_file("export", Path(args.out))
    path.write_text(json.dumps(doc, indent=1))
    for k, r in doc["results"].items():
        print(f"{k}: export {r['export_rows_per_s']:,.0f} rows/s (tasks "
              f"{r['export_task_rows_per_s']:,.0f}), raw read {r['read_bytes_rows_per_s']:,.0f} "
              f"rows/s ({r['read_bytes_mb_per_s']:.0f} MB/s), memory write "
              f"{r['memory_write_rows_per_s']:,.0f} rows/s, iceberg {r['iceberg_rows_per_s']:,.0f} "
              f"rows/s ({r['ratio_iceberg_vs_export_wall']:.2f}x the export's wall, "
              f"{r['ratio_iceberg_vs_export_all_cpu']:.2f}x per CPU-second; "
              f"{r['ratio_iceberg_vs_iceberg_memory_wall']:.2f}x / "
              f"{r['ratio_iceberg_vs_iceberg_memory_all_cpu']:.2f}x of Spark writing them to "
              "Iceberg from memory)")  # fmt: skip
    print(json.dumps(summary))
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
