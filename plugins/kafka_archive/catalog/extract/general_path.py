"""The general path: per batch, for pieces and for ``__consumer_offsets``.

Taken when only part of a segment belongs to the canonical chain (``pieces``) or when records
must be decoded (offset commits and transaction markers of ``__consumer_offsets``). Batches
come one at a time from ``iter_batches``; a batch straddling a piece boundary is decoded and
only its records inside the piece count. This is the reference the fast path
(:mod:`~kafka_archive.catalog.extract.fast_path`) is tested against.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from kafka_archive.catalog.extract.rows import CommitRow, IntervalRow, MarkerRow
from kafka_archive.catalog.extract.state import ExtractorState, OpenInterval
from segment_lib.consumer_offsets import (
    OffsetCommit,
    OffsetCommitKey,
    Tombstone,
    decode_offsets_record,
)
from segment_lib.control import ControlType, decode_control_record
from segment_lib.errors import CorruptRecordError
from segment_lib.log_file import decode_batch
from segment_lib.record_batch import first_record_timestamp
from segment_lib.records import BatchHeader, Record

__all__ = ["GeneralPath"]


class _Part(NamedTuple):
    """The part of one batch that falls in one piece."""

    piece: int
    lo: int
    hi: int
    whole: bool


class GeneralPath(ExtractorState):
    """The per-batch path (see the module docstring); mixed into the extractor."""

    def _on_batch(self, data: bytes | memoryview, b: BatchHeader) -> None:
        # whole-segment stats
        if self._first < 0:
            # the first record's time, not a cleaner's delete horizon (KIP-534)
            self._first, self._first_ts = b.base_offset, first_record_timestamp(data, b)
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
            self._open = OpenInterval(
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
