"""``kafka-archive-dev``, the development command: ``kafka-archive-dev demo`` (what ``./dev demo``
runs) is the whole platform on embedded defaults, in one command.

It is run like the product's ``kafka-archive`` (the same last-resort error handler and log
redaction, :mod:`kafka_archive.cli.crash` and :mod:`kafka_archive.redact`), but it is not part of
the product: it needs a source checkout (the DAGs, ``scripts/``) and the harness of this package.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from kafka_archive.cli.guard import GuardedGroup
from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json, err_console, fail
from kafka_archive.timeparse import format_ms
from rich.table import Table


class KafkaMode(StrEnum):
    """Which Kafka the demo runs on."""

    auto = "auto"
    real = "real"
    mock = "mock"


def demo(
    root: Annotated[Path, typer.Option(help="Folder for everything the demo makes.")] = Path(
        ".work/demo"
    ),
    seed: Annotated[
        int, typer.Option(help="Seed of the generated cluster.", min=0, max=2**32 - 1)
    ] = 0,
    kafka: Annotated[
        KafkaMode,
        typer.Option(
            help="real: Apache Kafka clusters started here (Java 17 + Maven); mock: a "
            "writer-made source and librdkafka's mock target; auto: real when Java and Maven "
            "are present.",
        ),
    ] = KafkaMode.auto,
    ui: Annotated[
        bool,
        typer.Option(
            "--ui",
            help="Afterwards keep Airflow running (`airflow standalone`) with the on-call page "
            "at http://localhost:PORT/kafka-archive/ (user oncall; Ctrl-C stops it).",
        ),
    ] = False,
    port: Annotated[int, typer.Option(help="Port of --ui's Airflow.", min=1, max=65535)] = 8080,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    """Run the main job end to end on embedded defaults.

    Starts a real 3-broker Apache Kafka cluster (KRaft, jars from Maven Central) under ROOT,
    produces the demo's traffic through it (every codec, transactions with aborts,
    LogAppendTime, a compacted topic, a consumer group committing), runs the archive DAG over
    its live log dirs, the catalog DAG and a replay DAG run through Airflow (its own metadata DB
    under ROOT) into a second, 1-broker cluster, then prints the catalog's "offsets of orders at
    T" beside the broker's own ListOffsets answer, the group's position at T beside what it
    committed, and whether the target holds exactly the expected records. Without Java or
    Maven it falls back to a writer-made cluster and librdkafka's mock target, and says so.
    Exit status 1 when any check fails. With --ui, Airflow then keeps running over the demo's
    catalog with the on-call page.

    Example: ./dev demo --ui --port 8080
    """
    from kafka_archive_dev.demo import DemoError
    from kafka_archive_dev.demo_run import run_demo

    def progress(message: str) -> None:
        if not as_json:
            console.print(f"[dim]>[/] {message}")

    try:
        root = root.resolve()  # the default (.work/demo) is relative: every stage needs it whole
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        fail(
            f"cannot use --root {root}: {exc}",
            code=2,
            as_json=as_json,
            hint="pick a folder (it is created if missing)",
        )
    if root.exists() and not root.is_dir():
        fail(
            f"--root {root} is not a directory",
            hint="pick a folder (it is created if missing)",
            code=2,
            as_json=as_json,
        )
    try:
        report = run_demo(root, seed=seed, progress=progress, kafka=kafka.value)
    except DemoError as exc:
        fail(str(exc), as_json=as_json, hint="the stage's full log is named above")
    except OSError as exc:  # the root cannot be created or written (permissions, a full disk)
        fail(
            f"cannot use --root {root}: {exc.strerror or exc}",
            as_json=as_json,
            hint="pick a folder you can write to, with free space",
        )
    ok = (
        report["catalog_matches_broker"]
        and report["replay"]["exact"]
        and report["group_position"]["matches"]
    )
    if as_json:
        emit_json(report)
    else:
        _print(report)
    if not ok:
        raise typer.Exit(1)
    if ui:
        _serve_ui(root, port, report, kafka.value)


def _serve_ui(root: Path, port: int, report: dict[str, Any], kafka: str) -> None:
    from kafka_archive_dev.demo import UI_TARGET_CONN, UI_USER, serve_ui

    at = report["offsets_at"]["timestamp"]
    link = (
        f"http://localhost:{port}/kafka-archive/?cluster={report.get('cluster', 'demo')}"
        f"&topic={report['offsets_at']['topic']}&at={at}"
        f"&group={report['group_position']['group']}"
    )
    err_console.print(
        f"on-call page: {link}\n  (Airflow: http://localhost:{port}/, user {UI_USER}, password "
        f"in {root / 'airflow' / 'simple_auth_manager_passwords.json.generated'}); replays "
        f"from the page go to the live target of the connection {UI_TARGET_CONN}; Ctrl-C stops",
        soft_wrap=True,
        markup=False,
        highlight=False,
    )
    raise typer.Exit(serve_ui(root, port, kafka))


def _print(report: dict[str, Any]) -> None:
    at = report["offsets_at"]["timestamp"]
    if report["kafka"]:
        console.print(f"kafka: {report['kafka']}")
    table = Table(title=f"catalog: offsets of topic orders at {format_ms(at)} ({at})")
    for col in ("partition", "offset", "timestamp", "the broker's own answer"):
        table.add_column(col, justify="right")
    for row in report["offsets_at"]["partitions"]:
        table.add_row(
            str(row["partition"]),
            str(row["offset"]),
            str(row["timestamp"]),
            str(row["broker_lookup_offset"]),
        )
    console.print(table)
    group = report["group_position"]
    table = Table(title=f"group {group['group']} committed offsets at {format_ms(at)}")
    for col in ("topic", "partition", "offset", "committed at"):
        table.add_column(col, justify="right")
    for row in group["offsets"]:
        table.add_row(
            row["topic"],
            str(row["partition"]),
            str(row["offset"]),
            format_ms(row["commit_timestamp"]),
        )
    console.print(table)
    if "expected" in group:
        verdict = "[green]as committed[/]" if group["matches"] else "[red]MISMATCH[/]"
        console.print(f"group {group['group']} at T: {verdict} (committed: {group['expected']})")
    replay = report["replay"]
    verdict = (
        "[green]exactly the expected records[/]"
        if replay["exact"]
        else (f"[red]MISMATCH in partitions {replay['partitions_mismatched']}[/]")
    )
    console.print(
        f"replay: target holds {replay['records_in_target']} records, "
        f"expected {replay['records_expected']}: {verdict}"
    )
    console.print(
        f"everything is under {report['root']} (logs: {report['logs']}); "
        f"done in {report['seconds']} s"
    )
    console.print(
        "explore what it made (the Kafka clusters were stopped; their data stays), copy and paste:"
    )
    for line in explore_commands(report):
        console.print(f"  {line}", soft_wrap=True, markup=False, highlight=False)


def explore_commands(report: dict[str, Any]) -> list[str]:
    """Shell commands (quoted, each complete with its --cluster/--db/--store), each after a
    ``#`` line saying what it shows, that explore what the demo of ``report`` made: its
    catalog, the offsets and the group at T, the topic's history (when the metadata log was
    archived), a replay dry run, a group move and an export. The demo's clusters are stopped
    when it ends: the replay is planned ``--offline`` and the group move is shown, not
    applied."""
    from shlex import quote

    cluster = quote(str(report.get("cluster", "demo")))
    db = f"--db {quote(str(report['db']))}"
    store = f"--store {quote(str(report['store']))}"
    topic = quote(str(report["offsets_at"]["topic"]))
    at = int(report["offsets_at"]["timestamp"])
    group = quote(str(report["group_position"]["group"]))
    src = f"--cluster {cluster} --topic {topic}"
    lines = [
        "# the clusters and topics archived (records in the log, per partition)",
        f"kafka-archive catalog clusters {db}",
        f"kafka-archive catalog topics --cluster {cluster} {db}",
        f"# the offsets of {topic} at T: the first record at or after T (as ListOffsets)",
        f"kafka-archive catalog offsets {src} --at {at} {db} {store}",
        "# records in the log per 10 minutes around T",
        f"kafka-archive catalog stats {src} --from {at - 3_600_000} --to {at + 3_600_000} "
        f"--bucket 10m {db}",
        f"# where group {group} was at T (its last commit by then)",
        f"kafka-archive catalog group-offsets --cluster {cluster} --group {group} --at {at} {db}",
    ]
    metadata = report.get("metadata") or {}
    if metadata.get("history"):
        end = int(report.get("end") or at)
        lines += [
            f"# the configs of {topic} at T, what changed since it was created, the ACLs at "
            "the end (from the archived metadata log)",
            f"kafka-archive catalog topic-config {src} --at {at} {db}",
            f"kafka-archive catalog topic-history {src} {db}",
            f"kafka-archive catalog acls --cluster {cluster} --at {end} {db}",
        ]
    target = quote(str(report.get("target") or "localhost:9092"))
    restored = quote(f"{report['offsets_at']['topic']}-restored")
    export_dir = quote(
        str(Path(str(report["root"])) / "export" / str(report["offsets_at"]["topic"]))
    )
    lines += [
        f"# a replay of {topic} from T into a new topic created as the source was at T, "
        "planned only (--offline: the demo's target cluster is stopped)",
        f"kafka-archive replay run {src} --from {at} --target {target} --target-topic "
        f"{restored} --create-topic --dry-run --offline {db} {store}",
        f"# where group {group} starts on the demo's replayed topic to resume at T (add "
        "--apply, with the target running, to move it)",
        f"kafka-archive replay translate-group {src} --group {group} --at {at} {db} {store}",
        f"# the committed records of {topic} from T as Parquet files (Spark, local)",
        f"kafka-archive export {src} --from {at} --output {export_dir} {db} {store}",
        "# holes and integrity problems of the archive",
        f"kafka-archive catalog gaps --cluster {cluster} {db}",
    ]
    return lines


class _GuardedGroup(GuardedGroup):
    """The product's guard (:class:`kafka_archive.cli.guard.GuardedGroup`: log redaction, the
    last-resort error handler, a closed output as a quiet exit 141), as ``kafka-archive``."""

    program = "kafka-archive-dev"


app = typer.Typer(
    name="kafka-archive-dev",
    help="kafka-archive's development commands (from a source checkout; `./dev setup`).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_GuardedGroup,
)


def _no_options() -> None:
    # a root callback keeps `kafka-archive-dev` a group with one command (`kafka-archive-dev
    # demo ...`) instead of typer collapsing it into the command; no docstring, so the help
    # text is the app's own
    pass


app.callback()(_no_options)
app.command(name="demo")(demo)


def main() -> None:
    """Console-script entry point of ``kafka-archive-dev``."""
    app()
