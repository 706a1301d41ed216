"""Archive throughput vs a bare boto3 upload of the same files to the same S3 endpoint.

One broker log dir (written by ``kafka_archive_dev.writer``: one partition, ``--segments`` rolled
segments of about ``--segment-mib`` MiB of incompressible records each) is uploaded to one S3
endpoint, repeatedly and interleaved (order rotated every repetition), by:

* ``boto3``: the baseline -- ``client.upload_file`` (boto3's transfer manager, its default
  ``TransferConfig``) of every file the archive stores for those segments (``.log``,
  ``.index``, ``.timeindex``, producer snapshot), one after the other, nothing else;
* ``archive``: ``kafka_archive.archive.run_archive`` -- discovery (SHA-256 of every ``.log``),
  planning (listing manifests), a CRC-32C check of every batch, SHA-256 + CRC-32C of every
  file, ``put_if_absent`` with the store's end-to-end verification (HEAD before, flexible
  SHA-256 checksum on upload, HEAD after), and a manifest per segment; default options
  (4 segments in parallel).

Each repetition writes under a fresh prefix (so the archive really uploads everything) and
deletes it afterwards. The ratio reported is archive throughput / boto3 throughput, i.e.
boto3 time / archive time, as the median over repetitions (target: >= 0.8).

The endpoint is moto in server mode (started here, as in the tests) unless ``--endpoint-url``
names another S3-compatible endpoint (credentials from the environment then). Usage::

    .venv/bin/python benchmarks/bench_archive.py
    .venv/bin/python benchmarks/bench_archive.py --segments 8 --segment-mib 32 --reps 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import _data
import boto3
import botocore.config
from kafka_archive.archive import run_archive
from kafka_archive.archive.discovery import discover_log_dir
from kafka_archive.store import open_store
from kafka_archive_dev.writer.broker_writer import BrokerWriter

MiB = 1024 * 1024
BUCKET = "kafka-archive-bench"


def write_log_dir(root: Path, segments: int, segment_mib: int) -> Path:
    """A broker log dir with ``segments`` rolled segments of random (incompressible) records."""
    b = BrokerWriter(root, 1, log_dirs=("data",))
    pw = b.partition("bench", 0, segment_bytes=segment_mib * MiB)
    value = 64 * 1024
    per_segment = (segment_mib * MiB) // (value + 100)
    for i in range(per_segment * segments + 1):
        pw.append([(f"k{i}".encode(), os.urandom(value))])
    b.close(active=True, preallocate_indexes=False)
    return b.log_dirs[0]


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    tests = Path(__file__).resolve().parent.parent / "tests"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(tests)!r}); "
            "from support.s3server import _serve; _serve()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    return proc, f"http://127.0.0.1:{int(line.split()[1])}"


def client(endpoint: str) -> Any:
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        config=botocore.config.Config(s3={"addressing_style": "path"}),
    )


def files_to_upload(log_dir: Path) -> list[Path]:
    """Exactly the files the archive stores: those of the discovered candidates."""
    d = discover_log_dir("bench", 1, log_dir)
    out = []
    for c in d.candidates:
        for lf in (c.log, c.index, c.timeindex, c.txnindex, c.snapshot):
            if lf is not None:
                out.append(c.path / lf.name)
    return out


def run_boto3(s3: Any, files: list[Path], prefix: str) -> None:
    for f in files:
        s3.upload_file(str(f), BUCKET, f"{prefix}/{f.parent.name}/{f.name}")


def run_ours(endpoint: str, log_dir: Path, prefix: str) -> None:
    store = open_store(f"s3://{BUCKET}/{prefix}", endpoint_url=endpoint)
    try:
        report = run_archive(cluster="bench", broker_id=1, log_dirs=[str(log_dir)], store=store)
        if not report.ok or report.segments_archived == 0:
            raise SystemExit(f"archive run failed: {report.summary_line()}")
    finally:
        store.close()


def delete_prefix(s3: Any, prefix: str) -> None:
    paginator = s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=BUCKET, Prefix=prefix + "/"):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=BUCKET, Delete={"Objects": keys})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segments", type=int, default=6)
    parser.add_argument("--segment-mib", type=int, default=16)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--endpoint-url", help="S3 endpoint (default: a moto server started here)")
    parser.add_argument("--out", help="result JSON (default benchmarks/results/archive-*.json)")
    args = parser.parse_args()

    moto = None
    if args.endpoint_url:
        endpoint = args.endpoint_url
    else:
        os.environ.update(
            AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
        )
        moto, endpoint = start_moto()
    s3 = client(endpoint)
    try:
        try:
            s3.create_bucket(Bucket=BUCKET)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        with tempfile.TemporaryDirectory(prefix="bench-archive-") as tmp:
            log_dir = write_log_dir(Path(tmp), args.segments, args.segment_mib)
            files = files_to_upload(log_dir)
            total = sum(f.stat().st_size for f in files)
            print(f"{len(files)} files, {total / MiB:.1f} MiB, endpoint {endpoint}")
            contenders = {
                "boto3": lambda prefix: run_boto3(s3, files, prefix),
                "archive": lambda prefix: run_ours(endpoint, log_dir, prefix),
            }
            times: dict[str, list[float]] = {k: [] for k in contenders}
            order = list(contenders)
            for rep in range(args.reps + 1):  # the first repetition warms up, not counted
                for name in order:
                    prefix = f"{name}-{uuid.uuid4().hex[:8]}"
                    t0 = time.perf_counter()
                    contenders[name](prefix)
                    elapsed = time.perf_counter() - t0
                    delete_prefix(s3, prefix)
                    if rep:
                        times[name].append(elapsed)
                        print(
                            f"rep {rep} {name:8s} {elapsed:7.3f} s  "
                            f"{total / MiB / elapsed:7.1f} MiB/s"
                        )
                order = order[1:] + order[:1]
            ratios = [b / a for b, a in zip(times["boto3"], times["archive"], strict=True)]
            med = {k: statistics.median(v) for k, v in times.items()}
            summary = {
                "files": len(files),
                "bytes": total,
                "median_s": med,
                "median_mib_s": {k: total / MiB / v for k, v in med.items()},
                "ratio_archive_over_boto3": statistics.median(ratios),
                "ratios": ratios,
            }
    finally:
        if moto is not None and moto.stdin is not None:
            moto.stdin.close()
            moto.wait(timeout=30)
    print(json.dumps(summary, indent=2))
    out = Path(args.out) if args.out else _data.result_file("archive")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "benchmark": "archive",
                "machine": _data.machine(),
                "params": vars(args) | {"endpoint": endpoint},
                "times": times,
                "summary": summary,
            },
            indent=2,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
