"""Spark job: export an archived range of a topic as Parquet (or into an Iceberg table).

Runs the same with a local master and on a cluster; only the master URL changes::

    python spark_jobs/export.py --cluster prod --topic orders --from -24h \\
        --output s3://lake/kafka/orders --store s3://bucket/archive --db catalog.db
    spark-submit --master spark://spark-master:7077 spark_jobs/export.py \\
        --cluster prod --topic orders --from earliest --output s3://lake/kafka/orders
    spark-submit --packages org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0,\
org.apache.iceberg:iceberg-aws-bundle:1.12.0,org.postgresql:postgresql:42.7.8 \
        spark_jobs/export.py --cluster prod --topic orders --from earliest \
        --format iceberg --table lake.prod.orders --output s3://lake/warehouse

The driver plans the range from the catalog (as ``kafka-archive export`` does, through
:class:`kafka_archive.services.export.ExportService`), the executors read their partition's
archived objects and stage Parquet files in the output, and the driver commits the manifest.
It prints the export report as one JSON line. Exit status 0 on success, 1 when the export
failed (re-running completes it without duplicating rows), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from kafka_archive.replay.errors import ReplayError
from kafka_archive.services.export import ExportRequest, ExportService
from kafka_archive.settings import SettingsError, env_var, load_settings


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="export.py", description="Export archived Kafka data to Parquet with Spark."
    )
    p.add_argument("--cluster", required=True, help="source cluster name in the archive")
    p.add_argument("--topic", required=True, help="source topic")
    p.add_argument("--from", dest="from_", required=True, help="start (inclusive), as replay")
    p.add_argument("--to", default=None, help="end (exclusive); default the end of the archive")
    p.add_argument("--partitions", default=None, help="comma-separated partitions (default all)")
    p.add_argument("--output", required=True, help="output URI: a directory or s3://bucket/p")
    p.add_argument("--format", default="parquet", choices=["parquet", "iceberg"])
    p.add_argument("--table", default=None, help="iceberg: CATALOG.NAMESPACE.TABLE")
    p.add_argument("--store", default=None, help=f"archive store URI (default ${env_var('store')})")
    p.add_argument("--db", default=None, help=f"catalog URL or path (default ${env_var('db')})")
    p.add_argument(
        "--spark-master", default=None, help="Spark master URL (default: spark-submit's)"
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        partitions = [int(x) for x in args.partitions.split(",")] if args.partitions else None
    except ValueError:
        print(f"error: cannot read --partitions {args.partitions!r}", file=sys.stderr)
        return 2
    request = ExportRequest.model_validate(
        {"cluster": args.cluster, "topic": args.topic, "from": args.from_, "to": args.to,
         "partitions": partitions, "output": args.output, "format": args.format,
         "table": args.table}
    )  # fmt: skip
    try:
        settings = load_settings({"store": args.store, "db": args.db})
        with ExportService(settings) as service:
            report = service.run(service.plan(request), spark_master=args.spark_master)
    except ReplayError as exc:
        print(json.dumps({"kind": "error", **exc.to_dict()}), flush=True)
        return 1
    except SettingsError as exc:
        print(json.dumps({"kind": "error", "message": str(exc)}), flush=True)
        return 2
    print(report.model_dump_json(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
