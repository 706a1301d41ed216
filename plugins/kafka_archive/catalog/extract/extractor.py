"""The segment extractor: a segment's bytes, fed in chunks, -> :class:`SegmentExtract`.

:class:`SegmentExtractor` is pure (it is fed chunks of bytes and does no I/O), so the same code
runs in a unit test, in the driver, or on a cluster executor. It streams: a batch cut by the end
of a chunk is completed from the next one, and whatever the checksum it is given has not seen
is fed to it, so every byte reaches it once and in order. Each whole batch is handed to one of
two paths, mixed in: the fast path (:mod:`~kafka_archive.catalog.extract.fast_path`, a whole
segment outside ``__consumer_offsets``: compiled, no record decoded) or the general path
(:mod:`~kafka_archive.catalog.extract.general_path`, per batch: pieces, offset commits). All
paths give the same rows (tested). A segment that ends inside a batch raises
:class:`~segment_lib.errors.TornTailError` (an archived segment is rolled, so it never may).
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_archive.catalog.constants import DEFAULT_HISTOGRAM_MS, DEFAULT_INTERVAL_BYTES
from kafka_archive.catalog.extract.fast_path import FastPath
from kafka_archive.catalog.extract.framing import MIN_SIZE_FIELD, OFFSET_SIZE
from kafka_archive.catalog.extract.general_path import GeneralPath
from kafka_archive.catalog.extract.rows import HistogramRow, SegmentExtract, SegmentStats
from kafka_archive.catalog.extract.state import Checksum
from segment_lib.errors import SegmentError, TornTailError
from segment_lib.log_file import iter_batches
from segment_lib.records import LOG_OVERHEAD

__all__ = ["SegmentExtractor", "extract_segment"]


class SegmentExtractor(FastPath, GeneralPath):
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
            verified against a checksum some other way; see
            :func:`~kafka_archive.catalog.extract.from_store.extract_object`).
    """

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

    def _parse(self, data: bytes | memoryview, *, final: bool, checksum: Checksum | None) -> int:
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
                declared = OFFSET_SIZE.unpack_from(data, pos)[1]
            cannot_complete = (
                final
                or (declared is not None and declared < MIN_SIZE_FIELD)
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
