"""``kafka-archive demo``: the whole platform on embedded defaults, in one command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json, fail
from kafka_archive.timeparse import format_ms


def demo(
    root: Annotated[Path, typer.Option(help="Folder for everything the demo makes.")] = Path(
        ".work/demo"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the generated cluster.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    """Run the main job end to end on embedded defaults.

    Writes a realistic 3-broker Kafka log directory under ROOT, runs the archive DAG, the
    catalog DAG and a replay DAG run through Airflow (its own metadata DB under ROOT) into an
    embedded Kafka-protocol target, then prints the catalog's "offsets of orders at T", a
    consumer group's position at T, and whether the target holds exactly the expected records.
    Exit status 1 when any check fails.
    """
    from kafka_archive.demo import DemoError, run_demo

    def progress(message: str) -> None:
        if not as_json:
            console.print(f"[dim]>[/] {message}")

    try:
        report = run_demo(root, seed=seed, progress=progress)
    except DemoError as exc:
        fail(str(exc), as_json=as_json, hint="the stage's full log is named above")
    ok = report["catalog_matches_broker"] and report["replay"]["exact"]
    if as_json:
        emit_json(report)
    else:
        _print(report)
    if not ok:
        raise typer.Exit(1)


def _print(report: dict[str, Any]) -> None:
    at = report["offsets_at"]["timestamp"]
    table = Table(title=f"catalog: offsets of topic orders at {format_ms(at)} ({at})")
    for col in ("partition", "offset", "timestamp", "broker lookup on the log dir"):
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
