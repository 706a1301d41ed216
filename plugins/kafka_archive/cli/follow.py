"""``kafka-archive catalog follow-offsets``: read a live cluster's ``__consumer_offsets`` into the
catalog (the offsets follower, :mod:`kafka_archive.offsets_follower.follower`), so that
``catalog group-offsets`` has every commit even after the broker compacted the topic."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from kafka_archive.cli.catalog_options import DbOpt
from kafka_archive.cli.client_settings import SETTINGS_FILE_HELP, parse_settings
from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json, fail

_HELP = """Follow __consumer_offsets of a live cluster into the catalog, exactly once.

Reads every partition read_committed (commits of aborted transactions are never recorded), decodes every record and stores each offset commit with its record timestamp; the position per partition is stored in the same database transaction, so a run killed at any moment resumes where it stopped, losing and repeating nothing. Commits are lost only if the broker compacts them away while no follower runs (docs/catalog.md, "The offsets follower").

Without --until-caught-up or --duration it runs until interrupted (SIGTERM or Ctrl-C end it cleanly; whatever was stored stays stored).

Examples:

  kafka-archive catalog follow-offsets --cluster prod --bootstrap kafka-1:9092 --db catalog.db --until-caught-up

  kafka-archive catalog follow-offsets --cluster prod --bootstrap kafka-1:9092 --duration 10m

  kafka-archive catalog follow-offsets --cluster prod --bootstrap kafka-1:9093 -X security.protocol=SSL -X ssl.ca.location=/etc/kafka/ca.pem --until-caught-up --json
"""  # noqa: E501 - paragraphs are one line each: the help formatter wraps them


def follow_offsets_command(
    cluster: Annotated[str, typer.Option("--cluster", help="Cluster name, as archived.")],
    bootstrap: Annotated[
        str, typer.Option("--bootstrap", help="Bootstrap servers of the cluster, HOST:PORT[,...].")
    ],
    db: DbOpt = "",
    until_caught_up: Annotated[
        bool,
        typer.Option(
            "--until-caught-up",
            help="Stop once every partition reached its end (its last stable offset).",
        ),
    ] = False,
    duration: Annotated[
        str | None, typer.Option("--duration", help="Stop after this long, e.g. 60s, 10m, 1h.")
    ] = None,
    config: Annotated[
        list[str] | None,
        typer.Option(
            "-X",
            "--consumer-config",
            help="librdkafka consumer setting KEY=VALUE (security, timeouts); repeatable. "
            + SETTINGS_FILE_HELP,
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            help="Serve Prometheus metrics (the follower's own counters and the catalog's "
            "health, with this cluster's ends) at http://0.0.0.0:PORT/metrics while it runs.",
            min=0,
            max=65535,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    from kafka_archive.cli.catalog_options import parse_duration_ms
    from kafka_archive.cli.context import cli_settings, open_catalog_or_fail
    from kafka_archive.services.offsets_follower import OffsetsFollowerService

    duration_s = None
    if duration is not None:
        try:
            duration_s = parse_duration_ms(duration) / 1000.0
        except ValueError as exc:
            fail(f"--duration: {exc}", as_json=as_json)
    extra = parse_settings(config, "-X", as_json)
    settings = cli_settings(as_json, db=db)
    db = settings.db or ""
    if not db:
        fail(
            "no catalog given",
            hint="pass --db PATH_OR_URL or set KAFKA_ARCHIVE_DB",
            as_json=as_json,
        )
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        # before a catalog is created: a wrong address makes none
        OffsetsFollowerService(settings).probe(bootstrap, extra)
    except Exception as exc:  # unreachable, or a setting librdkafka refuses
        fail(
            f"{exc}",
            hint="check --bootstrap (host:port of the source brokers) and any -X security "
            "settings, then run again",
            as_json=as_json,
        )
    # the follower may be the catalog's first writer; errors name it with the password hidden
    cat = open_catalog_or_fail(db, as_json, create=True)
    from kafka_archive.cli.follow_metrics import FollowerMetrics

    served = FollowerMetrics.start(cat, cluster, bootstrap, extra, metrics_port, as_json)
    with OffsetsFollowerService(settings, catalog=cat) as service:  # closes the catalog
        try:
            report = service.follow(
                cluster,
                bootstrap,
                until_caught_up=until_caught_up,
                duration_s=duration_s,
                config=extra,
                handle_signals=True,
                on_batch=served.on_batch if served else None,
            )
        except Exception as exc:  # a Kafka or database failure: report it; positions are safe
            if served:
                served.failed(exc)
            fail(
                f"following __consumer_offsets of {cluster} failed: {exc}",
                hint="everything stored so far is kept; a re-run resumes from the stored positions",
                as_json=as_json,
            )
        finally:
            if served:  # before the catalog it reads is closed
                served.stop()
    if as_json:
        emit_json(report.to_json())
        return
    console.print(
        f"{cluster}: read {report.records_read} record(s) of {report.partitions} "
        f"__consumer_offsets partition(s) in {report.seconds}s: {report.commits_recorded} "
        f"commit(s), {report.tombstones_recorded} offset deletion(s), {report.group_records} "
        f"group record(s), {report.undecodable} undecodable; stopped: {report.stopped_by}"
    )
    if report.behind_log_start:
        console.print(
            "[yellow]warning:[/] records were deleted before they were read on partition(s) "
            + ", ".join(str(p) for p in sorted(report.behind_log_start))
        )


def register(catalog_app: typer.Typer) -> None:
    """Add ``follow-offsets`` to the ``catalog`` command group."""
    catalog_app.command("follow-offsets", help=_HELP)(follow_offsets_command)
