"""Per-segment extraction: the bytes of one archived ``.log`` object -> catalog rows.

This is what Spark executors run, one segment object at a time. :class:`SegmentExtractor` is
pure (it is fed chunks of bytes and does no I/O), so the same code runs in a unit test, in the
driver, or on a cluster executor; :func:`extract_object` beside it is the I/O helper that
streams an object out of an :class:`~kafka_archive.store.ObjectStore` with ranged reads and
checks the whole object against its manifest's CRC-32C (default) or SHA-256 on the way
(:mod:`kafka_archive.catalog.integrity`).

**Speed.** Without pieces and outside ``__consumer_offsets`` (i.e. almost always) every chunk
is summarized in C: ``segment_lib._summary.summarize_v2``, called once per chunk, walks the
magic-2 batches on the terms ``iter_batches`` accepts them, checks their CRCs and folds the
headers into the running aggregates (stats, epoch runs, intervals, histogram), with
``iter_batches`` taking over for anything it does not accept (legacy messages, bad bytes,
the cut batch at a chunk's end); no Python runs per batch and no record is decoded. When the
object is checked against its CRC-32C, the same pass continues the object's CRC-32C: each
batch's CRC and the object's register are combined instead of reading the bytes twice
(:mod:`segment_lib._summary`). :func:`extract_object` reads through ``get_range_view``, so on
the local store the chunks are the page cache itself (mapped), not copies. Without the
summary (no C compiler, no hardware CRC-32C, or a last offset beyond 2^63 - 1), the compiled
header scan ``scan_batches_v2`` returns the headers and they are booked as columns
(:meth:`SegmentExtractor._book`). Pieces and ``__consumer_offsets`` take the general
per-batch path (:meth:`SegmentExtractor._on_batch`), which decodes records where they are
needed (clipped batches, offset commits, transaction markers). All paths give the same rows
(tested).

What is extracted:

* :class:`SegmentStats`: a header scan of the *whole* segment (offset range, first/max
  timestamps, record/batch counts, bytes, codecs, magics, transactional and control batches,
  leader-epoch runs). Every batch's CRC is verified (CRC-32C for magic 2, CRC-32 before)
  unless ``batch_crc=False`` (``verify=crc32c-only``).
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

import bisect
import gc
import itertools
import json
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple, Protocol

from kafka_archive.catalog.integrity import (
    DEFAULT_VERIFY,
    ObjectChecksum,
    ObjectIntegrityError,
    crc32c_update,
    locate_single_byte_error,
    verify_mode,
)
from kafka_archive.store import ObjectNotFound, ObjectStore
from kafka_archive.store.base import read_view
from segment_lib.consumer_offsets import (
    OffsetCommit,
    OffsetCommitKey,
    Tombstone,
    decode_offsets_record,
)
from segment_lib.control import ControlType, decode_control_record
from segment_lib.errors import CorruptRecordError, SegmentError, TornTailError
from segment_lib.log_file import decode_batch, iter_batches
from segment_lib.record_batch import CRC_START
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
#: leading bytes of a batch that no batch CRC covers: magic 2 (offset, length, partition
#: leader epoch, magic, crc: the CRC starts at the attributes) and magic 0/1 (offset, size, crc:
#: the CRC starts at the magic byte)
_UNCOVERED_V2 = CRC_START
_UNCOVERED_LEGACY = MAGIC_OFFSET
#: "no epoch run open yet" (a partition leader epoch is an int32)
_NO_EPOCH = -(1 << 40)
#: most bytes walked per compiled call on the fast path. A chunk of the build (8 MiB) is one
#: window (with the header scan, 512 KiB windows checksummed while in L2 measured no faster:
#: 2.26 vs 2.19 raw reads per extraction with crc32c-only, 3.03 vs 3.01 with crc32c); the
#: bound keeps header lists small when a whole segment is fed at once
_WINDOW = 8 << 20
#: stop reasons of the compiled scan meaning "the batch goes on past the window's end"
_CUT_BY_WINDOW = ("torn", "short")

_ScanV2 = Callable[[memoryview, int, int, bool, int], tuple[list[BatchHeader], int, str]]
_scan_v2: _ScanV2 | None = None
try:  # the compiled magic-2 scan, on the terms iter_batches uses it: with a hardware CRC
    from segment_lib._speedups import CRC32C_IMPL as _crc_impl
    from segment_lib._speedups import scan_batches_v2 as _scan_compiled

    if _crc_impl != "table":
        _scan_v2 = _scan_compiled
except ImportError:  # pragma: no cover - depends on the build
    pass

#: the fast path's running aggregates, as segment_lib._summary.summarize_v2 carries them
_State = tuple[int, ...]
_Summarize = Callable[
    [memoryview, int, int, int, bool, int | None, _State, int, int],
    tuple[int, str, int | None, _State, list[tuple[int, ...]], list[tuple[int, ...]],
          list[tuple[int, ...]]],
]  # fmt: skip
_summarize: _Summarize | None = None
try:  # the compiled one-pass summary (same acceptance as the scan; hardware CRC only)
    from segment_lib._summary import CRC32C_IMPL as _summary_impl
    from segment_lib._summary import NO_EPOCH as _SUMMARY_NO_EPOCH
    from segment_lib._summary import summarize_v2 as _summarize_compiled

    if _summary_impl != "table" and _SUMMARY_NO_EPOCH == _NO_EPOCH:
        _summarize = _summarize_compiled
except ImportError:  # pragma: no cover - depends on the build
    pass
#: codec id -> Codec (the summary reports codecs as a bit mask of ids)
_CODEC_BY_ID = {int(c): c for c in Codec}

#: the attributes the compiled summary's state tuple carries, in its order (``segment_lib.
#: _summary.summarize_v2``); "" is the codec mask, which is per window, not carried
_SUMMARY_STATE: Final = (
    "_first", "_first_ts", "_last", "_batches", "_records", "_txn", "_control", "",
    "_max_ts", "_off_max", "_ep_cur", "_ep_first", "_iv_open", "_iv_so", "_iv_bs", "_iv_mx",
    "_iv_rmx", "_iv_cnt",
)  # fmt: skip


class _Checksum(Protocol):
    def update(self, chunk: bytes | memoryview, /) -> None: ...


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
        checksum: fed every byte given to :meth:`feed`, in order (e.g. an
            :class:`~kafka_archive.catalog.integrity.ObjectChecksum`); on the fast path each
            scan window right after its scan.
        batch_crc: verify every batch's own CRC (turn off only when the whole object is
            verified against a checksum some other way; see :func:`extract_object`).
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
        checksum: _Checksum | None = None,
        batch_crc: bool = True,
    ) -> None:
        if interval_bytes <= 0 or histogram_ms <= 0:
            raise ValueError("interval_bytes and histogram_ms must be positive")
        self.topic = topic
        self.interval_bytes = interval_bytes
        self.histogram_ms = histogram_ms
        self.pieces = None if pieces is None else tuple(sorted((int(a), int(b)) for a, b in pieces))
        self.path = path
        self.size = size
        self.checksum = checksum
        self.batch_crc = batch_crc
        self._checked = 0  # bytes of the view being fed that the checksum has seen
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
        # epoch runs: closed ones (the general path keeps its open run as the last item)
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
        # the fast path (no pieces, no commit decoding) keeps its open aggregates here between
        # chunks (see _scan_fast)
        self._fast = self.pieces is None and not self._decode_offsets
        self._ep_cur = _NO_EPOCH  # epoch of the open run, and its first offset
        self._ep_first = -1
        self._iv_open = False  # the open interval: start offset, byte start, maxima, count
        self._iv_so = self._iv_bs = 0
        self._iv_mx = self._iv_rmx = -1
        self._iv_cnt = 0
        # the compiled summary books the fast path (until a value outgrows int64: see
        # _summarize_window)
        self._summary = _summarize

    # -- streaming ------------------------------------------------------------------------------

    def feed(self, chunk: bytes | memoryview) -> None:
        """Parse as many whole batches as ``chunk`` completes.

        A batch cut by the end of the previous chunk is completed by copying only the bytes it
        still misses; the rest of ``chunk`` is parsed in place (no copy of the whole chunk).
        """
        if self._finished:
            raise ValueError("extractor already finished")
        full = memoryview(chunk)
        view = full
        checksum = self.checksum
        seen = 0  # the checksum has seen full[:seen] (also when parsing fails: see finally)
        try:
            while self._pending_len and len(view):
                take = self._need - self._pending_len
                if len(view) < take:
                    self._pending.append(bytes(view))
                    self._pending_len += len(view)
                    return
                piece = b"".join([*self._pending, view[:take]])
                view = view[take:]
                self._pending, self._pending_len = [], 0
                pos = self._parse(piece, final=False, checksum=None)
                if pos < len(piece):  # only the header was complete: now the size is known
                    self._pending, self._pending_len = [piece[pos:]], len(piece) - pos
            if not len(view):
                return
            start = len(full) - len(view)
            if checksum is not None:
                checksum.update(full[seen:start])
                seen = start
            self._checked = 0
            try:
                pos = self._parse(view, final=False, checksum=checksum)
            finally:
                seen = start + self._checked  # the scan checksums its windows as it goes
            if pos < len(view):
                rest = bytes(view[pos:])
                self._pending, self._pending_len = [rest], len(rest)
        finally:
            # every byte of the chunk, once and in order, whatever happened (what the scan
            # did not reach, the cut batch at the end, all of it on the general path)
            if checksum is not None:
                checksum.update(full[seen:])

    def finish(self) -> SegmentExtract:
        """Parse what is left (it must be whole batches) and return the extract."""
        if self._finished:
            raise ValueError("extractor already finished")
        if self._pending_len:
            data = b"".join(self._pending)
            self._pending = []
            self._pending_len = 0
            self._parse(data, final=True, checksum=None)
        self._finished = True
        if self._fast:
            self._close_fast()
        else:
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

    def _parse(self, data: bytes | memoryview, *, final: bool, checksum: _Checksum | None) -> int:
        """Handle every whole batch of ``data`` (which starts at ``self._base``); return how many
        bytes were consumed. A torn tail is kept for the next chunk unless ``final``."""
        consumed = 0
        try:
            if self._fast:
                consumed = self._scan_fast(memoryview(data), checksum)
            else:
                for header in iter_batches(data, 0, verify_crc=self.batch_crc):
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

    # -- the fast path: whole segment, no record decoding -------------------------------------

    def _scan_fast(self, view: memoryview, checksum: _Checksum | None) -> int:
        """Every whole batch of ``view`` (at absolute position ``self._base``): stats,
        intervals, histogram and epoch runs, exactly as :meth:`_on_batch` computes them for a
        whole-segment extract.

        The view is walked in windows of at most :data:`_WINDOW` bytes, one compiled call
        each: ``segment_lib._summary.summarize_v2`` folds the batches into the running
        aggregates in C (and, when ``checksum`` is a CRC-32C :class:`ObjectChecksum`,
        continues the object's CRC-32C in the same pass over the bytes: see
        :meth:`_summarize_window`); without it, ``scan_batches_v2`` returns the headers and
        :meth:`_book` books them. A batch cut by a window's end starts the next window;
        whatever the compiled code does not accept (a legacy message, the cut batch at the end
        of the view, bad bytes) is handed to ``iter_batches``, which reads it or raises
        exactly as it always does, and its headers are booked by :meth:`_book` before the next
        window. Every window is added to ``checksum`` (the part the summary did not already
        cover) before the next. ``self._checked`` tells the caller how much of the view the
        checksum has seen. Returns the bytes consumed; the batches accepted before an error (a
        torn tail at the chunk's end is the normal way a chunk ends) are booked all the same.

        The cyclic garbage collector is paused meanwhile: on the header path every header is
        a new tuple, so a chunk of 16 KiB batches triggers a young-generation collection every
        ~700 headers (~70 ns per batch measured), although headers form no cycles and are
        freed by reference counting; collection resumes, with whatever was deferred, right
        after.
        """
        gc_was_on = gc.isenabled()
        if gc_was_on:
            gc.disable()
        try:
            return self._scan_windows(view, checksum)
        finally:
            if gc_was_on:
                gc.enable()

    def _scan_windows(self, view: memoryview, checksum: _Checksum | None) -> int:
        n = len(view)
        batch_crc = self.batch_crc
        compiled = self._summary is not None or _scan_v2 is not None
        window = _WINDOW if compiled else n
        # the summary continues a CRC-32C object checksum itself (one pass over the bytes)
        fused = (
            checksum
            if isinstance(checksum, ObjectChecksum) and checksum.algorithm == "crc32c"
            else None
        )
        found: list[BatchHeader] = []
        pos = 0  # where the next window starts
        min_end = 0  # a batch longer than a window: the next window must reach its end
        while pos < n:
            limit = min(n, max(pos + window, min_end))
            covered = pos  # the checksum has seen view[:covered]
            stop, reason = pos, ""
            if self._summary is not None:
                crc_in = fused.crc if fused is not None else None
                done = self._summarize_window(view, pos, limit, crc_in)
                if done is None:  # switched to the header path: redo this window
                    continue
                stop, reason, crc = done
                if crc is not None and fused is not None:
                    fused.crc = crc
                    covered = stop
                    self._checked = stop
            elif _scan_v2 is not None:
                headers, stop, reason = _scan_v2(view, pos, limit, batch_crc, -1)
                found += headers
            try:
                if stop < limit and (limit == n or reason not in _CUT_BY_WINDOW):
                    # not a batch cut by the window: the reference reader takes over (keeps
                    # what it yields before it raises)
                    found.extend(iter_batches(view, stop, verify_crc=batch_crc, end=limit))
                    stop = limit
            finally:
                if found:  # booked before the next window is summarized (and on errors)
                    self._book(found)
                    found = []
            if stop == pos:  # the window holds no whole batch: widen it to the batch's end
                declared = _OFFSET_SIZE.unpack_from(view, pos)[1]
                min_end = max(limit + 1, pos + LOG_OVERHEAD + declared)
                continue
            if checksum is not None:
                checksum.update(view[covered:stop])
                self._checked = stop
            pos = stop
        return pos

    def _summarize_window(
        self, view: memoryview, start: int, end: int, crc: int | None
    ) -> tuple[int, str, int | None] | None:
        """Fold the batches of ``view[start:end]`` into the running aggregates with the
        compiled summary; returns (stop, reason, the CRC-32C continued from ``crc`` over
        ``[start, stop)`` or None), or None (and the header path from now on) when a value of
        the state no longer fits in int64 (a last offset beyond 2^63 - 1, booked by
        :meth:`_book` from the Python reader's headers)."""
        summarize = self._summary
        assert summarize is not None
        # the codec mask starts at 0 in every window: merged into self._codecs below
        state = tuple(getattr(self, name) if name else 0 for name in _SUMMARY_STATE)
        try:
            stop, reason, crc_out, st, intervals, runs, hist = summarize(
                view, start, end, self._base, self.batch_crc, crc, state,
                self.interval_bytes, self.histogram_ms,
            )  # fmt: skip
        except OverflowError:
            self._summary = None
            return None
        batches = st[3]
        if batches != self._batches:
            self._magics.add(2)
            mask = st[7]
            for cid, codec in _CODEC_BY_ID.items():
                if mask >> cid & 1:
                    self._codecs.add(codec)
        for name, value in zip(_SUMMARY_STATE, st, strict=True):
            if name:
                setattr(self, name, value)
        self._iv_open = bool(self._iv_open)
        if intervals:
            self._intervals.extend(map(IntervalRow._make, intervals))
        for epoch, first, last in runs:
            self._runs.append([epoch, first, last])
        for bucket, records, nbytes in hist:
            self._hist_add(bucket, records, nbytes)
        return stop, reason, crc_out

    def _book(self, hs: Sequence[BatchHeader]) -> None:
        """Book whole batches ``hs`` (consecutive, positions relative to ``self._base``), as
        :meth:`_on_batch` would one by one for a whole-segment extract.

        Why columns: at the default batch size (16 KiB) copying a batch out of the page cache
        takes ~1.5 us, and a Python loop over the 18 header fields with a dozen branches
        costs ~0.4 us of it. Transposed into field tuples (``zip(*hs)``, in C), the stats are
        ``sum``/``max``/``set`` calls, intervals are cut by bisecting the batch end positions
        and summed per interval, and the histogram is one update when the batches fall into
        one bucket (the usual case for a chunk): ~0.15 us per batch. Per-batch loops remain
        only for what changes inside the chunk (leader epochs, several buckets).
        """
        off = self._base
        n = len(hs)
        # the header fields as columns (BatchHeader's field order)
        cols = tuple(zip(*hs))  # noqa: B905 - every header has the same 18 fields
        pos, size, magic, base, last, rc = cols[:6]
        codec, fts, mts, epoch, txn, ctl = cols[7], cols[9], cols[10], cols[12], cols[16], cols[17]
        # whole-segment stats
        prev_last = self._last
        if self._first < 0:  # as _on_batch: every batch while no base offset >= 0 was seen
            for b0, f0 in zip(base, fts, strict=True):
                self._first, self._first_ts = b0, f0
                if b0 >= 0:
                    break
        self._last = last[-1]
        self._batches += n
        self._records += sum(rc)
        ntxn = txn.count(True)
        nctl = ctl.count(True)
        self._txn += ntxn
        self._control += nctl
        # (count() compares by identity first: cheaper than hashing every codec member)
        for col, seen in ((codec, self._codecs), (magic, self._magics)):
            if col.count(col[0]) == n:
                seen.add(col[0])
            else:
                seen.update(col)
        top = max(mts)
        if top > self._max_ts:
            self._max_ts, self._off_max = top, last[mts.index(top)]
        # leader-epoch runs
        if epoch.count(epoch[0]) == n:
            if epoch[0] != self._ep_cur:
                self._epoch_change(epoch[0], base[0], prev_last)
        else:
            prev = prev_last
            for e, b, lo in zip(epoch, base, last, strict=True):
                if e != self._ep_cur:
                    self._epoch_change(e, b, prev)
                prev = lo
        # time-index intervals: whole batches, at most interval_bytes unless one is bigger;
        # ends[i] (relative) is increasing because the batches are consecutive
        ib = self.interval_bytes
        ends = (*pos[1:], pos[-1] + size[-1])
        i = 0
        if self._iv_open:
            j = bisect.bisect_right(ends, self._iv_bs - off + ib)
            if j:
                self._iv_add(mts, rc, 0, j)
                i = j
            if i < n:
                self._close_iv(last[i - 1] if i else prev_last, off + pos[i])
        while i < n:
            # batch i opens an interval (even alone bigger than ib); the next ones join it
            # while the interval stays within ib bytes
            j = max(i + 1, bisect.bisect_right(ends, pos[i] + ib, i))
            self._iv_open = True
            self._iv_so, self._iv_bs = base[i], off + pos[i]
            self._iv_mx, self._iv_rmx, self._iv_cnt = mts[i], mts[i] if rc[i] else -1, rc[i]
            self._iv_add(mts, rc, i + 1, j)
            if j < n:
                self._close_iv(last[j - 1], off + pos[j])
            i = j
        # histogram: a batch counts at its max timestamp (control records are no data)
        hms = self.histogram_ms
        low = min(mts)
        if low >= 0 and low // hms == top // hms:
            data_records = sum(rc) - (sum(itertools.compress(rc, ctl)) if nctl else 0)
            self._hist_add(low - low % hms, data_records, sum(size))
        else:
            for m, r, z, c in zip(mts, rc, size, ctl, strict=True):
                if m >= 0:
                    self._hist_add(m - m % hms, 0 if c else r, z)

    def _iv_add(self, mts: Sequence[int], rc: Sequence[int], i: int, j: int) -> None:
        """Add batches ``[i, j)`` to the open interval."""
        if j <= i:
            return
        m = mts[i:j]
        r = rc[i:j]
        top = max(m)
        if top > self._iv_mx:
            self._iv_mx = top
        # a batch's record max is its max timestamp if it holds records, else -1
        with_records = list(itertools.compress(m, r))
        if with_records:
            rmx = max(with_records)
            if rmx > self._iv_rmx:
                self._iv_rmx = rmx
        if len(with_records) < len(m) and self._iv_rmx < -1:
            self._iv_rmx = -1
        self._iv_cnt += sum(r)

    def _close_iv(self, end_offset: int, byte_end: int) -> None:
        self._intervals.append(
            IntervalRow(
                self._iv_so,
                end_offset,
                self._iv_bs,
                byte_end,
                self._iv_mx,
                self._iv_rmx,
                self._iv_cnt,
            )
        )
        self._iv_open = False

    def _epoch_change(self, epoch: int, base: int, prev_last: int) -> None:
        if self._ep_cur != _NO_EPOCH:
            self._runs.append([self._ep_cur, self._ep_first, prev_last])
        self._ep_cur, self._ep_first = epoch, base

    def _hist_add(self, bucket: int, records: int, nbytes: int) -> None:
        slot = self._hist.get(bucket)
        if slot is None:
            self._hist[bucket] = [records, nbytes]
        else:
            slot[0] += records
            slot[1] += nbytes

    def _close_fast(self) -> None:
        """Close the fast path's open run and interval (at the end of the object)."""
        if self._ep_cur != _NO_EPOCH:
            self._runs.append([self._ep_cur, self._ep_first, self._last])
            self._ep_cur = _NO_EPOCH
        if self._iv_open:
            self._close_iv(self._last, self._base)

    # -- the general path: per batch ------------------------------------------------------------

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
    crc32c: str | None = None,
    verify: str = DEFAULT_VERIFY,
    interval_bytes: int = DEFAULT_INTERVAL_BYTES,
    histogram_ms: int = DEFAULT_HISTOGRAM_MS,
    pieces: Sequence[tuple[int, int]] | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> SegmentExtract:
    """Stream object ``key`` through a :class:`SegmentExtractor` with ranged reads of
    ``chunk_bytes`` and check the whole object against its manifest's checksum.

    ``verify`` (:data:`~kafka_archive.catalog.integrity.VERIFY_CHOICES`) picks the
    algorithm and whether every batch CRC is checked too; the expected value is ``crc32c`` /
    ``sha256`` (hex, as in the manifest). When only the other algorithm's value is known, that
    one is checked; when neither is, only the batch checks are made (batch CRCs are always
    checked then, and again on the error path of a whole-object mismatch, to find the damaged
    batch).

    Raises:
        ObjectIntegrityError: the bytes read differ from what the manifest recorded (also when
            a batch fails its own checks in such bytes: they are not the archived ones). Its
            ``position`` locates the difference when possible (see
            :mod:`kafka_archive.catalog.integrity`).
        SegmentError: the bytes match the manifest but are not a valid, complete segment.
        StoreError: the store failed (missing object, unreachable...).
    """
    wanted, batch_crc = verify_mode(verify)
    if size is None:
        head = store.head(key)
        if head is None:
            raise ObjectNotFound("segment object is missing", uri=store.uri, key=key)
        size = head.size
    algorithm, expected = _expected_checksum(wanted, crc32c, sha256)
    checksum = ObjectChecksum(algorithm) if expected is not None else None
    ex = SegmentExtractor(
        topic=topic,
        interval_bytes=interval_bytes,
        histogram_ms=histogram_ms,
        pieces=pieces,
        path=f"{store.uri.rstrip('/')}/{key}",
        size=size,
        checksum=checksum,
        batch_crc=batch_crc or checksum is None,
    )
    # A batch error does not end the read when the whole object is checked: bytes that differ
    # from the archived ones are a store problem (reported and retried), bytes that match but
    # are bad are a corrupt segment (recorded); only the whole checksum tells them apart.
    error: SegmentError | None = None
    pos = 0
    while pos < size:
        end = min(size, pos + chunk_bytes)
        # a view where the store can avoid copying (the local store maps the file)
        chunk = read_view(store, key, pos, end)
        if error is None:
            try:
                ex.feed(chunk)  # checksums the chunk too
            except SegmentError as exc:
                if checksum is None:
                    raise
                error = exc
        elif checksum is not None:
            checksum.update(chunk)
        # drop the chunk before reading the next: with two 8 MiB buffers alive the allocator
        # hands out fresh pages every time, and faulting them in costs more than the copy (a
        # mapped view is unmapped here)
        del chunk
        pos = end
    result: SegmentExtract | None = None
    if error is None:
        try:
            result = ex.finish()
        except SegmentError as exc:
            if checksum is None:
                raise
            error = exc
    if checksum is not None and checksum.hexdigest() != expected:
        assert expected is not None
        raise _integrity_error(
            store, key, size, checksum, expected, error, crc32c=crc32c, chunk_bytes=chunk_bytes
        )
    if error is not None:
        raise error
    assert result is not None
    return result


def _expected_checksum(
    algorithm: str, crc32c: str | None, sha256: str | None
) -> tuple[str, str | None]:
    """The algorithm to check and its expected hex value (the other one when only it is
    known; ``None`` when neither is)."""
    known = {"crc32c": crc32c.lower() if crc32c else None, "sha256": sha256 or None}
    if known[algorithm] is not None:
        return algorithm, known[algorithm]
    other = "sha256" if algorithm == "crc32c" else "crc32c"
    return (other, known[other]) if known[other] is not None else (algorithm, None)


def _integrity_error(
    store: ObjectStore,
    key: str,
    size: int,
    checksum: ObjectChecksum,
    expected: str,
    error: SegmentError | None,
    *,
    crc32c: str | None,
    chunk_bytes: int,
) -> ObjectIntegrityError:
    """The error for an object whose checksum differs from the manifest's, with the position
    of the difference when it can be found (error path only: reads the object again)."""
    computed = checksum.hexdigest()
    what = (
        f"{checksum.algorithm} of bytes [0, {size}) is {computed}, the manifest recorded {expected}"
    )
    position: int | None = None
    where = ""
    # Read the object again: every batch CRC checked, the batch positions, the CRC-32C (a
    # second read also tells a damaged stored object from a read that went wrong once).
    again = _reread(store, key, size, chunk_bytes)
    if checksum.algorithm == "crc32c" and again.crc != checksum.crc:
        where = (
            f"; a second read of the object gave CRC-32C {again.crc:08x}: the store returned "
            "different bytes on two reads"
        )
    elif crc32c and again.crc == int(crc32c, 16):
        where = "; a second read matches the manifest: the first read returned wrong bytes"
    if not where:
        where, position, error = _locate(again, error, crc32c, size)
    return ObjectIntegrityError(
        what + where,
        uri=store.uri,
        key=key,
        algorithm=checksum.algorithm,
        expected=expected,
        computed=computed,
        size=size,
        position=position,
        cause=error.to_dict() if error is not None else None,
    )


def _locate(
    again: _Reread, error: SegmentError | None, crc32c: str | None, size: int
) -> tuple[str, int | None, SegmentError | None]:
    """Where two reads agree on bytes that differ from the manifest's: the batch failing its
    own check, else the single uncovered header byte explaining the CRC-32C difference."""
    error = error if error is not None else again.error
    if error is not None:
        return (
            f"; in them the batch at byte {error.position} fails its own check: {error.detail}",
            error.position,
            error,
        )
    if not crc32c:
        return "; the manifest has no CRC-32C to locate the difference with", None, None
    # Every batch passed its CRC and framing, so the difference lies in header bytes no batch
    # CRC covers (a CRC detects every error burst of up to 32 bits in what it covers).
    found = locate_single_byte_error(again.crc ^ int(crc32c, 16), size, again.headers)
    if len(found) != 1:
        return (
            "; no single byte of the batch headers explains the difference: its position is "
            "unknown",
            None,
            None,
        )
    position, xor = found[0]
    batch = max(a for a, _b in again.headers if a <= position)
    return (
        f"; the difference is the byte at {position} (xor 0x{xor:02x}), in the header of the "
        f"batch at byte {batch}, which no batch CRC covers",
        position,
        None,
    )


class _Reread(NamedTuple):
    headers: list[tuple[int, int]]  # byte ranges of batch headers no batch CRC covers
    crc: int  # CRC-32C of the bytes
    error: SegmentError | None  # the first batch that fails its checks


def _reread(store: ObjectStore, key: str, size: int, chunk_bytes: int) -> _Reread:
    """Read the object again (error path): its CRC-32C, the first batch failing its own
    checks, and the byte ranges of its batch headers that no batch CRC covers (found by
    following the size fields)."""
    ranges: list[tuple[int, int]] = []
    crc = 0
    error: SegmentError | None = None
    scan = SegmentExtractor(topic="", size=size, path=f"{store.uri.rstrip('/')}/{key}")
    nxt = 0  # where the next batch starts
    carry = b""  # a header cut by the previous chunk's end
    walking = True
    pos = 0
    while pos < size:
        end = min(size, pos + chunk_bytes)
        chunk = store.get_range(key, pos, end)
        crc = crc32c_update(chunk, crc)
        if error is None:
            try:
                scan.feed(chunk)
                if end == size:
                    scan.finish()
            except SegmentError as exc:
                error = exc
        buf = carry + chunk if carry else chunk
        buf_start = end - len(buf)
        while walking and nxt + MAGIC_OFFSET + 1 <= end:
            i = nxt - buf_start
            length = _OFFSET_SIZE.unpack_from(buf, i)[1]
            magic = buf[i + MAGIC_OFFSET]
            ranges.append((nxt, nxt + (_UNCOVERED_V2 if magic >= 2 else _UNCOVERED_LEGACY)))
            if length < _MIN_SIZE_FIELD:
                walking = False  # framing lost: the headers found so far are the candidates
            nxt += LOG_OVERHEAD + length
        carry = bytes(buf[nxt - buf_start :]) if buf_start <= nxt < end else b""
        del chunk, buf
        pos = end
    return _Reread(ranges, crc, error)
