"""One export task in-process (no Spark): the compiled decoder against the Python path, a
memory write of the same rows and a raw read of the same archived bytes.

The source is ``bench_export.py``'s (``--partitions`` partitions of ``--records`` records,
``--value-bytes`` values, one header, ``--batch`` records per batch, ``--codec``), planned the
same way. Per repetition (one unrecorded warm-up first), in an order rotated per repetition,
each partition in turn, in this process:

* ``export``: :func:`kafka_archive.export.partition.export_partition` as a Spark task with one
  core runs it (read and CRC-check, decode whole batches in C into Arrow buffers, write zstd
  Parquet, stage through the store layer; no writer thread);
* ``export-threaded``: the same with a writer thread beside the decoding, as a task with a core
  to spare runs it (:func:`kafka_archive.spark.export.run_export_tasks` decides);
* ``export-python``: the same with ``compiled=False`` (the Python decode and column building of
  before issue 26);
* ``memory-write``: the same rows, already Arrow tables in memory (built untimed), written as
  the export writes them (ParquetWriter, zstd, row groups, SHA-256, staged ``put_file``);
* ``read-bytes``: the planned byte ranges read (zero-copy, as the export reads them) and walked
  with CRC checks, nothing decoded.

Figures: rows per CPU-second (``time.process_time``: what the work costs, whatever else the
shared machine runs) and per wall second; medians over ``--reps``. Spark's per-job and per-task
costs are not in them (``bench_export.py`` measures the export on Spark). Results go to
``benchmarks/results/export-task-<UTC time>.json``.

    .venv/bin/python benchmarks/bench_export_task.py --reps 7
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _data  # noqa: E402
from bench_export import TOPIC, add_source_args, write_source  # noqa: E402
from kafka_archive.export.columns import iter_tables  # noqa: E402
from kafka_archive.export.partition import COMPRESSION, export_partition  # noqa: E402
from kafka_archive.export.schema import FILE_SCHEMA  # noqa: E402
from kafka_archive.replay.execution.reader import PartitionReader  # noqa: E402
from kafka_archive.replay.planning.plan import (  # noqa: E402
    ReplaySpec,
    TargetSpec,
    build_plan,
    parse_position,
)
from kafka_archive.replay.planning.sources import SegmentsPlanSource  # noqa: E402
from kafka_archive.store import LocalStore  # noqa: E402
from kafka_archive.store.base import read_view  # noqa: E402

from segment_lib.log_file import iter_batches  # noqa: E402

KINDS = ("export", "export-threaded", "export-python", "memory-write", "read-bytes")
EXPORT_ID = "e-0123456789abcdef"


def main() -> int:
    import pyarrow.parquet as pq

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_source_args(ap, reps=7)
    args = ap.parse_args()

    tmp = _data.scratch_dir("bench-export-task-")
    dirs = write_source(tmp / "logs", args)
    store = LocalStore(tmp / "store", fsync=False)
    source = SegmentsPlanSource.upload_log_dirs(store, "bench-src", dirs)
    spec = ReplaySpec.model_validate(
        {"cluster": "bench-src", "topic": TOPIC, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers="export:", name="export")}
    )  # fmt: skip
    plans = build_plan(spec, source).partitions
    rows = args.partitions * args.records
    archived = sum(o.end - o.start for p in plans for o in p.objects)
    tables = {
        p.partition: list(iter_tables(PartitionReader(store, p), topic=TOPIC, topic_id=None,
                                      rows_per_table=65_536, compiled=False))
        for p in plans
    }  # fmt: skip

    def run(kind: str, rep: int) -> None:
        for p in plans:
            out = LocalStore(tmp / f"out-{kind}-{rep}-{p.partition}", fsync=False)
            if kind in ("export", "export-threaded", "export-python"):
                export_partition(p, store=store, output=out, export_id=EXPORT_ID, topic=TOPIC,
                                 compiled=kind != "export-python",
                                 write_thread=kind == "export-threaded")  # fmt: skip
            elif kind == "memory-write":
                path = tmp / f"mem-{rep}-{p.partition}.parquet"
                with pq.ParquetWriter(path, FILE_SCHEMA, compression=COMPRESSION) as writer:
                    for t in tables[p.partition]:
                        writer.write_table(t)
                sha = hashlib.sha256(path.read_bytes()).hexdigest()
                out.put_file(f"_staging/{EXPORT_ID}/x-{p.partition}.parquet", path, sha256=sha)
                path.unlink()
            else:
                for obj in p.objects:
                    view = memoryview(read_view(store, obj.key, obj.start, obj.end))
                    sum(1 for _ in iter_batches(view))

    got: dict[str, dict[str, list[float]]] = {k: {"cpu": [], "wall": []} for k in KINDS}
    load_before = os.getloadavg()
    for rep in range(-1, args.reps):
        order = KINDS[rep % len(KINDS) :] + KINDS[: rep % len(KINDS)]
        for kind in order:
            c0, w0 = time.process_time(), time.perf_counter()
            run(kind, rep)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            if rep >= 0:
                got[kind]["cpu"].append(cpu)
                got[kind]["wall"].append(wall)
                print(f"rep {rep} {kind:14s} cpu {cpu:6.3f} s  wall {wall:6.3f} s", flush=True)
    med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in got.items()}
    results: dict[str, Any] = {f"{k}_rows_per_cpu_s": rows / med[k]["cpu"] for k in KINDS} | {
        f"{k}_rows_per_wall_s": rows / med[k]["wall"] for k in KINDS
    }
    results |= {
        "ratio_export_vs_memory_write_cpu": med["memory-write"]["cpu"] / med["export"]["cpu"],
        "ratio_export_vs_memory_write_wall": med["memory-write"]["wall"] / med["export"]["wall"],
        "ratio_export_threaded_vs_memory_write_cpu": med["memory-write"]["cpu"]
        / med["export-threaded"]["cpu"],
        "ratio_export_threaded_vs_memory_write_wall": med["memory-write"]["wall"]
        / med["export-threaded"]["wall"],
        "ratio_export_python_vs_memory_write_cpu": med["memory-write"]["cpu"]
        / med["export-python"]["cpu"],
        "ratio_export_vs_read_bytes_wall": med["read-bytes"]["wall"] / med["export"]["wall"],
        "speedup_export_vs_python_cpu": med["export-python"]["cpu"] / med["export"]["cpu"],
    }
    doc = {
        "kind": "export-task",
        "args": vars(args),
        "rows": rows,
        "archived_bytes": archived,
        "results": results,
        "raw": got,
        "load_avg": {"before": load_before, "after": os.getloadavg()},
        "machine": _data.machine(),
    }
    path = _data.result_file("export-task", Path(args.out))
    path.write_text(json.dumps(doc, indent=1))
    for k, v in results.items():
        print(f"{k}: {v:,.2f}")
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
