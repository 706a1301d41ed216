"""``kafka-archive demo``: the whole platform on embedded defaults, in one command."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json
from kafka_archive.demo import DemoPaths, answer_offsets_at, write_cluster
from kafka_archive.timeparse import format_ms


def demo(
    root: Annotated[Path, typer.Option(help="Folder for everything the demo makes.")] = Path(
        ".work/demo"
    ),
    seed: Annotated[
        int, typer.Option(help="Seed of the generated cluster (same seed, same bytes).")
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    """Run the main job end to end on embedded defaults.

    Writes a realistic 3-broker Kafka log directory (several topics and partitions, compressed
    and transactional data, __consumer_offsets commits) under ROOT, then answers
    "offsets of topic orders at time T" from it.
    """
    started = time.monotonic()
    paths = DemoPaths(root.resolve())
    cluster = write_cluster(paths, seed=seed)
    t = cluster.start_ms + (cluster.end_ms - cluster.start_ms) // 2
    report: dict[str, Any] = {
        "root": str(paths.root),
        "brokers": sorted(cluster.broker_dirs),
        "topics": sorted(cluster.topics),
        "offsets_at": {
            "topic": "orders",
            "timestamp": t,
            "partitions": answer_offsets_at(cluster, "orders", t),
        },
    }
    report["seconds"] = round(time.monotonic() - started, 1)
    if as_json:
        emit_json(report)
        return
    console.print(
        f"[bold]Demo cluster[/] written under {paths.cluster}: brokers "
        f"{report['brokers']}, topics {', '.join(report['topics'])}"
    )
    table = Table(title=f"offsets of topic orders at {format_ms(t)} ({t})")
    for col in ("partition", "offset", "timestamp"):
        table.add_column(col, justify="right")
    for row in report["offsets_at"]["partitions"]:
        table.add_row(str(row["partition"]), str(row["offset"]), str(row["timestamp"]))
    console.print(table)
    console.print(f"done in {report['seconds']} s")
