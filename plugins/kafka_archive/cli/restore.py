"""``kafka-archive restore``: a whole cluster (or many topics) as it was at one moment, with its
configs, ACLs and consumer groups, into another cluster, exactly once and resumable.

Commands: ``plan`` (the preflight: every problem at once, with what to do; ``--json`` is that
report; exit 1 while it holds an error), ``run`` (preflight, then the restore; the same command
run again continues an unfinished restore), ``status`` and ``resume``. Thin over
:class:`~kafka_archive.services.restore.RestoreService`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kafka_archive.cli.client_settings import SETTINGS_FILE_HELP, parse_settings
from kafka_archive.cli.context import cli_settings, open_catalog_or_fail, open_store_or_fail
from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json, err_console, fail

app = typer.Typer(
    help=(
        "Restore many topics of an archived cluster as they were at one moment T: partitions, "
        "configs, ACLs, data (exactly once, in parallel) and consumer groups."
    ),
    no_args_is_help=True,
)

ClusterOpt = Annotated[str, typer.Option("--cluster", help="Source cluster name in the archive.")]
TopicOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--topic",
        help="A topic, a glob ('orders-*') or a regex ('re:orders-(eu|us)') (repeatable).",
    ),
]
AllOpt = Annotated[
    bool,
    typer.Option("--all-topics", help="Every user topic (internal ones only when named)."),
]
ExcludeOpt = Annotated[
    list[str] | None, typer.Option("--exclude", help="Leave out topics matching (repeatable).")
]
AtOpt = Annotated[
    str,
    typer.Option("--at", help="The moment T: ISO-8601, epoch ms or relative (-30m; pin it)."),
]
FromOpt = Annotated[
    str, typer.Option("--from", help="Where the data starts: earliest (default) or a time.")
]
PrefixOpt = Annotated[str, typer.Option("--prefix", help="Target name prefix.")]
SuffixOpt = Annotated[str, typer.Option("--suffix", help="Target name suffix.")]
RegexOpt = Annotated[
    str | None, typer.Option("--rename-regex", help="Rename: a regex applied to each name.")
]
RenameToOpt = Annotated[
    str, typer.Option("--rename-to", help="The --rename-regex replacement (\\1 for groups).")
]
GroupOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--group",
        help="Groups to move (names, globs, re:...; repeatable). Default: every group that "
        "committed on a selected topic by T.",
    ),
]
NoGroupsOpt = Annotated[bool, typer.Option("--no-groups", help="Move no consumer group.")]
AclsOpt = Annotated[bool, typer.Option("--acls", help="Restore the ACLs of T as well.")]
PrincipalMapOpt = Annotated[
    list[str] | None,
    typer.Option("--principal-map", help="SOURCE=TARGET principal for the ACLs (repeatable)."),
]
TargetOpt = Annotated[str, typer.Option("--target", help="Target bootstrap servers.")]
TargetConfigOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--target-config",
        help="librdkafka setting for the target, NAME=VALUE (repeatable). " + SETTINGS_FILE_HELP,
    ),
]
PrincipalOpt = Annotated[
    str | None,
    typer.Option(
        "--target-principal",
        help="The principal the target sees (default: User:<sasl.username>, or User:ANONYMOUS).",
    ),
]
RfOpt = Annotated[
    int | None,
    typer.Option("--replication-factor", min=1, help="Default: each topic's at T."),
]
ParallelOpt = Annotated[
    int, typer.Option("--parallelism", min=1, help="Topics replayed at once (default 4).")
]
GapsOpt = Annotated[bool, typer.Option("--allow-gaps", help="Restore around holes of the archive.")]
UnverifiedOpt = Annotated[
    bool,
    typer.Option(
        "--unverified-permissions",
        help="Go ahead when the target's permissions cannot be read (a warning, not an error).",
    ),
]
SparkOpt = Annotated[str | None, typer.Option("--spark-master", help="Run the replays on Spark.")]
StoreOpt = Annotated[str | None, typer.Option("--store", help="Archive store URI.")]
DbOpt = Annotated[str | None, typer.Option("--db", help="Catalog URL or path.")]
JsonOpt = Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)]


def _service(store: str | None, db: str | None, as_json: bool) -> Any:
    from kafka_archive.services.restore import RestoreService

    catalog = open_catalog_or_fail(db, as_json)
    st = open_store_or_fail(store, as_json)
    return RestoreService(cli_settings(as_json, store=store, db=db), catalog=catalog, store=st)


def _request(args: dict[str, Any], as_json: bool) -> Any:
    """The :class:`RestoreRequest` of the command's options (exit 2 on a bad one)."""
    from pydantic import ValidationError

    from kafka_archive.replay.planning.plan import TargetSpec
    from kafka_archive.restore.request import RenameMap, RestoreRequest
    from kafka_archive.timeparse import TimeParseError, parse_time_ms

    try:
        at_ms = parse_time_ms(args["at"])
        return RestoreRequest.model_validate(
            {
                "cluster": args["cluster"],
                "topics": args["topic"] or [],
                "all_topics": args["all_topics"],
                "exclude": args["exclude"] or [],
                "at_ms": at_ms,
                "from": args["from_"],
                "rename": RenameMap(
                    prefix=args["prefix"],
                    suffix=args["suffix"],
                    regex=args["rename_regex"],
                    replacement=args["rename_to"],
                ),
                "groups": [] if args["no_groups"] else args["group"],
                "acls": args["acls"],
                "principal_map": parse_settings(args["principal_map"], "--principal-map", as_json),
                "target": TargetSpec(
                    bootstrap_servers=args["target"],
                    config=parse_settings(args["target_config"], "--target-config", as_json),
                ),
                "replication_factor": args["replication_factor"],
                "parallelism": args["parallelism"],
                "allow_gaps": args["allow_gaps"],
                "principal": args["target_principal"],
                "unverified_permissions": args["unverified_permissions"],
            }
        )
    except TimeParseError as exc:
        fail(str(exc), code=2, as_json=as_json)
    except ValidationError as exc:
        text = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors()
        )
        fail(text, code=2, as_json=as_json)


def _print_plan(plan: Any) -> None:
    console.print(
        f"[bold]restore {plan.restore_id}[/]: {plan.cluster} at {plan.at} -> {plan.target} "
        f"({plan.target_brokers} broker(s), principal {plan.principal or 'unknown'})"
    )
    for t in plan.topics:
        what = "nothing before T" if t.empty else f"{t.records} records, {t.bytes} bytes"
        again = " (resumes)" if t.resumed else ""
        console.print(f"  {t.source} -> {t.target}: {t.partitions} partition(s), {what}{again}")
    for g in plan.groups:
        console.print(f"  group {g.group}: {', '.join(g.topics)}")
    if plan.acls:
        console.print(f"  {len(plan.acls)} ACL(s) of T to create")
    est = plan.estimate
    console.print(f"  estimate: {est['bytes']} bytes, about {est['seconds']} s")
    for note in plan.notes:
        err_console.print(f"[yellow]note:[/] {note}")
    for p in plan.problems:
        colour = "red" if p.level == "error" else "yellow"
        err_console.print(f"[{colour}]{p.level}:[/] {p.message}")
        if p.hint:
            err_console.print(f"  [yellow]hint:[/] {p.hint}")


def _print_report(report: Any) -> None:
    console.print(
        f"[bold]restore {report.restore_id}: {report.status}[/] in {report.duration_s} s, "
        f"{report.records_this_run} records sent"
    )
    for t in report.topics:
        extra = f" ({t.error.get('message')})" if t.error else ""
        console.print(f"  {t.source} -> {t.target}: {t.status}, {t.records} records{extra}")
    for g in report.groups:
        console.print(f"  group {g.group}: {'applied' if g.applied else g.error or 'nothing'}")
    for note in report.notes:
        err_console.print(f"[yellow]note:[/] {note}")


def _fail(exc: Exception, as_json: bool) -> None:
    from kafka_archive.cli.errors import fail_error
    from kafka_archive.errors import KafkaArchiveError

    if isinstance(exc, KafkaArchiveError) and not exc.internal:
        plan = getattr(exc, "plan", None)
        if plan is not None and not as_json:
            from kafka_archive.restore.model import RestorePlan

            fields = {k: v for k, v in plan.items() if k not in ("kind", "ok")}
            _print_plan(RestorePlan.model_validate(fields))
        fail_error(exc, as_json=as_json, details={"plan": plan} if plan is not None else None)
    raise exc


@app.command("plan")
def plan_cmd(
    cluster: ClusterOpt,
    at: AtOpt,
    target: TargetOpt,
    topic: TopicOpt = None,
    all_topics: AllOpt = False,
    exclude: ExcludeOpt = None,
    from_: FromOpt = "earliest",
    prefix: PrefixOpt = "",
    suffix: SuffixOpt = "",
    rename_regex: RegexOpt = None,
    rename_to: RenameToOpt = "",
    group: GroupOpt = None,
    no_groups: NoGroupsOpt = False,
    acls: AclsOpt = False,
    principal_map: PrincipalMapOpt = None,
    target_config: TargetConfigOpt = None,
    target_principal: PrincipalOpt = None,
    replication_factor: RfOpt = None,
    parallelism: ParallelOpt = 4,
    allow_gaps: GapsOpt = False,
    unverified_permissions: UnverifiedOpt = False,
    offline: Annotated[bool, typer.Option("--offline", help="Do not ask the target.")] = False,
    store: StoreOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The preflight of a restore: what it would do and every problem it would meet.

    \b
    Examples:
      kafka-archive restore plan --cluster prod --all-topics --at 2026-11-29T08:30:00Z \\
          --target kafka-dr:9092 --suffix -restored --acls --json
    """
    request = _request(locals(), as_json)
    service = _service(store, db, as_json)
    try:
        plan = service.plan(request, check_target=not offline)
    except Exception as exc:
        _fail(exc, as_json)
    finally:
        service.close()
    if as_json:
        emit_json(plan.to_json())
    else:
        _print_plan(plan)
    if not plan.ok:
        raise typer.Exit(1)


@app.command("run")
def run_cmd(
    cluster: ClusterOpt,
    at: AtOpt,
    target: TargetOpt,
    topic: TopicOpt = None,
    all_topics: AllOpt = False,
    exclude: ExcludeOpt = None,
    from_: FromOpt = "earliest",
    prefix: PrefixOpt = "",
    suffix: SuffixOpt = "",
    rename_regex: RegexOpt = None,
    rename_to: RenameToOpt = "",
    group: GroupOpt = None,
    no_groups: NoGroupsOpt = False,
    acls: AclsOpt = False,
    principal_map: PrincipalMapOpt = None,
    target_config: TargetConfigOpt = None,
    target_principal: PrincipalOpt = None,
    replication_factor: RfOpt = None,
    parallelism: ParallelOpt = 4,
    allow_gaps: GapsOpt = False,
    unverified_permissions: UnverifiedOpt = False,
    spark_master: SparkOpt = None,
    store: StoreOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Restore: the preflight, ACLs, every topic's data in parallel, then the groups.

    Refused, naming every problem, when the preflight finds one. Run it again after a failure
    or a kill: it continues, exactly once.

    \b
    Examples:
      kafka-archive restore run --cluster prod --topic 'orders-*' --topic _schemas \\
          --at 2026-11-29T08:30:00Z --target kafka-dr:9092 --acls \\
          --principal-map User:orders-app=User:orders-app-dr
    """
    request = _request(locals(), as_json)
    _run(request, None, spark_master, store, db, as_json)


def _run(
    request: Any,
    restore_id: str | None,
    spark_master: str | None,
    store: str | None,
    db: str | None,
    as_json: bool,
    target_config: dict[str, str] | None = None,
) -> None:
    service = _service(store, db, as_json)

    def tell(line: str) -> None:
        if not as_json:
            err_console.print(line)

    execution = "spark" if spark_master else "in-process"
    try:
        if request is None:
            report = service.resume(
                restore_id,
                target_config=target_config,
                execution=execution,
                spark_master=spark_master,
                on_event=tell,
            )
        else:
            report = service.run(
                request, execution=execution, spark_master=spark_master, on_event=tell
            )
    except Exception as exc:
        _fail(exc, as_json)
    finally:
        service.close()
    if as_json:
        emit_json(report.to_json())
    else:
        _print_report(report)
    if report.status not in ("complete", "complete-with-gaps"):
        if not as_json:
            err_console.print(
                f"[yellow]hint:[/] fix what failed, then `kafka-archive restore resume "
                f"{report.restore_id}` continues it"
            )
        raise typer.Exit(1)


@app.command("resume")
def resume_cmd(
    restore_id: Annotated[
        str | None, typer.Argument(help="Default: the only unfinished restore.")
    ] = None,
    target_config: TargetConfigOpt = None,
    spark_master: SparkOpt = None,
    store: StoreOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Continue an unfinished restore (give the target's secrets again with --target-config)."""
    config = parse_settings(target_config, "--target-config", as_json)
    _run(None, restore_id, spark_master, store, db, as_json, config)


@app.command("status")
def status_cmd(
    restore_id: Annotated[str | None, typer.Argument(help="One restore.")] = None,
    store: StoreOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Restores, newest first, with each topic's replay status."""
    service = _service(store, db, as_json)
    try:
        rows = service.status(restore_id)
    except Exception as exc:
        _fail(exc, as_json)
    finally:
        service.close()
    if as_json:
        emit_json({"kind": "restore_status", "restores": rows})
        return
    for r in rows:
        console.print(
            f"[bold]{r['restore_id']}[/] {r['status']}: {r['cluster']} at {r['at']} "
            f"-> {r['target']}"
        )
        for topic, t in r["topics"].items():
            console.print(f"  {topic}: {t['status']} ({t['replay_id']})")
        if r["resume"]:
            console.print(f"  resume: {r['resume']}")
