"""``kafka-archive replay``: re-produce an archived range into a target cluster, exactly once.

Commands: ``run`` (plan from the catalog, check the target, replay in-process or on Spark,
report), ``resume`` (continue a replay by id), ``status`` (replays and their progress) and
``translate-group`` (a consumer group's positions on the target, optionally committed there).
The archive and the catalog come from ``--store``/``--db`` or ``KAFKA_ARCHIVE_STORE`` /
``KAFKA_ARCHIVE_DB``. Exit status: 0 success, 1 failure (a replay failure is resumable: run the
same command again), 2 usage errors.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)

from kafka_archive.cli.client_settings import SETTINGS_FILE_HELP, parse_settings
from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json, err_console, fail
from kafka_archive.cli.replay_views import print_holes, print_plan, print_report, print_status

app = typer.Typer(
    help=(
        "Replay archived records into a target cluster, exactly once and resumable; translate "
        "consumer-group positions to the replayed topic."
    ),
    no_args_is_help=True,
)

STORE_ENV = "KAFKA_ARCHIVE_STORE"
DB_ENV = "KAFKA_ARCHIVE_DB"

StoreOpt = Annotated[
    str | None, typer.Option("--store", help=f"Archive store URI (default ${STORE_ENV}).")
]
DbOpt = Annotated[
    str | None, typer.Option("--db", help=f"Catalog URL or path (default ${DB_ENV}).")
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


def _env(value: str | None, env: str, what: str, as_json: bool) -> str:
    value = value or os.environ.get(env)
    if not value:
        fail(f"no {what} given", hint=f"pass --{what} or set {env}", code=2, as_json=as_json)
    return value


def _kv(items: list[str] | None, as_json: bool) -> dict[str, str]:
    return parse_settings(items, "--target-config", as_json)


def _partitions(text: str | None, as_json: bool) -> list[int] | None:
    if not text:
        return None
    try:
        out: list[int] = []
        for part in text.split(","):
            if "-" in part:
                a, b = part.split("-", 1)
                out += list(range(int(a), int(b) + 1))
            else:
                out.append(int(part))
        return out
    except ValueError:
        fail(f"cannot read partitions {text!r}", hint="use 0,1,2 or 0-5", code=2, as_json=as_json)


def _open(store_uri: str, db: str, as_json: bool) -> tuple[Any, Any, Any]:
    from kafka_archive.cli.catalog import _open as open_catalog_or_fail
    from kafka_archive.replay import models as _models  # noqa: F401  (registers the tables)
    from kafka_archive.replay.catalog_source import CatalogPlanSource
    from kafka_archive.replay.ledger import ReplayLedger
    from kafka_archive.store import StoreError, open_store

    try:
        store = open_store(store_uri)
    except StoreError as exc:
        fail(str(exc), hint=exc.hint, as_json=as_json)
    # the catalog commands' way: typed errors with their hint, the password hidden
    catalog = open_catalog_or_fail(db, as_json)
    return store, CatalogPlanSource(catalog, store), ReplayLedger(catalog.engine)


def _fail_replay(exc: BaseException, as_json: bool) -> None:
    from confluent_kafka import KafkaError, KafkaException

    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.store import StoreError
    from segment_lib.errors import SegmentError

    if isinstance(exc, ReplayError):
        fail(
            exc.message,
            hint=exc.hint or None,
            as_json=as_json,
            # the error's own fields too (e.g. a ReplayGapsError's holes, for --json)
            details={k: v for k, v in exc.to_dict().items() if k not in ("message", "hint")},
        )
    if isinstance(exc, SegmentError):
        fail(
            f"bad bytes in the archive: {exc}",
            hint="the partition stopped before them; repair or re-archive the object, then run "
            "the same command again: the replay resumes after its last committed transaction, "
            "without duplicates",
            as_json=as_json,
            details=exc.to_dict(),
        )
    if isinstance(exc, StoreError):
        fail(str(exc), hint=exc.hint, as_json=as_json)
    if isinstance(exc, KafkaException):
        # a Kafka client failure no replay step translated: still one clear error, with what
        # librdkafka reported (its own lines are captured, see replay.client_log)
        from kafka_archive.replay.client_log import CLIENT_LOG

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


def _execute(
    plan: Any,
    store: Any,
    ledger: Any,
    store_uri: str,
    db: str,
    spark_master: str | None,
    as_json: bool,
) -> Any:
    from kafka_archive.replay.runner import check_target, execute

    target = check_target(plan)
    if spark_master:
        from kafka_archive.replay.spark import run_on_spark

        return run_on_spark(
            plan, store_uri=store_uri, db_url=db, master=spark_master, target=target
        )
    if as_json or not sys.stderr.isatty():
        return execute(plan, store=store, target=target, ledger=ledger)
    lock = threading.Lock()
    with Progress(
        TextColumn("[bold]replay"),
        BarColumn(),
        MofNCompleteColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task("records", total=plan.total_records or None)

        def advance(n: int) -> None:
            with lock:
                progress.advance(task, n)

        return execute(plan, store=store, target=target, ledger=ledger, on_records=advance)


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
            help="Create a missing target topic with the source's partition count.",
        ),
    ] = False,
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
    """
    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.replay.plan import ReplaySpec, TargetSpec, parse_position
    from kafka_archive.replay.runner import check_target, dry_run_report, plan_replay

    if offline and not dry_run:
        fail("--offline applies to --dry-run only", hint="add --dry-run", code=2, as_json=as_json)
    if partition_mapping not in ("same", "murmur2", "round-robin"):
        fail(
            f"unknown partition mapping {partition_mapping!r}",
            hint="use same, murmur2 or round-robin",
            code=2,
            as_json=as_json,
        )
    store_uri = _env(store, STORE_ENV, "store", as_json)
    db_url = _env(db, DB_ENV, "db", as_json)
    try:
        spec = ReplaySpec.model_validate(
            {
                "cluster": cluster,
                "topic": topic,
                "partitions": _partitions(partitions, as_json),
                "from": parse_position(from_),
                "to": parse_position(to) if to else None,
                "target": TargetSpec(bootstrap_servers=target, config=_kv(target_config, as_json)),
                "target_topic": target_topic,
                "partition_mapping": partition_mapping,
                "preserve_timestamps": not no_timestamps,
                "provenance_headers": provenance_headers,
                "key_filter": key_filter,
                "rate_limit_mb": rate_limit_mb,
                "rate_limit_records": rate_limit_records,
                "allow_same_topic": allow_same_topic,
                "allow_gaps": allow_gaps,
                "create_topic": create_topic,
                "force": force,
                "dry_run": dry_run,
            }
        )
    except ReplayError as exc:
        fail(exc.message, hint=exc.hint or None, code=2, as_json=as_json)
    except ValueError as exc:
        fail(str(exc), code=2, as_json=as_json)
    store_obj, source, ledger = _open(store_uri, db_url, as_json)
    try:
        plan = plan_replay(spec, source)
        if dry_run:
            report = dry_run_report(plan)
            if not offline:
                info = check_target(plan, read_only=True)
                report.target_check = {
                    "cluster_id": info.cluster_id,
                    "partitions": info.partitions,
                    "topic_would_be_created": info.created_topic,
                }
            if as_json:
                emit_json(report.model_dump(mode="json"))
            else:
                print_plan(report)
                print_holes(report)
            return
        report = _execute(plan, store_obj, ledger, store_uri, db_url, spark_master, as_json)
    except Exception as exc:
        _fail_replay(exc, as_json)
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
    store_uri = _env(store, STORE_ENV, "store", as_json)
    db_url = _env(db, DB_ENV, "db", as_json)
    store_obj, _source, ledger = _open(store_uri, db_url, as_json)
    plan = ledger.plan(replay_id)
    if plan is None:
        fail(
            f"no replay {replay_id!r} in the catalog",
            hint="see `kafka-archive replay status`",
            as_json=as_json,
        )
    extra = _kv(target_config, as_json)
    plan = plan.with_target(plan.spec.target.with_config(extra))
    if allow_gaps and not plan.spec.allow_gaps:
        plan = plan.model_copy(update={"spec": plan.spec.model_copy(update={"allow_gaps": True})})
    if plan.has_redacted_secrets:
        fail(
            "the target needs secret settings that the catalog does not store",
            hint="give them again with --target-config NAME=VALUE",
            code=2,
            as_json=as_json,
        )
    try:
        report = _execute(plan, store_obj, ledger, store_uri, db_url, spark_master, as_json)
    except Exception as exc:
        _fail_replay(exc, as_json)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        print_report(report)
        print_holes(report)


@app.command("status")
def status(
    replay_id: Annotated[str | None, typer.Option("--replay", help="Only this replay.")] = None,
    cluster: Annotated[str | None, typer.Option("--cluster")] = None,
    topic: Annotated[str | None, typer.Option("--topic")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replays in the catalog with their per-partition progress (one JSON object per replay)."""
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.replay import models as _models  # noqa: F401
    from kafka_archive.replay.ledger import ReplayLedger
    from kafka_archive.replay.plan import ReplayPlan

    ledger = ReplayLedger(open_catalog(_env(db, DB_ENV, "db", as_json)).engine)
    runs = ledger.runs(cluster=cluster, topic=topic)
    if replay_id:
        runs = [r for r in runs if r.replay_id == replay_id]
        if not runs:
            fail(f"no replay {replay_id!r} in the catalog", as_json=as_json)
    for run_row in runs:
        progress = ledger.all_progress(run_row.replay_id)
        ranges = ledger.ranges(run_row.replay_id)
        run_plan = ReplayPlan.from_json(run_row.plan_json)
        obj = {
            "replay_id": run_row.replay_id,
            "status": run_row.status,
            "cluster": run_row.cluster,
            "topic": run_row.topic,
            "target": run_row.target,
            "target_topic": run_row.target_topic,
            "partition_mapping": run_row.partition_mapping,
            "created_at_ms": run_row.created_at_ms,
            "finished_at_ms": run_row.finished_at_ms,
            "error": run_row.error,
            "allow_gaps": run_plan.spec.allow_gaps,
            "holes": len(run_plan.holes),
            "records_sent": sum(p.records_sent for p in progress),
            "offset_ranges": len(ranges),
            "partitions": {
                str(p.source_partition): {
                    "next_offset": p.next_offset,
                    "end_offset": p.end_offset,
                    "done": p.done,
                    "records": p.records_sent,
                    "transactions": p.txn_seq,
                    "first_offset": p.first_offset,
                    "last_offset": p.last_offset,
                }
                for p in progress
            },
        }
        if as_json:
            emit_json(obj)
            continue
        print_status(obj, progress)
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
    from kafka_archive.catalog.queries import CatalogQueryError, group_offsets
    from kafka_archive.replay.errors import ReplayError
    from kafka_archive.replay.groups import (
        apply_positions,
        find_replay,
        positions_at_time,
        translate_group,
    )
    from kafka_archive.timeparse import TimeParseError, parse_time_ms

    store_uri = _env(store, STORE_ENV, "store", as_json)
    db_url = _env(db, DB_ENV, "db", as_json)
    _store, source, ledger = _open(store_uri, db_url, as_json)
    try:
        plan = find_replay(ledger, cluster, topic, replay_id, target_topic)
        if at is not None:
            positions = positions_at_time(plan, source, parse_time_ms(at))
            basis = f"source time {at}"
        else:
            when = parse_time_ms(commits_at) if commits_at else None
            try:
                commits = group_offsets(source.catalog, cluster, group, when)
            except CatalogQueryError as exc:
                fail(str(exc), hint=exc.hint, as_json=as_json)
            positions = {g.partition: g.offset for g in commits if g.topic == topic}
            if not positions:
                fail(
                    f"the archive holds no commits of group {group!r} on {cluster}/{topic}",
                    hint="use --at TIME to start the group at a moment instead",
                    as_json=as_json,
                )
            basis = "the group's archived commits"
        result = translate_group(ledger, plan, positions)
        if apply:
            target_cfg = plan.spec.target.with_config(_kv(target_config, as_json))
            if any(v == "***" for v in target_cfg.config.values()):
                fail(
                    "the target needs secret settings the catalog does not store",
                    hint="give them with --target-config NAME=VALUE",
                    code=2,
                    as_json=as_json,
                )
            apply_positions(target_cfg.client_config(), group, result)
    except TimeParseError as exc:
        fail(str(exc), code=2, as_json=as_json)
    except ReplayError as exc:
        _fail_replay(exc, as_json)
        return
    if as_json:
        for pos in result:
            emit_json(
                {"group": group, "replay_id": plan.replay_id, "applied": apply, **pos.to_dict()}
            )
        return
    console.print(f"group {group} on {plan.target_topic} (replay {plan.replay_id}, from {basis}):")
    for pos in result:
        flag = "" if pos.exact else " (range start: records may be re-read)"
        console.print(f"  partition {pos.partition}: offset {pos.offset}{flag}")
    console.print(
        "[green]committed on the target[/]"
        if apply
        else "dry run: add --apply to commit these positions on the target"
    )


__all__ = ["app"]
