"""Kafka's producer-state snapshot files (``<20-digit offset>.snapshot``).

``ProducerStateManager`` periodically (and at every segment roll / clean shutdown) writes the
state of every producer it knows, so that idempotence and transactions survive a restart without
re-reading the whole log. The number in the file name is the snapshot's end offset (exclusive):
the state after all records below it.

Format (``ProducerSnapshot.json``, formerly the Scala ``PidSnapshotMapSchema``; only version 1
has ever existed), all big-endian::

    version:int16 (1) | crc:uint32 | count:int32 | count x 46-byte entries

with each entry ``producerId:int64, epoch:int16, lastSequence:int32, lastOffset:int64,
offsetDelta:int32, timestamp:int64, coordinatorEpoch:int32, currentTxnFirstOffset:int64``.
``crc`` is the CRC-32C of every byte after it (from the count to the end of the file).

Checks, in Kafka's order (structure first, then CRC), each raising
:class:`~segment_lib.errors.InvalidCheckpointError` with the byte position of the problem:
the file holds the 10-byte header, the version is 1, the count is non-negative and matches the
bytes that follow exactly (Kafka ignores trailing bytes but its CRC covers them; a writer never
produces any), and the CRC matches.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import astuple, dataclass
from typing import Final

from segment_lib._crc import crc32c
from segment_lib.errors import InvalidCheckpointError, SegmentError

__all__ = [
    "ENTRY",
    "HEADER",
    "SNAPSHOT_VERSION",
    "ProducerSnapshot",
    "ProducerSnapshotEntry",
    "format_producer_snapshot",
    "parse_producer_snapshot",
    "read_producer_snapshot",
]

HEADER: Final = struct.Struct(
    ">"
    "h"  # version: 1
    "I"  # crc: CRC-32C of all bytes after this field
    "i"  # count: number of producer entries that follow
)
ENTRY: Final = struct.Struct(
    ">"
    "q"  # producerId
    "h"  # epoch
    "i"  # lastSequence: last written sequence
    "q"  # lastOffset: last written offset (-1 when the producer has no batch metadata)
    "i"  # offsetDelta: lastSequence - firstSequence of the last batch
    "q"  # timestamp: max timestamp of the last written batch
    "i"  # coordinatorEpoch: epoch of the last transaction coordinator's marker
    "q"  # currentTxnFirstOffset: first offset of the ongoing transaction, -1 if none
)
SNAPSHOT_VERSION: Final = 1
_CRC_POSITION: Final = struct.calcsize(">h")  # the crc follows the version
_CRC_START: Final = _CRC_POSITION + struct.calcsize(">I")  # the CRC covers from the count on
_COUNT_POSITION: Final = _CRC_START


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """State of one producer (fields in file order)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1: no ongoing transaction

    @property
    def has_ongoing_txn(self) -> bool:
        return self.current_txn_first_offset >= 0


@dataclass(frozen=True, slots=True)
class ProducerSnapshot:
    """A parsed snapshot: its version, stored CRC and producer entries in file order."""

    version: int
    crc: int
    entries: tuple[ProducerSnapshotEntry, ...]

    def __len__(self) -> int:
        return len(self.entries)


def parse_producer_snapshot(data: bytes | bytearray | memoryview) -> ProducerSnapshot:
    """Parse a ``.snapshot`` file's bytes; error positions are relative to ``data``."""
    view = memoryview(data)
    size = len(view)
    if size < HEADER.size:
        raise InvalidCheckpointError(
            f"producer snapshot is {size} bytes, shorter than its {HEADER.size}-byte header",
            position=size,
            expected="version, crc and entry count",
        )
    version, stored_crc, count = HEADER.unpack_from(view)
    if version != SNAPSHOT_VERSION:
        raise InvalidCheckpointError(
            f"unknown producer snapshot version {version}",
            position=0,
            expected=f"version {SNAPSHOT_VERSION}",
        )
    if count < 0:
        raise InvalidCheckpointError(
            f"producer entry count is {count}",
            position=_COUNT_POSITION,
            expected="a non-negative count",
        )
    body = size - HEADER.size
    have = body // ENTRY.size
    if have < count:
        raise InvalidCheckpointError(
            f"snapshot declares {count} producer entries but ends inside entry {have}",
            position=HEADER.size + have * ENTRY.size,
            expected=f"{count} entries of {ENTRY.size} bytes",
        )
    end = HEADER.size + count * ENTRY.size
    if end != size:
        raise InvalidCheckpointError(
            f"{size - end} unexpected bytes after the {count} declared producer entries",
            position=end,
            expected="end of file",
        )
    computed = crc32c(view[_CRC_START:])
    if computed != stored_crc:
        raise InvalidCheckpointError(
            f"producer snapshot CRC-32C mismatch: stored {stored_crc:#010x}, "
            f"computed {computed:#010x}",
            position=_CRC_POSITION,
            expected="CRC-32C of the bytes after the crc field",
        )
    entries = tuple(
        ProducerSnapshotEntry(*fields) for fields in ENTRY.iter_unpack(view[HEADER.size : end])
    )
    return ProducerSnapshot(version, stored_crc, entries)


def read_producer_snapshot(path: str | os.PathLike[str]) -> ProducerSnapshot:
    """Read and parse a ``.snapshot`` file, errors naming ``path``."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return parse_producer_snapshot(data)
    except SegmentError as exc:
        raise exc.with_location(path) from None


def format_producer_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    """Bytes of a version-1 snapshot holding ``entries``, with its CRC-32C filled in."""
    items = list(entries)
    out = bytearray(HEADER.pack(SNAPSHOT_VERSION, 0, len(items)))
    for entry in items:
        out += ENTRY.pack(*astuple(entry))
    struct.pack_into(">I", out, _CRC_POSITION, crc32c(out[_CRC_START:]))
    return bytes(out)
