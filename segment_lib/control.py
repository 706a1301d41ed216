"""Control records: the transaction markers and KRaft records of control batches (attribute bit 5).

Key: ``version int16, type int16``. For COMMIT/ABORT markers the value is
``version int16, coordinatorEpoch int32``. Newer brokers write further control types
(leader change, snapshot header/footer, KRaft version/voters); those are reported by type name,
their payloads left undecoded.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from segment_lib.errors import CorruptRecordError

__all__ = ["ControlRecord", "ControlType", "decode_control_record", "encode_control_record"]

_KEY = struct.Struct(">hh")  # version, type
_MARKER_VALUE = struct.Struct(">hi")  # version, coordinatorEpoch


class ControlType(IntEnum):
    """Control record types Kafka defines (``ControlRecordType``)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A decoded control record; ``coordinator_epoch`` is set for COMMIT/ABORT markers."""

    type: ControlType
    raw_type: int
    version: int
    coordinator_epoch: int | None = None

    @property
    def is_transaction_marker(self) -> bool:
        return self.type in (ControlType.ABORT, ControlType.COMMIT)


def decode_control_record(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Decode a control record's key (and marker value). Unknown types are not errors."""
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(
            "control record key is missing or shorter than 4 bytes",
            position=0,
            expected="key version int16, type int16",
        )
    version, raw_type = _KEY.unpack_from(key, 0)
    try:
        ctype = ControlType(raw_type)
    except ValueError:
        ctype = ControlType.UNKNOWN
    epoch = None
    if ctype in (ControlType.ABORT, ControlType.COMMIT):
        if value is None or len(value) < _MARKER_VALUE.size:
            raise CorruptRecordError(
                f"{ctype.name} marker value is missing or shorter than 6 bytes",
                position=0,
                expected="value version int16, coordinatorEpoch int32",
            )
        _v, epoch = _MARKER_VALUE.unpack_from(value, 0)
    return ControlRecord(ctype, raw_type, version, epoch)


def encode_control_record(ctype: ControlType, coordinator_epoch: int = 0) -> tuple[bytes, bytes]:
    """Key and value bytes of a COMMIT or ABORT marker (version 0), as the coordinator writes."""
    return _KEY.pack(0, int(ctype)), _MARKER_VALUE.pack(0, coordinator_epoch)
