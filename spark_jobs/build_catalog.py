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
import sys
from collections.abc import Sequence

from kafka_archive.catalog.extract import DEFAULT_INTERVAL_BYTES
from kafka_archive.catalog.integrity import VERIFY_CHOICES
from kafka_archive.services.catalog_build import CatalogBuildService
from kafka_archive.settings import SettingsError, load_settings
from kafka_archive.spark.master import InvalidSparkMaster, check_spark_master


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="build_catalog.py",
        description="Catalog archived Kafka segments with Spark (see the module docstring). "
        "Options not given come from the settings (KAFKA_ARCHIVE_STORE, KAFKA_ARCHIVE_DB, "
        "KAFKA_ARCHIVE_CATALOG_VERIFY, the KAFKA_ARCHIVE_CONFIG file; see docs/settings.md).",
    )
    p.add_argument("--store", default=None, help="archive store URI (setting `store`)")
    p.add_argument(
        "--db",
        default=None,
        help="catalog database URL or SQLite path (setting `db`; prefer the environment: a "
        "command line is visible to every local user)",
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
        default=None,
        help="integrity check of each object (setting `catalog_verify`, default crc32c)",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        settings = load_settings(
            {"store": args.store, "db": args.db, "catalog_verify": args.verify}
        )
    except SettingsError as exc:
        sys.stderr.write(f"build_catalog.py: {exc}; {exc.hint}\n")
        return 2
    if not settings.store or not settings.db:
        sys.stderr.write(
            "build_catalog.py: --store and --db are required (or set "
            "KAFKA_ARCHIVE_STORE and KAFKA_ARCHIVE_DB)\n"
        )
        return 2
    if args.spark_master is not None:
        try:
            check_spark_master(args.spark_master)
        except InvalidSparkMaster as exc:
            sys.stderr.write(f"build_catalog.py: --spark-master: {exc}; {exc.hint}\n")
            return 2
    # the Spark job always runs on Spark (the catalog DAG builds small increments in its own
    # task instead of submitting this job); the service stops the session it starts
    with CatalogBuildService(settings) as service:
        # spark-submit's own master when none is given (a job does not pick a master itself)
        report = service.build(
            engine="spark",
            spark_master=args.spark_master,
            cluster=args.cluster,
            interval_bytes=args.interval_bytes,
        )
    sys.stdout.write(json.dumps({"kind": "build", **report.to_json()}) + "\n")
    # refused manifests/objects are recorded in the catalog; the run still says so by its exit
    for p in report.problems:
        sys.stderr.write(f"refused ({p['kind']}): {p['manifest_key']}: {p['reason']}\n")
    return 1 if report.failed or report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
