"""Prune throughput: how long `archive prune` takes per segment, dry run and real.

Setup: ``--partitions`` partitions of ``--segments`` rolled segments each (small segments of
one topic, written by the broker-faithful writer), archived by the real archiver into a local
store (``file://``) and cataloged in-process into SQLite. Then, on fresh copies of that
archive, timed once each:

* ``dry_run``: ``prune(..., dry_run=True)`` with a size policy that selects ``--fraction`` of
  every partition (oldest first): planning only (catalog reads, one manifest read per pruned
  segment and per neighbour, one manifest listing per partition);
* ``prune``: the same prune for real: record (one catalog transaction per partition), raise
  the watermark, delete every object, mark done.

Printed and written to ``benchmarks/results/prune-*.json``: segments and objects pruned, wall
seconds, segments/s and objects/s.

    .venv/bin/python benchmarks/bench_prune.py --partitions 20 --segments 50
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import machine, result_file, scratch_dir, write_rolled_partitions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--segments", type=int, default=50)
    ap.add_argument("--fraction", type=float, default=0.5)
    args = ap.parse_args()

    from kafka_archive.archive import run_archive
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.catalog.prune import prune
    from kafka_archive.catalog.retention import RetentionPolicy
    from kafka_archive.store import open_store

    work = scratch_dir("bench-prune")
    base = work / "base"
    dirs = write_rolled_partitions(base / "logs", args.partitions, args.segments)
    store = open_store(str(base / "store"))
    archived = run_archive(cluster="b", broker_id=1, log_dirs=dirs, store=store)
    with open_catalog(str(base / "catalog.db"), create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
        total = sum(o.size for o in store.list("b/bench/") if o.key.endswith(".log"))
    store.close()
    limit = max(1, int(total * (1 - args.fraction)))
    policy = [RetentionPolicy(name="bench", topic="bench", max_bytes=limit)]
    out: dict[str, Any] = {
        "partitions": args.partitions,
        "segments_archived": archived.segments_archived,
        "fraction": args.fraction,
        "machine": machine(),
    }
    for mode in ("dry_run", "prune"):
        run = work / mode
        shutil.copytree(base, run)
        st = open_store(str(run / "store"))
        with open_catalog(str(run / "catalog.db")) as cat:
            t0 = time.perf_counter()
            report = prune(cat, st, policy, dry_run=mode == "dry_run")
            secs = time.perf_counter() - t0
        st.close()
        objects = sum(len(r.objects) for r in report.ranges)
        out[mode] = {
            "segments": report.segments,
            "objects": objects,
            "bytes": report.bytes,
            "seconds": round(secs, 3),
            "segments_per_s": round(report.segments / secs, 1) if secs else None,
            "objects_per_s": round(objects / secs, 1) if secs else None,
        }
    shutil.rmtree(work, ignore_errors=True)
    path = result_file("prune")
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "machine"}, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
