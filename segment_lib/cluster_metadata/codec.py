"""Decoding metadata record values and KRaft control record values; JSON as Kafka prints it.

A metadata record value (Kafka's ``MetadataRecordSerde``, an ``AbstractApiMessageSerde``) is::

    frame version   unsigned varint   1 (0 was KRaft's 2.8 preview, refused by Kafka too)
    api key         unsigned varint   the record type id (MetadataRecordType)
    version         unsigned varint   the record's version
    message         the record's fields at that version (all flexible: compact lengths,
                    tagged fields), nothing after it

:func:`decode_metadata_record` never raises: a value it cannot decode (unknown frame version,
type id or version, truncated or malformed fields, bytes left over) comes back as an ``UNKNOWN``
:class:`~segment_lib.cluster_metadata.model.MetadataRecord` whose ``error`` names where and the
byte position. A KRaft control record's value (LeaderChange, SnapshotHeader, SnapshotFooter,
KRaftVersion, Voters) has no frame: Kafka's ``ControlRecordUtils`` reads it at version 0, which
:func:`decode_control_value` does too.

:func:`kafka_json` renders decoded data as Jackson's ``JsonNode.toString()`` does (compact,
Java's ``Double.toString`` for float64, ``\\u00XX`` escapes in upper case), so kafka-dump-log's
``payload:`` text can be compared byte for byte.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from segment_lib.cluster_metadata._schema import Message, read_message
from segment_lib.cluster_metadata.model import UNKNOWN_TYPE, MetadataRecord
from segment_lib.cluster_metadata.schemas import CONTROL_MESSAGES, METADATA_MESSAGES
from segment_lib.consumer_offsets._wire import Reader
from segment_lib.errors import CorruptRecordError, SegmentError

__all__ = [
    "RECORD_TYPES",
    "decode_control_value",
    "decode_metadata_record",
    "kafka_json",
]

#: the frame version every Kafka release since 3.0 writes (AbstractApiMessageSerde)
FRAME_VERSION: Final = 1
_SHORT_MAX: Final = 0x7FFF

_BY_KEY: Final[Mapping[int, Message]] = {
    m.api_key: m for m in METADATA_MESSAGES if m.api_key is not None
}
#: metadata record type id -> MetadataRecordType name
RECORD_TYPES: Final[Mapping[int, str]] = {k: m.type_name for k, m in _BY_KEY.items()}


def _unknown(type_id: int, version: int, error: str) -> MetadataRecord:
    return MetadataRecord(UNKNOWN_TYPE, type_id, version, {}, error)


def _describe(exc: SegmentError, where: str, position: int) -> str:
    return str(exc.with_location(where or None, position))


def _short(r: Reader, name: str) -> int:
    """Kafka's ``unsignedIntToShort``: an unsigned varint that must fit an int16."""
    start = r.pos
    value = r.uvarint(name)
    if value > _SHORT_MAX:
        raise r.fail(f"{name} {value} does not fit a short", f"{name} <= 32767", start)
    return value


def decode_metadata_record(
    value: bytes | memoryview,
    *,
    where: str = "",
    position: int = 0,
    include_secrets: bool = False,
) -> MetadataRecord:
    """Decode one ``__cluster_metadata`` record value; never raises.

    Args:
        value: the record's value bytes.
        where: what to name in an error (the file and record offset); ``position`` is added to
            positions inside ``value`` (the value's byte position in that file, when known).
        include_secrets: keep SCRAM ``salt``/``storedKey``/``serverKey`` in ``data`` (only a
            dump that must equal kafka-dump-log needs them; never store them).
    """
    buf = bytes(value)
    r = Reader(buf, "metadata record")
    type_id = version = -1
    try:
        frame = _short(r, "frame version")
        if frame != FRAME_VERSION:
            raise r.fail(
                f"unsupported frame version {frame}"
                + (" (KRaft's 2.8 preview format)" if frame == 0 else ""),
                f"frame version {FRAME_VERSION}",
                0,
            )
        type_id = _short(r, "type")
        version = _short(r, "version")
        msg = _BY_KEY.get(type_id)
        if msg is None:
            raise r.fail(
                f"unknown metadata record type {type_id}",
                f"one of the type ids {min(_BY_KEY)}..{max(_BY_KEY)}",
            )
        if not msg.valid[0] <= version <= msg.valid[1]:
            raise r.fail(
                f"{msg.type_name} version {version} is not known",
                f"version {msg.valid[0]}..{msg.valid[1]}",
            )
        data = read_message(r, msg, version, include_secrets=include_secrets)
        r.done(msg.type_name)
    except CorruptRecordError as exc:
        return _unknown(type_id, version, _describe(exc, where, position))
    return MetadataRecord(msg.type_name, type_id, version, data)


def decode_control_value(
    control_type: str, value: bytes | memoryview | None, *, where: str = "", position: int = 0
) -> dict[str, Any] | None:
    """The fields of a KRaft control record's value (``control_type`` as
    :class:`~segment_lib.control.ControlType` names it), read at version 0 as Kafka does;
    ``None`` for a type without a known layout (COMMIT/ABORT markers, unknown types).

    Raises:
        CorruptRecordError: the value does not fit the layout (``where``, byte position).
    """
    msg = CONTROL_MESSAGES.get(control_type)
    if msg is None:
        return None
    r = Reader(bytes(value or b""), f"{control_type} control record")
    try:
        data = read_message(r, msg, 0)
        r.done(msg.name)
    except CorruptRecordError as exc:
        located = exc.with_location(where or None, position)
        assert isinstance(located, CorruptRecordError)
        raise located from None
    return data


# -- JSON as Jackson prints it ---------------------------------------------------------------

_LOWER_ESCAPE: Final = re.compile(r"\\u00([0-9a-f]{2})")


def java_double(d: float) -> str:
    """Java's ``Double.toString``: plain decimal for 1e-3 <= |d| < 1e7, else ``d.dddE±n``; the
    shortest digits that read back as ``d`` (JDK 19+, and every value the JDK 17 algorithm
    already printed shortest)."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    dec = Decimal(repr(d)).normalize()
    sign, digits, exp = dec.as_tuple()
    assert isinstance(exp, int)
    text = "-" if sign else ""
    if 1e-3 <= abs(d) < 1e7:
        plain = format(abs(dec), "f")
        return text + (plain if "." in plain else plain + ".0")
    ds = "".join(map(str, digits))
    exponent = exp + len(ds) - 1
    return f"{text}{ds[0]}.{ds[1:] or '0'}E{exponent}"


def _render(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return _LOWER_ESCAPE.sub(lambda m: "\\u00" + m.group(1).upper(), text)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_render(str(k))}:{_render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_render(v) for v in value) + "]"
    raise TypeError(f"not JSON data: {type(value).__name__}")


def kafka_json(value: Any) -> str:
    """``value`` (dicts, lists, str, int, float, bool, None) as compact JSON text exactly as
    Jackson's ``JsonNode.toString()`` writes it."""
    return _render(value)
