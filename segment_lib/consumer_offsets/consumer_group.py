"""New-coordinator records (types 3..24) and the KIP-848 consumer-group values.

Keys of every type 3..24 are a group id, plus a member id or a regular expression for some
types. Values of the consumer-group types (3..8, 16) are decoded by a small schema interpreter
against the version 0 (flexible) schemas Kafka 4.0+ writes, into ``dict`` values with Kafka's
lowerCamelCase field names; a value that does not fit (Kafka 3.7/3.8 early access wrote other
layouts under version 0) is kept raw with ``value_error`` set instead of raising. Share- and
streams-group values are kept raw. Encoding a decoded value gives back Kafka's bytes (tagged
fields in ascending order, a tagged field at its default omitted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from segment_lib.consumer_offsets._wire import PRIMITIVE_READ, Reader, Writer, raw_tags
from segment_lib.consumer_offsets.model import (
    GROUP_METADATA_KEY_VERSION,
    RECORD_TYPE_NAMES,
    CoordinatorKey,
    CoordinatorRecord,
    UnknownRecord,
)
from segment_lib.errors import CorruptRecordError

__all__ = [
    "CONSUMER_GROUP_RECORD_TYPES",
    "encode_coordinator_key",
    "encode_coordinator_value",
    "read_coordinator_key",
    "read_coordinator_value",
]

#: Record types whose key is (GroupId, MemberId); the others are (GroupId) except 16.
_MEMBER_KEYED: Final = frozenset({5, 7, 8, 10, 13, 14, 19, 21, 22})
#: ConsumerGroupRegularExpressionKey = (GroupId, RegularExpression).
_REGEX_KEYED: Final = frozenset({16})


@dataclass(frozen=True, slots=True)
class _Field:
    """One field of a flexible-version message schema (Kafka's JSON ``fields`` entry).

    ``kind`` is a primitive (int8, int16, int32, int64, uint16, float64, bool, uuid, string,
    bytes), ``struct``, or ``[]`` + one of those for arrays. ``tag`` marks a tagged field
    (omitted when it holds its default, ``None``).
    """

    name: str
    kind: str
    nullable: bool = False
    tag: int | None = None
    fields: tuple[_Field, ...] = ()


def _f(
    name: str, kind: str, *fields: _Field, nullable: bool = False, tag: int | None = None
) -> _Field:
    return _Field(name, kind, nullable, tag, fields)


_TOPIC_PARTITIONS = (_f("topicId", "uuid"), _f("partitions", "[]int32"))

#: Value schemas (version 0, flexible) as Kafka 4.0+ writes them. Field order matters.
_VALUE_SCHEMAS: Final[Mapping[int, tuple[_Field, ...]]] = {
    3: (_f("epoch", "int32"),),
    4: (
        _f(
            "topics",
            "[]struct",
            _f("topicId", "uuid"),
            _f("topicName", "string"),
            _f("numPartitions", "int32"),
            _f("partitionMetadata", "[]struct", _f("partition", "int32"), _f("racks", "[]string")),
        ),
    ),
    5: (
        _f("instanceId", "string", nullable=True),
        _f("rackId", "string", nullable=True),
        _f("clientId", "string"),
        _f("clientHost", "string"),
        _f("subscribedTopicNames", "[]string"),
        _f("subscribedTopicRegex", "string", nullable=True),
        _f("rebalanceTimeoutMs", "int32"),
        _f("serverAssignor", "string", nullable=True),
        _f(
            "classicMemberMetadata",
            "struct",
            _f("sessionTimeoutMs", "int32"),
            _f("supportedProtocols", "[]struct", _f("name", "string"), _f("metadata", "bytes")),
            nullable=True,
            tag=0,
        ),
    ),
    6: (_f("assignmentEpoch", "int32"),),
    7: (_f("topicPartitions", "[]struct", *_TOPIC_PARTITIONS),),
    8: (
        _f("memberEpoch", "int32"),
        _f("previousMemberEpoch", "int32"),
        _f("state", "int8"),
        _f("assignedPartitions", "[]struct", *_TOPIC_PARTITIONS),
        _f("partitionsPendingRevocation", "[]struct", *_TOPIC_PARTITIONS),
    ),
    16: (
        _f("topics", "[]string"),
        _f("version", "int64"),
        _f("timestamp", "int64"),
    ),
}

#: The KIP-848 consumer-group record types whose values are decoded.
CONSUMER_GROUP_RECORD_TYPES: Final = frozenset(_VALUE_SCHEMAS)

_UNKNOWN_TAGS_KEY: Final = "_unknownTaggedFields"


def _read_one(r: Reader, kind: str, name: str, nullable: bool, f: _Field) -> Any:
    """Read one (untagged) value of ``kind`` in flexible encoding."""
    if kind in PRIMITIVE_READ:
        return getattr(r, PRIMITIVE_READ[kind])(name)
    if kind == "string":
        return r.string(name, nullable=nullable, compact=True)
    if kind == "bytes":
        return r.blob(name, nullable=nullable, compact=True)
    if kind == "struct":
        # KIP-893 nullable struct: an int8 marker, negative = null
        if nullable and r.i8(f"null marker of {name}") < 0:
            return None
        return _read_struct(r, f.fields, name)
    if kind.startswith("[]"):
        n = r.array_len(name, nullable=nullable, compact=True)
        if n < 0:
            return None
        return [_read_one(r, kind[2:], f"{name}[{i}]", False, f) for i in range(n)]
    raise AssertionError(f"unsupported schema kind {kind}")


def _read_struct(r: Reader, fields: tuple[_Field, ...], name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged: dict[int, _Field] = {}
    for f in fields:
        if f.tag is not None:
            tagged[f.tag] = f
            out[f.name] = None  # default of every tagged field here
        else:
            out[f.name] = _read_one(r, f.kind, f"{name}.{f.name}", f.nullable, f)
    found = r.tagged_fields(name)
    for tag, start, size in found:
        tf = tagged.get(tag)
        if tf is None:
            continue
        sub = r.sub(start, size)
        where = f"{name}.{tf.name}"
        if tf.kind == "struct" and tf.nullable:
            # tagged nullable struct: an unsigned varint marker, 0 = null (Kafka's generator)
            present = sub.uvarint(f"null marker of {where}") > 0
            out[tf.name] = _read_struct(sub, tf.fields, where) if present else None
        else:
            out[tf.name] = _read_one(sub, tf.kind, where, tf.nullable, tf)
        sub.done(f"tagged field {where}")
    unknown = raw_tags(r, found, tagged)
    if unknown:
        out[_UNKNOWN_TAGS_KEY] = dict(unknown)
    return out


_PRIMITIVE_WRITE: Final[Mapping[str, str]] = {
    "int8": "i8",
    "int16": "i16",
    "uint16": "u16",
    "int32": "i32",
    "int64": "i64",
    "float64": "f64",
    "bool": "boolean",
    "uuid": "uuid",
}


def _write_one(w: Writer, kind: str, value: Any, name: str, nullable: bool, f: _Field) -> None:
    if kind in _PRIMITIVE_WRITE:
        if value is None:
            raise ValueError(f"{name} is missing")
        getattr(w, _PRIMITIVE_WRITE[kind])(value, name)
    elif kind == "string":
        w.string(value, name, nullable=nullable, compact=True)
    elif kind == "bytes":
        w.blob(value, name, nullable=nullable, compact=True)
    elif kind == "struct":
        if nullable:
            if value is None:
                w.i8(-1, name)
                return
            w.i8(1, name)
        elif value is None:
            raise ValueError(f"{name} is not nullable")
        _write_struct(w, f.fields, value, name)
    elif kind.startswith("[]"):
        if value is None:
            if not nullable:
                raise ValueError(f"{name} is not nullable")
            w.array_len(None, True)
            return
        items = list(value)
        w.array_len(len(items), True)
        for i, item in enumerate(items):
            _write_one(w, kind[2:], item, f"{name}[{i}]", False, f)
    else:
        raise AssertionError(f"unsupported schema kind {kind}")


def _write_struct(
    w: Writer, fields: tuple[_Field, ...], value: Mapping[str, Any], name: str
) -> None:
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a mapping, not {type(value).__name__}")
    allowed = {f.name for f in fields} | {_UNKNOWN_TAGS_KEY}
    extra = set(value) - allowed
    if extra:
        raise ValueError(f"{name} has unknown fields {sorted(extra)}")
    tags: list[tuple[int, bytes]] = []
    for f in fields:
        where = f"{name}.{f.name}"
        if f.tag is not None:
            v = value.get(f.name)
            if v is None:
                continue  # default: not written
            sub = Writer()
            if f.kind == "struct" and f.nullable:
                sub.uvarint(1)
                _write_struct(sub, f.fields, v, where)
            else:
                _write_one(sub, f.kind, v, where, f.nullable, f)
            tags.append((f.tag, sub.getvalue()))
            continue
        if f.name not in value:
            raise ValueError(f"{where} is missing")
        _write_one(w, f.kind, value[f.name], where, f.nullable, f)
    unknown = value.get(_UNKNOWN_TAGS_KEY) or {}
    known_tags = {f.tag for f in fields if f.tag is not None}
    for tag, data in dict(unknown).items():
        if tag in known_tags:
            raise ValueError(f"{name}: unknown tagged field {tag} is a known tag")
        tags.append((int(tag), bytes(data)))
    w.tagged_fields(tags)


def read_coordinator_key(r: Reader, record_type: int) -> CoordinatorKey:
    group = r.text("GroupId")
    member_id = r.text("MemberId") if record_type in _MEMBER_KEYED else None
    regex = r.text("RegularExpression") if record_type in _REGEX_KEYED else None
    r.done(f"{RECORD_TYPE_NAMES[record_type]}Key")
    return CoordinatorKey(record_type, group, member_id, regex)


def encode_coordinator_key(key: CoordinatorKey) -> bytes:
    """Key bytes of a new-coordinator record (types 3..24)."""
    t = key.record_type
    if t not in RECORD_TYPE_NAMES or t <= GROUP_METADATA_KEY_VERSION:
        raise ValueError(f"record type {t} is not a new-coordinator record type (3..24)")
    w = Writer()
    w.i16(t, "record type")
    w.string(key.group, "GroupId")
    if (key.member_id is not None) != (t in _MEMBER_KEYED):
        raise ValueError(f"{key.name}Key {'needs' if t in _MEMBER_KEYED else 'has no'} MemberId")
    if (key.regular_expression is not None) != (t in _REGEX_KEYED):
        raise ValueError(
            f"{key.name}Key {'needs' if t in _REGEX_KEYED else 'has no'} RegularExpression"
        )
    if key.member_id is not None:
        w.string(key.member_id, "MemberId")
    if key.regular_expression is not None:
        w.string(key.regular_expression, "RegularExpression")
    return w.getvalue()


def encode_coordinator_value(
    record_type: int, value: Mapping[str, Any], *, version: int = 0
) -> bytes:
    """Value bytes (version 0) of a KIP-848 consumer-group record (types 3..8, 16) from a
    ``dict`` shaped like :attr:`CoordinatorRecord.value`."""
    schema = _VALUE_SCHEMAS.get(record_type)
    if schema is None:
        raise ValueError(f"no value schema for record type {record_type}")
    if version != 0:
        raise ValueError(f"{RECORD_TYPE_NAMES[record_type]}Value has only version 0")
    w = Writer()
    w.i16(version, "version")
    _write_struct(w, schema, value, f"{RECORD_TYPE_NAMES[record_type]}Value")
    return w.getvalue()


def read_coordinator_value(
    key: CoordinatorKey, key_bytes: bytes, value: bytes
) -> CoordinatorRecord | UnknownRecord:
    r = Reader(value, "value")
    version = r.i16("value version")
    schema = _VALUE_SCHEMAS.get(key.record_type)
    raw = value[r.pos :]
    if schema is None:
        return CoordinatorRecord(key, version, None, raw)
    if version != 0:
        return UnknownRecord(
            key.record_type,
            key_bytes,
            value,
            f"unknown {key.name}Value version {version}",
            key,
        )
    try:
        decoded = _read_struct(r, schema, f"{key.name}Value")
        r.done(f"{key.name}Value")
    except CorruptRecordError as exc:
        # pre-4.0 (early access / preview) brokers wrote other layouts under version 0
        return CoordinatorRecord(key, version, None, raw, str(exc))
    return CoordinatorRecord(key, version, decoded, raw)
