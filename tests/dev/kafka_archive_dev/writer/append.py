"""One append to a partition: the records it takes, what it reports, its max timestamp.

Pure helpers of :class:`~kafka_archive_dev.writer.PartitionWriter`'s appends: :data:`RecordLike`
and :func:`to_write_records` (what ``append`` accepts and how records without a timestamp are
stamped), :class:`AppendResult` (where an append landed) and :func:`chunk_max_timestamp`
(the append's ``(maxTimestamp, shallowOffsetOfMaxTimestamp)`` that feeds the time index).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kafka_archive_dev.writer.encode import EncodedBatch, WriteRecord
from segment_lib.records import NO_TIMESTAMP, Header

__all__ = ["AppendResult", "RecordLike", "chunk_max_timestamp", "to_write_records"]

#: what ``append`` accepts per record: a WriteRecord, ``(key, value)`` or ``(key, value, headers)``
RecordLike = (
    WriteRecord
    | tuple[bytes | None, bytes | None]
    | tuple[bytes | None, bytes | None, Sequence[Header]]
)


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an append landed: offsets, the segment and byte position, the broker's time."""

    first_offset: int
    last_offset: int
    segment_base_offset: int
    position: int
    size: int
    append_time: int
    rolled: bool


def to_write_records(records: Iterable[RecordLike], default_ts: int) -> list[WriteRecord]:
    """The records of one append as :class:`~kafka_archive_dev.writer.encode.WriteRecord`, each
    without a timestamp given ``default_ts``; an empty append raises ``ValueError``."""
    out = []
    for r in records:
        if isinstance(r, WriteRecord):
            wr = r
        elif len(r) == 2:
            wr = WriteRecord(r[0], r[1])
        else:
            wr = WriteRecord(r[0], r[1], tuple(r[2]))  # type: ignore[misc]
        if wr.timestamp is None:
            wr = wr._replace(timestamp=default_ts)
        out.append(wr)
    if not out:
        raise ValueError("append needs at least one record")
    return out


def chunk_max_timestamp(batches: Sequence[EncodedBatch]) -> tuple[int, int]:
    """``(maxTimestamp, shallowOffsetOfMaxTimestamp)`` of an append, as ``UnifiedLog`` computes it:
    the largest batch max timestamp and the last offset of the *earliest* batch holding it
    (``(-1, -1)`` when no batch has a timestamp, e.g. magic 0).

    For the leader this equals what ``LogValidator`` reports in every case the writer produces
    (one magic 2 batch: its last offset; magic 1 single messages: the first message with the
    largest timestamp, the base offset under LogAppendTime; magic 0: -1).
    """
    max_ts = NO_TIMESTAMP
    shallow = -1
    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts = b.max_timestamp
            shallow = b.last_offset
    return max_ts, shallow
