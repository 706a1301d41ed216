"""``kafka-archive archive fetch``: archive a cluster over the Kafka protocol (the fetch
archiver, :mod:`kafka_archive.archive.fetch`), for clusters whose disks we cannot read.

Thin: options parsed, :meth:`~kafka_archive.services.archive.ArchiveService.archive_fetch`
called, its report printed; every failure is one message (secrets redacted), exit 1 (or 2 for
usage errors). Exit 0 when every partition was archived as far as asked; a hole (data the
broker deleted before it was archived) is reported and logged, not a failure.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_archive.cli.client_settings import SETTINGS_FILE_HELP, parse_settings
from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json, err_console, fail
from kafka_archive.cli.store_options import STORE_OPTION, open_archive_store, parse_store_options
from kafka_archive.sizes import format_bytes

if TYPE_CHECKING:
    from kafka_archive.archive.fetch.report import FetchReport
    from kafka_archive.archive.fetch.runner import FetchOptions

__all__ = ["HELP", "fetch_click_command", "fetch_command"]

HELP = """Archive a cluster over the Kafka protocol: for clusters whose disks you cannot read.

Fetches every selected partition read_uncommitted (aborted data and transaction markers included) up to its high watermark only, and keeps the record batches byte for byte, laid out in segment files exactly as a broker writes them (.log, .index, .timeindex, .txnindex; rolled by the topic's segment.bytes and segment.ms). Each segment is uploaded with the disk archiver's layout and checks and its manifest written last (origin "fetch"), so catalog build, replay, export and prune work on it unchanged.

Several archivers started with one --group share the partitions (a Kafka consumer group: each partition is archived by one member; a dead member's partitions go to the others after --session-timeout). Each segment's base offset is claimed in the store before its manifest is written, so two writers of one partition (a hand-over, or two archivers started by mistake) never double an offset or leave a hole.

Progress is what the store holds: a run killed at any point resumes from the newest fetched manifest of each partition, losing and repeating nothing. Offsets the broker deleted before they were archived (retention) are a reported hole, never a silent skip. Without --until-caught-up or --duration it runs until interrupted (SIGTERM or Ctrl-C: the open segments are uploaded, then it stops).

The principal needs Describe and Read on the topics and DescribeConfigs on them (docs/archive.md, "The fetch archiver").

Examples:

  kafka-archive archive fetch --cluster prod --bootstrap kafka-1:9092 --store s3://bucket/kafka --until-caught-up

  kafka-archive archive fetch --cluster prod --bootstrap kafka-1:9093 --store file:///srv/archive --topics 'orders-*' -X @client.properties --duration 1h --json

  kafka-archive archive fetch --cluster prod --bootstrap kafka-1:9092 --store s3://bucket/kafka --group kafka-archive-prod
"""  # noqa: E501 - paragraphs are one line each: the help formatter wraps them


def fetch_command(
    cluster: Annotated[str, typer.Option("--cluster", help="Cluster name (first key segment).")],
    bootstrap: Annotated[
        str, typer.Option("--bootstrap", help="Bootstrap servers of the cluster, HOST:PORT[,...].")
    ],
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Store URI: s3://bucket/prefix or file:///dir (env KAFKA_ARCHIVE_STORE).",
        ),
    ] = None,
    topics: Annotated[
        list[str] | None,
        typer.Option(
            "--topics",
            metavar="GLOB",
            help="Archive only topics matching this glob, case-sensitive, e.g. 'orders-*' "
            "(repeatable; default: every topic), as `archive --topics`. Internal topics "
            "(__consumer_offsets, __transaction_state) only when given by their exact name.",
        ),
    ] = None,
    until_caught_up: Annotated[
        bool,
        typer.Option(
            "--until-caught-up",
            help="Stop once every partition is archived up to the high watermark it had when "
            "the run started (the open segments are uploaded).",
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
            help="Client setting KEY=VALUE in librdkafka's names (security.protocol, ssl.*, "
            "sasl.*); repeatable. Also segment.bytes, segment.ms, index.interval.bytes, "
            "segment.index.bytes to override every topic's. " + SETTINGS_FILE_HELP,
        ),
    ] = None,
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            metavar="NAME",
            help="Share the partitions with every archiver started with this group (a Kafka "
            "consumer group, used for membership only: the coordinator gives each member a "
            "share and a dead member's share to the others). Needs Read on the group.",
        ),
    ] = None,
    session_timeout: Annotated[
        str,
        typer.Option(
            "--session-timeout",
            help="With --group: how long a member may be silent (killed, cut off) before its "
            "partitions go to the others, e.g. 30s.",
        ),
    ] = "30s",
    store_option: STORE_OPTION = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    from kafka_archive.cli.context import cli_settings
    from kafka_archive.redact import redact_text
    from kafka_archive.services.archive import ArchiveService
    from kafka_archive.store import StoreError

    options, extra = _options(topics, until_caught_up, duration, config, as_json)
    options.group, options.group_session_timeout_ms = _group(group, session_timeout, as_json)
    store_options = parse_store_options(store_option)
    service = ArchiveService(cli_settings(as_json, store=store))
    object_store = open_archive_store(service, store_options, as_json)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # kafka-python's own connection chatter: its failures reach the user as our one message
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    stop = threading.Event()
    previous = _stop_on_signals(stop)
    try:
        report = service.archive_fetch(
            cluster=cluster,
            bootstrap=bootstrap,
            store=object_store,
            config=extra,
            options=options,
            stop=stop,
        )
    except ValueError as exc:  # a bad cluster name, a setting the client cannot apply
        fail(redact_text(exc), code=2, as_json=as_json)
    except LookupError as exc:  # no topic selected
        fail(str(exc), hint="check --topics and the principal's Describe ACLs", as_json=as_json)
    except StoreError as exc:
        fail(
            str(exc.message),
            hint=(exc.hint or "") + " (the run is resumable: re-run it)",
            as_json=as_json,
        )
    except Exception as exc:  # the cluster: unreachable, refused, timed out
        fail(
            f"archiving {cluster} over the Kafka protocol failed: {redact_text(exc)}",
            hint="check --bootstrap and any -X security settings; everything archived so far "
            "is kept and a re-run resumes from it",
            as_json=as_json,
        )
    finally:
        object_store.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    _print(report, as_json)


def fetch_click_command() -> Any:
    """The Click command of ``archive fetch`` (built on demand: ``archive`` dispatches to it
    when its first argument is ``fetch``)."""
    holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    holder.command(name="fetch", help=HELP)(fetch_command)
    return typer.main.get_command(holder)


def _stop_on_signals(stop: threading.Event) -> dict[int, Any]:
    """SIGTERM and SIGINT set ``stop`` (the run uploads its open segments and ends); the
    handlers replaced, to restore (none off the main thread, where Python allows none)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, lambda *_: stop.set())
    return previous


def _options(
    topics: list[str] | None,
    until_caught_up: bool,
    duration: str | None,
    config: list[str] | None,
    as_json: bool,
) -> tuple[FetchOptions, dict[str, str]]:
    """The run's options and the client settings (usage errors exit 2)."""
    from kafka_archive.archive.fetch.runner import FetchOptions, split_segment_overrides
    from kafka_archive.cli.catalog_options import parse_duration_ms

    duration_s = None
    if duration is not None:
        try:
            duration_s = parse_duration_ms(duration) / 1000.0
        except ValueError as exc:
            fail(f"--duration: {exc}", code=2, as_json=as_json)
    try:
        overrides, extra = split_segment_overrides(parse_settings(config, "-X", as_json))
    except ValueError as exc:
        fail(f"-X {exc}", code=2, as_json=as_json)
    options = FetchOptions(
        topics=tuple(topics or ()),
        until_caught_up=until_caught_up,
        duration_s=duration_s,
        segment_overrides=overrides,
    )
    return options, extra


def _group(group: str | None, session_timeout: str, as_json: bool) -> tuple[str | None, int]:
    """``--group`` and ``--session-timeout`` checked (usage errors exit 2)."""
    from kafka_archive.cli.catalog_options import parse_duration_ms

    if group is not None and not group.strip():
        fail("--group: a group name cannot be empty", code=2, as_json=as_json)
    try:
        timeout_ms = parse_duration_ms(session_timeout)
    except ValueError as exc:
        fail(f"--session-timeout: {exc}", code=2, as_json=as_json)
    if not 1_000 <= timeout_ms <= 3_600_000:
        fail("--session-timeout: must be between 1s and 1h", code=2, as_json=as_json)
    return group, int(timeout_ms)


def _print(report: FetchReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.to_json())
    else:
        console.print(
            f"{report.cluster}: {report.segments} segment(s) archived from "
            f"{len(report.partitions)} partition(s), {format_bytes(report.bytes_uploaded)} "
            f"uploaded; stopped: {report.stopped_by}"
        )
        for h in report.holes:
            err_console.print(
                f"[yellow]hole:[/] {h.topic}-{h.partition} offsets {h.start}..{h.end - 1} were "
                "deleted by the broker before they were archived"
            )
    if not report.ok:
        if not as_json:
            for p in report.partitions:
                if p.error:
                    err_console.print(f"[bold red]error:[/] {p.topic}-{p.partition}: {p.error}")
        raise typer.Exit(1)
