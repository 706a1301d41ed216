"""The fast path: a whole segment outside ``__consumer_offsets``, no record decoded.

Almost every segment takes it (no pieces, no commit decoding). Every chunk is summarized in C:
``segment_lib._summary.summarize_v2``, called once per window of at most :data:`_WINDOW`
bytes, walks the magic-2 batches on the terms ``iter_batches`` accepts them, checks their CRCs
and folds the headers into the running aggregates (stats, epoch runs, intervals, histogram),
with ``iter_batches`` taking over for anything it does not accept (legacy messages, bad bytes,
the cut batch at a chunk's end); no Python runs per batch. When the object is checked against
its CRC-32C, the same pass continues the object's CRC-32C: each batch's CRC and the object's
register are combined instead of reading the bytes twice (:mod:`segment_lib._summary`).
Without the summary (no C compiler, no hardware CRC-32C, or a last offset beyond 2^63 - 1),
the compiled header scan ``scan_batches_v2`` returns the headers and they are booked as
columns (:meth:`FastPath._book`). Both give exactly the rows the general path
(:mod:`~kafka_archive.catalog.extract.general_path`) gives for a whole segment (tested).
"""

from __future__ import annotations

import bisect
import gc
import itertools
from collections.abc import Sequence
from typing import Any, Final

from kafka_archive.catalog.extract import speedups
from kafka_archive.catalog.extract.framing import OFFSET_SIZE
from kafka_archive.catalog.extract.rows import IntervalRow
from kafka_archive.catalog.extract.state import Checksum, ExtractorState
from kafka_archive.catalog.integrity import ObjectChecksum
from segment_lib.log_file import iter_batches
from segment_lib.record_batch import first_record_timestamp
from segment_lib.records import LOG_OVERHEAD, BatchHeader, Codec

__all__ = ["FastPath"]

#: most bytes walked per compiled call on the fast path. A chunk of the build (8 MiB) is one
#: window (with the header scan, 512 KiB windows checksummed while in L2 measured no faster:
#: 2.26 vs 2.19 raw reads per extraction with crc32c-only, 3.03 vs 3.01 with crc32c); the
#: bound keeps header lists small when a whole segment is fed at once
_WINDOW = 8 << 20
#: stop reasons of the compiled scan meaning "the batch goes on past the window's end"
_CUT_BY_WINDOW = ("torn", "short")

#: codec id -> Codec (the summary reports codecs as a bit mask of ids)
_CODEC_BY_ID = {int(c): c for c in Codec}

#: the attributes the compiled summary's state tuple carries, in its order (``segment_lib.
#: _summary.summarize_v2``); "" is the codec mask, which is per window, not carried
_SUMMARY_STATE: Final = (
    "_first", "_first_ts", "_last", "_batches", "_records", "_txn", "_control", "",
    "_max_ts", "_off_max", "_ep_cur", "_ep_first", "_iv_open", "_iv_so", "_iv_bs", "_iv_mx",
    "_iv_rmx", "_iv_cnt",
)  # fmt: skip


class FastPath(ExtractorState):
    """The whole-segment scan (see the module docstring); mixed into the extractor."""

    def _scan_fast(self, view: memoryview, checksum: Checksum | None) -> int:
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

    def _scan_windows(self, view: memoryview, checksum: Checksum | None) -> int:
        n = len(view)
        batch_crc = self.batch_crc
        compiled = self._summary is not None or speedups.scan_v2 is not None
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
            first_unset = self._first < 0
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
            elif speedups.scan_v2 is not None:
                headers, stop, reason = speedups.scan_v2(view, pos, limit, batch_crc, -1)
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
            if first_unset and self._first >= 0:
                self._first_record_time(view, pos, stop)
            if stop == pos:  # the window holds no whole batch: widen it to the batch's end
                declared = OFFSET_SIZE.unpack_from(view, pos)[1]
                min_end = max(limit + 1, pos + LOG_OVERHEAD + declared)
                continue
            if checksum is not None:
                checksum.update(view[covered:stop])
                self._checked = stop
            pos = stop
        return pos

    def _first_record_time(self, view: memoryview, start: int, end: int) -> None:
        """Correct the first timestamp just booked from the batches of ``view[start:end]``.

        Both bookings (compiled and :meth:`_book`) take the first batch's ``firstTimestamp``
        field, which after a log cleaner's pass may hold its delete horizon (KIP-534) instead of
        the first record's time; :func:`~segment_lib.record_batch.first_record_timestamp`
        decodes that batch's first record then. Once per segment: only right after the window
        in which the first offset was booked."""
        for h in iter_batches(view, start, verify_crc=False, end=end):
            if h.base_offset == self._first:  # the batch the first offset was taken from
                self._first_ts = first_record_timestamp(view, h)
                return

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
        # the header fields as columns (BatchHeader's field order)
        cols = tuple(zip(*hs))  # noqa: B905 - every header has the same 18 fields
        pos, size, magic, base, last, rc = cols[:6]
        codec, fts, mts, epoch, txn, ctl = cols[7], cols[9], cols[10], cols[12], cols[16], cols[17]
        prev_last = self._last
        nctl = ctl.count(True)
        top = self._book_stats(base, last, rc, fts, mts, txn, nctl, codec, magic)
        self._book_epochs(epoch, base, last, prev_last)
        self._book_intervals(pos, size, base, last, rc, mts, prev_last)
        self._book_histogram(mts, rc, size, ctl, nctl, top)

    def _book_stats(
        self,
        base: Sequence[int],
        last: Sequence[int],
        rc: Sequence[int],
        fts: Sequence[int],
        mts: Sequence[int],
        txn: Sequence[bool],
        nctl: int,
        codec: Sequence[Any],
        magic: Sequence[Any],
    ) -> int:
        """The whole-segment stats of the columns; returns their largest max timestamp."""
        n = len(base)
        if self._first < 0:  # as _on_batch: every batch while no base offset >= 0 was seen
            for b0, f0 in zip(base, fts, strict=True):
                self._first, self._first_ts = b0, f0
                if b0 >= 0:
                    break
        self._last = last[-1]
        self._batches += n
        self._records += sum(rc)
        ntxn = txn.count(True)
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
        return top

    def _book_epochs(
        self, epoch: Sequence[int], base: Sequence[int], last: Sequence[int], prev_last: int
    ) -> None:
        """Leader-epoch runs (``prev_last``: the last offset before these batches)."""
        if epoch.count(epoch[0]) == len(epoch):
            if epoch[0] != self._ep_cur:
                self._epoch_change(epoch[0], base[0], prev_last)
        else:
            prev = prev_last
            for e, b, lo in zip(epoch, base, last, strict=True):
                if e != self._ep_cur:
                    self._epoch_change(e, b, prev)
                prev = lo

    def _book_intervals(
        self,
        pos: Sequence[int],
        size: Sequence[int],
        base: Sequence[int],
        last: Sequence[int],
        rc: Sequence[int],
        mts: Sequence[int],
        prev_last: int,
    ) -> None:
        """Time-index intervals: whole batches, at most interval_bytes unless one is bigger."""
        off = self._base
        n = len(pos)
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

    def _book_histogram(
        self,
        mts: Sequence[int],
        rc: Sequence[int],
        size: Sequence[int],
        ctl: Sequence[bool],
        nctl: int,
        top: int,
    ) -> None:
        """Histogram: a batch counts at its max timestamp (control records are no data)."""
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
        if self._ep_cur != speedups.NO_EPOCH:
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
        if self._ep_cur != speedups.NO_EPOCH:
            self._runs.append([self._ep_cur, self._ep_first, self._last])
            self._ep_cur = speedups.NO_EPOCH
        if self._iv_open:
            self._close_iv(self._last, self._base)
