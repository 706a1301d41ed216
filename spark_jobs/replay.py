"""Spark job: replay an archived range of a topic into a target cluster, one task per partition.

Runs the same with a local master and on a cluster; only the master URL changes::

    python spark_jobs/replay.py --plan plan.json --store file:///srv/archive --db catalog.db
    spark-submit --master spark://spark-master:7077 spark_jobs/replay.py \\
        --plan plan.json --store s3://bucket/archive --db postgresql://catalog@db/catalog

The plan is a :class:`kafka_archive.replay.planning.plan.ReplayPlan` as JSON (``kafka-archive replay
run --dry-run --json`` prints one; the CLI and the DAG write it for this job). Each executor reads
its partition's objects from the store itself and produces with its own transactional producer;
the driver collects the per-partition reports and prints the replay report as one JSON line.
Exit status 0 on success, 1 when the replay failed (re-running resumes it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from kafka_archive.replay.errors import ReplayError
from kafka_archive.replay.planning.plan import ReplayPlan
from kafka_archive.services.replay import ReplayService
from kafka_archive.settings import SettingsError, load_settings


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="replay.py",
        description="Replay archived Kafka data with Spark (see the docstring). Options not "
        "given come from the settings (KAFKA_ARCHIVE_STORE, KAFKA_ARCHIVE_DB, the "
        "KAFKA_ARCHIVE_CONFIG file; see docs/settings.md).",
    )
    p.add_argument("--plan", required=True, help="the replay plan JSON file")
    p.add_argument("--store", default=None, help="archive store URI (setting `store`)")
    p.add_argument(
        "--db",
        default=None,
        help="catalog URL or SQLite path (setting `db`; prefer the environment: a command "
        "line is visible to every local user)",
    )
    p.add_argument(
        "--spark-master",
        default=None,
        help="Spark master URL (default: spark-submit's, else local[*])",
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        settings = load_settings({"store": args.store, "db": args.db})
    except SettingsError as exc:
        print(f"error: {exc}; {exc.hint}", file=sys.stderr)
        return 2
    if not settings.store or not settings.db:
        print(
            "error: give --store and --db or set KAFKA_ARCHIVE_STORE and KAFKA_ARCHIVE_DB",
            file=sys.stderr,
        )
        return 2
    with open(args.plan, encoding="utf-8") as f:
        plan = ReplayPlan.from_json(f.read())
    try:
        with ReplayService(settings) as service:
            report = service.run(plan, execution="spark", spark_master=args.spark_master)
    except ReplayError as exc:
        print(json.dumps({"kind": "error", **exc.to_dict()}), flush=True)
        return 1
    print(report.model_dump_json(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
