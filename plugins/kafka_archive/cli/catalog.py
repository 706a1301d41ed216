"""``kafka-archive catalog``: build the SQL catalog and ask it questions.

Every command takes ``--db URL`` (or ``$KAFKA_ARCHIVE_DB``; a plain path is a SQLite file) and,
where archived bytes are read, ``--store URI`` (or ``$KAFKA_ARCHIVE_STORE``). ``--json`` prints
one JSON object per line; otherwise tables for people. Times (``--at``, ``--from``, ``--to``)
accept ISO-8601 (naive = UTC), epoch milliseconds, and relative forms such as ``-2h`` or
``now-30m``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kafka_archive.cli.catalog_options import (
    INT32_MAX,
    INT64_MAX,
    ClusterOpt,
    DbOpt,
    JsonOpt,
    OptionalStoreOpt,
    PartitionNum,
    StoreOpt,
    TopicOpt,
    parse_duration_ms,
)
from kafka_archive.cli.catalog_options import open_catalog as _open
from kafka_archive.cli.catalog_options import open_store as _store
from kafka_archive.cli.catalog_options import parse_time_or_fail as _time
from kafka_archive.cli.catalog_options import print_catalog_table as _table
from kafka_archive.cli.catalog_options import query_service as _service
from kafka_archive.cli.catalog_options import run_query as _run
from kafka_archive.cli.context import cli_settings
from kafka_archive.cli.errors import fail_error

if TYPE_CHECKING:
    from kafka_archive.catalog.build.engine import EngineChoice

__all__ = ["app", "register"]

from kafka_archive.cli.output import console, emit_json, err_console, fail, real_console
from kafka_archive.timeparse import format_ms

app = typer.Typer(
    help=(
        "The SQL catalog of the archive: exact time -> offset answers for all of archived "
        "history, where any offset lives, traffic over time, coverage gaps, and consumer "
        "group offsets at any moment.\n\n"
        "Examples:\n\n"
        "  kafka-archive catalog build --store s3://bucket/archive --db catalog.db\n\n"
        "  kafka-archive catalog offsets --cluster prod --topic orders --at '2026-11-20 03:00'\n\n"
        "  kafka-archive catalog group-offsets --cluster prod --group billing --at -2h\n\n"
        "  kafka-archive catalog follow-offsets --cluster prod --bootstrap kafka-1:9092 "
        "--until-caught-up\n\n"
        "Set KAFKA_ARCHIVE_DB and KAFKA_ARCHIVE_STORE to skip --db and --store."
    ),
    no_args_is_help=True,
)

# ---------------------------------------------------------------------------------------------


@app.command()
def build(
    db: DbOpt = "",
    store: StoreOpt = "",
    cluster: Annotated[
        str | None, typer.Option("--cluster", help="Only this cluster (default: every one).")
    ] = None,
    spark_master: Annotated[
        str | None,
        typer.Option(
            "--spark-master",
            help="Spark master URL: local[*], local[2], spark://host:7077, k8s://... (env "
            "KAFKA_ARCHIVE_SPARK_MASTER; default local[*]).",
        ),
    ] = None,
    interval_bytes: Annotated[
        int,
        typer.Option(
            "--interval-bytes",
            help="Size limit of one time-index interval: the most `offsets` reads per partition.",
            min=4096,
            max=INT32_MAX,
        ),
    ] = 1 << 20,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Where to extract: auto (in this process unless the new segments reach the "
            "Spark threshold: settings catalog_spark_threshold_bytes / _segments), in-process, "
            "or spark (setting catalog_engine; default auto).",
        ),
    ] = None,
    in_process: Annotated[
        bool,
        typer.Option(
            "--in-process",
            help="Same as --engine in-process (kept for existing scripts).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Catalog every archived segment not cataloged yet.

    Lists the new segments first and extracts them in this process, or on Spark when there is
    real work to spread (--engine auto, the default); the report says which engine ran and
    why. Safe to run at any time and as often as wanted: a re-run adds nothing, and a run that
    was killed is completed by the next.

    Example: kafka-archive catalog build --store s3://bucket/archive --db catalog.db
    """
    from kafka_archive.cli.catalog_checks import check_spark_master_or_fail, check_store_or_fail
    from kafka_archive.services.catalog_build import CatalogBuildService, SparkStartFailed

    if in_process and engine not in (None, "in-process"):
        fail(f"--in-process contradicts --engine {engine}", as_json=as_json, code=2)
    settings = cli_settings(
        as_json,
        db=db,
        store=store,
        spark_master=spark_master,
        catalog_engine="in-process" if in_process else engine,
    )
    spark_master = settings.spark_master or "local[*]"
    check_store_or_fail(_store(settings.store, as_json), cluster, as_json)
    if settings.catalog_engine != "in-process":
        # a bogus master is refused before anything is read, whether or not Spark runs this time
        spark_master = check_spark_master_or_fail(spark_master, as_json)
    cat = _open(settings.db, as_json, create=True)
    # rich.progress is imported here, not at module level: only a build draws a progress bar
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    show = not as_json and sys.stderr.isatty()
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        DownloadColumn(),
        TimeElapsedColumn(),
        console=real_console(err_console),
        disable=not show,
    )
    tasks: dict[str, Any] = {}

    def progress(phase: str, done: int, total: int, nbytes: int) -> None:
        if phase not in tasks:
            label = "extracting segments" if phase == "extract" else "writing partitions"
            tasks[phase] = bar.add_task(label, total=total)
        bar.update(tasks[phase], completed=done, total=total)

    def announce(choice: EngineChoice) -> None:
        if not as_json:
            err_console.print(f"engine: {choice.engine} ({choice.reason})")
            if choice.engine == "spark":
                err_console.print(f"starting Spark ({spark_master}) ...")

    from kafka_archive.store import StoreError

    try:
        with bar, CatalogBuildService(settings, catalog=cat) as service:
            report = service.build(
                spark_master=spark_master,
                on_engine=announce,
                cluster=cluster,
                interval_bytes=interval_bytes,
                progress=progress,
            )
    except (StoreError, SparkStartFailed) as exc:
        fail_error(exc, as_json=as_json)
    out = report.to_json()
    if as_json:
        emit_json({"kind": "build", **out})
    else:
        labels = [
            ("manifests", "manifests in the store"),
            ("already_cataloged", "already cataloged"),
            ("segments_added", "segments added"),
            ("re_extracted", "segments re-indexed"),
            ("intervals_added", "time-index intervals added"),
            ("commits_added", "offset commits added"),
            ("corrupt", "corrupt segments"),
            ("failed", "failed segments"),
            ("bytes_read", "bytes read"),
            ("seconds", "seconds"),
            ("engine", "engine"),
        ]
        _table("catalog build", ["what", "count"], [[label, out[k]] for k, label in labels])
        for f in report.failed:
            err_console.print(f"[red]failed:[/] {f.get('manifest_key')}: {f.get('detail')}")
        for p in report.problems:
            err_console.print(f"[red]refused ({p['kind']}):[/] {p['manifest_key']}: {p['reason']}")
        if report.corrupt:
            err_console.print("[yellow]corrupt segments were recorded; see `catalog gaps`[/]")
    from kafka_archive.cli.catalog_checks import exit_for_build

    exit_for_build(report, store, cluster, as_json)


@app.command()
def offsets(
    cluster: ClusterOpt,
    topic: TopicOpt,
    at: Annotated[str, typer.Option("--at", help="The moment: ISO-8601, epoch ms, -2h, now-30m.")],
    partition: Annotated[
        list[int] | None,
        typer.Option(
            "--partition",
            "-p",
            help="Partition (repeatable; default all).",
            min=0,
            max=INT32_MAX,
        ),
    ] = None,
    db: DbOpt = "",
    store: OptionalStoreOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """The earliest offset whose timestamp is >= TIME, per partition (ListOffsets semantics;
    -1 when no record is that late).

    With --store (or KAFKA_ARCHIVE_STORE) the answer is exact: the catalog names one index
    interval per partition and one ranged read of it finds the record. Without it the catalog
    alone answers a range: "offset" is a safe place to start reading (no record at or after
    TIME lies before it) and "offset_max" bounds the answer ("exact": false). A TIME before the
    archive's first record or after its last is noted ("clamped", "note").

    Example: kafka-archive catalog offsets --cluster prod --topic orders --at 2026-11-20T03:00Z
    """
    ts = _time(at, "--at", as_json)
    if ts < 0:
        fail("--at is before 1970", as_json=as_json)
    with _service(db, as_json, store=store, store_use="optional") as svc:
        answers = _run(as_json, svc.offsets, cluster, topic, ts, partition)
    if as_json:
        for a in answers:
            emit_json(a.to_json())
        return
    _table(
        f"{cluster}/{topic} at {format_ms(ts)} ({ts})",
        ["partition", "offset", "timestamp", "time"],
        [
            [a.partition, a.offset, a.timestamp, format_ms(a.timestamp)]
            if a.exact
            else [a.partition, f"{a.offset}-{a.offset_max}", "?", "(needs --store)"]
            for a in answers
        ],
    )
    from rich.markup import escape

    for a in answers:
        if a.note:
            err_console.print(f"[yellow]note:[/] {escape(a.note)}")
    if not all(a.exact for a in answers):
        err_console.print(
            "[yellow]note:[/] without --store the catalog bounds each answer to one index "
            "interval (offset-offset_max); pass --store URI for the exact offset"
        )


@app.command()
def locate(
    cluster: ClusterOpt,
    topic: TopicOpt,
    partition: PartitionNum,
    offset: Annotated[
        int, typer.Option("--offset", help="The offset to find.", min=0, max=INT64_MAX)
    ],
    db: DbOpt = "",
    store: StoreOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Where an offset is archived: object key, byte range of its batch, its timestamp.

    Example: kafka-archive catalog locate --cluster prod --topic orders -p 3 --offset 1200345
    """
    with _service(db, as_json, store=store, store_use="required") as svc:
        loc = _run(as_json, svc.locate, cluster, topic, partition, offset)
    if as_json:
        emit_json(loc.to_json())
        return
    if not loc.exact:
        err_console.print(
            f"[yellow]offset {offset} holds no record (removed by compaction); "
            f"the next record is {loc.found_offset}[/]"
        )
    _table(
        f"{cluster}/{topic}-{partition} offset {offset}",
        ["object", "byte range", "batch offsets", "timestamp", "time"],
        [
            [
                loc.object_key,
                f"{loc.byte_start}-{loc.byte_end}",
                f"{loc.batch_base_offset}-{loc.batch_last_offset}",
                loc.timestamp,
                format_ms(loc.timestamp),
            ]
        ],
    )


@app.command()
def stats(
    cluster: ClusterOpt,
    topic: TopicOpt,
    from_: Annotated[str, typer.Option("--from", help="Start time (inclusive).")],
    to: Annotated[str, typer.Option("--to", help="End time (exclusive).")] = "now",
    bucket: Annotated[
        str, typer.Option("--bucket", help="Bucket width: 10s, 1m, 5m, 1h, 1d.")
    ] = "5m",
    partition: Annotated[
        list[int] | None,
        typer.Option("--partition", "-p", help="Partition (repeatable).", min=0, max=INT32_MAX),
    ] = None,
    png: Annotated[
        Path | None, typer.Option("--png", help="Also draw the chart into this PNG file.")
    ] = None,
    db: DbOpt = "",
    store: Annotated[
        str,
        typer.Option(
            "--store",
            help="Archive store (env KAFKA_ARCHIVE_STORE). Needed only for buckets that are not "
            "whole minutes (e.g. 10s): those are counted from the archived batches themselves.",
        ),
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """Records and bytes archived per time bucket, with a chart.

    Records are counted at their batch's timestamp (the broker's). Buckets of whole minutes
    come from the catalog alone; any other whole number of seconds (e.g. --bucket 10s) is
    counted from the archived batches and needs --store.

    Example: kafka-archive catalog stats --cluster prod --topic orders --from -1d --bucket 1h
    """

    start = _time(from_, "--from", as_json)
    end = _time(to, "--to", as_json)
    try:
        width = parse_duration_ms(bucket)
    except ValueError as exc:
        fail(f"--bucket: {exc}", as_json=as_json)
    if not 0 < width <= INT64_MAX // 2:
        fail(
            f"--bucket: {bucket!r} is out of range", hint="use e.g. 1m, 5m, 1h, 1d", as_json=as_json
        )
    with _service(db, as_json, store=store, store_use="optional") as svc:
        buckets = _run(as_json, svc.stats, cluster, topic, start, end, width, partition)
    if png is not None:
        from kafka_archive.cli.catalog_charts import draw_png

        draw_png(png, buckets, f"{cluster}/{topic}")
    if as_json:
        for b in buckets:
            emit_json(b.to_json())
        return
    from kafka_archive.cli.catalog_charts import draw_terminal
    from kafka_archive.counts import IN_LOG

    draw_terminal(buckets, f"{cluster}/{topic} {IN_LOG} per {bucket}")
    rows = [[format_ms(b.start_ms), b.records, b.bytes] for b in buckets if b.records or b.bytes]
    _table(
        f"{cluster}/{topic}: {sum(b.records for b in buckets)} {IN_LOG} (committed and "
        f"aborted), {sum(b.bytes for b in buckets)} bytes",
        ["start", IN_LOG, "bytes"],
        rows,
    )
    if png is not None:
        err_console.print(f"chart written to {png}")


@app.command()
def gaps(
    cluster: ClusterOpt,
    topic: Annotated[str | None, typer.Option("--topic", help="Only this topic.")] = None,
    db: DbOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """Offsets missing from the archive, and overlapping, divergent or corrupt segments.

    missing: no archived segment holds those offsets (e.g. retention deleted them first);
    overlap: two archived copies of the same offsets with the same leader epochs (replicas
    rolled differently, compaction rewrites; harmless); divergent: the same offsets under
    different leader epochs (an unclean leader election); corrupt: bytes failed verification;
    pruned: a retention policy deleted them (`archive prune`: "pruned by policy X at T").
    Each row has a severity: overlap and pruned are info, divergent a warning, every other
    kind an error;
    `catalog topics` counts the same rows per partition.

    Example: kafka-archive catalog gaps --cluster prod --topic orders
    """

    with _service(db, as_json) as svc:
        found = _run(as_json, svc.gaps, cluster, topic)
    if as_json:
        for g in found:
            emit_json(g.to_json())
        return
    if not found:
        console.print(
            f"no gaps: the archive of {cluster}" + (f"/{topic}" if topic else "") + " is contiguous"
        )
        return
    from collections import Counter

    from kafka_archive.cli.catalog_views import severity_summary

    _table(
        f"{cluster}: {severity_summary(Counter(g.severity for g in found))}",
        ["severity", "kind", "topic", "partition", "offsets", "detail"],
        [
            [
                g.severity,
                g.kind,
                g.topic,
                g.partition,
                f"{g.start_offset}-{g.end_offset}",
                _detail(g.detail),
            ]
            for g in found
        ],
    )


def _detail(d: dict[str, Any]) -> str:
    if "first_divergent_offset" in d:
        return (
            f"diverge at {d['first_divergent_offset']} (leader epochs "
            f"{d['leader_epochs'][0]} vs {d['leader_epochs'][1]}), brokers {d['brokers']}"
        )
    if "brokers" in d:
        return f"brokers {d['brokers']}"
    if "policy" in d:  # pruned by a retention policy
        return f"{d['reason']} ({d['segments']} segment(s), {d['bytes']} bytes)"
    if "reason" in d:
        at = f" at byte {d['position']}" if d.get("position") is not None else ""
        return f"{d.get('object') or d.get('manifest')}{at}: {d['reason']}"
    if "error" in d:
        return f"{d.get('object')}: {d['error'].get('detail', d['error'])}"
    return f"after {d.get('after_object')}"


@app.command("group-offsets")
def group_offsets(
    cluster: ClusterOpt,
    group: Annotated[str, typer.Option("--group", help="Consumer group id.")],
    at: Annotated[
        str | None, typer.Option("--at", help="The moment (default: latest archived).")
    ] = None,
    db: DbOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """A consumer group's committed offsets at a moment: from archived __consumer_offsets
    segments and from what `catalog follow-offsets` read live (merged).

    Example: kafka-archive catalog group-offsets --cluster prod --group billing --at -6h
    """

    ts = None if at is None else _time(at, "--at", as_json)
    with _service(db, as_json) as svc:
        found = _run(as_json, svc.group_offsets, cluster, group, ts)
    if as_json:
        for o in found:
            emit_json(o.to_json())
        return
    when = "latest archived" if ts is None else f"{format_ms(ts)} ({ts})"
    _table(
        f"group {group} at {when}",
        ["topic", "partition", "offset", "commit_timestamp", "time"],
        [
            [o.topic, o.partition, o.offset, o.commit_timestamp, format_ms(o.commit_timestamp)]
            for o in found
        ],
    )


@app.command()
def topics(
    cluster: ClusterOpt,
    db: DbOpt = "",
    as_json: JsonOpt = False,
) -> None:
    """What the archive holds per topic and partition: offsets, time range, records, bytes,
    problems.

    records in the log: data records actually archived, committed and aborted (as `catalog
    stats` counts them; an export writes the committed ones); offset_span: last - first + 1
    (larger when compaction, transaction markers or gaps left offsets without records);
    errors/warnings/info: the rows `catalog gaps` lists, by severity.

    Example: kafka-archive catalog topics --cluster prod
    """

    with _service(db, as_json) as svc:
        held = _run(as_json, svc.topics, cluster)
    if as_json:
        for h in held:
            emit_json(h.to_json())
        return
    from kafka_archive.cli.catalog_views import print_topics

    print_topics(cluster, held)


def register(root: typer.Typer) -> None:
    """Add ``catalog`` to the root command."""
    from kafka_archive.cli import catalog_history, catalog_verify, catalog_views, follow

    catalog_views.register(app)
    catalog_history.register(app)
    follow.register(app)
    catalog_verify.register(app)
    root.add_typer(app, name="catalog")
