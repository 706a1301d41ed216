"""``kafka-archive archive prune``: apply the retention policies to the archive.

A thin adapter over :class:`kafka_archive.services.prune.PruneService`: options in, one line
per pruned (or, ``--dry-run``, prunable) partition range out. Exit status: 0 done (nothing to
prune included), 1 a reported failure (bad policies, no catalog, store errors: re-run, the
prune is resumable), 2 usage errors.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from kafka_archive.cli.errors import fail_error
from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json, err_console, fail
from kafka_archive.sizes import format_bytes

__all__ = ["prune", "prune_command"]

HELP = "\n\n".join(
    [
        "Delete archived segments that the retention policies no longer keep.",
        "Policies come from the `retention` setting (a YAML list in the file named by "
        "KAFKA_ARCHIVE_CONFIG, or JSON in KAFKA_ARCHIVE_RETENTION): by age (max_age), by "
        "total size (max_bytes) or keep_all, per cluster/topic pattern. Whole segments go, "
        "oldest first, with every archived version of the same offsets (replicas, compaction "
        "rewrites); each pruned range is recorded in the catalog before any object is deleted, "
        "so `catalog gaps` says 'pruned by policy X at T' and a prune that dies is finished by "
        "the next. Offsets a running or queued replay or export needs are left alone. Internal "
        "topics (names starting with '_': __cluster_metadata, __consumer_offsets, _schemas) "
        "are pruned only by a policy whose topic pattern starts with '_' too.",
        "A prune that would delete more than the prune_max_share setting (default 50%) of any "
        "topic deletes nothing and asks for --yes; --dry-run shows each topic's share.",
        "\b\nExamples:\n"
        '  KAFKA_ARCHIVE_RETENTION=\'[{"name": "30-days", "max_age": "30d"}]\' \\\n'
        "      kafka-archive archive prune --db catalog.db --store file:///srv/archive --dry-run\n"
        "  kafka-archive archive prune --cluster prod --topic orders --json",
        "Exit status: 0 done, 1 failed (re-run: the prune is resumable), 2 usage error.",
    ]
)


def _print(report: Any) -> None:
    from rich.table import Table

    from kafka_archive.timeparse import format_ms

    verb = "would prune" if report.dry_run else "pruned"
    for c in report.completed:
        console.print(
            f"finished an earlier prune: {c['cluster']}/{c['topic']}/{c['partition']} offsets "
            f"{c['first_offset']}..{c['last_offset']} (policy {c['policy']})"
        )
    if report.ranges:
        table = Table(title=f"{verb}: {report.segments} segment(s), {format_bytes(report.bytes)}")
        for col in ("partition", "offsets", "newest record", "policy"):
            table.add_column(col)
        table.add_column("segments", justify="right")
        table.add_column("bytes", justify="right")
        for r in report.ranges:
            table.add_row(
                f"{r.cluster}/{r.topic}/{r.partition}",
                f"{r.first_offset}..{r.last_offset}",
                format_ms(r.max_timestamp)[:19] if r.max_timestamp >= 0 else "-",
                r.policy,
                str(len(r.segment_ids)),
                format_bytes(r.bytes),
            )
        console.print(table)
    else:
        console.print(f"nothing to prune ({report.kept_topics} topic(s) kept whole)")
    for sh in report.shares:
        console.print(
            f"{sh.cluster}/{sh.topic}: {verb} {sh.percent:.1f}% of the topic "
            f"({format_bytes(sh.pruned_bytes)} of {format_bytes(sh.total_bytes)}, "
            f"policy {sh.policy})"
        )
    for sh in report.needs_confirmation:
        err_console.print(
            f"[yellow]needs --yes:[/] {sh.cluster}/{sh.topic}: {sh.percent:.1f}% is more than "
            "the prune_max_share setting allows"
        )
    for k in report.kept_internal:
        err_console.print(
            f"[yellow]kept:[/] {k['cluster']}/{k['topic']} (policy {k['policy']} matches it): "
            f"{k['reason']}"
        )
    for h in report.held:
        err_console.print(
            f"[yellow]kept:[/] {h['cluster']}/{h['topic']}/{h['partition']} offsets from "
            f"{h['first_offset']}: {h['reason']}"
        )


def prune(
    cluster: Annotated[
        str | None, typer.Option("--cluster", help="Only this cluster (default: all).")
    ] = None,
    topic: Annotated[str | None, typer.Option("--topic", help="Only this topic.")] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="List what would go and how many bytes; delete nothing."),
    ] = False,
    db: Annotated[
        str,
        typer.Option("--db", help="Catalog database (env KAFKA_ARCHIVE_DB)."),
    ] = "",
    store: Annotated[
        str,
        typer.Option("--store", help="Archive store URI (env KAFKA_ARCHIVE_STORE)."),
    ] = "",
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="Confirm a prune that deletes more than the prune_max_share setting "
            "(default 50%) of a topic.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    from kafka_archive.catalog.prune_share import PruneNeedsConfirmation
    from kafka_archive.catalog.retention import RetentionConfigError
    from kafka_archive.cli.context import (
        cli_settings,
        open_catalog_or_fail,
        open_store_or_fail,
    )
    from kafka_archive.services.prune import PruneService
    from kafka_archive.store import StoreError

    settings = cli_settings(as_json)
    catalog = open_catalog_or_fail(db or None, as_json)
    st = open_store_or_fail(store or None, as_json)
    show = not as_json and sys.stderr.isatty()
    with PruneService(settings, catalog=catalog, store=st) as svc:
        try:
            if show:
                with err_console.status("planning" if dry_run else "pruning") as status:

                    def on_event(e: dict[str, Any]) -> None:
                        where = f"{e['cluster']}/{e['topic']}/{e['partition']}"
                        status.update(f"{e['kind'].replace('_', ' ')} {where}")

                    report = svc.prune(
                        cluster=cluster,
                        topic=topic,
                        dry_run=dry_run,
                        on_event=on_event,
                        confirmed=yes,
                    )
            else:
                report = svc.prune(cluster=cluster, topic=topic, dry_run=dry_run, confirmed=yes)
        except (RetentionConfigError, PruneNeedsConfirmation) as exc:
            fail(str(exc), hint=exc.hint, as_json=as_json)
        except StoreError as exc:
            fail_error(
                exc, hint=f"{exc.hint or ''} (the prune is resumable: re-run it)", as_json=as_json
            )
    if as_json:
        for c in report.completed:
            emit_json({"kind": "completed", **c})
        for r in report.ranges:
            emit_json({"kind": "would_prune" if dry_run else "pruned", **r.to_json()})
        for h in report.held:
            emit_json({"kind": "held", **h})
        for k in report.kept_internal:
            emit_json({"kind": "kept_internal", **k})
        asks = {(x.cluster, x.topic) for x in report.needs_confirmation}
        for sh in report.shares:
            needs = (sh.cluster, sh.topic) in asks
            emit_json({"kind": "topic_share", **sh.to_json(), "needs_confirmation": needs})
        emit_json(
            {
                "kind": "prune_summary",
                "dry_run": dry_run,
                "segments": report.segments,
                "bytes": report.bytes,
                "ranges": len(report.ranges),
                "held": len(report.held),
                "completed": len(report.completed),
                "needs_confirmation": len(report.needs_confirmation),
            }
        )
    else:
        _print(report)


prune.__doc__ = HELP


def prune_command() -> Any:
    """The Click command of ``archive prune`` (built on demand: ``archive`` dispatches to
    it when its first argument is ``prune``)."""
    holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    holder.command(name="prune", help=HELP)(prune)
    return typer.main.get_command(holder)
