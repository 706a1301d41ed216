"""``kafka-archive replay``: re-produce an archived range into a target cluster, exactly once.

Commands: ``run`` (plan from the catalog, check the target, replay in-process or on Spark,
report; the same request run again resumes its unfinished replay), ``resume`` (continue a
replay by id), ``abandon`` (close an unfinished replay: fence its producers, release its data),
``status`` (replays and their progress) and
``translate-group`` (a consumer group's positions on the target, optionally committed there).
The archive and the catalog come from ``--store``/``--db`` or ``KAFKA_ARCHIVE_STORE`` /
``KAFKA_ARCHIVE_DB``. Exit status: 0 success, 1 failure (a replay failure is resumable: run the
same command again), 2 usage errors.
"""

from __future__ import annotations

import sys
import threading
from typing import Annotated, Any

import typer

from kafka_archive.cli.client_settings import SETTINGS_FILE_HELP, parse_settings
from kafka_archive.cli.context import (
    cli_settings,
    fail_archive_read,
    open_catalog_or_fail,
    open_store_or_fail,
    parse_partitions,
)
from kafka_archive.cli.output import (
    JSON_OPTION_HELP,
    console,
    emit_json,
    err_console,
    fail,
    real_console,
)
from kafka_archive.cli.replay_views import (
    print_holes,
    print_plan,
    print_report,
    print_status,
    print_topic_config,
)
from kafka_archive.replay.planning.stability import INCOMPLETE, incomplete_rows

app = typer.Typer(
    help=(
        "Replay archived records into a target cluster, exactly once and resumable; translate "
        "consumer-group positions to the replayed topic."
    ),
    no_args_is_help=True,
)

StoreOpt = Annotated[
    str | None, typer.Option("--store", help="Archive store URI (default $KAFKA_ARCHIVE_STORE).")
]
DbOpt = Annotated[
    str | None, typer.Option("--db", help="Catalog URL or path (default $KAFKA_ARCHIVE_DB).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)]
TargetConfigOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--target-config",
        help="librdkafka setting for the target, NAME=VALUE (repeatable): TLS, SASL, ... "
        "Secrets are never stored in the catalog. " + SETTINGS_FILE_HELP,
    ),
]


def _kv(items: list[str] | None, as_json: bool) -> dict[str, str]:
    return parse_settings(items, "--target-config", as_json)


def _service(store: str | None, db: str | None, as_json: bool) -> Any:
    """The replay service over the store and catalog the options or settings name, both
    opened here so that a missing or broken one exits cleanly with its hint."""
    from kafka_archive.services.replay import ReplayService

    catalog = open_catalog_or_fail(db, as_json)
    st = open_store_or_fail(store, as_json)
    settings = cli_settings(as_json, store=store, db=db)
    return ReplayService(settings, catalog=catalog, store=st)


def _fail_replay(exc: BaseException, as_json: bool) -> None:
    from confluent_kafka import KafkaError, KafkaException

    fail_archive_read(
        exc,
        as_json,
        bad_bytes_hint="the partition stopped before them; repair or re-archive the object, then "
        "run the same command again: the replay resumes after its last committed transaction, "
        "without duplicates",
    )
    if isinstance(exc, KafkaException):
        # a Kafka client failure no replay step translated: still one clear error, with what
        # librdkafka reported (its own lines are captured, see replay.client_log)
        from kafka_archive.replay.target.clients import CLIENT_LOG

        err = exc.args[0] if exc.args else exc
        text = err.str() if isinstance(err, KafkaError) else str(err)
        said = CLIENT_LOG.summary()
        fail(
            f"the target cluster failed: {text}" + (f" ({said})" if said else ""),
            hint="check the target brokers and --target-config, then run the same command "
            "again: the replay resumes after its last committed transaction",
            as_json=as_json,
            details={"error": "KafkaException"},
        )
    raise exc


def _execute(service: Any, plan: Any, spark_master: str | None, as_json: bool) -> Any:
    """Run ``plan`` through the service, with a progress bar on a terminal; the target
    topic's config warnings go to stderr before anything is sent (``--json``: in the report's
    ``topic_config``)."""

    def warn(line: str) -> None:
        if not as_json:
            err_console.print(f"[yellow]warning: target topic config: {line}[/]")

    if spark_master:  # naming a master asks for Spark
        return service.run(plan, execution="spark", spark_master=spark_master, on_warning=warn)
    if as_json or not sys.stderr.isatty():
        return service.run(plan, on_warning=warn)
    # imported here, not at module level: only a run on a terminal draws a bar, and the import
    # (~40-70 ms) was on the way to every replay's first record (issue 27)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TransferSpeedColumn,
    )

    lock = threading.Lock()
    with Progress(
        TextColumn("[bold]replay"),
        BarColumn(),
        MofNCompleteColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=real_console(err_console),
        transient=True,
    ) as progress:
        task = progress.add_task("records", total=plan.total_records or None)

        def advance(n: int) -> None:
            with lock:
                progress.advance(task, n)

        return service.run(plan, on_records=advance, on_warning=warn)


def waiting_for_open_transactions(as_json: bool, seconds: int) -> Any:
    """The ``on_wait`` callback of ``--wait-for-open-transactions`` (replay and export): one
    line on stderr before each pause."""

    def say(plan: Any) -> None:
        if not as_json:
            err_console.print(
                f"[yellow]waiting (at most {seconds} s) for open transaction(s) at the end "
                f"of the archive: {'; '.join(r['message'] for r in incomplete_rows(plan))}[/]"
            )

    return say


def _exit_incomplete(report: Any, as_json: bool) -> None:
    """Exit 1 when the run stopped at the archive's last stable offset: it did not deliver
    everything asked for (the report above says what; the hint what to do)."""
    if report.status != INCOMPLETE:
        return
    lines = "; ".join(r["message"] for r in report.incomplete)
    if as_json:
        raise typer.Exit(1)  # the report (status, incomplete, hint) is the JSON answer
    fail(f"replay {report.replay_id} is incomplete: {lines}", hint=report.hint, code=1)


def _print_notes(notes: list[str], as_json: bool) -> None:
    """What the service decided about the request (e.g. it resumes the unfinished replay of
    the same request), on stderr before anything is sent (``--json``: the report's notes)."""
    if not as_json:
        for note in notes:
            err_console.print(f"[yellow]{note}[/]")


@app.command("run")
def run(
    cluster: Annotated[str, typer.Option("--cluster", help="Source cluster name in the archive.")],
    topic: Annotated[str, typer.Option("--topic", help="Source topic.")],
    from_: Annotated[
        str,
        typer.Option(
            "--from",
            help="Start: time (ISO-8601, epoch ms, -2h), "
            "offset:N, offset:P=N,..., earliest or latest (inclusive).",
        ),
    ],
    target: Annotated[str, typer.Option("--target", help="Target bootstrap servers.")],
    to: Annotated[
        str | None,
        typer.Option("--to", help="End, same forms (exclusive); default: the end of the archive."),
    ] = None,
    target_topic: Annotated[
        str | None, typer.Option("--target-topic", help="Default: the source topic.")
    ] = None,
    partitions: Annotated[
        str | None, typer.Option("--partitions", help="e.g. 0,1,2 or 0-5 (default all).")
    ] = None,
    partition_mapping: Annotated[
        str, typer.Option("--partition-mapping", help="same | murmur2 | round-robin.")
    ] = "same",
    provenance_headers: Annotated[
        bool,
        typer.Option(
            "--provenance-headers",
            help="Add header kafka-archive.source=cluster/topic/partition/offset.",
        ),
    ] = False,
    no_timestamps: Annotated[
        bool,
        typer.Option(
            "--no-preserve-timestamps",
            help="Let the producer stamp records instead of keeping the source timestamps.",
        ),
    ] = False,
    key_filter: Annotated[
        str | None,
        typer.Option("--key-filter", help="exact:V, prefix:V or regex:P on the UTF-8 key."),
    ] = None,
    rate_limit_mb: Annotated[
        float | None, typer.Option("--rate-limit-mb", help="Payload MB/s (10^6 bytes).")
    ] = None,
    rate_limit_records: Annotated[
        float | None, typer.Option("--rate-limit-records", help="Records/s.")
    ] = None,
    replay_path: Annotated[
        str,
        typer.Option(
            "--replay-path",
            help="auto: send the archived batches themselves (re-stamped, compressed bytes "
            "untouched) when nothing per record is asked, the target can be reached by the "
            "protocol client and a partition's batches hold 100 records or more on average, "
            "else record by record; records: always record by record; batch: whole batches "
            "wherever possible, small ones too. Each writes the same records; the report says "
            "which path each partition took.",
        ),
    ] = "auto",
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the plan (with every hole of the range) and check the target; send "
            "nothing.",
        ),
    ] = False,
    offline: Annotated[
        bool,
        typer.Option("--offline", help="With --dry-run: do not contact the target cluster."),
    ] = False,
    allow_gaps: Annotated[
        bool,
        typer.Option(
            "--allow-gaps",
            help="Replay around the holes of the archive (missing or quarantined offsets) "
            "instead of refusing; the run then ends complete-with-gaps.",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replay again even if this replay completed (a new replay id)."
        ),
    ] = False,
    wait_open_txns: Annotated[
        int,
        typer.Option(
            "--wait-for-open-transactions",
            min=0,
            metavar="SECONDS",
            help="When a transaction was still open where the archive ends, inside the range: "
            "look at the catalog again every 10 s, at most SECONDS, until the archive holds "
            "its outcome (default 0: do not wait; the run then ends incomplete, and running "
            "it again later delivers the rest).",
        ),
    ] = 0,
    allow_same_topic: Annotated[
        bool,
        typer.Option(
            "--allow-same-topic", help="Allow the source cluster's own topic as the target."
        ),
    ] = False,
    create_topic: Annotated[
        bool,
        typer.Option(
            "--create-topic",
            help="Create a missing target topic as the source topic was at the replay's start "
            "(--from, or the first replayed record's time): its partition count and config "
            "overrides from the metadata history (else the archive's partition count). "
            "Configs that cannot apply on the target are left out, each named.",
        ),
    ] = False,
    topic_config: Annotated[
        list[str] | None,
        typer.Option(
            "--topic-config",
            help="With --create-topic: a config of the created topic, NAME=VALUE (repeatable, "
            "or @FILE of NAME=VALUE lines); wins over the source's, e.g. "
            "--topic-config retention.ms=-1.",
        ),
    ] = None,
    no_source_config: Annotated[
        bool,
        typer.Option(
            "--no-source-config",
            help="With --create-topic: do not copy the source's configs (the partition count "
            "still comes from the source); only --topic-config and the target's defaults.",
        ),
    ] = False,
    replication_factor: Annotated[
        int | None,
        typer.Option(
            "--replication-factor",
            min=1,
            help="With --create-topic: the created topic's replication factor (default: the "
            "target's default.replication.factor).",
        ),
    ] = None,
    spark_master: Annotated[
        str | None,
        typer.Option("--spark-master", help="Run on Spark (local[*], spark://host:7077, ...)."),
    ] = None,
    target_config: TargetConfigOpt = None,
    store: StoreOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay [--from, --to) of CLUSTER/TOPIC into the target cluster.

    \b
    Examples:
      kafka-archive replay run --cluster prod --topic orders --from -2h \\
          --target kafka-dr:9092 --target-topic orders-replay
      kafka-archive replay run --cluster prod --topic orders --from offset:0=100,1=200 \\
          --to offset:0=500,1=600 --target kafka-dr:9092 --target-topic o2 --dry-run
      # restore the topic as it was at T (partitions and configs at T), retention off:
      kafka-archive replay run --cluster prod --topic orders --from 2026-11-20T08:00:00Z \\
          --target kafka-dr:9092 --target-topic orders-restored --create-topic \\
          --topic-config retention.ms=-1 --dry-run
    """
    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.replay.planning.plan import TargetSpec
    from kafka_archive.services.replay import spec_from_request

    if offline and not dry_run:
        fail("--offline applies to --dry-run only", hint="add --dry-run", code=2, as_json=as_json)
    if replay_path not in ("auto", "records", "batch"):
        fail(f"unknown replay path {replay_path!r}", hint="use auto, records or batch", code=2,
             as_json=as_json)  # fmt: skip
    if partition_mapping not in ("same", "murmur2", "round-robin"):
        fail(
            f"unknown partition mapping {partition_mapping!r}",
            hint="use same, murmur2 or round-robin",
            code=2,
            as_json=as_json,
        )
    request = {
        "cluster": cluster,
        "topic": topic,
        "partitions": parse_partitions(partitions, as_json),
        "from": from_,
        "to": to,
        "target_topic": target_topic,
        "partition_mapping": partition_mapping,
        "replay_path": replay_path,
        "preserve_timestamps": not no_timestamps,
        "provenance_headers": provenance_headers,
        "key_filter": key_filter,
        "rate_limit_mb": rate_limit_mb,
        "rate_limit_records": rate_limit_records,
        "allow_same_topic": allow_same_topic,
        "allow_gaps": allow_gaps,
        "create_topic": create_topic,
        "topic_config": parse_settings(topic_config, "--topic-config", as_json),
        "source_config": not no_source_config,
        "replication_factor": replication_factor,
        "force": force,
        "dry_run": dry_run,
    }
    try:
        target_spec = TargetSpec(bootstrap_servers=target, config=_kv(target_config, as_json))
        spec = spec_from_request(request, target_spec)
    except ReplayError as exc:
        fail(exc.message, hint=exc.hint or None, code=2, as_json=as_json)
    except ValueError as exc:
        fail(str(exc), code=2, as_json=as_json)
    service = _service(store, db, as_json)
    try:
        if dry_run:
            report = service.preview(spec, check_target=not offline)
            _print_notes(report.notes, as_json)
            if as_json:
                emit_json(report.model_dump(mode="json"))
            else:
                print_plan(report)
                print_holes(report)
                print_topic_config(report)
            return
        plan = service.plan(
            spec,
            wait_open_txns_s=wait_open_txns,
            on_wait=waiting_for_open_transactions(as_json, wait_open_txns),
        )
        _print_notes(service.notes, as_json)
        report = _execute(service, plan, spark_master, as_json)
    except Exception as exc:
        _fail_replay(exc, as_json)
    finally:
        service.close()
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        print_report(report)
        print_holes(report)
        if report.status == "already-done":
            console.print(
                "[yellow]this replay had already completed: nothing sent "
                "(use --force to replay again)[/]"
            )
    _exit_incomplete(report, as_json)


@app.command("resume")
def resume(
    replay_id: Annotated[str, typer.Argument(help="The replay id (see `replay status`).")],
    target_config: TargetConfigOpt = None,
    spark_master: Annotated[str | None, typer.Option("--spark-master")] = None,
    allow_gaps: Annotated[
        bool,
        typer.Option(
            "--allow-gaps",
            help="Replay around the holes of the archive instead of refusing (complete-with-gaps).",
        ),
    ] = False,
    store: StoreOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Continue an interrupted replay by id (its plan comes from the catalog; secrets such as
    sasl.password must be given again with --target-config)."""
    from kafka_archive.replay.errors import ReplayConfigError

    service = _service(store, db, as_json)
    try:
        plan = service.resumable(
            replay_id, target_config=_kv(target_config, as_json), allow_gaps=allow_gaps
        )
    except ReplayConfigError as exc:
        service.close()
        usage = exc.to_dict().get("missing") is not None  # secrets to give again: usage
        fail(exc.message, hint=exc.hint or None, code=2 if usage else 1, as_json=as_json)
    try:
        report = _execute(service, plan, spark_master, as_json)
    except Exception as exc:
        _fail_replay(exc, as_json)
    finally:
        service.close()
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        print_report(report)
        print_holes(report)
    _exit_incomplete(report, as_json)


@app.command("abandon")
def abandon(
    replay_id: Annotated[str, typer.Argument(help="The replay id (see `replay status`).")],
    no_fence: Annotated[
        bool,
        typer.Option(
            "--no-fence",
            help="Do not contact the target (it is gone): release without fencing the "
            "replay's producers.",
        ),
    ] = False,
    target_config: TargetConfigOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Close an unfinished (interrupted or failed) replay for good: fence its producers on the
    target (a killed run's open transaction is aborted at once), release the archived data it
    kept from prune, and mark it abandoned, so that its request runs as a new replay."""
    from kafka_archive.replay.errors import ReplayConfigError
    from kafka_archive.services.replay import ReplayService

    catalog = open_catalog_or_fail(db, as_json)
    with ReplayService(cli_settings(as_json, db=db), catalog=catalog) as service:
        try:
            done = service.abandon(
                replay_id, target_config=_kv(target_config, as_json), fence=not no_fence
            )
        except ReplayConfigError as exc:
            usage = exc.to_dict().get("missing") is not None  # secrets to give again: usage
            fail(exc.message, hint=exc.hint or None, code=2 if usage else 1, as_json=as_json)
        except Exception as exc:
            _fail_replay(exc, as_json)
    if as_json:
        emit_json(done)
    elif not done["changed"]:
        console.print(f"replay {replay_id} was already abandoned")
    else:
        fenced = f"fenced {len(done['fenced'])} producer(s); " if done["fenced"] else ""
        console.print(
            f"replay {replay_id} abandoned: {fenced}its archived data is no longer kept from "
            "prune; running its request again starts a new replay"
        )


@app.command("status")
def status(
    replay_id: Annotated[str | None, typer.Option("--replay", help="Only this replay.")] = None,
    cluster: Annotated[str | None, typer.Option("--cluster")] = None,
    topic: Annotated[str | None, typer.Option("--topic")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replays in the catalog with their per-partition progress (one JSON object per replay)."""
    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.services.replay import ReplayService

    catalog = open_catalog_or_fail(db, as_json)
    with ReplayService(cli_settings(as_json, db=db), catalog=catalog) as service:
        try:
            runs = service.status(replay_id=replay_id, cluster=cluster, topic=topic)
        except ReplayError as exc:
            fail(exc.message, hint=exc.hint or None, as_json=as_json)
        for obj in runs:
            if as_json:
                emit_json(obj)
                continue
            print_status(obj, service.ledger.all_progress(obj["replay_id"]))
    if not runs and not as_json:
        console.print("no replays in the catalog")


@app.command("translate-group")
def translate_group_cmd(
    cluster: Annotated[str, typer.Option("--cluster", help="Source cluster name.")],
    topic: Annotated[str, typer.Option("--topic", help="Source topic.")],
    group: Annotated[str, typer.Option("--group", help="Consumer group.")],
    at: Annotated[
        str | None,
        typer.Option(
            "--at", help="Start the group at this source time (else: its archived commits)."
        ),
    ] = None,
    commits_at: Annotated[
        str | None,
        typer.Option(
            "--commits-at",
            help="Use the group's archived commits as of this time (default latest).",
        ),
    ] = None,
    replay_id: Annotated[
        str | None, typer.Option("--replay", help="Replay whose offset map to use.")
    ] = None,
    target_topic: Annotated[
        str | None,
        typer.Option(
            "--target-topic",
            help="Use the finished replay into this topic (when several replays exist).",
        ),
    ] = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply", help="Commit the positions on the target (the group must be inactive)."
        ),
    ] = False,
    target_config: TargetConfigOpt = None,
    store: StoreOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Compute GROUP's positions on a replay's target topic and, with --apply, commit them."""
    from kafka_archive.catalog.queries import CatalogQueryError
    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.services.group_translation import GroupTranslationService
    from kafka_archive.timeparse import TimeParseError, parse_time_ms

    try:
        at_ms = parse_time_ms(at) if at is not None else None
        commits_at_ms = parse_time_ms(commits_at) if commits_at else None
    except TimeParseError as exc:
        fail(str(exc), code=2, as_json=as_json)
    catalog = open_catalog_or_fail(db, as_json)
    st = open_store_or_fail(store, as_json)
    with GroupTranslationService(
        cli_settings(as_json, db=db, store=store), catalog=catalog, store=st
    ) as svc:
        try:
            found = svc.translate(
                cluster,
                topic,
                group,
                at_ms=at_ms,
                commits_at_ms=commits_at_ms,
                replay_id=replay_id,
                target_topic=target_topic,
                apply=apply,
                target_config=_kv(target_config, as_json),
            )
        except CatalogQueryError as exc:
            fail(str(exc), hint=exc.hint, as_json=as_json)
        except ReplayError as exc:
            if exc.to_dict().get("missing") is not None:  # secrets to give again: usage
                fail(exc.message, hint=exc.hint or None, code=2, as_json=as_json)
            _fail_replay(exc, as_json)
            return
    if as_json:
        for row in found.to_json():
            emit_json(row)
        return
    plan = found.plan
    console.print(
        f"group {group} on {plan.target_topic} (replay {plan.replay_id}, from {found.basis}):"
    )
    for pos in found.positions:
        flag = "" if pos.exact else " (range start: records may be re-read)"
        console.print(f"  partition {pos.partition}: offset {pos.offset}{flag}")
    console.print(
        "[green]committed on the target[/]"
        if apply
        else "dry run: add --apply to commit these positions on the target"
    )


__all__ = ["app"]
