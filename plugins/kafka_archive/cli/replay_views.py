"""What ``kafka-archive replay`` prints for people: the plan of a dry run (with every hole of
the range), the final report of a run (with its holes when gaps were allowed), and ``status``."""

from __future__ import annotations

from typing import Any

from kafka_archive.cli.output import console
from kafka_archive.counts import ABORTED, MARKERS, OFFSETS, WILL_SEND

__all__ = ["print_holes", "print_plan", "print_report", "print_status"]


def _partition_table(title: str, columns: dict[str, str], partitions: dict[int, Any]) -> None:
    """Print one row per partition: its number, then ``row[key]`` for each ``header: key``."""
    from rich.table import Table  # (here: ``replay run --json`` imports no rich, issue 27)

    table = Table(title=title)
    for col in ("partition", *columns):
        table.add_column(col, justify="right")
    for p, row in partitions.items():
        table.add_row(str(p), *(str(row[key]) for key in columns.values()))
    console.print(table)


def print_plan(report: Any) -> None:
    _partition_table(
        f"replay {report.replay_id} (dry run): {report.cluster}/{report.topic} "
        f"-> {report.target_topic} @ {report.target}",
        {
            "start offset": "start_offset",
            "end offset (excl.)": "end_offset",
            OFFSETS: "records",
            "bytes": "bytes",
            "objects": "object_count",
        },
        {p: {**row, "object_count": len(row["objects"])} for p, row in report.partitions.items()},
    )
    for p, row in report.partitions.items():
        for obj in row["objects"]:
            console.print(
                f"  p{p}: {obj['key']} bytes [{obj['start']}, {obj['end']}) "
                f"offsets {obj['base_offset']}..{obj['last_offset']}"
            )
    total = sum(int(row["records"]) for row in report.partitions.values())
    console.print(
        f"{WILL_SEND}: at most {total} (the {OFFSETS}; {ABORTED} and {MARKERS} among them "
        "are not sent, and the run's report counts them apart)",
        markup=False,
    )


#: how the report's ``replay_path`` reads in a sentence
_PATHS = {
    "batches": "the archived batches sent whole",
    "records": "record by record",
    "mixed": "some partitions by whole batches, some record by record",
}


def print_report(report: Any) -> None:
    _partition_table(
        f"replay {report.replay_id}: {report.status}",
        {
            "first offset": "first_offset",
            "last offset": "last_offset",
            "records sent": "records",
            "this run": "records_this_run",
            f"{ABORTED} skipped": "skipped_aborted_records",
            f"{MARKERS} skipped": "skipped_control_batches",
            "filtered": "filtered_records",
            "open txn": "open_txn_records",
            "status": "status",
        },
        report.partitions,
    )
    aborted = sum(int(r["skipped_aborted_records"]) for r in report.partitions.values())
    markers = sum(int(r["skipped_control_batches"]) for r in report.partitions.values())
    console.print(
        f"{report.records_sent_this_run} committed records sent this run "
        f"({report.records_sent} in total; {aborted} {ABORTED} and {markers} {MARKERS} "
        "skipped) "
        f"to {report.target_topic} in {report.duration_s:.2f} s: "
        f"{report.records_per_s:,.0f} records/s, {report.mb_per_s:.2f} MB/s "
        f"({_PATHS.get(report.replay_path, report.replay_path)})"
    )
    for note in report.path_notes:
        console.print(f"  {note}")
    for p, row in report.partitions.items():
        for pid, first in row["open_txns"]:
            console.print(
                f"[yellow]partition {p}: transaction of producer {pid} from offset "
                f"{first} is still open at the end of the archive: nothing from that offset "
                f"on was sent (a later run sends it once the archive holds the outcome)[/]"
            )


def print_holes(report: Any) -> None:
    """One line per hole: partition, offsets, kind, object key and byte position, reason."""
    if not report.holes:
        return
    verb = "replayed around" if report.allow_gaps and not report.dry_run else "cannot deliver"
    console.print(f"[yellow]{len(report.holes)} hole(s) the replay {verb}:[/]")
    for h in report.holes:
        where = f" object {h['object_key']}" if h.get("object_key") else ""
        if where and h.get("byte_position") is not None:
            where += f" at byte {h['byte_position']}"
        console.print(
            f"[yellow]  p{h['partition']}: offsets {h['first_offset']}..{h['last_offset']} "
            f"{h['kind']}{where}: {h['reason']}[/]"
        )


def print_status(obj: dict[str, Any], progress: list[Any]) -> None:
    """One replay of ``replay status``: ``obj`` is its JSON object, ``progress`` its
    per-partition progress rows."""
    holes = (
        f", {obj['holes']} hole(s) allowed with --allow-gaps"
        if obj["holes"] and obj["allow_gaps"]
        else f", {obj['holes']} hole(s)"
        if obj["holes"]
        else ""
    )
    console.print(
        f"[bold]{obj['replay_id']}[/] {obj['status']}: {obj['cluster']}/{obj['topic']} -> "
        f"{obj['target_topic']} @ {obj['target']} ({obj['records_sent']} records sent, "
        f"{obj['offset_ranges']} offset ranges{holes})"
    )
    if obj.get("resumable") and obj["status"] != "running":
        console.print(f"  resume: {obj['resume']}   (or abandon: {obj['abandon']})")
    for p in progress:
        state = "done" if p.done else f"at {p.next_offset}/{p.end_offset}"
        console.print(
            f"  partition {p.source_partition}: {state}, {p.records_sent} records sent, "
            f"{p.txn_seq} transactions"
        )


def _table(title: str, columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """A titled table of ``rows`` (nothing when there are none)."""
    if not rows:
        return
    from rich.table import Table

    table = Table(title=title)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def print_topic_config(report: Any) -> None:
    """The target topic's configs of a dry run: what creation would set (name, value, source),
    what is left out and why, the differences from an existing target, the findings."""
    view = report.topic_config
    if not view:
        return
    settings = view.get("settings") or {}
    if settings.get("found"):
        from kafka_archive.timeparse import format_ms

        console.print(
            f"source topic at {format_ms(settings['at_ms'])}: {settings['source_partitions']} "
            f"partition(s), topic id {settings.get('topic_id') or '?'} (from the "
            f"{settings['history_source']}, state as of {format_ms(settings['as_of_ms'])})"
        )
    for note in settings.get("notes") or []:
        console.print(f"[yellow]note: {note}[/]")
    created = view.get("created_with")
    if created is not None:
        rf = view.get("replication_factor")
        console.print(
            f"target topic would be created with {view.get('target_partitions')} partition(s), "
            f"replication factor {rf if rf is not None else 'the target default'}"
        )
    _table(
        "target topic configs",
        ("config", "value", "source"),
        [(c["name"], c["value"], c["source"]) for c in settings.get("configs") or []],
    )
    for d in view.get("dropped") or []:
        console.print(f"[yellow]not set: {d['name']}={d['value']}: {d['reason']}[/]")
    _table(
        "source at T vs the existing target (overrides; - = default)",
        ("config", "source", "target"),
        [(d["name"], d["source"] or "-", d["target"] or "-") for d in view.get("diffs") or []],
    )
    source_parts = settings.get("source_partitions")
    target_parts = view.get("target_partitions")
    if created is None and source_parts is not None and target_parts not in (None, source_parts):
        console.print(
            f"[yellow]partitions differ: source {source_parts} at T, target {target_parts}[/]"
        )
    for f in view.get("findings") or []:
        colour = "red" if f["level"] == "error" else "yellow"
        hint = f" ({f['hint']})" if f.get("hint") else ""
        console.print(f"[{colour}]{f['level']}: {f['name']}: {f['message']}{hint}[/]")
