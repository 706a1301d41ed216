"""``kafka-archive archive``: archive one broker's rolled segments to object storage.

Does exactly what one broker's tasks of the ``kafka_archive_segments`` DAG do (discover, plan,
upload, report), consulting the manifests already in the store so that offset ranges archived
from other brokers are skipped. Exit status: 0 when every planned segment was archived (or
skipped), 1 when any segment failed or was quarantined or a log dir could not be read, 2 for
usage errors.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from click.core import Context
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand

from kafka_archive.cli.output import (
    JSON_OPTION_HELP,
    console,
    emit_json,
    err_console,
    fail,
    real_console,
)
from kafka_archive.cli.store_options import STORE_OPTION, open_archive_store, parse_store_options
from kafka_archive.sizes import format_bytes

if TYPE_CHECKING:
    from rich.progress import TaskID

    from kafka_archive.archive.report import ArchiveReport, SegmentOutcome

# The archive pipeline (and through it boto3), the store and rich.progress are imported inside
# the functions that use them: `kafka-archive archive --help` needs none of them.

__all__ = ["archive", "register"]

# Typer keeps single line breaks inside paragraphs, so each paragraph is one long line.
HELP = "\n\n".join(
    [
        "Archive the rolled segments of one broker's log dirs to object storage.",
        "Copies every rolled segment (with its .index/.timeindex/.txnindex, producer snapshot, "
        "leader epochs and topic id) whose whole offset range is below both the recovery point "
        "and the high watermark, CRC-checking every batch on the way. Files go under "
        "content-addressed keys and each segment's manifest is written last, so the command is "
        "idempotent and resumable: run it again after any failure and nothing is uploaded "
        "twice. Ranges already archived from another broker (replicas) are skipped. Corrupt "
        "segments go to <cluster>/_quarantine/ and make the command exit 1.",
        "\b\nExamples:\n"
        "  kafka-archive archive --cluster prod --broker-id 1 \\\n"
        "      --log-dir /var/lib/kafka/data --store s3://my-bucket/kafka\n"
        "  kafka-archive archive --cluster prod --broker-id 1 \\\n"
        "      --log-dir /d1 --log-dir /d2 --store file:///srv/archive --dry-run\n"
        "  kafka-archive archive --cluster prod --broker-id 2 \\\n"
        "      --log-dir /data --store s3://my-bucket/kafka --json",
        "Retention: `kafka-archive archive prune --help` deletes what the retention policies "
        "no longer keep (safely: recorded in the catalog first, never what a replay needs).",
        "No access to the brokers' disks (managed Kafka, Kubernetes, tiered storage): "
        "`kafka-archive archive fetch --help` builds the same archive over the Kafka protocol.",
        "S3 credentials and endpoint come from the standard AWS environment "
        "(AWS_ACCESS_KEY_ID, AWS_PROFILE, AWS_ENDPOINT_URL, instance roles); never pass them on "
        "the command line. Exit status: 0 all archived or skipped, 1 a segment or log dir "
        "failed, 2 usage error.",
    ]
)


class _Bar:
    """A rich progress display on stderr: discovery, then uploads."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=real_console(err_console),
            transient=True,
        )
        self.discover: TaskID | None = None
        self.upload: TaskID | None = None

    def __enter__(self) -> _Bar:
        self.progress.__enter__()
        self.discover = self.progress.add_task("discovering segments", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def on_discover(self, path: str) -> None:
        if self.discover is not None:
            self.progress.update(
                self.discover, advance=1, description=f"hashing {escape(Path(path).name)}"
            )

    def on_planned(self, segments: int, size: int) -> None:
        if self.discover is not None:
            self.progress.update(self.discover, visible=False)
        self.upload = self.progress.add_task(f"archiving ({format_bytes(size)})", total=segments)

    def on_outcome(self, outcome: SegmentOutcome) -> None:
        if self.upload is not None:
            self.progress.update(
                self.upload,
                advance=1,
                description=f"{outcome.topic}-{outcome.partition}@{outcome.base_offset} "
                f"{outcome.status.value}",
            )


def _print_report(report: ArchiveReport) -> None:
    verb = "Would archive" if report.dry_run else "Archived"
    count = report.segments_planned if report.dry_run else report.segments_archived
    table = Table(title=f"kafka-archive: {report.store_uri}", show_header=True)
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_column("detail")
    table.add_row(
        f"{verb.lower()}",
        str(count),
        f"{format_bytes(report.bytes_archived)} in segments, {format_bytes(report.bytes_uploaded)} "
        f"uploaded, {report.files_reused} file(s) already there",
    )
    for reason, n in report.skipped.items():
        table.add_row("skipped", str(n), reason)
    table.add_row(
        "failed", str(report.segments_failed), f"{report.segments_quarantined} quarantined"
    )
    if report.log_dir_failures:
        table.add_row("log dirs failed", str(len(report.log_dir_failures)), "")
    for lag in report.lag:
        oldest = lag.oldest_pending
        detail = (
            f"oldest pending: {oldest.topic}-{oldest.partition}@{oldest.base_offset} "
            f"({oldest.reason})"
            if oldest
            else "nothing pending"
        )
        table.add_row(
            f"lag broker {lag.broker_id}",
            f"{lag.lag_seconds:.0f}s",
            f"{lag.pending_segments} pending; {detail}",
        )
    console.print(table)
    if report.dry_run:
        _print_planned(report.planned)
    for f in report.failures:
        where = f" -> {f.quarantine_prefix}" if f.quarantine_prefix else ""
        console.print(
            f"[bold red]{f.status.value}[/] {escape(f.topic)}-{f.partition} segment "
            f"{f.base_offset} ({escape(f.log_dir)}): {escape(f.detail)}{escape(where)}"
        )
    for d in report.log_dir_failures:
        console.print(
            f"[bold red]log dir failed[/] {escape(d.log_dir)}: {d.error.error}: "
            f"{escape(d.error.message)}"
        )
    for w in report.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    if report.ok:
        console.print(f"[green]{verb} {count} segment(s).[/]")


def _print_planned(planned: list[SegmentOutcome]) -> None:
    """The segments a dry run would archive, one row each (``key: value`` blocks when the
    table does not fit the terminal); nothing when there are none."""
    from kafka_archive.cli.tables import print_table

    if not planned:
        return
    rows = [
        [
            o.cluster,
            o.broker_id,
            f"{o.topic}-{o.partition}",
            o.base_offset,
            o.end_offset,
            format_bytes(o.segment_bytes),
            o.log_dir,
        ]
        for o in sorted(planned, key=lambda o: (o.cluster, o.topic, o.partition, o.base_offset))
    ]
    print_table(
        f"would archive {len(planned)} segment(s)",
        ["cluster", "broker", "partition", "base offset", "end offset", "size", "log dir"],
        rows,
        left={"cluster", "partition", "log dir"},
    )


def _next_steps(report: ArchiveReport) -> str:
    from kafka_archive.archive.report import SegmentStatus

    steps = []
    if any(f.status is SegmentStatus.QUARANTINED for f in report.failures):
        steps.append(
            "corrupt segments were copied to the quarantine prefix shown with an error.json "
            "naming file and byte; inspect them with `kafka-archive segments dump FILE`; the "
            "next run archives another replica's copy if one exists"
        )
    if any(f.status is SegmentStatus.FAILED for f in report.failures):
        steps.append(
            "store failures: check the endpoint and credentials, then run the same command "
            "again (it resumes; nothing is uploaded twice)"
        )
    if report.log_dir_failures:
        steps.append("fix the log dir problems listed (path, mount, --broker-id) and re-run")
    return "; ".join(steps)


def archive(
    cluster: Annotated[str, typer.Option("--cluster", help="Cluster name (first key segment).")],
    broker_id: Annotated[
        int, typer.Option("--broker-id", help="The broker's node.id / broker.id.", min=0)
    ],
    log_dir: Annotated[
        list[Path],
        typer.Option(
            "--log-dir",
            help="A log.dirs entry of the broker (repeatable).",
            exists=False,
            file_okay=False,
        ),
    ],
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Store URI: s3://bucket/prefix or file:///dir (env KAFKA_ARCHIVE_STORE).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Discover and plan only; upload nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=64, help="Parallel segment uploads.")
    ] = 4,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            help="Cache digests and manifests here between runs (recommended for "
            "large brokers; env KAFKA_ARCHIVE_STATE_DIR).",
        ),
    ] = None,
    store_option: STORE_OPTION = None,
    topics: Annotated[
        list[str] | None,
        typer.Option(
            "--topics",
            metavar="GLOB",
            help="Archive only topics matching this glob, case-sensitive, e.g. 'orders-*' "
            "(repeatable; default: every topic). __consumer_offsets and __cluster_metadata "
            "are archived whatever the selection; other partitions are not read.",
        ),
    ] = None,
) -> None:
    from kafka_archive.archive.runner import Progress as RunProgress
    from kafka_archive.cli.context import cli_settings
    from kafka_archive.services.archive import ArchiveService
    from kafka_archive.store import StoreError
    from segment_lib.errors import SegmentError

    options = parse_store_options(store_option)
    service = ArchiveService(
        cli_settings(as_json, store=store, state_dir=os.fspath(state_dir) if state_dir else None)
    )
    object_store = open_archive_store(service, options, as_json)
    dirs = [str(d.absolute()) for d in log_dir]
    show_bar = not as_json and sys.stderr.isatty()
    try:
        if show_bar:
            with _Bar() as bar:
                report = service.archive_broker(
                    cluster=cluster,
                    broker_id=broker_id,
                    log_dirs=dirs,
                    store=object_store,
                    dry_run=dry_run,
                    concurrency=concurrency,
                    progress=RunProgress(bar.on_discover, bar.on_planned, bar.on_outcome),
                    topics=topics or (),
                )
        else:
            report = service.archive_broker(
                cluster=cluster,
                broker_id=broker_id,
                log_dirs=dirs,
                store=object_store,
                dry_run=dry_run,
                concurrency=concurrency,
                topics=topics or (),
            )
    except ValueError as exc:  # a bad cluster name or similar input
        fail(str(exc), code=2, as_json=as_json)
    except StoreError as exc:
        fail(
            str(exc.message),
            hint=(exc.hint or "") + " (the run is resumable: re-run it)",
            as_json=as_json,
            details={"error": type(exc).__name__},
        )
    except SegmentError as exc:  # the run reports these per segment; this is a last resort
        fail(
            str(exc),
            hint="the run is resumable: fix or move the file named above and re-run it",
            as_json=as_json,
            details=exc.to_dict(),
        )
    except OSError as exc:
        fail(
            f"cannot read or write {exc.filename or 'a local file'}: {exc.strerror or exc}",
            hint="check the path and its permissions, then re-run (the run is resumable)",
            as_json=as_json,
            details={"error": type(exc).__name__, "path": exc.filename},
        )
    finally:
        object_store.close()
    if as_json:
        emit_json({"kind": "archive_report", **report.to_json_dict()})
    else:
        _print_report(report)
    if not report.ok:
        steps = _next_steps(report)
        if as_json:
            sys.stderr.write(json.dumps({"kind": "next_steps", "hint": steps}) + "\n")
        else:
            err_console.print(
                f"[bold red]error:[/] {report.segments_failed} segment(s) failed, "
                f"{len(report.log_dir_failures)} log dir(s) failed"
            )
            err_console.print(f"[yellow]next:[/] {steps}")
        raise typer.Exit(1)


archive.__doc__ = HELP


class _ArchiveCommand(TyperCommand):
    """``archive``, plus two sub-commands: ``archive prune ...`` is the retention command
    (:mod:`kafka_archive.cli.prune`), ``archive fetch ...`` the fetch archiver
    (:mod:`kafka_archive.cli.archive_fetch`). ``archive`` itself stays a plain command (its options
    are required), so the sub-command is dispatched on the first argument."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: Context | None = None,
        **extra: Any,
    ) -> Context:
        if args and args[0] == "prune":
            from kafka_archive.cli.prune import prune_command

            cmd = prune_command()
            name = f"{info_name or 'archive'} prune"
            ctx: Context = cmd.make_context(name, list(args[1:]), parent=parent, **extra)
            return ctx
        if args and args[0] == "fetch":
            from kafka_archive.cli.archive_fetch import fetch_click_command

            sub = fetch_click_command()
            name = f"{info_name or 'archive'} fetch"
            fctx: Context = sub.make_context(name, list(args[1:]), parent=parent, **extra)
            return fctx
        return super().make_context(info_name, args, parent=parent, **extra)


def register(app: typer.Typer) -> None:
    """Add ``archive`` (and ``archive prune``) to the ``kafka-archive`` command line."""
    app.command(name="archive", help=HELP, cls=_ArchiveCommand)(archive)
