"""Per-segment extraction: the bytes of one archived ``.log`` object -> catalog rows.

This is what Spark executors run, one segment object at a time. :class:`SegmentExtractor` is
pure (it is fed chunks of bytes and does no I/O), so the same code runs in a unit test, in the
driver, or on a cluster executor; :func:`extract_object` beside it is the I/O helper that
streams an object out of an :class:`~kafka_archive.store.ObjectStore` with ranged reads and
checks its SHA-256 against the manifest's on the way.

What is extracted:

* :class:`SegmentStats`: a header scan of the *whole* segment (offset range, first/max
  timestamps, record/batch counts, bytes, codecs, magics, transactional and control batches,
  leader-epoch runs). Every batch's CRC is verified (CRC-32C for magic 2, CRC-32 before).
* :class:`IntervalRow`: the sparse time index. Consecutive whole batches are grouped into
  intervals of at most ``interval_bytes`` bytes (a bigger batch gets an interval of its own);
  each records its offsets, its byte range ``[byte_start, byte_end)`` in the object and the
  largest timestamp in it. Control batches are included: the broker's ListOffsets counts
  transaction markers too.
* :class:`HistogramRow`: data records and batch bytes per time bucket (a batch is counted at
  its max timestamp, the broker's notion of a batch's time; control records are not counted as
  records, their bytes are).
* for ``__consumer_offsets`` only, :class:`CommitRow` (offset commits and offset tombstones)
  and :class:`MarkerRow` (transaction COMMIT/ABORT markers, needed because offsets committed
  inside a transaction take effect only at their COMMIT marker).

**Pieces.** When several archived versions hold the same offsets, only part of a segment may
belong to the partition's canonical chain (:mod:`kafka_archive.catalog.chain`). ``pieces``
lists those offset ranges ``(lo, hi)`` inclusive; everything but the stats is then restricted to
them, and no interval crosses a piece boundary. A batch straddling a boundary is kept whole in
the byte range (batches cannot be cut) but its offsets, records and timestamps are clipped to
the piece: the batch is decoded and only records inside the piece count. ``pieces=None`` means
the whole segment.

Errors are :class:`~segment_lib.errors.SegmentError` subclasses naming the object (``path``)
and the absolute byte position; a segment that ends inside a batch raises
:class:`~segment_lib.errors.TornTailError` (an archived segment is rolled, so it never may).
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_archive.store import IntegrityError, ObjectStore
from segment_lib.consumer_offsets import (
    OffsetCommit,
    OffsetCommitKey,
    Tombstone,
    decode_offsets_record,
)
from segment_lib.control import ControlType, decode_control_record
from segment_lib.errors import CorruptRecordError, SegmentError, TornTailError
from segment_lib.log_file import decode_batch, iter_batches
from segment_lib.records import LOG_OVERHEAD, MAGIC_OFFSET, BatchHeader, Codec, Record

__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "DEFAULT_CHUNK_BYTES",
    "DEFAULT_HISTOGRAM_MS",
    "DEFAULT_INTERVAL_BYTES",
    "CommitRow",
    "HistogramRow",
    "IntervalRow",
    "MarkerRow",
    "SegmentExtract",
    "SegmentExtractor",
    "SegmentStats",
    "extract_object",
    "extract_segment",
]

#: default size limit of one time-index interval (the most ``offsets`` reads per partition)
DEFAULT_INTERVAL_BYTES = 1 << 20
#: default width of a histogram bucket: one minute
DEFAULT_HISTOGRAM_MS = 60_000
#: ranged reads of this size stream an object through the extractor
DEFAULT_CHUNK_BYTES = 8 << 20
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"

# offset int64 + size int32 in front of every batch/message (LOG_OVERHEAD bytes)
_OFFSET_SIZE = struct.Struct(">qi")
#: the smallest size field any magic can have (a magic 0 message header)
_MIN_SIZE_FIELD = MAGIC_OFFSET + 1 - LOG_OVERHEAD


class IntervalRow(NamedTuple):
    """Whole batches ``[byte_start, byte_end)`` holding chain offsets ``start..end_offset``.

    ``max_ts``: the largest batch max timestamp (what the broker's time index sees);
    ``record_max_ts``: the largest timestamp of a record actually present (lower only when
    log compaction emptied a batch that kept its max timestamp); -1 when none.
    """

    start_offset: int
    end_offset: int
    byte_start: int
    byte_end: int
    max_ts: int
    record_max_ts: int
    record_count: int


class HistogramRow(NamedTuple):
    """Data records and bytes of batches whose max timestamp is in ``[bucket_ms, +width)``."""

    bucket_ms: int
    records: int
    bytes: int


class CommitRow(NamedTuple):
    """One offset commit (``kind='commit'``) or offset tombstone (``kind='delete'``) of
    ``__consumer_offsets``, at ``log_offset`` of that partition."""

    group: str
    topic: str
    partition: int
    kind: str
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int
    log_offset: int
    record_timestamp: int
    producer_id: int
    transactional: bool


class MarkerRow(NamedTuple):
    """A transaction marker: ``committed`` is True for COMMIT, False for ABORT."""

    log_offset: int
    producer_id: int
    committed: bool
    timestamp: int


@dataclass(frozen=True, slots=True)
class SegmentStats:
    """A header scan of the whole segment. Offsets/timestamps are -1 when it holds no batch."""

    first_offset: int
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    batch_count: int
    size_bytes: int
    codecs: tuple[str, ...]
    magics: tuple[int, ...]
    transactional_batches: int
    control_batches: int
    #: ``(leader_epoch, first_offset, last_offset)`` per run of batches of one epoch
    epoch_runs: tuple[tuple[int, int, int], ...]

    def epoch_runs_json(self) -> str:
        return json.dumps([list(r) for r in self.epoch_runs], separators=(",", ":"))


@dataclass(slots=True)
class SegmentExtract:
    """Everything extracted from one segment object (see the module docstring)."""

    stats: SegmentStats
    pieces: tuple[tuple[int, int], ...] | None
    intervals: list[IntervalRow] = field(default_factory=list)
    histogram: list[HistogramRow] = field(default_factory=list)
    commits: list[CommitRow] = field(default_factory=list)
    markers: list[MarkerRow] = field(default_factory=list)
    #: ``__consumer_offsets`` records that are neither offset commits nor tombstones of one
    #: (group metadata, KIP-848 records...), and ones that could not be decoded
    other_offsets_records: int = 0
    undecodable_offsets_records: int = 0


class _Part(NamedTuple):
    """The part of one batch that falls in one piece."""

    piece: int
    lo: int
    hi: int
    whole: bool


@dataclass(slots=True)
class _OpenInterval:
    piece: int
    start_offset: int
    end_offset: int
    byte_start: int
    byte_end: int
    max_ts: int
    record_max_ts: int
    record_count: int


class SegmentExtractor:
    """Feed a segment's bytes in order with :meth:`feed`, then call :meth:`finish`.

    Args:
        topic: the segment's topic (``__consumer_offsets`` turns on commit decoding).
        interval_bytes: size limit of a time-index interval.
        histogram_ms: histogram bucket width.
        pieces: chain offset ranges to index (``None``: the whole segment).
        path: names the object in errors.
        size: the object's total size, if known (a batch declaring more is reported at once).
    """

    def __init__(
        self,
        *,
        topic: str,
        interval_bytes: int = DEFAULT_INTERVAL_BYTES,
        histogram_ms: int = DEFAULT_HISTOGRAM_MS,
        pieces: Sequence[tuple[int, int]] | None = None,
        path: str | None = None,
        size: int | None = None,
    ) -> None:
        if interval_bytes <= 0 or histogram_ms <= 0:
            raise ValueError("interval_bytes and histogram_ms must be positive")
        self.topic = topic
        self.interval_bytes = interval_bytes
        self.histogram_ms = histogram_ms
        self.pieces = None if pieces is None else tuple(sorted((int(a), int(b)) for a, b in pieces))
        self.path = path
        self.size = size
        self._decode_offsets = topic == CONSUMER_OFFSETS_TOPIC
        # streaming state: bytes not yet parsed start at absolute position _base
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._base = 0
        self._need = 0
        # stats
        self._first = self._last = -1
        self._first_ts = self._max_ts = self._off_max = -1
        self._records = self._batches = self._txn = self._control = 0
        self._codecs: set[Codec] = set()
        self._magics: set[int] = set()
        self._runs: list[list[int]] = []
        # outputs
        self._open: _OpenInterval | None = None
        self._intervals: list[IntervalRow] = []
        self._hist: dict[int, list[int]] = {}
        self._commits: list[CommitRow] = []
        self._markers: list[MarkerRow] = []
        self._other = self._undecodable = 0
        self._piece_idx = 0
        self._finished = False

    # -- streaming ------------------------------------------------------------------------------

    def feed(self, chunk: bytes | memoryview) -> None:
        """Parse as many whole batches as ``chunk`` completes.

        A batch cut by the end of the previous chunk is completed by copying only the bytes it
        still misses; the rest of ``chunk`` is parsed in place (no copy of the whole chunk).
        """
        if self._finished:
            raise ValueError("extractor already finished")
        view = memoryview(chunk)
        while self._pending_len and len(view):
            take = self._need - self._pending_len
            if len(view) < take:
                self._pending.append(bytes(view))
                self._pending_len += len(view)
                return
            piece = b"".join([*self._pending, view[:take]])
            view = view[take:]
            self._pending, self._pending_len = [], 0
            pos = self._parse(piece, final=False)
            if pos < len(piece):  # only the header was complete: now the size is known
                self._pending, self._pending_len = [piece[pos:]], len(piece) - pos
        if not len(view):
            return
        pos = self._parse(view, final=False)
        if pos < len(view):
            rest = bytes(view[pos:])
            self._pending, self._pending_len = [rest], len(rest)

    def finish(self) -> SegmentExtract:
        """Parse what is left (it must be whole batches) and return the extract."""
        if self._finished:
            raise ValueError("extractor already finished")
        if self._pending_len:
            data = b"".join(self._pending)
            self._pending = []
            self._pending_len = 0
            self._parse(data, final=True)
        self._finished = True
        self._close_interval()
        stats = SegmentStats(
            first_offset=self._first,
            last_offset=self._last,
            first_timestamp=self._first_ts,
            max_timestamp=self._max_ts,
            offset_of_max_timestamp=self._off_max,
            record_count=self._records,
            batch_count=self._batches,
            size_bytes=self._base,
            codecs=tuple(sorted(c.label for c in self._codecs)),
            magics=tuple(sorted(self._magics)),
            transactional_batches=self._txn,
            control_batches=self._control,
            epoch_runs=tuple((r[0], r[1], r[2]) for r in self._runs),
        )
        hist = [HistogramRow(k, v[0], v[1]) for k, v in sorted(self._hist.items())]
        return SegmentExtract(
            stats=stats,
            pieces=self.pieces,
            intervals=self._intervals,
            histogram=hist,
            commits=self._commits,
            markers=self._markers,
            other_offsets_records=self._other,
            undecodable_offsets_records=self._undecodable,
        )

    def _parse(self, data: bytes | memoryview, *, final: bool) -> int:
        """Handle every whole batch of ``data`` (which starts at ``self._base``); return how many
        bytes were consumed. A torn tail is kept for the next chunk unless ``final``."""
        consumed = 0
        try:
            for header in iter_batches(data, 0, verify_crc=True):
                self._on_batch(data, header)
                consumed = header.next_position
        except TornTailError as exc:
            pos = exc.position if exc.position is not None else consumed
            remaining = len(data) - pos
            declared = None
            if remaining >= LOG_OVERHEAD:
                declared = _OFFSET_SIZE.unpack_from(data, pos)[1]
            cannot_complete = (
                final
                or (declared is not None and declared < _MIN_SIZE_FIELD)
                or (
                    declared is not None
                    and self.size is not None
                    and self._base + pos + LOG_OVERHEAD + declared > self.size
                )
            )
            if cannot_complete:
                raise exc.with_location(self.path, self._base) from None
            self._need = LOG_OVERHEAD + declared if declared is not None else LOG_OVERHEAD
            self._base += pos
            return pos
        except SegmentError as exc:
            raise exc.with_location(self.path, self._base) from None
        self._base += consumed
        self._need = 0
        return consumed

    # -- per batch ------------------------------------------------------------------------------

    def _on_batch(self, data: bytes | memoryview, b: BatchHeader) -> None:
        # whole-segment stats
        if self._first < 0:
            self._first, self._first_ts = b.base_offset, b.first_timestamp
        self._last = b.last_offset
        self._batches += 1
        self._records += b.record_count
        self._txn += b.is_transactional
        self._control += b.is_control
        self._magics.add(b.magic)
        self._codecs.add(b.codec)
        if b.max_timestamp > self._max_ts:
            self._max_ts, self._off_max = b.max_timestamp, b.last_offset
        epoch = b.partition_leader_epoch
        if self._runs and self._runs[-1][0] == epoch:
            self._runs[-1][2] = b.last_offset
        else:
            self._runs.append([epoch, b.base_offset, b.last_offset])

        records: list[Record] | None = None
        for part in self._parts(b):
            if part.whole:
                max_ts = b.max_timestamp
                record_max = b.max_timestamp if b.record_count > 0 else -1
                count = b.record_count
                if self._decode_offsets:
                    if records is None:
                        records = self._decode(data, b)
                    self._offsets_records(b, records)
            else:
                if records is None:
                    records = self._decode(data, b)
                inside = [r for r in records if part.lo <= r.offset <= part.hi]
                record_max = max((r.timestamp for r in inside), default=-1)
                max_ts = record_max
                count = len(inside)
                if self._decode_offsets:
                    self._offsets_records(b, inside)
            self._add_to_interval(part, b, max_ts, record_max, count)
            if b.max_timestamp >= 0 and (part.whole or part.hi >= b.last_offset):
                bucket = b.max_timestamp - b.max_timestamp % self.histogram_ms
                slot = self._hist.setdefault(bucket, [0, 0])
                if not b.is_control:
                    slot[0] += count
                slot[1] += b.size

    def _decode(self, data: bytes | memoryview, b: BatchHeader) -> list[Record]:
        # positions in ``data`` are relative to it; errors are re-anchored by _parse
        return decode_batch(data, b)

    def _parts(self, b: BatchHeader) -> Iterable[_Part]:
        """The parts of batch ``b`` inside the pieces (one whole part without pieces)."""
        if self.pieces is None:
            return (_Part(0, b.base_offset, b.last_offset, True),)
        pieces = self.pieces
        i = self._piece_idx
        while i < len(pieces) and pieces[i][1] < b.base_offset:
            i += 1
        self._piece_idx = i
        parts = []
        while i < len(pieces) and pieces[i][0] <= b.last_offset:
            lo, hi = pieces[i]
            clo, chi = max(lo, b.base_offset), min(hi, b.last_offset)
            parts.append(_Part(i, clo, chi, clo == b.base_offset and chi == b.last_offset))
            i += 1
        return parts

    def _add_to_interval(
        self, part: _Part, b: BatchHeader, max_ts: int, record_max: int, count: int
    ) -> None:
        cur = self._open
        start = self._base + b.position
        end = start + b.size
        if cur is not None and (
            cur.piece != part.piece or (end - cur.byte_start > self.interval_bytes)
        ):
            self._close_interval()
            cur = None
        if cur is None:
            self._open = _OpenInterval(
                part.piece, part.lo, part.hi, start, end, max_ts, record_max, count
            )
            return
        cur.end_offset = part.hi
        cur.byte_end = end
        cur.max_ts = max(cur.max_ts, max_ts)
        cur.record_max_ts = max(cur.record_max_ts, record_max)
        cur.record_count += count

    def _close_interval(self) -> None:
        cur = self._open
        if cur is not None:
            self._intervals.append(
                IntervalRow(
                    cur.start_offset,
                    cur.end_offset,
                    cur.byte_start,
                    cur.byte_end,
                    cur.max_ts,
                    cur.record_max_ts,
                    cur.record_count,
                )
            )
            self._open = None

    def _offsets_records(self, b: BatchHeader, records: Sequence[Record]) -> None:
        if b.is_control:
            for r in records:
                try:
                    ctl = decode_control_record(r.key, r.value)
                except CorruptRecordError:
                    self._undecodable += 1
                    continue
                if ctl.type in (ControlType.COMMIT, ControlType.ABORT):
                    self._markers.append(
                        MarkerRow(
                            r.offset, b.producer_id, ctl.type is ControlType.COMMIT, r.timestamp
                        )
                    )
            return
        pid = b.producer_id if b.is_transactional else -1
        for r in records:
            try:
                rec = decode_offsets_record(r.key, r.value)
            except CorruptRecordError:
                self._undecodable += 1
                continue
            if isinstance(rec, OffsetCommit):
                self._commits.append(
                    CommitRow(
                        rec.group,
                        rec.topic,
                        rec.partition,
                        "commit",
                        rec.offset,
                        rec.leader_epoch,
                        rec.metadata,
                        rec.commit_timestamp,
                        rec.expire_timestamp,
                        r.offset,
                        r.timestamp,
                        pid,
                        b.is_transactional,
                    )
                )
            elif isinstance(rec, Tombstone) and isinstance(rec.key, OffsetCommitKey):
                k = rec.key
                self._commits.append(
                    CommitRow(
                        k.group,
                        k.topic,
                        k.partition,
                        "delete",
                        -1,
                        -1,
                        "",
                        -1,
                        -1,
                        r.offset,
                        r.timestamp,
                        pid,
                        b.is_transactional,
                    )
                )
            else:
                self._other += 1


def extract_segment(
    data: bytes | memoryview,
    *,
    topic: str,
    interval_bytes: int = DEFAULT_INTERVAL_BYTES,
    histogram_ms: int = DEFAULT_HISTOGRAM_MS,
    pieces: Sequence[tuple[int, int]] | None = None,
    path: str | None = None,
) -> SegmentExtract:
    """Extract a whole segment held in memory (see :class:`SegmentExtractor`)."""
    ex = SegmentExtractor(
        topic=topic,
        interval_bytes=interval_bytes,
        histogram_ms=histogram_ms,
        pieces=pieces,
        path=path,
        size=len(data),
    )
    ex.feed(data)
    return ex.finish()


def extract_object(
    store: ObjectStore,
    key: str,
    *,
    topic: str,
    size: int | None = None,
    sha256: str | None = None,
    interval_bytes: int = DEFAULT_INTERVAL_BYTES,
    histogram_ms: int = DEFAULT_HISTOGRAM_MS,
    pieces: Sequence[tuple[int, int]] | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> SegmentExtract:
    """Stream object ``key`` through a :class:`SegmentExtractor` with ranged reads of
    ``chunk_bytes``; when ``sha256`` is given the bytes read must hash to it
    (:class:`~kafka_archive.store.IntegrityError` otherwise)."""
    if size is None:
        head = store.head(key)
        if head is None:
            from kafka_archive.store import ObjectNotFound

            raise ObjectNotFound("segment object is missing", uri=store.uri, key=key)
        size = head.size
    hasher = hashlib.sha256() if sha256 else None
    ex = SegmentExtractor(
        topic=topic,
        interval_bytes=interval_bytes,
        histogram_ms=histogram_ms,
        pieces=pieces,
        path=f"{store.uri.rstrip('/')}/{key}",
        size=size,
    )
    pos = 0
    while pos < size:
        end = min(size, pos + chunk_bytes)
        chunk = store.get_range(key, pos, end)
        if hasher is not None:
            hasher.update(chunk)
        ex.feed(chunk)
        pos = end
    if hasher is not None and hasher.hexdigest() != sha256:
        raise IntegrityError(
            f"segment bytes hash to {hasher.hexdigest()}, the manifest says {sha256}",
            uri=store.uri,
            key=key,
        )
    return ex.finish()
