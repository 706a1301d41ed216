"""Catalog build throughput vs a raw read of the same archived bytes from the same store, and
Spark scaling from 1 to 2 cores.

Setup: ``--partitions`` partitions of about ``--mib`` MiB in total are written by the
broker-faithful writer (uncompressed batches of ``--batch-kib`` KiB, out-of-order CreateTime),
rolled, and archived with the real archiver (``run_archive``) into the store: a local directory
(``file://``, default) or, with ``--store s3``, a moto S3 server on 127.0.0.1 (the tests' own).

Measured side by side, interleaved, ``--reps`` times (median):

* ``raw1`` / ``raw2``: every archived ``.log`` object read with the store's ``get_range`` in the
  same 8 MiB chunks the build uses, by 1 and by 2 threads (objects spread over the threads);
  nothing is done with the bytes. The floor of any reader of this store.
* ``spark1`` / ``spark2``: ``build_catalog`` into a fresh SQLite catalog with ``SparkRunner`` on
  ``local[1]`` / ``local[2]`` (Python workers warmed up first, session start not counted): list
  manifests, read every object with ranged reads, verify every batch CRC and the manifest's
  SHA-256, extract, write. ``report.seconds`` is the time.
* ``inproc`` (context): the same build in this process, one thread, no Spark.

Ratios: ``spark1 / raw1`` and ``spark2 / raw2`` (target >= 0.5x), ``spark2 / spark1`` (scaling).

    .venv/bin/python benchmarks/bench_catalog_build.py
    .venv/bin/python benchmarks/bench_catalog_build.py --mib 512 --batch-kib 64 --store s3
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

CHUNK = 8 << 20


def write_archive(root: Path, store: Any, mib: int, partitions: int, batch_kib: int) -> int:
    from kafka_archive.archive import run_archive

    from segment_lib.writer import BrokerWriter, ManualClock, WriteRecord

    rng = random.Random(1)
    clock = ManualClock(1_700_000_000_000)
    broker = BrokerWriter(root / "broker", 1, clock=clock)
    per_part = mib * (1 << 20) // partitions
    record = 1024
    per_batch = max(1, batch_kib * 1024 // (record + 20))
    payload = rng.randbytes(record)
    for p in range(partitions):
        pw = broker.partition("bench", p, segment_bytes=16 << 20)
        written = 0
        while written < per_part:
            now = clock.advance(rng.randint(1, 5))
            recs = [
                WriteRecord(b"k%d" % i, payload, (), now - rng.randint(0, 2000))
                for i in range(per_batch)
            ]
            written += pw.append(recs).size
        pw.roll()
    broker.close()
    report = run_archive(
        cluster="bench", broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store
    )
    return int(report.bytes_archived) if hasattr(report, "bytes_archived") else 0


def log_objects(store: Any) -> list[tuple[str, int]]:
    from kafka_archive.catalog._manifests import list_manifests, read_refs

    return [(r.object_key, r.size) for r in read_refs(store, list_manifests(store, "bench"))]


def raw_read(store: Any, objects: list[tuple[str, int]], threads: int) -> float:
    def one(obj: tuple[str, int]) -> int:
        key, size = obj
        n = 0
        for pos in range(0, size, CHUNK):
            n += len(store.get_range(key, pos, min(size, pos + CHUNK)))
        return n

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        total = sum(pool.map(one, objects))
    dt = time.perf_counter() - t0
    assert total == sum(s for _, s in objects)
    return dt


def build(store_uri: str, options: dict[str, Any], runner: Any, tmp: Path) -> tuple[float, Any]:
    from kafka_archive.catalog.build import build_catalog
    from kafka_archive.catalog.db import open_catalog

    db = tmp / f"bench-{time.monotonic_ns()}.db"
    with open_catalog(db) as cat:
        report = build_catalog(cat, store_uri, runner=runner, store_options=options)
    db.unlink()
    assert report.failed == [] and report.segments_added > 0
    return report.seconds, report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--batch-kib", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--store", choices=["local", "s3"], default="local")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args()

    from kafka_archive.catalog.build import InProcessRunner
    from kafka_archive.catalog.spark import SparkRunner, make_spark_session
    from kafka_archive.store import open_store

    tmp = Path(tempfile.mkdtemp(prefix="bench-catalog-"))
    moto = None
    try:
        options: dict[str, Any] = {}
        if args.store == "s3":
            import os

            from support.s3common import BUCKET, FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION

            os.environ.update(
                AWS_ACCESS_KEY_ID=FAKE_ACCESS_KEY,
                AWS_SECRET_ACCESS_KEY=FAKE_SECRET_KEY,
                AWS_DEFAULT_REGION=REGION,
            )
            moto = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r});"
                    " from support.s3server import _serve; _serve()",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            assert moto.stdout is not None
            port = int(moto.stdout.readline().split()[1])
            import boto3

            boto3.client(
                "s3", endpoint_url=f"http://127.0.0.1:{port}", region_name=REGION
            ).create_bucket(Bucket=BUCKET)
            options = {"endpoint_url": f"http://127.0.0.1:{port}", "region": REGION}
            store_uri = f"s3://{BUCKET}/bench"
        else:
            store_uri = (tmp / "store").as_uri()
        store = open_store(store_uri, **options)
        t0 = time.perf_counter()
        write_archive(tmp, store, args.mib, args.partitions, args.batch_kib)
        objects = log_objects(store)
        total = sum(s for _, s in objects)
        print(
            f"archive: {len(objects)} segments, {total / 1e6:.1f} MB "
            f"({time.perf_counter() - t0:.1f}s to write)",
            flush=True,
        )
        shutil.rmtree(tmp / "broker")

        sessions: dict[int, Any] = {}
        results: dict[str, list[float]] = {
            k: [] for k in ("raw1", "raw2", "spark1", "spark2", "inproc")
        }
        for rep in range(args.reps):
            order = ["raw1", "raw2", "spark1", "spark2", "inproc"]
            order = order[rep % len(order) :] + order[: rep % len(order)]
            for what in order:
                if what.startswith("raw"):
                    dt = raw_read(store, objects, int(what[-1]))
                elif what == "inproc":
                    dt, _ = build(store_uri, options, InProcessRunner(1), tmp)
                else:
                    cores = int(what[-1])
                    for c, s in list(sessions.items()):
                        if c != cores:
                            s.stop()
                            del sessions[c]
                    if cores not in sessions:
                        sessions[cores] = make_spark_session(f"local[{cores}]")
                        sessions[cores].sparkContext.setLogLevel("ERROR")
                        # start and warm the Python workers (imports) before timing
                        sessions[cores].sparkContext.parallelize(range(cores * 4), cores * 4).map(
                            lambda _: __import__("kafka_archive.catalog.build").__name__
                        ).collect()
                    dt, _ = build(store_uri, options, SparkRunner(sessions[cores]), tmp)
                results[what].append(dt)
                print(f"rep {rep} {what:7s} {dt:7.3f}s {total / dt / 1e6:8.1f} MB/s", flush=True)
        for s in sessions.values():
            s.stop()
        med = {k: statistics.median(v) for k, v in results.items()}
        mbs = {k: total / v / 1e6 for k, v in med.items()}
        summary = {
            "spark1/raw1": med["raw1"] / med["spark1"],
            "spark2/raw2": med["raw2"] / med["spark2"],
            "spark2/raw1": med["raw1"] / med["spark2"],
            "spark2/spark1": med["spark1"] / med["spark2"],
            "inproc/raw1": med["raw1"] / med["inproc"],
        }
        print(
            json.dumps(
                {
                    "MB/s": {k: round(v, 1) for k, v in mbs.items()},
                    "ratios": {k: round(v, 2) for k, v in summary.items()},
                },
                indent=1,
            )
        )
        args.out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        out = args.out / f"catalog-build-{args.store}-{stamp}.json"
        out.write_text(
            json.dumps(
                {
                    "benchmark": "catalog_build",
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "segments": len(objects),
                    "bytes": total,
                    "seconds": results,
                    "median": med,
                    "mb_per_s": mbs,
                    "ratios": summary,
                    "commit": commit,
                    "machine": {
                        "python": platform.python_version(),
                        "cpus": __import__("os").cpu_count(),
                        "platform": platform.platform(),
                    },
                },
                indent=1,
            )
        )
        print(f"wrote {out}")
    finally:
        if moto is not None and moto.stdin is not None:
            moto.stdin.close()
            moto.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
