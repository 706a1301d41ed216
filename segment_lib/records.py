"""The record model shared by every message format (magic 0, 1 and 2).

A *batch* is what the broker appends in one piece and what ``.log`` files are a sequence of:
a magic-2 ``RecordBatch`` or, for magic 0/1, one shallow message (a compressed wrapper holding an
inner message set, or a single uncompressed message). :class:`BatchHeader` describes one batch
without decoding its records; :class:`Record` is one decoded record with the timestamp the broker
would report for it (LogAppendTime already applied).
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from segment_lib.compression import Codec

__all__ = [
    "LOG_OVERHEAD",
    "NO_PRODUCER_ID",
    "NO_TIMESTAMP",
    "BatchHeader",
    "Codec",
    "Header",
    "Record",
    "TimestampType",
]

#: bytes before every batch/message that are not counted in its size field: offset int64, size int32
LOG_OVERHEAD = 12
#: the byte of every format that holds the magic: offset(8) size(4) then crc(4) [v0/v1] or
#: partitionLeaderEpoch(4) [v2]
MAGIC_OFFSET = 16
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1


class TimestampType(IntEnum):
    """How a batch's timestamps were assigned (attribute bit 3; magic 0 has none)."""

    NO_TIMESTAMP = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def label(self) -> str:
        """The name kafka-dump-log.sh prints: ``CreateTime``, ``LogAppendTime``, ``NoTimestamp``."""
        return {-1: "NoTimestamp", 0: "CreateTime", 1: "LogAppendTime"}[self.value]


class Header(NamedTuple):
    """One record header: a UTF-8 name and a nullable byte value."""

    key: str
    value: bytes | None


class Record(NamedTuple):
    """One decoded record, as a consumer of the partition would see it.

    ``timestamp`` is the broker-reported timestamp: under LogAppendTime, the batch's max
    timestamp (magic 2) or the wrapper's timestamp (magic 1); -1 for magic 0.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


class BatchHeader(NamedTuple):
    """Everything known about one batch without decoding its records.

    ``position`` is the byte position of the batch in the buffer/file it was read from and
    ``size`` its total length including the 12-byte offset/size prefix, so the next batch starts
    at ``position + size``. For magic 0/1 ``first_timestamp`` equals ``max_timestamp`` and the
    producer fields are -1.

    A ``NamedTuple`` (immutable, hashable, compared field by field) rather than a frozen
    dataclass so that the compiled scan (``segment_lib._speedups.scan_batches_v2``) can build it
    as a plain tuple: a frozen dataclass's ``__init__`` sets its 18 fields one by one through
    ``object.__setattr__`` (~2 us per batch, see docs/performance.md). Being a tuple, it also
    unpacks and compares equal to a plain tuple of the same values.
    """

    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    record_count: int
    attributes: int
    codec: Codec
    timestamp_type: TimestampType
    first_timestamp: int
    max_timestamp: int
    crc: int
    partition_leader_epoch: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    is_control: bool = False

    @property
    def next_position(self) -> int:
        """Byte position of the batch that follows this one."""
        return self.position + self.size

    @property
    def next_offset(self) -> int:
        """The offset following the last one this batch covers."""
        return self.last_offset + 1
