"""Build Kafka segment files from fetched record batches, as the broker writes them.

:class:`SegmentBuilder` is fed whole magic-2 record batches in offset order, as raw bytes exactly
as a broker returns them in a FetchResponse (one or more batches per :meth:`~SegmentBuilder.
append`), and produces what a broker's log directory holds for them:

* ``<base>.log``: the batches appended unchanged, each CRC-32C checked first; ``<base>`` is the
  20-digit base offset of the segment's first batch (or the base offset a forced
  :meth:`~SegmentBuilder.roll` named);
* rolling (``UnifiedLog.maybeRoll`` / ``LogSegment.shouldRoll``, the rules in
  :mod:`segment_lib.segment_state`): a new segment when the next batch would make the ``.log``
  exceed ``segment.bytes``, when its max timestamp is more than ``segment.ms - jitter`` past the
  segment's first batch's max timestamp (``now_ms`` - segment creation when that is -1 and the
  caller passes ``now_ms``), when either index is full or the batch's last offset is not within
  int32 of the segment's base offset;
* ``<base>.index`` and ``<base>.timeindex``: the sparse entries of ``LogSegment.append`` (one
  when more than ``index.interval.bytes`` were appended since the last entry), with the final
  time index entry of ``onBecomeInactiveSegment`` / ``close``, trimmed to their entries;
* ``<base>.txnindex`` (only when the segment holds an ABORT marker of a transaction with data,
  as Kafka creates it lazily): ``(producerId, firstOffset, lastOffset = marker offset,
  lastStableOffset)`` as ``ProducerStateManager`` computes them (the LSO is the first offset of
  the earliest open transaction of another producer, else marker offset + 1);
* the leader epochs seen (``LeaderEpochFileCache.assign(batch.partitionLeaderEpoch,
  batch.baseOffset)``, as in ``leader-epoch-checkpoint``): :attr:`~SegmentBuilder.leader_epochs`.

Which appends: a leader appends one magic-2 batch per produce request (``LogValidator``
refuses more), so its files are those of a batch-by-batch append: :attr:`IndexRule.PER_BATCH`
(the default) applies every rule per batch and matches a leader of any version and current
followers. :attr:`IndexRule.PER_APPEND` treats each :meth:`~SegmentBuilder.append` as one
append (one roll check, one index test, producer state updated after it), as followers did
before ``LogSegment.append`` looped over batches; an append larger than ``segment.bytes``
(which such a broker refuses) is then split into runs that fit. ``time_index_record_offsets``
gives the time index, for uncompressed CreateTime batches, the offset of the first record
holding the batch's max timestamp (what leaders before Kafka 3.7.1 wrote, KAFKA-16310: real
2.1, 2.4, 2.8, 3.3 and 3.6 files show it, 3.7.1 files do not) instead of the batch's last
offset. :attr:`SegmentBuilder.config` may be replaced between appends.

Offsets: a batch must start exactly at the next offset (one past the last accepted batch, or
``start_offset`` for the first). Starting before it raises :class:`~segment_lib.errors.
OffsetOverlapError` (the caller cuts out or skips what it already has: the first batch of a
fetch may begin before the fetch offset); starting after it raises
:class:`~segment_lib.errors.OffsetGapError` unless ``allow_gaps`` (compacted topics), when the
gap is recorded in :attr:`~SegmentBuilder.gaps`. Every check of an append runs before anything
of it is written: a refused append leaves the builder as it was.

Output: with a ``directory``, each segment's ``.log`` is created there (never overwriting a
file) and appended to as batches arrive, and its index files are written when it is rolled or
closed; without one, the bytes stay in memory (:attr:`BuiltSegment.log`). Bytes and files
only: no Kafka client, no storage.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import BinaryIO, Final

from segment_lib.checkpoints import EpochEntry
from segment_lib.compression import Codec
from segment_lib.control import ControlType, decode_control_record
from segment_lib.errors import (
    OffsetGapError,
    OffsetOverlapError,
    UnsupportedFormatError,
)
from segment_lib.log_file import decode_batch, iter_batches
from segment_lib.names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    SegmentSuffix,
    segment_file_name,
)
from segment_lib.offset_index import format_offset_index
from segment_lib.records import MAGIC_OFFSET, BatchHeader, TimestampType
from segment_lib.segment_state import SegmentIndexes
from segment_lib.time_index import format_time_index
from segment_lib.txn_index import AbortedTxn, format_txn_index
from segment_lib.txn_state import OngoingTxns

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "DEFAULT_SEGMENT_INDEX_BYTES",
    "DEFAULT_SEGMENT_MS",
    "AppendInfo",
    "BuiltSegment",
    "IndexRule",
    "SegmentBuilder",
    "SegmentConfig",
]

DEFAULT_SEGMENT_BYTES: Final = 1 << 30  # segment.bytes
DEFAULT_SEGMENT_MS: Final = 7 * 24 * 3600 * 1000  # segment.ms
DEFAULT_INDEX_INTERVAL_BYTES: Final = 4096  # index.interval.bytes
DEFAULT_SEGMENT_INDEX_BYTES: Final = 10 * 1024 * 1024  # segment.index.bytes


class IndexRule(StrEnum):
    """How appends shape rolls, indexes and producer state (module docstring)."""

    PER_BATCH = "per-batch"
    PER_APPEND = "per-append"


@dataclass(frozen=True, slots=True)
class SegmentConfig:
    """The topic configs that shape segment files (Kafka's defaults)."""

    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_ms: int = DEFAULT_SEGMENT_MS
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
    #: the segment's random roll jitter (Kafka draws one per segment; fixed here)
    roll_jitter_ms: int = 0
    index_rule: IndexRule = IndexRule.PER_BATCH
    time_index_record_offsets: bool = False


@dataclass(frozen=True, slots=True)
class BuiltSegment:
    """A rolled or closed segment: its entries, and its ``.log`` bytes when kept in memory."""

    base_offset: int
    #: one past the last offset of its last batch
    next_offset: int
    batch_count: int
    log_size: int
    #: ``(offset, position)``, absolute offsets
    offset_index: tuple[tuple[int, int], ...]
    #: ``(timestamp, offset)``, absolute offsets
    time_index: tuple[tuple[int, int], ...]
    aborted: tuple[AbortedTxn, ...]
    #: the ``.log`` bytes (``None`` when written to a directory)
    log: bytes | None = None

    def index_bytes(self) -> bytes:
        """The trimmed ``.index`` file."""
        return format_offset_index(self.base_offset, self.offset_index)

    def time_index_bytes(self) -> bytes:
        """The trimmed ``.timeindex`` file."""
        return format_time_index(self.base_offset, self.time_index)

    def txn_index_bytes(self) -> bytes:
        """The ``.txnindex`` file (empty: Kafka writes none)."""
        return format_txn_index(self.aborted)

    def file_name(self, suffix: SegmentSuffix) -> str:
        """This segment's file name with ``suffix`` (``.log``, ``.index``, ...)."""
        return segment_file_name(self.base_offset, suffix)


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """Where an append went: its offsets, and the segment and position of its first batch."""

    first_offset: int
    last_offset: int
    batch_count: int
    size: int
    segment_base_offset: int
    position: int
    #: whether a segment was rolled before (or while) appending
    rolled: bool


class _Active:
    """The segment being written: its index state and where its bytes go."""

    def __init__(self, indexes: SegmentIndexes, sink: BinaryIO | None) -> None:
        self.indexes = indexes
        self.sink = sink
        self.memory = bytearray() if sink is None else None
        self.batch_count = 0
        self.next_offset = indexes.base_offset

    def write(self, data: memoryview) -> None:
        if self.sink is not None:
            self.sink.write(data)
        else:
            assert self.memory is not None
            self.memory += data


class SegmentBuilder:
    """Segment files from fetched batches (module docstring).

    Args:
        directory: where to write the files (an existing directory), or ``None`` to keep them in
            memory.
        config: the topic's segment configs and the index rule.
        start_offset: the offset the first batch must hold or start at (``None``: any).
        base_offset: the first segment's base offset (default: its first batch's base offset;
            a compacted log's segment may be named below its first batch).
        allow_gaps: accept batches starting after the next offset (compaction), recorded in
            :attr:`gaps`.
        open_transactions: producer id -> first offset of its transaction still open where the
            archive starts (from the previous run's :meth:`open_transactions`).
        leader_epochs: the epochs known where the archive starts.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        config: SegmentConfig | None = None,
        *,
        start_offset: int | None = None,
        base_offset: int | None = None,
        allow_gaps: bool = False,
        open_transactions: Mapping[int, int] | None = None,
        leader_epochs: Sequence[tuple[int, int]] = (),
    ) -> None:
        self.directory = None if directory is None else Path(directory)
        self.config = config or SegmentConfig()
        self.allow_gaps = allow_gaps
        self.segments: list[BuiltSegment] = []
        #: ``(expected offset, base offset found)`` of each gap accepted
        self.gaps: list[tuple[int, int]] = []
        self._next = start_offset
        self._pending_base = base_offset
        self._active: _Active | None = None
        self._accepted = False  # whether any batch was appended
        self._closed = False
        # ProducerStateManager: each producer's open transaction (producer -> first offset) and
        # ongoingTxns (first offset -> producer), updated after each append
        self._current: dict[int, int] = dict(open_transactions or {})
        self._ongoing = OngoingTxns({first: pid for pid, first in self._current.items()})
        self._epochs: list[EpochEntry] = [EpochEntry(e, o) for e, o in leader_epochs]

    # -- state -----------------------------------------------------------------------------

    @property
    def next_offset(self) -> int | None:
        """One past the last offset accepted (the start offset before any batch)."""
        return self._next

    @property
    def active(self) -> SegmentIndexes | None:
        """The open segment's index state (entries so far), if any."""
        return None if self._active is None else self._active.indexes

    @property
    def leader_epochs(self) -> list[EpochEntry]:
        """``(epoch, start offset)`` entries, as ``leader-epoch-checkpoint`` holds them."""
        return list(self._epochs)

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of each transaction still open after the batches fed."""
        return dict(self._current)

    # -- appending -------------------------------------------------------------------------

    def append(
        self, data: bytes | bytearray | memoryview, *, now_ms: int | None = None
    ) -> AppendInfo:
        """Append the whole batches of ``data`` (positions in errors are positions in ``data``).

        ``now_ms`` is the time for the roll rule of segments whose first timestamp is -1 (and
        the creation time of segments opened by this append); without it such segments never
        roll by time.

        Raises:
            TornTailError: ``data`` ends in an incomplete batch (a fetch response may): its
                ``position`` is where the whole batches end; feed ``data[:position]``.
            CrcMismatchError / CorruptBatchError: a batch is damaged (``position``: its start).
            UnsupportedFormatError: a batch is not magic 2.
            OffsetOverlapError / OffsetGapError: offsets do not continue (module docstring).
            ValueError: ``data`` holds no batch, or the builder is closed.
        """
        if self._closed:
            raise ValueError("segment builder is closed")
        view = memoryview(data).cast("B")
        headers = list(iter_batches(view))
        if not headers:
            raise ValueError("append of no batch")
        self._check(headers)
        if self.config.index_rule is IndexRule.PER_BATCH:
            units = [[h] for h in headers]
        else:
            units = _runs_within(headers, self.config.segment_bytes)
        rolled = False
        first_seg = first_pos = -1
        for unit in units:
            was = self._active
            position = self._append_unit(view, unit, now_ms)
            rolled = rolled or (was is not None and self._active is not was)
            if first_pos < 0:
                assert self._active is not None
                first_seg, first_pos = self._active.indexes.base_offset, position
        return AppendInfo(
            first_offset=headers[0].base_offset,
            last_offset=headers[-1].last_offset,
            batch_count=len(headers),
            size=headers[-1].next_position - headers[0].position,
            segment_base_offset=first_seg,
            position=first_pos,
            rolled=rolled,
        )

    def _check(self, headers: list[BatchHeader]) -> None:
        """Every refusal of an append, before anything of it is written."""
        expected = self._next
        for i, h in enumerate(headers):
            if h.magic != 2:
                raise UnsupportedFormatError(
                    f"batch at offset {h.base_offset} has magic {h.magic}",
                    position=h.position + MAGIC_OFFSET,
                    expected="magic 2 record batches",
                )
            # the archive's very first batch may begin before start_offset, as a fetch at an
            # offset inside a batch returns that whole batch
            first_ever = i == 0 and not self._accepted
            if expected is not None and (
                h.last_offset < expected if first_ever else h.base_offset < expected
            ):
                raise OffsetOverlapError(
                    f"batch {h.base_offset}..{h.last_offset} overlaps offsets already "
                    f"written or skipped (the next offset is {expected})",
                    expected_offset=expected,
                    base_offset=h.base_offset,
                    last_offset=h.last_offset,
                    position=h.position,
                    expected=f"a batch starting at offset {expected}",
                )
            if expected is not None and h.base_offset > expected and not self.allow_gaps:
                raise OffsetGapError(
                    f"batch {h.base_offset}..{h.last_offset} leaves offsets "
                    f"{expected}..{h.base_offset - 1} out (gaps not allowed)",
                    expected_offset=expected,
                    base_offset=h.base_offset,
                    last_offset=h.last_offset,
                    position=h.position,
                    expected=f"a batch starting at offset {expected}",
                )
            base = self._pending_base
            if i == 0 and self._active is None and base is not None and base > h.base_offset:
                raise ValueError(
                    f"segment base offset {base} is above the next batch's {h.base_offset}"
                )
            expected = h.last_offset + 1

    def _append_unit(self, view: memoryview, unit: list[BatchHeader], now_ms: int | None) -> int:
        cfg = self.config
        size = sum(h.size for h in unit)
        offsets_of_max = [self._offset_of_max(view, h) for h in unit]
        max_ts, off_of_max = -1, -1
        for h, off in zip(unit, offsets_of_max, strict=True):
            if h.max_timestamp > max_ts:
                max_ts, off_of_max = h.max_timestamp, off
        active = self._active
        if active is not None:
            seg = active.indexes
            now = seg.created_ms if now_ms is None else now_ms
            if seg.should_roll(
                segment_bytes=cfg.segment_bytes,
                segment_ms=cfg.segment_ms,
                messages_size=size,
                max_timestamp=max_ts,
                max_offset=unit[-1].last_offset,
                now=now,
            ):
                self._close_active()
                active = None
        if active is None:
            active = self._open(unit[0].base_offset, now_ms)
        seg = active.indexes
        if cfg.index_rule is IndexRule.PER_BATCH:
            position = seg.index_append_batches(unit, offsets_of_max)
        else:
            position = seg.index_append(unit[-1].last_offset, max_ts, off_of_max, size)
        active.write(view[unit[0].position : unit[-1].next_position])
        active.batch_count += len(unit)
        active.next_offset = unit[-1].last_offset + 1
        for h in unit:
            if self._next is not None and h.base_offset > self._next:
                self.gaps.append((self._next, h.base_offset))
            self._next = h.last_offset + 1
            self._accepted = True
            if h.partition_leader_epoch >= 0:
                self._assign_epoch(h.partition_leader_epoch, h.base_offset)
        self._track_txns(view, unit, seg)
        return position

    def _offset_of_max(self, view: memoryview, h: BatchHeader) -> int:
        """The offset the time index takes for the batch's max timestamp."""
        if (
            self.config.time_index_record_offsets
            and h.codec is Codec.NONE
            and h.timestamp_type is TimestampType.CREATE_TIME
            and not h.is_control
        ):
            for rec in decode_batch(view, h):
                if rec.timestamp == h.max_timestamp:
                    return rec.offset
        return h.last_offset

    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        """``LeaderEpochFileCache.assign``: a new entry when the epoch changes (or starts
        earlier), dropping later entries that it contradicts."""
        if self._epochs:
            last = self._epochs[-1]
            if epoch == last.epoch and start_offset >= last.start_offset:
                return
        while self._epochs and (
            self._epochs[-1].epoch >= epoch or self._epochs[-1].start_offset >= start_offset
        ):
            self._epochs.pop()
        self._epochs.append(EpochEntry(epoch, start_offset))

    def _track_txns(self, view: memoryview, unit: list[BatchHeader], seg: SegmentIndexes) -> None:
        """``ProducerStateManager`` for one append: transactions started and completed, and the
        ``.txnindex`` entries of aborted ones (``UnifiedLog.append``)."""
        started: list[tuple[int, int]] = []
        completed: list[tuple[int, int, int, bool]] = []
        for h in unit:
            pid = h.producer_id
            if pid < 0:
                continue
            if h.is_control:
                ctype = _marker_type(view, h)
                if ctype is None:
                    continue
                first = self._current.pop(pid, None)
                # only a transaction with data completes (ProducerAppendInfo.appendEndTxnMarker)
                if first is not None:
                    completed.append((pid, first, h.base_offset, ctype is ControlType.ABORT))
            elif h.is_transactional and pid not in self._current:
                self._current[pid] = h.base_offset
                started.append((h.base_offset, pid))
        for first, pid in started:
            self._ongoing.start(first, pid)
        for pid, first, last, aborted in completed:
            if aborted:
                lso = self._ongoing.last_stable_offset(pid, last)
                seg.txn_index.append(AbortedTxn(pid, first, last, lso))
            self._ongoing.complete(first)

    # -- segments --------------------------------------------------------------------------

    def _open(self, first_batch_offset: int, now_ms: int | None) -> _Active:
        base = first_batch_offset if self._pending_base is None else self._pending_base
        self._pending_base = None
        cfg = self.config
        indexes = SegmentIndexes(
            base,
            created_ms=0 if now_ms is None else now_ms,
            index_interval_bytes=cfg.index_interval_bytes,
            max_index_bytes=cfg.segment_index_bytes,
            roll_jitter_ms=cfg.roll_jitter_ms,
        )
        sink = None
        if self.directory is not None:
            sink = (self.directory / segment_file_name(base, LOG_SUFFIX)).open("xb")
        self._active = _Active(indexes, sink)
        return self._active

    def roll(self, base_offset: int | None = None) -> None:
        """Close the open segment (if any); the next batch starts a new one, named
        ``base_offset`` if given (at most that batch's base offset, at least the next
        offset)."""
        if self._closed:
            raise ValueError("segment builder is closed")
        if base_offset is not None and self._next is not None and base_offset < self._next:
            raise ValueError(f"base offset {base_offset} is below the next offset {self._next}")
        if self._active is not None:
            self._close_active()
        self._pending_base = base_offset

    def _close_active(self) -> None:
        active = self._active
        assert active is not None
        self._active = None
        seg = active.indexes
        seg.on_become_inactive()
        built = BuiltSegment(
            base_offset=seg.base_offset,
            next_offset=active.next_offset,
            batch_count=active.batch_count,
            log_size=seg.size,
            offset_index=tuple(seg.offset_index),
            time_index=tuple(seg.time_index),
            aborted=tuple(seg.txn_index),
            log=None if active.memory is None else bytes(active.memory),
        )
        if active.sink is not None:
            active.sink.close()
            assert self.directory is not None
            files = [
                (built.file_name(INDEX_SUFFIX), built.index_bytes()),
                (built.file_name(TIME_INDEX_SUFFIX), built.time_index_bytes()),
            ]
            if built.aborted:
                files.append((built.file_name(TXN_INDEX_SUFFIX), built.txn_index_bytes()))
            for name, content in files:
                (self.directory / name).write_bytes(content)
        self.segments.append(built)

    def close(self) -> list[BuiltSegment]:
        """Close the open segment (its final time index entry, trimmed indexes) and return
        every segment built. The builder takes no more batches."""
        if not self._closed:
            if self._active is not None:
                self._close_active()
            self._closed = True
        return list(self.segments)


def _marker_type(view: memoryview, h: BatchHeader) -> ControlType | None:
    """COMMIT or ABORT for a transaction marker batch, else ``None``."""
    for rec in decode_batch(view, h):
        ctype = decode_control_record(rec.key, rec.value).type
        return ctype if ctype in (ControlType.COMMIT, ControlType.ABORT) else None
    return None


def _runs_within(headers: list[BatchHeader], limit: int) -> list[list[BatchHeader]]:
    """``headers`` as one run, or (when larger than ``limit`` bytes) consecutive runs of at
    most ``limit`` bytes each (a batch larger than ``limit`` alone)."""
    if headers[-1].next_position - headers[0].position <= limit:
        return [headers]
    runs: list[list[BatchHeader]] = []
    size = 0
    for h in headers:
        if runs and size + h.size <= limit:
            runs[-1].append(h)
            size += h.size
        else:
            runs.append([h])
            size = h.size
    return runs
