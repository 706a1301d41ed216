"""Log compaction of a :class:`~kafka_archive_dev.writer.PartitionWriter`, modelled on Kafka's
``LogCleaner`` (one cleaning round, ``Cleaner.doClean``).

What a round does, as the broker does it:

1. The cleanable range is ``[firstDirtyOffset, firstUncleanableOffset)``: from the cleaner
   checkpoint (or the log start) up to the smaller of the active segment's base offset and the
   last stable offset (open transactions are never cleaned past).
2. An *offset map* key -> latest offset is built from the segments of that range (whole
   segments, records from ``firstDirtyOffset`` on), skipping control batches and the data of
   aborted transactions (known from the ``.txnindex`` entries). Its latest offset ends at
   ``firstUncleanableOffset - 1`` (Kafka fast-forwards it over gaps), so ``endOffset`` is the
   first uncleanable offset whenever there was a dirty segment.
3. Every segment with a base offset below ``endOffset`` (already-clean segments too) is
   rewritten, in groups: consecutive segments are merged while
   their log bytes fit ``segment.bytes`` and their index bytes ``segment.index.bytes``; each group
   becomes one segment named after the group's first base offset.
4. Batches are filtered (``MemoryRecords.filterTo`` with the cleaner's ``RecordFilter``):
   a record survives when it has a key and no later offset for that key is in the map (and,
   for a tombstone, its batch's delete horizon has not passed; records without key are
   dropped); records past the map's latest offset survive. Data of aborted transactions is
   dropped; an ABORT marker stays while data of its transaction was seen in this round (and the
   transaction is then written to the cleaned segment's ``.txnindex``), a COMMIT marker while
   its transaction had batches in this round; markers that may go get a delete horizon first and
   disappear in a later round once it has passed. A batch keeps its original bytes when nothing
   in it changes; otherwise it is rebuilt with the same base offset, last offset, producer
   fields, codec and timestamp type, the surviving records keeping their offsets (gaps) and
   timestamps. A batch that still contains a tombstone (or a marker that may go) gets the delete
   horizon ``now + delete.retention.ms`` (attribute bit 6, stored as the first timestamp). The
   last batch of each active producer, and the last batch of the round, are kept even when
   emptied (header only, ``recordCount`` 0).
5. The cleaned segment's indexes come from ``LogSegment.append`` of each filtered read chunk
   (``io_buffer_size`` bytes of source per read), then the roll-time time index entry.

Not modelled: ``min.compaction.lag.ms``, the offset map's memory limit, the dirty ratio that
decides *whether* to clean, and file modification times: magic 0/1 tombstones are kept, as in a
first cleaning round (legacy delete horizon 0).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from kafka_archive_dev.writer.encode import (
    EncodedBatch,
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
    encode_empty_batch_v2,
    encode_legacy_batches,
)
from kafka_archive_dev.writer.partition_writer import PartitionWriter
from kafka_archive_dev.writer.segment_state import SegmentState
from segment_lib.control import ControlType, decode_control_record
from segment_lib.log_file import decode_batch, iter_batches
from segment_lib.records import Record, TimestampType
from segment_lib.txn_index import AbortedTxn

__all__ = ["DEFAULT_DELETE_RETENTION_MS", "DEFAULT_IO_BUFFER_SIZE", "CleanResult", "compact"]

DEFAULT_DELETE_RETENTION_MS = 24 * 3600 * 1000  # delete.retention.ms
#: log.cleaner.io.buffer.size (512 KiB) / threads (1) / 2: each of the read and write buffers
DEFAULT_IO_BUFFER_SIZE = 512 * 1024 // 2
_INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What one round did: the range cleaned and the resulting segment base offsets."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    end_offset: int
    groups: tuple[tuple[int, ...], ...]
    records_read: int
    records_retained: int


@dataclass(slots=True)
class _AbortedMeta:
    txn: AbortedTxn
    last_observed_batch_offset: int | None = None


@dataclass(slots=True)
class _TxnMetadata:
    """``CleanedTransactionMetadata``."""

    aborted: list[AbortedTxn] = field(default_factory=list)
    ongoing_committed: set[int] = field(default_factory=set)
    ongoing_aborted: dict[int, _AbortedMeta] = field(default_factory=dict)
    cleaned_index: list[AbortedTxn] | None = None

    def add_aborted(self, txns: list[AbortedTxn]) -> None:
        self.aborted.extend(txns)
        self.aborted.sort(key=lambda t: t.first_offset)

    def _consume_up_to(self, offset: int) -> None:
        while self.aborted and self.aborted[0].first_offset <= offset:
            txn = self.aborted.pop(0)
            self.ongoing_aborted.setdefault(txn.producer_id, _AbortedMeta(txn))

    def on_control_batch(self, batch: EncodedBatch, records: list[Record]) -> bool:
        """True if the control batch may be discarded."""
        self._consume_up_to(batch.last_offset)
        if not records:
            return True  # an emptied control batch was already cleaned
        ctype = decode_control_record(records[0].key, records[0].value).type
        if ctype is ControlType.ABORT:
            meta = self.ongoing_aborted.pop(batch.producer_id, None)
            if meta is not None and meta.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(meta.txn)
                return False
            return True
        if ctype is ControlType.COMMIT:
            if batch.producer_id in self.ongoing_committed:
                self.ongoing_committed.discard(batch.producer_id)
                return False
            return True
        return False

    def on_batch(self, batch: EncodedBatch) -> bool:
        """True if the data batch belongs to an aborted transaction."""
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        meta = self.ongoing_aborted.get(batch.producer_id)
        if meta is not None:
            meta.last_observed_batch_offset = batch.last_offset
            return True
        self.ongoing_committed.add(batch.producer_id)
        return False


def _delete_horizon(batch: EncodedBatch) -> int | None:
    if batch.magic < 2:
        return None
    attributes = int.from_bytes(batch.data[21:23], "big")
    if attributes & 0x40:
        return int.from_bytes(batch.data[27:35], "big", signed=True)
    return None


def _decode(batch: EncodedBatch) -> list[Record]:
    header = next(iter_batches(batch.data, verify_crc=False))
    return decode_batch(batch.data, header)


def _collect_aborted(writer: PartitionWriter, start: int, end: int) -> list[AbortedTxn]:
    """``UnifiedLog.collectAbortedTransactions(start, end)``."""
    out = []
    for seg in writer.segments:
        for txn in seg.txn_index:
            if txn.last_offset >= start and txn.first_offset < end:
                out.append(txn)
    return out


def _segments_below(writer: PartitionWriter, end: int) -> list[SegmentState]:
    """``log.logSegments(0, end)``: segments that hold offsets below ``end``."""
    return [s for s in writer.segments if s.base_offset < end]


def _group_segments(
    segments: list[SegmentState], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[SegmentState]]:
    """``Cleaner.groupSegmentsBySize``."""
    groups: list[list[SegmentState]] = []
    segs = list(segments)
    while segs:
        group = [segs.pop(0)]
        log_size = group[0].size
        index_size = len(group[0].offset_index) * 8
        time_index_size = len(group[0].time_index) * 12
        while segs:
            nxt = segs[0]
            last_of_first = segs[1].base_offset - 1 if len(segs) > 1 else first_uncleanable - 1
            if not (
                log_size + nxt.size <= max_size
                and index_size + len(nxt.offset_index) * 8 <= max_index_size
                and time_index_size + len(nxt.time_index) * 12 <= max_index_size
                and (nxt.size == 0 or last_of_first - group[-1].base_offset <= _INT32_MAX)
            ):
                break
            group.append(segs.pop(0))
            log_size += nxt.size
            index_size += len(nxt.offset_index) * 8
            time_index_size += len(nxt.time_index) * 12
        groups.append(group)
    return groups


@dataclass(slots=True)
class _ChunkResult:
    batches: list[EncodedBatch] = field(default_factory=list)
    max_timestamp: int = -1
    shallow_offset_of_max_timestamp: int = -1
    max_offset: int = -1

    def retained(self, batch: EncodedBatch, max_ts: int, shallow: int, max_offset: int) -> None:
        self.batches.append(batch)
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.shallow_offset_of_max_timestamp = shallow
        self.max_offset = max(self.max_offset, max_offset)


def compact(
    writer: PartitionWriter,
    *,
    now: int | None = None,
    delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS,
    io_buffer_size: int = DEFAULT_IO_BUFFER_SIZE,
) -> CleanResult:
    """Run one cleaning round over ``writer``'s rolled segments and rewrite their files.

    The writer stays usable (appends continue in the active segment); its
    ``cleaner_checkpoint`` is set to the round's end offset for ``cleaner-offset-checkpoint``.
    The round is three steps: :func:`_build_offset_map` (map), :class:`_CleaningPass` (filter
    each group of segments into one cleaned segment) and :func:`_replace_segments` (rewrite).
    """
    writer._check_open()
    current_time = writer.clock() if now is None else now
    first_dirty = max(writer.log_start_offset, writer.cleaner_checkpoint or 0)
    first_uncleanable = min(writer.active.base_offset, writer.last_stable_offset)
    offset_map, latest_offset = _build_offset_map(writer, first_dirty, first_uncleanable)
    end_offset = latest_offset + 1
    groups = _group_segments(
        _segments_below(writer, end_offset),
        writer.segment_bytes,
        writer.segment_index_bytes,
        first_uncleanable,
    )
    cleaning = _CleaningPass(
        offset_map=offset_map,
        latest_offset=latest_offset,
        last_records=_last_records_of_active_producers(writer),
        upper_bound=first_uncleanable,
        current_time=current_time,
        delete_retention_ms=delete_retention_ms,
        io_buffer_size=io_buffer_size,
    )
    cleaned = [cleaning.clean_group(writer, group) for group in groups]
    _replace_segments(writer, groups, cleaned)
    writer.cleaner_checkpoint = end_offset
    return CleanResult(
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        end_offset=end_offset,
        groups=tuple(tuple(s.base_offset for s in g) for g in groups),
        records_read=cleaning.records_read,
        records_retained=cleaning.records_retained,
    )


def _build_offset_map(
    writer: PartitionWriter, first_dirty: int, first_uncleanable: int
) -> tuple[dict[bytes, int], int]:
    """``Cleaner.buildOffsetMap``: key -> latest offset over the whole dirty segments below
    ``first_uncleanable`` (records from ``first_dirty`` on; control batches and aborted data
    skipped), and the map's latest offset (-1 when there was no dirty segment)."""
    offset_map: dict[bytes, int] = {}
    latest_offset = -1
    meta = _TxnMetadata()
    meta.add_aborted(_collect_aborted(writer, first_dirty, first_uncleanable))
    dirty = [
        s
        for s in _segments_below(writer, first_uncleanable)
        if s.next_offset > first_dirty or s.base_offset >= first_dirty
    ]
    for i, seg in enumerate(dirty):
        next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else first_uncleanable
        for b in seg.batches:
            if b.last_offset < first_dirty:
                continue
            if b.is_control:
                meta.on_control_batch(b, _decode(b))
            elif not meta.on_batch(b):
                for r in _decode(b):
                    if r.key is not None and r.offset >= first_dirty:
                        offset_map[r.key] = r.offset
            latest_offset = b.last_offset
        # "in the case of offset gaps, fast forward to the latest expected offset"
        latest_offset = next_start - 1
    return offset_map, latest_offset


def _last_records_of_active_producers(
    writer: PartitionWriter,
) -> dict[int, tuple[int | None, int]]:
    """``lastRecordsOfActiveProducers``: producer id -> (last data offset or None, epoch), the
    producers whose last batches must survive the round."""
    return {
        pid: (e.last_data_offset if e.last_data_offset >= 0 else None, e.epoch)
        for pid, e in writer.producer_state.producers.items()
    }


def _read_chunks(seg: SegmentState, io_buffer_size: int) -> Iterator[list[EncodedBatch]]:
    """The segment's batches as the cleaner reads them: one read of its I/O buffer at a time,
    whole batches, at least one per read."""
    pos = 0
    while pos < len(seg.batches):
        chunk = [seg.batches[pos]]
        size = chunk[0].size
        while pos + len(chunk) < len(seg.batches):
            nxt = seg.batches[pos + len(chunk)]
            if size + nxt.size > io_buffer_size:
                break
            chunk.append(nxt)
            size += nxt.size
        pos += len(chunk)
        yield chunk


@dataclass(slots=True)
class _CleaningPass:
    """The filter step of one round (``Cleaner.cleanSegments``): each group of segments becomes
    one cleaned segment; the transaction state carries over from group to group."""

    offset_map: dict[bytes, int]
    latest_offset: int
    last_records: dict[int, tuple[int | None, int]]
    upper_bound: int
    current_time: int
    delete_retention_ms: int
    io_buffer_size: int
    meta: _TxnMetadata = field(default_factory=_TxnMetadata)
    records_read: int = 0
    records_retained: int = 0

    def clean_group(self, writer: PartitionWriter, group: list[SegmentState]) -> SegmentState:
        """The cleaned segment of ``group`` (in memory: nothing is written here), named after
        the group's first base offset."""
        cleaned = SegmentState(
            group[0].base_offset,
            created_ms=self.current_time,
            index_interval_bytes=writer.index_interval_bytes,
            max_index_bytes=writer.segment_index_bytes,
            roll_jitter_ms=writer.roll_jitter_ms,
        )
        self.meta.cleaned_index = cleaned.txn_index
        for i, seg in enumerate(group):
            upper = group[i + 1].base_offset if i + 1 < len(group) else seg.next_offset
            self.meta.add_aborted(_collect_aborted(writer, seg.base_offset, upper))
            for chunk in _read_chunks(seg, self.io_buffer_size):
                result = self._filter_chunk(chunk)
                if result.batches:
                    cleaned.append(
                        result.max_offset,
                        result.max_timestamp,
                        result.shallow_offset_of_max_timestamp,
                        result.batches,
                    )
        cleaned.on_become_inactive()
        return cleaned

    def _filter_chunk(self, chunk: list[EncodedBatch]) -> _ChunkResult:
        result = _ChunkResult()
        for b in chunk:
            read, kept = _filter_batch(
                b,
                result,
                offset_map=self.offset_map,
                latest_offset=self.latest_offset,
                meta=self.meta,
                last_records=self.last_records,
                upper_bound=self.upper_bound,
                current_time=self.current_time,
                delete_retention_ms=self.delete_retention_ms,
            )
            self.records_read += read
            self.records_retained += kept
        return result


def _replace_segments(
    writer: PartitionWriter, groups: list[list[SegmentState]], cleaned: list[SegmentState]
) -> None:
    """``replaceSegments``: delete the files of every segment of ``groups``, put the cleaned
    segments in their place and write their files."""
    new_segments = {seg.base_offset: seg for seg in cleaned}
    replaced = {s.base_offset for group in groups for s in group}
    for base in replaced:
        writer.remove_segment_files(base)
    kept_segments = [s for s in writer.segments if s.base_offset not in replaced]
    writer.segments = sorted([*kept_segments, *new_segments.values()], key=lambda s: s.base_offset)
    for seg in new_segments.values():
        writer.rewrite_segment_files(seg)


# the cleaner's per-record retention rules, one case list
def _filter_batch(  # noqa: C901
    b: EncodedBatch,
    result: _ChunkResult,
    *,
    offset_map: dict[bytes, int],
    latest_offset: int,
    meta: _TxnMetadata,
    last_records: dict[int, tuple[int | None, int]],
    upper_bound: int,
    current_time: int,
    delete_retention_ms: int,
) -> tuple[int, int]:
    """Filter one batch into ``result``; returns (records read, records retained)."""
    records = _decode(b)
    horizon = _delete_horizon(b)
    # checkBatchRetention
    can_discard = meta.on_control_batch(b, records) if b.is_control else meta.on_batch(b)
    if b.is_control:
        discard_records = can_discard and horizon is not None and horizon <= current_time
    else:
        discard_records = can_discard
    last = last_records.get(b.producer_id)
    is_last_of_producer = last is not None and (
        b.last_offset == last[0]
        if last[0] is not None
        else (b.is_control and b.producer_epoch == last[1])
    )
    if (b.has_producer_id and is_last_of_producer) or b.next_offset == upper_bound:
        retention = "retain_empty"
    elif discard_records:
        return len(records), 0  # BatchRetention.DELETE
    else:
        retention = "delete_empty"
    marker_for_empty_txn = can_discard and b.is_control

    # shouldRetainRecord
    def keep(r: Record) -> bool:
        if discard_records:
            return False
        if b.is_control:
            return True
        if r.offset > latest_offset:
            return True
        if r.key is None:
            return False
        if r.offset < offset_map.get(r.key, -1):
            return False
        if r.value is not None:
            return True
        if b.magic < 2:
            return True  # legacy tombstones kept (first-round legacy delete horizon)
        return horizon is None or current_time < horizon

    kept = [r for r in records if keep(r)]
    if kept:
        has_tombstone = any(r.value is None for r in kept)
        need_horizon = b.magic >= 2 and (has_tombstone or marker_for_empty_txn) and horizon is None
        if len(kept) == len(records) and not need_horizon:
            result.retained(b, b.max_timestamp, b.last_offset, b.last_offset)
        else:
            new_horizon = current_time + delete_retention_ms if need_horizon else horizon
            rebuilt = _rebuild(b, kept, new_horizon)
            max_ts = (
                rebuilt[-1].max_timestamp if b.magic >= 2 else max(x.max_timestamp for x in rebuilt)
            )
            shallow = rebuilt[-1].last_offset
            if b.magic < 2:
                # legacy builder info(): uncompressed single messages -> earliest max message
                max_ts, shallow = -1, -1
                for x in rebuilt:
                    if x.max_timestamp > max_ts:
                        max_ts, shallow = x.max_timestamp, x.last_offset
            for x in rebuilt:
                result.batches.append(x)
            if max_ts > result.max_timestamp:
                result.max_timestamp = max_ts
                result.shallow_offset_of_max_timestamp = shallow
            result.max_offset = max(result.max_offset, max(r.offset for r in kept))
    elif retention == "retain_empty" and b.magic >= 2:
        empty = encode_empty_batch_v2(
            b.base_offset,
            b.last_offset,
            max_timestamp=b.max_timestamp,
            timestamp_type=b.timestamp_type,
            producer_id=b.producer_id,
            producer_epoch=b.producer_epoch,
            base_sequence=b.base_sequence,
            transactional=b.is_transactional,
            control_type=b.control_type,
            partition_leader_epoch=b.partition_leader_epoch,
        )
        result.retained(empty, b.max_timestamp, b.last_offset, b.last_offset)
    # an emptied legacy batch cannot be kept (Kafka refuses empty batches before magic 2)
    return len(records), len(kept)


def _rebuild(b: EncodedBatch, kept: list[Record], horizon: int | None) -> list[EncodedBatch]:
    """``MemoryRecords.buildRetainedRecordsInto``."""
    log_append = b.timestamp_type is TimestampType.LOG_APPEND_TIME
    if b.magic >= 2:
        if b.is_control:
            assert b.control_type is not None
            ctrl = decode_control_record(kept[0].key, kept[0].value)
            return [
                encode_control_batch(
                    b.base_offset,
                    b.control_type,
                    producer_id=b.producer_id,
                    producer_epoch=b.producer_epoch,
                    timestamp=kept[0].timestamp,
                    coordinator_epoch=ctrl.coordinator_epoch or 0,
                    log_append_time=b.max_timestamp if log_append else None,
                    partition_leader_epoch=b.partition_leader_epoch,
                    delete_horizon_ms=horizon,
                )
            ]
        # record.timestamp() already has LogAppendTime applied, as the builder receives it
        return [
            encode_batch_v2(
                b.base_offset,
                [WriteRecord(r.key, r.value, r.headers, r.timestamp) for r in kept],
                codec=b.codec,
                log_append_time=b.max_timestamp if log_append else None,
                producer_id=b.producer_id,
                producer_epoch=b.producer_epoch,
                base_sequence=b.base_sequence,
                transactional=b.is_transactional,
                partition_leader_epoch=b.partition_leader_epoch,
                offset_deltas=[r.offset - b.base_offset for r in kept],
                last_offset_delta=b.last_offset - b.base_offset,
                delete_horizon_ms=horizon,
            )
        ]
    return encode_legacy_batches(
        b.magic,
        kept[0].offset,
        [WriteRecord(r.key, r.value, (), r.timestamp) for r in kept],
        codec=b.codec,
        log_append_time=b.max_timestamp if log_append else None,
        offsets=[r.offset for r in kept],
        rebuilt=True,
    )
