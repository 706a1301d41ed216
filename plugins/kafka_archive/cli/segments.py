"""``kafka-archive segments``: inspect broker log files, in the spirit of kafka-dump-log.sh."""

from __future__ import annotations

import string
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from kafka_archive.cli.output import JSON_OPTION_HELP, console, emit_json, err_console, fail
from kafka_archive.timeparse import TimeParseError, format_ms, parse_time_ms
from segment_lib.cluster_metadata import kafka_json
from segment_lib.cluster_metadata.dump_view import CONTROL_LABELS
from segment_lib.dump import DumpOptions, dump_file
from segment_lib.errors import SegmentError
from segment_lib.lookup import find_offset, find_offset_for_timestamp
from segment_lib.partition import PartitionView

app = typer.Typer(
    help=(
        "Read broker log files directly from disk: dump batches and records, check indexes, "
        "and look up offsets and times exactly as the broker would."
    ),
    no_args_is_help=True,
)

_PRINTABLE = set(string.printable) - set("\x0b\x0c")
_INT64_MAX = (1 << 63) - 1


def _show_bytes(data: str | None) -> str:
    """Text view of a base64 field: UTF-8 when valid and printable, else escaped bytes."""
    if data is None:
        return "null"
    import base64

    raw = base64.b64decode(data)
    try:
        text = raw.decode("utf-8")
        if all(c in _PRINTABLE or ord(c) > 127 for c in text):
            return text
    except UnicodeDecodeError:
        pass
    return repr(raw)[2:-1]


def _horizon(ms: int | None) -> str:
    """A delete horizon as DumpLogSegments prints it."""
    return "OptionalLong.empty" if ms is None else f"OptionalLong[{ms}]"


def _file_text(event: dict[str, Any]) -> str:
    snapshot = event.get("snapshot")
    if snapshot is None:
        return f"Dumping {event['path']}"
    if snapshot.get("bootstrap"):
        return f"Dumping {event['path']}\nKRaft bootstrap snapshot"
    return (
        f"Dumping {event['path']}\n"
        f"Snapshot end offset: {snapshot['end_offset']}, epoch: {snapshot['epoch']}"
    )


def _batch_text(event: dict[str, Any]) -> str:
    """One batch header, field for field as DumpLogSegments prints it."""
    return (
        f"baseOffset: {event['base_offset']} lastOffset: {event['last_offset']} "
        f"count: {event['record_count']} baseSequence: {event['base_sequence']} "
        f"lastSequence: {event['last_sequence']} "
        f"producerId: {event['producer_id']} producerEpoch: {event['producer_epoch']} "
        f"partitionLeaderEpoch: {event['partition_leader_epoch']} "
        f"isTransactional: {str(event['transactional']).lower()} "
        f"isControl: {str(event['control']).lower()} "
        f"deleteHorizonMs: {_horizon(event['delete_horizon_ms'])} "
        f"position: {event['position']} "
        f"{event['timestamp_type']}: {event['max_timestamp']} size: {event['size']} "
        f"magic: {event['magic']} compresscodec: {event['codec']} crc: {event['crc']} "
        f"isvalid: {str(event['crc_valid']).lower()}"
    )


def _record_text(event: dict[str, Any]) -> str:
    """One record (``--print-data-log``): a control record's type, or a decoded
    ``__consumer_offsets`` record (``--offsets-decoder``) instead of key and payload."""
    headers = ", ".join(f"{k}={_show_bytes(v)}" for k, v in event["headers"])
    line = (
        f"| offset: {event['offset']} timestamp: {event['timestamp']} "
        f"sequence: {event['sequence']} headers: [{headers}] key: {_show_bytes(event['key'])} "
        f"payload: {_show_bytes(event['value'])}"
    )
    if "control" in event:
        line += f" controlType: {event['control']['type']}"
        if event["control"]["coordinator_epoch"] is not None:
            line += f" coordinatorEpoch: {event['control']['coordinator_epoch']}"
        if "data" in event["control"]:
            label = CONTROL_LABELS[event["control"]["type"]]
            line += f" {label} {kafka_json(event['control']['data'])}"
    if "metadata" in event or "metadata_error" in event:
        # --cluster-metadata-decoder: the payload as kafka-dump-log prints it
        payload = event.get("metadata_error") or kafka_json(event["metadata"])
        line = f"| offset: {event['offset']} timestamp: {event['timestamp']} payload: {payload}"
    if "offsets" in event:
        line = f"| offset: {event['offset']} timestamp: {event['timestamp']} {event['offsets']}"
    return line


def _index_entry_text(event: dict[str, Any]) -> str:
    return f"offset: {event['offset']} position: {event['position']}"


def _time_index_entry_text(event: dict[str, Any]) -> str:
    return f"timestamp: {event['timestamp']} offset: {event['offset']}"


def _txn_entry_text(event: dict[str, Any]) -> str:
    return (
        f"producerId: {event['producer_id']} firstOffset: {event['first_offset']} "
        f"lastOffset: {event['last_offset']} "
        f"lastStableOffset: {event['last_stable_offset']}"
    )


def _index_problem_text(event: dict[str, Any]) -> str:
    return f"MISMATCH offset {event['offset']}: {event['problem']}"


def _torn_tail_text(event: dict[str, Any]) -> str:
    return (
        f"Torn tail at position {event['position']}: the last {event['bytes_after']} "
        "bytes are an incomplete batch (normal only for an active segment being written)"
    )


def _corrupt_batch_text(event: dict[str, Any]) -> str:
    return f"CORRUPT {event['path']} at byte {event['position']}: {event['detail']}"


def _resync_text(event: dict[str, Any]) -> str:
    return (
        f"Resuming at position {event['position']}: the next valid batch after the "
        f"corruption at byte {event['from']}"
    )


def _file_error_text(event: dict[str, Any]) -> str:
    where = "" if event["position"] is None else f" at byte {event['position']}"
    return f"ERROR {event['file']}{where}: {event['detail']}"


def _summary_text(event: dict[str, Any]) -> str:
    """The last line of a file: a ``.log`` summary, or an index file's check."""
    if event.get("type") == ".log":
        return _log_summary(event)
    if "sane" in event:
        return f"{event['file']}: {event['entries']} entries, index is sane"
    against = event.get("checked_against")
    if against is None:
        return f"{event['entries']} entries (no .log beside it to check against)"
    return f"{event['entries']} entries checked against {against}: {event['problems']} problems"


#: the text line of each event kind of :func:`segment_lib.dump.dump_file`
_TEXT_BY_KIND: dict[str, Callable[[dict[str, Any]], str]] = {
    "file": _file_text,
    "batch": _batch_text,
    "record": _record_text,
    "index_entry": _index_entry_text,
    "time_index_entry": _time_index_entry_text,
    "txn_entry": _txn_entry_text,
    "index_problem": _index_problem_text,
    "torn_tail": _torn_tail_text,
    "corrupt_batch": _corrupt_batch_text,
    "resync": _resync_text,
    "file_error": _file_error_text,
    "summary": _summary_text,
}


def _text(event: dict[str, Any]) -> str | None:
    """The text line of a dump event (``None``: a kind with no text form)."""
    render = _TEXT_BY_KIND.get(event["kind"])
    return None if render is None else render(event)


def _log_summary(event: dict[str, Any]) -> str:
    """``Summary of <file>: N batches read (V of S bytes valid): OK | K problem(s): ...``."""
    head = (
        f"Summary of {event['file']}: {event['batches']} batches read "
        f"({event['valid_bytes']} of {event['size']} bytes valid)"
    )
    if event["ok"]:
        return f"{head}: OK"
    what = "; ".join(
        f"{p['problem'].replace('_', ' ')} at byte {p['position']}"
        + (f" (read on at byte {p['resumed_at']})" if p.get("resumed_at") is not None else "")
        for p in event["problems"]
    )
    return f"{head}: {len(event['problems'])} problem(s): {what}"


@app.command()
def dump(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Segment files: .log .index .timeindex .txnindex, KRaft snapshots .checkpoint",
            exists=True,
            dir_okay=False,
        ),
    ],
    print_data_log: Annotated[
        bool,
        typer.Option(
            "--print-data-log", help="Print every record (key, value, headers), not only batches."
        ),
    ] = False,
    offsets_decoder: Annotated[
        bool,
        typer.Option(
            "--offsets-decoder",
            help="Decode __consumer_offsets records (offset commits, group metadata).",
        ),
    ] = False,
    cluster_metadata_decoder: Annotated[
        bool,
        typer.Option(
            "--cluster-metadata-decoder",
            help="Decode KRaft __cluster_metadata records (topics, partitions, configs, ACLs, "
            "...) as kafka-dump-log does; automatic for files of __cluster_metadata and "
            ".checkpoint snapshots. SCRAM salts and keys are printed as [redacted].",
        ),
    ] = False,
    index_sanity_check: Annotated[
        bool,
        typer.Option("--index-sanity-check", help="Only check that index files are well-formed."),
    ] = False,
    verify_index_only: Annotated[
        bool,
        typer.Option(
            "--verify-index-only",
            help="Check .index/.timeindex entries against the .log; print only problems.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    """Dump segment files like kafka-dump-log.sh.

    \b
    Examples:
      kafka-archive segments dump /var/lib/kafka/orders-0/00000000000000000000.log
      kafka-archive segments dump --print-data-log --json 00000000000000000000.log
      kafka-archive segments dump --offsets-decoder __consumer_offsets-7/*.log
      kafka-archive segments dump --cluster-metadata-decoder __cluster_metadata-0/*.checkpoint
      kafka-archive segments dump --verify-index-only orders-0/*.index orders-0/*.timeindex

    A file whose name is not a segment's is dumped as a log when its bytes are one (a
    complete first batch with a valid checksum). Each .log ends with a summary line: batches
    read, valid bytes, and every problem with its byte position.

    Exit status: 0 when every file is valid; 1 on corrupt bytes, CRC failures, a torn tail
    (an incomplete last batch), index mismatches or bytes that are not a log; the last line
    names each file and byte position.
    """
    opts = DumpOptions(
        print_data_log=print_data_log,
        offsets_decoder=offsets_decoder,
        cluster_metadata_decoder=cluster_metadata_decoder,
        index_sanity_check=index_sanity_check,
        verify_index_only=verify_index_only,
    )
    # Every file is dumped even after a bad one; what was wrong where is collected and
    # repeated in the last line, which decides the exit status.
    problems: list[dict[str, Any]] = []
    for path in files:
        try:
            for event in dump_file(path, opts):
                problems.extend(_problems_of(event))
                _show(event, as_json)
        except BrokenPipeError:
            raise  # the output's reader went away (`| head`): the CLI ends quietly
        except (SegmentError, OSError) as exc:
            error = _error_event(exc, path)
            problems.append(error)
            _show(error, as_json)
    if problems:
        first = problems[0]
        where = "" if first["position"] is None else f" at byte {first['position']}"
        fail(
            f"{len(problems)} problem(s) in {len({p['file'] for p in problems})} of "
            f"{len(files)} file(s); first: {first['file']}{where}: {first['detail']}",
            as_json=as_json,
            details={"path": first["file"], "position": first["position"], "problems": problems},
            hint="a torn tail is normal only for an active segment being written; anything "
            "else means damaged bytes: restore the segment from a replica or the archive",
        )


def _problems_of(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The problems an event stands for, as ``{"file","problem","position","detail"}``."""
    kind = event["kind"]
    if kind == "summary" and event.get("type") == ".log":
        return [{"file": event["file"], **p} for p in event["problems"]]
    if kind == "index_problem":
        return [
            {
                "file": event["file"],
                "problem": "index_mismatch",
                "position": event.get("position"),
                "detail": f"offset {event['offset']}: {event['problem']}",
            }
        ]
    return []


def _error_event(exc: SegmentError | OSError, path: Path) -> dict[str, Any]:
    """A file that could not be dumped, as an event (no traceback, no exit yet)."""
    if isinstance(exc, SegmentError):
        return {
            "kind": "file_error",
            "file": exc.path or str(path),
            "problem": type(exc).__name__,
            "position": exc.position,
            "detail": exc.detail + (f" (expected {exc.expected})" if exc.expected else ""),
        }
    return {
        "kind": "file_error",
        "file": str(exc.filename or path),
        "problem": type(exc).__name__,
        "position": None,
        "detail": exc.strerror or str(exc),
    }


def _show(event: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json(event)
        return
    line = _text(event)
    if line is None:
        return
    if event["kind"] in ("corrupt_batch", "file_error"):
        err_console.print(escape(line))
    else:
        console.print(escape(line))


@app.command()
def lookup(
    partition_dir: Annotated[
        Path,
        typer.Argument(
            help="A partition directory such as /var/lib/kafka/orders-0",
            exists=True,
            file_okay=False,
        ),
    ],
    timestamp: Annotated[
        str | None,
        typer.Option(
            "--timestamp",
            "-t",
            help="Find the earliest offset whose timestamp is >= this time: ISO-8601 "
            "(naive = UTC), epoch ms, relative (-2h, now-30m), or latest/earliest.",
        ),
    ] = None,
    offset: Annotated[
        int | None,
        typer.Option(
            "--offset", "-o", help="Find the segment and byte position holding this offset."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_OPTION_HELP)] = False,
) -> None:
    """Answer an offset or time question for one partition directory, as the broker would.

    \b
    Examples:
      kafka-archive segments lookup /var/lib/kafka/orders-0 --timestamp -2h
      kafka-archive segments lookup orders-0 --timestamp 2026-11-21T01:00:00Z --json
      kafka-archive segments lookup orders-0 --offset 170410

    --json prints {"offset":..,"timestamp":..,"segment":..,"position":..}; offset is -1 when
    no record has a timestamp at or after the one asked for.
    """
    if (timestamp is None) == (offset is None):
        fail(
            "give exactly one of --timestamp or --offset",
            as_json=as_json,
            hint="e.g. --timestamp -2h or --offset 1000",
        )
    if offset is not None and not 0 <= offset <= _INT64_MAX:
        fail(
            f"--offset {offset} is not a Kafka offset",
            as_json=as_json,
            hint="offsets are 0 .. 2^63-1; e.g. --offset 1000",
        )
    try:
        view = PartitionView.open(partition_dir)
        if timestamp is not None:
            special = {"latest": -1, "earliest": -2, "max": -3}
            try:
                target = special.get(timestamp.lower())
                if target is None:
                    target = parse_time_ms(timestamp)
            except TimeParseError as exc:
                fail(str(exc), as_json=as_json)
            answer = find_offset_for_timestamp(view, target)
            result: dict[str, Any] = {
                "offset": answer.offset,
                "timestamp": answer.timestamp,
                "segment": answer.segment.name if answer.segment else None,
                "position": answer.position,
                "target_timestamp": target,
            }
        else:
            assert offset is not None
            loc = find_offset(view, offset)
            record_ts = -1
            if loc is not None:
                from segment_lib.log_file import open_log

                with open_log(loc.segment.log) as log:
                    batch = next(log.batches(loc.position, allow_torn_tail=True))
                    record_ts = next(
                        (r.timestamp for r in log.records(batch) if r.offset >= offset), -1
                    )
            result = {
                "offset": -1 if loc is None else max(offset, loc.batch_base_offset),
                "timestamp": record_ts,
                "segment": loc.segment.name if loc else None,
                "position": loc.position if loc else -1,
                "batch_base_offset": loc.batch_base_offset if loc else -1,
                "batch_last_offset": loc.batch_last_offset if loc else -1,
            }
    except SegmentError as exc:
        fail(str(exc), as_json=as_json, details=exc.to_dict())
    except OSError as exc:
        fail(
            f"cannot read {exc.filename or partition_dir}: {exc.strerror or exc}",
            as_json=as_json,
            details={"error": type(exc).__name__, "path": str(exc.filename or partition_dir)},
            hint="check the path and its permissions (a symbolic link loop is reported so too)",
        )
    if as_json:
        emit_json(result)
    elif int(result["offset"]) < 0:
        console.print(
            "No record qualifies (offset -1): the partition holds no record at or "
            "after that time/offset."
        )
    else:
        console.print(
            f"offset {result['offset']} timestamp {result['timestamp']} "
            f"({format_ms(int(result['timestamp']))}) in {result['segment']} at byte "
            f"{result['position']}"
        )
