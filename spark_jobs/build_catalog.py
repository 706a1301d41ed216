"""Spark job: catalog every archived segment not cataloged yet.

Runs the same with a local master and on a cluster; only the master URL changes::

    python spark_jobs/build_catalog.py --store file:///srv/archive --db catalog.db
    spark-submit --master spark://spark-master:7077 spark_jobs/build_catalog.py \\
        --store s3://bucket/archive --db postgresql://catalog@db/catalog

The driver lists the archive's manifests, skips the ones the catalog holds, and spreads the new
segments over the executors (one task per core, segments grouped by bytes). Each executor reads
its objects from the store itself with ranged reads (boto3 for ``s3://``), checks each object
against its manifest (``--verify``: by default the whole-object CRC-32C and every batch CRC;
``crc32c-only`` the first alone; ``sha256`` the SHA-256 and every batch CRC), and returns the
extracted rows;
the driver writes them idempotently, one transaction per partition (see
:mod:`kafka_archive.catalog.build`). A re-run adds nothing; a run killed midway is completed by
the next. Prints the build report as one JSON line; exits 1 when segments failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from kafka_archive.catalog.build import VERIFY_ENV, build_catalog
from kafka_archive.catalog.db import DB_ENV, open_catalog
from kafka_archive.catalog.extract import DEFAULT_INTERVAL_BYTES
from kafka_archive.catalog.integrity import DEFAULT_VERIFY, VERIFY_CHOICES
from kafka_archive.spark.master import InvalidSparkMaster, check_spark_master
from kafka_archive.spark.session import SparkRunner, make_spark_session

STORE_ENV = "KAFKA_ARCHIVE_STORE"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="build_catalog.py",
        description="Catalog archived Kafka segments with Spark (see the module docstring).",
    )
    p.add_argument(
        "--store",
        default=os.environ.get(STORE_ENV),
        help=f"archive store URI (default ${STORE_ENV})",
    )
    p.add_argument(
        "--db",
        default=os.environ.get(DB_ENV),
        help=f"catalog database URL or SQLite path (default ${DB_ENV})",
    )
    p.add_argument("--cluster", default=None, help="only this cluster (default: all)")
    p.add_argument(
        "--spark-master",
        default=None,
        help="Spark master URL (default: spark-submit's, else local[*])",
    )
    p.add_argument(
        "--interval-bytes",
        type=int,
        default=DEFAULT_INTERVAL_BYTES,
        help="size limit of a time-index interval (default %(default)s)",
    )
    p.add_argument(
        "--verify",
        choices=VERIFY_CHOICES,
        default=os.environ.get(VERIFY_ENV) or DEFAULT_VERIFY,
        help=f"integrity check of each object (default ${VERIFY_ENV}, else %(default)s)",
    )
    args = p.parse_args(argv)
    if not args.store or not args.db:
        p.error(f"--store and --db are required (or set {STORE_ENV} and {DB_ENV})")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.spark_master is not None:
        try:
            check_spark_master(args.spark_master)
        except InvalidSparkMaster as exc:
            sys.stderr.write(f"build_catalog.py: --spark-master: {exc}; {exc.hint}\n")
            return 2
    spark = make_spark_session(args.spark_master)
    try:
        with open_catalog(args.db, create=True) as catalog:
            report = build_catalog(
                catalog,
                args.store,
                cluster=args.cluster,
                runner=SparkRunner(spark),
                interval_bytes=args.interval_bytes,
                verify=args.verify,
            )
    finally:
        spark.stop()
    sys.stdout.write(json.dumps({"kind": "build", **report.to_json()}) + "\n")
    # refused manifests/objects are recorded in the catalog; the run still says so by its exit
    for p in report.problems:
        sys.stderr.write(f"refused ({p['kind']}): {p['manifest_key']}: {p['reason']}\n")
    return 1 if report.failed or report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
