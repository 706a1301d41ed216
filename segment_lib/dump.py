"""What ``kafka-archive segments dump`` shows, as a stream of plain dicts (no printing here).

Each event is a JSON-ready ``dict`` with a ``kind``: ``file``, ``batch``, ``record``,
``index_entry``, ``time_index_entry``, ``txn_entry``, ``index_problem``, ``summary``,
``torn_tail``, ``corrupt_batch``, ``resync``. Every bad thing found in a ``.log`` (a CRC
mismatch, a torn tail, a corrupt batch) is listed in its final ``summary`` with its byte
position. The ``batch`` and ``record`` shapes are the CLI's ``--json`` contract::

    {"kind":"batch","position":int,"base_offset":int,"last_offset":int,"magic":int,
     "codec":"none|gzip|snappy|lz4|zstd","timestamp_type":"CreateTime|LogAppendTime|NoTimestamp",
     "max_timestamp":int,"record_count":int,"crc_valid":bool,"transactional":bool,
     "control":bool,"producer_id":int,"base_sequence":int,"last_sequence":int,
     "delete_horizon_ms":int|null, ...}
    {"kind":"record","offset":int,"timestamp":int,"sequence":int,"key":BASE64|null,
     "value":BASE64|null,
     "headers":[[NAME,BASE64|null],...], ...}

Index checks follow DumpLogSegments: every ``.index`` entry must point at a batch boundary of
the ``.log`` at or before the batch holding its offset; every ``.timeindex`` entry's timestamp
must be the maximum timestamp of the batch holding its offset, and no earlier batch may carry a
larger one. Structural errors of a ``.log`` end its batch stream with a ``corrupt_batch``
event; those of other files raise :class:`~segment_lib.errors.SegmentError` after the events
that could be produced.

A torn tail is only a batch that runs past the end of the file with nothing valid after it
(see :mod:`segment_lib.log_file`) and that no ``.index`` entry points beyond; it is still
reported as a problem, since only an active segment being written may legitimately end so.
"""

from __future__ import annotations

import base64
import dataclasses
from bisect import bisect_left
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from segment_lib.cluster_metadata.dump_view import control_fields, metadata_fields
from segment_lib.cluster_metadata.files import parse_snapshot_name
from segment_lib.control import decode_control_record
from segment_lib.errors import (
    CorruptBatchError,
    CrcMismatchError,
    InvalidFileNameError,
    NotALogError,
    SegmentError,
)
from segment_lib.log_file import LogBuffer, open_log, verify_batch_crc
from segment_lib.names import (
    FileKind,
    classify_file,
    parse_dumpable_file_name,
    parse_partition_dir_name,
)
from segment_lib.offset_index import OffsetPosition, read_offset_index
from segment_lib.records import BatchHeader, Record
from segment_lib.sniff import find_next_batch, header_problem, log_problem
from segment_lib.time_index import TimestampOffset, read_time_index

__all__ = ["DumpOptions", "batch_event", "dump_file", "record_event"]

Event = dict[str, Any]


class DumpOptions:
    """Switches of ``segments dump`` (mirroring kafka-dump-log.sh)."""

    __slots__ = (
        "cluster_metadata_decoder",
        "index_sanity_check",
        "offsets_decoder",
        "print_data_log",
        "verify_index_only",
    )

    def __init__(
        self,
        *,
        print_data_log: bool = False,
        offsets_decoder: bool = False,
        index_sanity_check: bool = False,
        verify_index_only: bool = False,
        cluster_metadata_decoder: bool = False,
    ) -> None:
        self.print_data_log = print_data_log or offsets_decoder or cluster_metadata_decoder
        self.offsets_decoder = offsets_decoder
        self.cluster_metadata_decoder = cluster_metadata_decoder
        self.index_sanity_check = index_sanity_check
        self.verify_index_only = verify_index_only


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


_INT32_MAX = (1 << 31) - 1
#: batch attribute bit 6: the batch's first timestamp field holds the cleaner's delete horizon
_DELETE_HORIZON_BIT = 0x40


def _increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's ``DefaultRecordBatch.incrementSequence``: sequences wrap from int32 max to 0;
    -1 (no sequence) stays -1."""
    if sequence < 0:
        return -1
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


def _delete_horizon_ms(batch: BatchHeader) -> int | None:
    if batch.magic >= 2 and batch.attributes & _DELETE_HORIZON_BIT:
        return batch.first_timestamp
    return None


def batch_event(batch: BatchHeader, crc_valid: bool) -> Event:
    """The ``--json`` object of one batch.

    ``last_sequence`` and ``delete_horizon_ms`` are what DumpLogSegments prints as
    ``lastSequence`` and ``deleteHorizonMs``: the sequence of the last record (-1 without
    one) and the delete horizon the log cleaner stamped on a batch with tombstones or a
    transaction marker (``null`` when the batch has none). ``first_timestamp`` is the
    header's field as stored: with a delete horizon it *is* the horizon (KIP-534), not a
    record's time (DumpLogSegments does not print it; the records' own timestamps are right).
    """
    return {
        "kind": "batch",
        "position": batch.position,
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
        "magic": batch.magic,
        "codec": batch.codec.label,
        "timestamp_type": batch.timestamp_type.label,
        "max_timestamp": batch.max_timestamp,
        "first_timestamp": batch.first_timestamp,
        "record_count": batch.record_count,
        "crc_valid": crc_valid,
        "crc": batch.crc,
        "transactional": batch.is_transactional,
        "control": batch.is_control,
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "last_sequence": _increment_sequence(
            batch.base_sequence, batch.last_offset - batch.base_offset
        ),
        "delete_horizon_ms": _delete_horizon_ms(batch),
        "partition_leader_epoch": batch.partition_leader_epoch,
        "size": batch.size,
    }


def record_event(record: Record, batch: BatchHeader | None = None) -> Event:
    """The ``--json`` object of one record; ``sequence`` (the producer sequence of the record,
    -1 without one) is derived from its ``batch``."""
    sequence = -1
    if batch is not None:
        sequence = _increment_sequence(batch.base_sequence, record.offset - batch.base_offset)
    return {
        "kind": "record",
        "offset": record.offset,
        "timestamp": record.timestamp,
        "sequence": sequence,
        "key": _b64(record.key),
        "value": _b64(record.value),
        "headers": [[h.key, _b64(h.value)] for h in record.headers],
    }


def _in_topic(path: Path, topic: str) -> bool:
    """In a broker's ``<topic>-<n>/`` folder, or in the archive's layout
    ``.../<topic>/<n>/<object>``."""
    if path.parent.name.isdigit() and path.parent.parent.name == topic:
        return True
    try:
        return parse_partition_dir_name(path.parent.name).topic == topic
    except SegmentError:
        return False


def _is_consumer_offsets(path: Path) -> bool:
    return _in_topic(path, "__consumer_offsets")


def _is_cluster_metadata(path: Path) -> bool:
    """A file of KRaft's metadata log (its folder), or a snapshot (``.checkpoint``)."""
    return _in_topic(path, "__cluster_metadata") or path.name.endswith(".checkpoint")


def _jsonable(value: Any) -> Any:
    """Dataclasses, enums, UUIDs and bytes made JSON-ready (bytes as base64)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"type": type(value).__name__, **out}
    if isinstance(value, bytes | bytearray | memoryview):
        return _b64(bytes(value))
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return str(value)


def _decoded_offsets(record: Record) -> dict[str, Any]:
    from segment_lib.consumer_offsets import decode_offsets_record

    decoded: dict[str, Any] = _jsonable(decode_offsets_record(record.key, record.value))
    return decoded


def _problem(kind: str, position: int, detail: str) -> dict[str, Any]:
    return {"problem": kind, "position": position, "detail": detail}


def _index_points_past(log_path: Path, position: int) -> int | None:
    """The largest position the ``.index`` beside ``log_path`` holds if it is past
    ``position``, else ``None``. The broker writes an index entry only after the batch it
    points at, so an entry past a torn batch proves the bytes there once existed."""
    index_path = log_path.with_suffix(".index")
    try:
        parsed = parse_dumpable_file_name(log_path.name)
        entries = list(read_offset_index(index_path, parsed.base_offset))
    except (SegmentError, OSError):
        return None  # no usable index: nothing to compare with
    furthest = max((e.position for e in entries), default=-1)
    return furthest if furthest > position else None


class _LogTally:
    """What a dump of one ``.log`` found so far (for its summary)."""

    def __init__(self, print_data_log: bool) -> None:
        self.batches = 0
        self.records: int | None = 0 if print_data_log else None
        self.valid_bytes = 0
        self.last_offset = -1
        self.problems: list[dict[str, Any]] = []


def _batch_events(
    log: LogBuffer, start: int, opts: DumpOptions, tally: _LogTally
) -> Iterator[Event]:
    """The ``batch`` (and ``record``) events from byte ``start`` to the end or the first
    structural error (raised); CRC mismatches are flagged and counted, not raised."""
    for batch in log.batches(start, allow_torn_tail=True):
        try:
            verify_batch_crc(log.data, batch)
            crc_valid = True
        except CrcMismatchError as exc:
            crc_valid = False
            tally.problems.append(_problem("crc_mismatch", batch.position, exc.detail))
        tally.batches += 1
        tally.valid_bytes += batch.size
        tally.last_offset = batch.last_offset
        yield batch_event(batch, crc_valid)
        if not opts.print_data_log:
            continue
        for record in log.records(batch):
            if tally.records is not None:
                tally.records += 1
            event = record_event(record, batch)
            if batch.is_control:
                control = decode_control_record(record.key, record.value)
                event["control"] = {
                    "type": control.type.name,
                    "raw_type": control.raw_type,
                    "coordinator_epoch": control.coordinator_epoch,
                    **control_fields(control.type.name, record.value, str(log.path)),
                }
            elif opts.cluster_metadata_decoder:
                event.update(metadata_fields(record.value, record.offset, str(log.path)))
            elif opts.offsets_decoder:
                event["offsets"] = _decoded_offsets(record)
            yield event


def _dump_log(path: Path, opts: DumpOptions) -> Iterator[Event]:
    """Batches (and records) of one ``.log`` with its problems, then a ``summary``:
    ``{"kind":"summary","file","type":".log","batches","records","size","valid_bytes",
    "problems":[{"problem","position","detail"[,"resumed_at"]}],"ok"}`` (``valid_bytes``: the
    bytes of the batches read; ``resumed_at``: for a corrupt batch, where the next valid batch
    starts, or null).

    A structural error is a ``corrupt_batch`` event (file, byte, what was expected), not an
    exception; when a valid batch follows the bad bytes the dump goes on from there (a
    ``resync`` event says where), so corruption never hides the rest of the file. An
    incomplete last batch is a ``torn_tail`` event.
    """
    tally = _LogTally(opts.print_data_log)
    with open_log(path, verify_crc=False) as log:
        size = len(log)
        start = 0
        while True:
            try:
                yield from _batch_events(log, start, opts, tally)
                torn = log.torn_tail_position
                if torn is not None and (furthest := _index_points_past(path, torn)) is not None:
                    raise CorruptBatchError(
                        f"the batch here runs past the end of the file, but the .index points "
                        f"at byte {furthest}: the file was damaged or cut short, not caught "
                        "mid-append",
                        path=path,
                        position=torn,
                        expected="index entries only at positions before the end of the log",
                    )
            except SegmentError as exc:
                located = exc if exc.path is not None else exc.with_location(path)
                position = located.position if located.position is not None else start
                what = located.detail
                if located.expected:
                    what += f" (expected {located.expected})"
                problem = _problem("corrupt", position, what)
                tally.problems.append(problem)
                yield {"kind": "corrupt_batch", **located.to_dict()}
                found = find_next_batch(
                    log.data, position + 1, size, min_base_offset=tally.last_offset + 1
                )
                # where the dump went on (None: nothing valid after the bad bytes)
                problem["resumed_at"] = None if found is None else found.position
                if found is None:
                    break
                yield {"kind": "resync", "position": found.position, "from": position}
                start = found.position
                continue
            if torn is not None:
                detail = f"the last {size - torn} bytes are an incomplete batch"
                tally.problems.append(_problem("torn_tail", torn, detail))
                yield {"kind": "torn_tail", "position": torn, "bytes_after": size - torn}
            break
    yield {
        "kind": "summary",
        "file": str(path),
        "type": ".log",
        "batches": tally.batches,
        "records": tally.records,
        "size": size,
        "valid_bytes": tally.valid_bytes,
        "problems": tally.problems,
        "ok": not tally.problems,
    }


def _log_batches(log_path: Path) -> list[BatchHeader]:
    with open_log(log_path) as log:
        return list(log.batches(allow_torn_tail=True))


class _LogFacts:
    """What the index checks need to know of the ``.log`` beside an index, precomputed once so
    each entry is checked in O(log n)."""

    def __init__(self, batches: list[BatchHeader]) -> None:
        self.by_position = {b.position: b for b in batches}
        self.last_offsets = [b.last_offset for b in batches]
        self.batches = batches
        running = -1
        #: max timestamp of all batches strictly before batch i
        self.max_before: list[int] = []
        for b in batches:
            self.max_before.append(running)
            running = max(running, b.max_timestamp)

    def holder(self, offset: int) -> int | None:
        """Index of the first batch whose last offset is >= ``offset``."""
        i = bisect_left(self.last_offsets, offset)
        return i if i < len(self.batches) else None


def _offset_entry_problem(entry: OffsetPosition, log: _LogFacts) -> str | None:
    batch = log.by_position.get(entry.position)
    if batch is None:
        return "position is not the start of a batch"
    if batch.base_offset > entry.offset:
        return f"batch at this position starts at offset {batch.base_offset}, after it"
    if log.holder(entry.offset) is None:
        return f"offset is past the last offset of the log ({log.last_offsets[-1]})"
    return None


def _time_entry_problem(entry: TimestampOffset, log: _LogFacts) -> str | None:
    i = log.holder(entry.offset)
    if i is None:
        return "offset is past the end of the log"
    holder = log.batches[i]
    if holder.max_timestamp != entry.timestamp:
        return (
            f"batch holding the offset has max timestamp {holder.max_timestamp}, "
            f"index says {entry.timestamp}"
        )
    if log.max_before[i] > entry.timestamp:
        return f"an earlier batch has the larger timestamp {log.max_before[i]}"
    return None


def _check_index(
    path: Path,
    entries: list[Any],
    opts: DumpOptions,
    entry_event: Callable[[Any], Event],
    problem_of: Callable[[Any, _LogFacts], str | None],
) -> Iterator[Event]:
    """The shared driver of the ``.index`` / ``.timeindex`` checks against their ``.log``."""
    if opts.index_sanity_check:  # parsing already ran the structural sanity checks
        yield {"kind": "summary", "file": str(path), "entries": len(entries), "sane": True}
        return
    log_path = path.with_suffix(".log")
    log = _LogFacts(_log_batches(log_path)) if log_path.exists() else None
    problems = 0
    for entry in entries:
        if not opts.verify_index_only:
            yield entry_event(entry)
        problem = problem_of(entry, log) if log is not None else None
        if problem:
            problems += 1
            yield {
                **entry_event(entry),
                "kind": "index_problem",
                "file": str(path),
                "problem": problem,
            }
    yield {
        "kind": "summary",
        "file": str(path),
        "entries": len(entries),
        "checked_against": str(log_path) if log is not None else None,
        "problems": problems,
    }


def _check_offset_index(path: Path, opts: DumpOptions, base: int) -> Iterator[Event]:
    yield from _check_index(
        path,
        list(read_offset_index(path, base)),
        opts,
        lambda e: {"kind": "index_entry", "offset": e.offset, "position": e.position},
        _offset_entry_problem,
    )


def _check_time_index(path: Path, opts: DumpOptions, base: int) -> Iterator[Event]:
    yield from _check_index(
        path,
        list(read_time_index(path, base)),
        opts,
        lambda e: {"kind": "time_index_entry", "timestamp": e.timestamp, "offset": e.offset},
        _time_entry_problem,
    )


def _dump_txn_index(path: Path, base: int) -> Iterator[Event]:
    from segment_lib.txn_index import read_txn_index

    for e in read_txn_index(path, base).entries:
        yield {
            "kind": "txn_entry",
            "producer_id": e.producer_id,
            "first_offset": e.first_offset,
            "last_offset": e.last_offset,
            "last_stable_offset": e.last_stable_offset,
        }


def _sniff_log(path: Path, *, named_as_log: bool) -> Event:
    """Check that ``path`` holds log bytes; return what the ``file`` event adds about it.

    A file named like a segment needs a plausible first header or a valid batch further on (a
    corrupt first batch is then reported by the dump itself); a file whose name says nothing
    must start with a complete batch whose checksum matches, or it is refused.
    """
    with open_log(path, verify_crc=False) as log:
        problem = header_problem(log.data) if named_as_log else log_problem(log.data)
        if problem is not None and named_as_log and find_next_batch(log.data, 1, len(log)):
            problem = None  # a log whose first batch is damaged: the dump reports it there
    if problem is None:
        return {} if named_as_log else {"detected_by": "content"}
    position, reason = problem
    what = "named like a log segment" if named_as_log else "not named like a segment file"
    raise NotALogError(
        f"not a Kafka log segment ({what}): {reason}",
        path=path,
        position=position,
        expected="record batches: base offset, batch length, magic 0-2 at byte 16",
    )


def _snapshot_event(name: str) -> Event:
    """``{"end_offset", "epoch"}`` of a KRaft snapshot (``{"bootstrap": true}`` for the
    controller's ``bootstrap.checkpoint``): kafka-dump-log's first line of a snapshot."""
    parsed = parse_snapshot_name(name, archived=True)
    if parsed is None:
        return {"bootstrap": True}
    return {"end_offset": parsed[0], "epoch": parsed[1]}


def _decoders_for(p: Path, opts: DumpOptions) -> DumpOptions:
    """The offsets decoder applies to its own topic only. The metadata decoder applies where it
    is asked for (as kafka-dump-log's), and without being asked to a ``__cluster_metadata``
    file or a snapshot whose records are printed: nothing else reads those."""
    metadata = opts.cluster_metadata_decoder or (opts.print_data_log and _is_cluster_metadata(p))
    offsets = opts.offsets_decoder and _is_consumer_offsets(p)
    if (metadata, offsets) == (opts.cluster_metadata_decoder, opts.offsets_decoder):
        return opts
    return DumpOptions(
        print_data_log=opts.print_data_log,
        offsets_decoder=offsets,
        cluster_metadata_decoder=metadata,
    )


def dump_file(path: str | Path, opts: DumpOptions | None = None) -> Iterator[Event]:
    """Events describing one file. The first event is ``{"kind": "file", ...}``.

    The type comes from the name (``.log``, ``.index``, ``.timeindex``, ``.txnindex``: a
    broker's name or an archived object's ``<baseOffset>-<sha16><suffix>``, whose base offset
    is its leading digits; ``.checkpoint``: a KRaft snapshot, dumped as a log, its end offset
    and epoch in the ``file`` event's ``snapshot``; ``__cluster_metadata`` records printed are
    decoded as metadata, see :mod:`segment_lib.cluster_metadata.dump_view`). A file whose
    name is neither (a renamed copy) is dumped as a log when its bytes are one: a complete first
    batch with a valid checksum (``"detected_by": "content"`` in the ``file`` event). A ``.log``
    ends with a ``summary`` event (see :func:`_dump_log`).

    Raises:
        NotALogError: the bytes are not a log (bad first header under a segment name; no
            checksummed first batch under any other name).
        SegmentError: an index file is malformed, or the file cannot be dumped at all.
        OSError: the file cannot be read.
    """
    p = Path(path)
    opts = opts or DumpOptions()
    base = 0
    try:
        parsed = parse_dumpable_file_name(p.name)
        kind: str = parsed.kind
        base = parsed.base_offset
    except InvalidFileNameError:
        kind = classify_file(p.name).kind.value
    extra: Event = {}
    if kind in (FileKind.KRAFT_SNAPSHOT.value, FileKind.BOOTSTRAP_CHECKPOINT.value) or (
        parse_snapshot_name(p.name, archived=True) is not None
    ):
        extra = {"snapshot": _snapshot_event(p.name)}
        kind = ".checkpoint"
    elif kind == FileKind.UNKNOWN.value:
        extra = _sniff_log(p, named_as_log=False)
        kind = ".log"
    elif kind == ".log":
        extra = _sniff_log(p, named_as_log=True)
    yield {"kind": "file", "path": str(p), "type": kind, **extra}
    if kind in (".log", ".checkpoint"):
        yield from _dump_log(p, _decoders_for(p, opts))
    elif kind == ".index":
        yield from _check_offset_index(p, opts, base)
    elif kind == ".timeindex":
        yield from _check_time_index(p, opts, base)
    elif kind == ".txnindex":
        yield from _dump_txn_index(p, base)
    else:
        raise SegmentError(
            f"cannot dump a {kind} file",
            path=p,
            expected="a .log, .index, .timeindex, .txnindex or .checkpoint file",
        )


# LogBuffer is re-exported for callers that dump in-memory buffers.
_ = LogBuffer
