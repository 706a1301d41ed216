"""``kafka-archive export``: write an archived range of a topic as Parquet files, with Spark.

The rows are the records a replay of the same range would deliver (committed records only;
control batches and aborted transactions left out); the schema and the output layout are in
docs/export.md. Re-running the same command is safe: an export id derived from the resolved
range names the files, and the manifest ``_kafka_archive_export.json``, written last, says
which files the export is made of. Exit status: 0 success, 1 failure (run the same command
again to complete it) or an incomplete export (a transaction was open where the archive ends:
its manifest says ``complete: false``; the same command run again once the archive holds the
outcome completes it), 2 usage errors.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, NoReturn

import typer

from kafka_archive.cli.context import (
    cli_settings,
    fail_archive_read,
    open_catalog_or_fail,
    open_store_or_fail,
    parse_partitions,
)
from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json, err_console, fail

HELP = (
    "Export an archived range of a topic to Parquet files (local directory or S3), with Spark: "
    "the records a replay would deliver, one row each.\n\n"
    "Rows are committed records only (control batches and aborted transactions left out), with "
    "the columns topic, topic_id, partition, offset, timestamp, timestamp_type, key, value, "
    "headers, leader_epoch, producer_id, under date=YYYY-MM-DD/hour=HH directories (UTC). The "
    "manifest _kafka_archive_export.json is written last and lists every file; re-running the "
    "same range adds nothing.\n\n"
    "\b\nExamples:\n"
    "  kafka-archive export --cluster prod --topic orders --from -24h --to -1h \\\n"
    "      --output s3://lake/kafka/orders\n"
    "  kafka-archive export --cluster prod --topic orders --from earliest \\\n"
    "      --output /data/orders-parquet --partitions 0-3 --spark-master local[2] --json\n"
    "  kafka-archive export --cluster prod --topic orders --from earliest --format iceberg \\\n"
    "      --table lake.prod.orders --output s3://lake/warehouse   # again: appends what is new\n\n"
    "--format iceberg appends to an Apache Iceberg table (JDBC catalog in the --db database, "
    "files under the --output warehouse), one snapshot per export; each run continues from "
    "the offsets the table's last export snapshot holds (docs/export.md)."
)


def _fail_export(exc: BaseException, as_json: bool) -> NoReturn:
    again = "run the same command again: the export completes without duplicating rows"
    fail_archive_read(exc, as_json, bad_bytes_hint=f"repair or re-archive the object, then {again}")
    if type(exc).__module__.startswith(("py4j", "pyspark")):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        fail(f"the Spark job failed: {first[:500]}", hint=f"fix the cause, then {again}",
             as_json=as_json)  # fmt: skip
    raise exc


def export(
    cluster: Annotated[str, typer.Option("--cluster", help="Source cluster name in the archive.")],
    topic: Annotated[str, typer.Option("--topic", help="Source topic.")],
    from_: Annotated[
        str,
        typer.Option(
            "--from",
            help="Start: time (ISO-8601, epoch ms, -2h), offset:N, offset:P=N,..., earliest "
            "or latest (inclusive).",
        ),
    ],
    output: Annotated[
        str,
        typer.Option("--output", help="Where to write: a directory, file:///dir or s3://b/p."),
    ],
    to: Annotated[
        str | None,
        typer.Option("--to", help="End, same forms (exclusive); default: the end of the archive."),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="Output format: parquet or iceberg.")
    ] = "parquet",
    table: Annotated[
        str | None,
        typer.Option(
            "--table",
            help="--format iceberg: the table CATALOG.NAMESPACE.TABLE (default "
            "kafka_archive.<cluster>.<topic>); --output is the warehouse of new tables.",
        ),
    ] = None,
    partitions: Annotated[
        str | None, typer.Option("--partitions", help="e.g. 0,1,2 or 0-5 (default all).")
    ] = None,
    spark_master: Annotated[
        str | None,
        typer.Option(
            "--spark-master",
            help="Spark master (local[2], spark://host:7077, ...); default the spark_master "
            "setting, else local[*].",
        ),
    ] = None,
    allow_gaps: Annotated[
        bool,
        typer.Option(
            "--allow-gaps", help="Export around holes of the archive instead of refusing."
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and the export id; write nothing.")
    ] = False,
    wait_open_txns: Annotated[
        int,
        typer.Option(
            "--wait-for-open-transactions",
            min=0,
            metavar="SECONDS",
            help="When a transaction was still open where the archive ends, inside the range: "
            "look at the catalog again every 10 s, at most SECONDS, until the archive holds "
            "its outcome (default 0: do not wait; the export then ends incomplete, its "
            "manifest says so, and running it again later completes it).",
        ),
    ] = 0,
    store: Annotated[
        str | None,
        typer.Option("--store", help="Archive store URI (default $KAFKA_ARCHIVE_STORE)."),
    ] = None,
    db: Annotated[
        str | None, typer.Option("--db", help="Catalog URL or path (default $KAFKA_ARCHIVE_DB).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    from pydantic import ValidationError

    from kafka_archive.cli.replay import waiting_for_open_transactions
    from kafka_archive.services.export import ExportRequest, ExportService

    if fmt not in ("parquet", "iceberg"):
        fail(f"unknown format {fmt!r}", hint="use --format parquet or --format iceberg", code=2,
             as_json=as_json)  # fmt: skip
    if table is not None and fmt != "iceberg":
        fail("--table is for --format iceberg", code=2, as_json=as_json)
    try:
        request = ExportRequest.model_validate(
            {
                "cluster": cluster,
                "topic": topic,
                "from": from_,
                "to": to,
                "partitions": parse_partitions(partitions, as_json),
                "output": output,
                "format": fmt,
                "table": table,
                "allow_gaps": allow_gaps,
            }
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        option = "--" + str(err["loc"][0]).rstrip("_") if err.get("loc") else "a value"
        fail(f"{option}: {err['msg']}", code=2, as_json=as_json)
    catalog = open_catalog_or_fail(db, as_json)
    archive = open_store_or_fail(store, as_json)
    settings = cli_settings(as_json, store=store, db=db)
    service = ExportService(settings, catalog=catalog, store=archive)
    try:
        plan = service.plan(
            request,
            wait_open_txns_s=0 if dry_run else wait_open_txns,
            on_wait=waiting_for_open_transactions(as_json, wait_open_txns),
        )
        if dry_run:
            _print_plan(plan.summary(), as_json)
            return
        report = _run(service, plan, spark_master, as_json)
    except Exception as exc:
        _fail_export(exc, as_json)
    finally:
        service.close()
    _print_report(report.model_dump(mode="json"), as_json)
    if report.status == "incomplete":
        # committed, but not everything asked for: the manifest says so (complete: false)
        if as_json:
            raise typer.Exit(1)
        lines = "; ".join(r["message"] for r in report.incomplete)
        fail(f"export {report.export_id} is incomplete: {lines}", hint=report.hint, code=1)


def _run(service: Any, plan: Any, spark_master: str | None, as_json: bool) -> Any:
    if as_json or not sys.stderr.isatty():
        return service.run(plan, spark_master=spark_master)
    with err_console.status(f"exporting {plan.export_id} with Spark ..."):
        return service.run(plan, spark_master=spark_master)


def _print_plan(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(summary)
        return
    from kafka_archive.counts import COMMITTED, OFFSETS

    console.print(
        f"export [bold]{summary['export_id']}[/] of {summary['cluster']}/{summary['topic']} "
        f"to {summary['output']}: {summary['records_at_most']} {OFFSETS}, "
        f"{summary['bytes']} bytes to read; it writes their {COMMITTED}, one row each "
        "(aborted records and transaction markers are skipped)"
    )
    for p in summary["partitions"]:
        console.print(
            f"  partition {p['partition']}: offsets [{p['start_offset']}, {p['end_offset']})"
            + (f", {p['holes']} hole(s)" if p["holes"] else "")
        )


def _print_report(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(report)
        return
    done = {
        "already-committed": "already committed: nothing written",
        "incomplete": "committed INCOMPLETE (the manifest says so)",
        "up-to-date": "up to date: the table holds everything archived, nothing written",
    }.get(report["status"], "committed")
    from kafka_archive.counts import ABORTED, COMMITTED, MARKERS

    if report.get("table"):
        console.print(
            f"export [bold]{report['export_id'] or '-'}[/] to {report['table']} {done}: "
            f"{report['rows']} rows ({COMMITTED}) in {report['files']} file(s), "
            f"{report['bytes_written']} bytes, snapshot {report['snapshot_id']}, "
            f"{report['duration_s']} s"
        )
        console.print(f"  offsets now: {report['offsets']}")
        return
    console.print(
        f"export [bold]{report['export_id']}[/] {done}: {report['rows']} rows ({COMMITTED}) "
        f"in {report['files']} file(s), {report['bytes_written']} bytes, "
        f"{report['duration_s']} s ({report['rows_per_s']} rows/s)"
    )
    console.print(
        f"  skipped: {report['aborted_records']} {ABORTED}, {report['control_batches']} "
        f"{MARKERS}, {report['open_txn_records']} record(s) of transactions still open"
    )
    console.print(f"  manifest: {report['manifest']}")


def register(app: typer.Typer) -> None:
    """Add ``export`` to the ``kafka-archive`` command line."""
    app.command(name="export", help=HELP)(export)
