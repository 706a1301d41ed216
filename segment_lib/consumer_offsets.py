"""Keys and values of Kafka's internal ``__consumer_offsets`` topic: decode and encode.

Every record of ``__consumer_offsets`` has a key that starts with an ``int16`` *record type*
(the old coordinator called it the key "version"), and a value that starts with an ``int16``
value version; a ``null`` value is a tombstone. Sources of truth: the group coordinator's
message schemas in Kafka (``group-coordinator/src/main/resources/common/message/*.json``),
``GroupCoordinatorRecordSerde``/``CoordinatorRecordSerde`` and, for brokers before 3.x,
``kafka.coordinator.group.GroupMetadataManager`` (0.8.2's ``OffsetManager``).

Record types::

    0, 1  OffsetCommitKey     group string, topic string, partition int32
          OffsetCommitValue   v0: offset int64, metadata string, commitTimestamp int64
                              v1: offset, metadata, commitTimestamp, expireTimestamp int64
                              v2: offset, metadata, commitTimestamp
                              v3: offset, leaderEpoch int32, metadata, commitTimestamp
                              v4: as v3, flexible (compact string + tagged fields;
                                  tag 0 = topicId uuid, Kafka 4.1+)
    2     GroupMetadataKey    group string
          GroupMetadataValue  v0..v4 (see :func:`encode_group_metadata_value`), v4 flexible
    3..8, 16   KIP-848 consumer-group records (ConsumerGroupMetadata, ...PartitionMetadata,
               ...MemberMetadata, ...TargetAssignmentMetadata, ...TargetAssignmentMember,
               ...CurrentMemberAssignment, ...RegularExpression): key = group id [+ member id
               or regular expression], value = flexible version 0.
    9..15      KIP-932 share-group records; 17..24 KIP-1071 streams-group records.
    anything else: unknown.

Contract of :func:`decode_offsets_record` (a pure function of two buffers):

* record types 0, 1 and 2 decode to :class:`OffsetCommit` and :class:`GroupMetadata`;
  types 3..24 to :class:`CoordinatorRecord` (key always decoded; the value decoded into a
  ``dict`` for the consumer-group types 3..8 and 16, see below); a ``None`` value to a
  :class:`Tombstone` carrying the decoded key;
* an unknown record type (also a negative one), or an unknown *value* version of a known type,
  is not an error: it yields :class:`UnknownRecord` with the raw bytes (as Kafka's loaders skip
  unknown keys);
* malformed bytes (truncated fields, negative or oversized lengths, a null in a non-nullable
  field, invalid UTF-8, over-long varints, a tagged field whose size disagrees with its
  type, trailing bytes after the last field) raise
  :class:`~segment_lib.errors.CorruptRecordError` whose ``position`` is the byte offset
  inside the key or value buffer (the detail says which) and whose ``path`` is ``None``;
* the key must not be ``None``: every record the coordinators write has one. Control
  records (transaction markers) also live in this topic; callers skip control batches.

KIP-848 values are decoded against the schemas Kafka 4.0+ writes. Kafka 3.7/3.8 brokers (early
access / preview) wrote different layouts under the same version 0, so a consumer-group value
that does not fit is returned undecoded (``value=None``) with ``value_error`` saying why,
instead of raising. Share- and streams-group values (schemas still changing incompatibly
across releases) are kept raw. Field names of decoded KIP-848 values are Kafka's JSON names
in lowerCamelCase (as ``kafka-dump-log.sh --offsets-decoder`` prints them).

Encoders produce the exact bytes Kafka writes for the version asked for (fields a version
cannot carry are an error rather than silently dropped), so ``encode_record(decode(k, v))``
reproduces broker-written bytes: tagged fields are written in ascending tag order and a
tagged field holding its default value (e.g. the all-zero topic id) is omitted, as Kafka does.

:func:`partition_for_group` is the partition a group's records go to:
``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` with Java's UTF-16
``String.hashCode`` and Kafka's ``Utils.abs`` (``Integer.MIN_VALUE`` maps to 0).
"""

from __future__ import annotations

import struct
import sys
import uuid
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final, TypeAlias

from segment_lib.errors import CorruptRecordError

__all__ = [
    "CONSUMER_GROUP_RECORD_TYPES",
    "DEFAULT_NUM_PARTITIONS",
    "RECORD_TYPE_NAMES",
    "CoordinatorKey",
    "CoordinatorRecord",
    "GroupMember",
    "GroupMetadata",
    "GroupMetadataKey",
    "OffsetCommit",
    "OffsetCommitKey",
    "OffsetsKey",
    "OffsetsRecord",
    "Tombstone",
    "UnknownRecord",
    "decode_offsets_record",
    "encode_coordinator_key",
    "encode_coordinator_value",
    "encode_group_metadata",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_key",
    "encode_offset_commit",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "encode_record",
    "java_string_hashcode",
    "partition_for_group",
]

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

#: Kafka's default ``offsets.topic.num.partitions``.
DEFAULT_NUM_PARTITIONS: Final = 50

#: Record type (key version) -> Kafka's record name (the key/value schema names minus Key/Value).
RECORD_TYPE_NAMES: Final[Mapping[int, str]] = {
    0: "OffsetCommit",  # written by 0.8.2 (LegacyOffsetCommitKey in Kafka 4.x)
    1: "OffsetCommit",
    2: "GroupMetadata",
    3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata",  # deprecated in 4.1 (replaced by a metadata hash)
    5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
    9: "ShareGroupPartitionMetadata",  # removed in 4.1; the number stays unused
    10: "ShareGroupMemberMetadata",
    11: "ShareGroupMetadata",
    12: "ShareGroupTargetAssignmentMetadata",
    13: "ShareGroupTargetAssignmentMember",
    14: "ShareGroupCurrentMemberAssignment",
    15: "ShareGroupStatePartitionMetadata",
    16: "ConsumerGroupRegularExpression",
    17: "StreamsGroupMetadata",
    18: "StreamsGroupPartitionMetadata",
    19: "StreamsGroupMemberMetadata",
    20: "StreamsGroupTargetAssignmentMetadata",
    21: "StreamsGroupTargetAssignmentMember",
    22: "StreamsGroupCurrentMemberAssignment",
    23: "StreamsGroupTopology",
    24: "StreamsGroupTargetAssignmentResolvedTopicIds",
}

#: Record types whose key is (GroupId, MemberId); the others are (GroupId) except 16.
_MEMBER_KEYED: Final = frozenset({5, 7, 8, 10, 13, 14, 19, 21, 22})
#: ConsumerGroupRegularExpressionKey = (GroupId, RegularExpression).
_REGEX_KEYED: Final = frozenset({16})

_OFFSET_COMMIT_KEY_VERSIONS: Final = (0, 1)
_GROUP_METADATA_KEY_VERSION: Final = 2
_OFFSET_COMMIT_VALUE_VERSIONS: Final = range(0, 5)
_GROUP_METADATA_VALUE_VERSIONS: Final = range(0, 5)
#: first flexible (KIP-482 compact/tagged) version of OffsetCommitValue and GroupMetadataValue
_FIRST_FLEXIBLE: Final = 4
#: OffsetCommitValue v4 tagged field: topicId (KAFKA-19141, Kafka 4.1)
_TAG_TOPIC_ID: Final = 0

_MAX_STRING_BYTES: Final = 0x7FFF  # Kafka refuses longer strings (int16 length, also compact)
_ZERO_UUID: Final = uuid.UUID(int=0)

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

_RawTags: TypeAlias = tuple[tuple[int, bytes], ...]


# --------------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Key of an offset commit (record type 0 or 1; both have the same layout)."""

    group: str
    topic: str
    partition: int
    version: int = 1

    @property
    def record_type(self) -> int:
        return self.version


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """Key of a classic group's metadata (record type 2)."""

    group: str
    version: int = _GROUP_METADATA_KEY_VERSION

    @property
    def record_type(self) -> int:
        return self.version


@dataclass(frozen=True, slots=True)
class CoordinatorKey:
    """Key of a new-coordinator record (types 3..24): a group id, plus a member id or a
    regular expression for some types."""

    record_type: int
    group: str
    member_id: str | None = None
    regular_expression: str | None = None

    @property
    def name(self) -> str:
        return RECORD_TYPE_NAMES.get(self.record_type, f"Unknown{self.record_type}")


OffsetsKey: TypeAlias = OffsetCommitKey | GroupMetadataKey | CoordinatorKey


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """A committed offset: the key's group/topic/partition and the value's fields.

    Fields absent from the value's version hold Kafka's defaults: ``leader_epoch`` -1 (before
    v3), ``expire_timestamp`` -1 (every version but v1), ``topic_id`` ``None`` (before v4, or
    not written). ``unknown_tags`` keeps v4 tagged fields this library does not know, as
    ``(tag, raw bytes)`` pairs in file order.
    """

    group: str
    topic: str
    partition: int
    offset: int
    commit_timestamp: int
    metadata: str = ""
    leader_epoch: int = -1
    expire_timestamp: int = -1
    topic_id: uuid.UUID | None = None
    key_version: int = 1
    value_version: int = 3
    unknown_tags: _RawTags = ()

    @property
    def key(self) -> OffsetCommitKey:
        return OffsetCommitKey(self.group, self.topic, self.partition, self.key_version)


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member of a classic group, as stored in GroupMetadataValue.

    ``rebalance_timeout`` is -1 in v0 (Kafka's loader then uses the session timeout);
    ``group_instance_id`` is ``None`` before v3. ``subscription``/``assignment`` are the raw
    protocol bytes (for ``protocol_type == "consumer"``, ConsumerProtocol structures).
    """

    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    rebalance_timeout: int = -1
    group_instance_id: str | None = None
    unknown_tags: _RawTags = ()


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """A classic group's state (record type 2). ``current_state_timestamp`` is -1 before v2."""

    group: str
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[GroupMember, ...] = ()
    current_state_timestamp: int = -1
    key_version: int = _GROUP_METADATA_KEY_VERSION
    value_version: int = 3
    unknown_tags: _RawTags = ()

    @property
    def key(self) -> GroupMetadataKey:
        return GroupMetadataKey(self.group, self.key_version)


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """A new-coordinator record (types 3..24) with a value.

    ``value`` is the decoded value (Kafka's field names in lowerCamelCase; unknown tagged
    fields under ``"_unknownTaggedFields"`` as ``{tag: bytes}``) or ``None`` when it was not
    decoded: share/streams types are kept raw, and a consumer-group value that does not fit
    the Kafka 4.0+ schema (e.g. written by a 3.7 early-access broker) has ``value_error`` set.
    ``raw_value`` always holds the value bytes after the version.
    """

    key: CoordinatorKey
    value_version: int
    value: dict[str, Any] | None
    raw_value: bytes
    value_error: str | None = None

    @property
    def group(self) -> str:
        return self.key.group

    @property
    def name(self) -> str:
        return self.key.name


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A record with a null value: deletes whatever the key names."""

    key: OffsetsKey

    @property
    def group(self) -> str:
        return self.key.group


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    """A record this library cannot interpret: an unknown record type (``decoded_key`` is
    ``None``) or an unknown value version of a known type (``decoded_key`` set)."""

    key_version: int
    key: bytes
    value: bytes | None
    reason: str = "unknown record type"
    decoded_key: OffsetsKey | None = None


OffsetsRecord: TypeAlias = (
    OffsetCommit | GroupMetadata | CoordinatorRecord | Tombstone | UnknownRecord
)


# --------------------------------------------------------------------------------------------
# Reading primitives (Kafka protocol types, classic and flexible)
# --------------------------------------------------------------------------------------------


class _Reader:
    """Cursor over one key or value buffer; every error names ``what`` and the position."""

    __slots__ = ("_buf", "_end", "_what", "pos")

    def __init__(self, buf: bytes, what: str, start: int = 0, end: int | None = None) -> None:
        self._buf = buf
        self._what = what
        self.pos = start
        self._end = len(buf) if end is None else end

    def fail(self, detail: str, expected: str, position: int | None = None) -> CorruptRecordError:
        return CorruptRecordError(
            f"{self._what}: {detail}",
            position=self.pos if position is None else position,
            expected=expected,
        )

    @property
    def remaining(self) -> int:
        return self._end - self.pos

    def _take(self, n: int, name: str, kind: str) -> int:
        start = self.pos
        if n > self._end - start:
            raise self.fail(
                f"{name} truncated: needs {n} bytes, {self._end - start} left",
                f"{n} bytes of {kind} {name}",
            )
        self.pos = start + n
        return start

    def i8(self, name: str) -> int:
        return int(_I8.unpack_from(self._buf, self._take(1, name, "int8"))[0])

    def i16(self, name: str) -> int:
        return int(_I16.unpack_from(self._buf, self._take(2, name, "int16"))[0])

    def u16(self, name: str) -> int:
        return int(_U16.unpack_from(self._buf, self._take(2, name, "uint16"))[0])

    def i32(self, name: str) -> int:
        return int(_I32.unpack_from(self._buf, self._take(4, name, "int32"))[0])

    def i64(self, name: str) -> int:
        return int(_I64.unpack_from(self._buf, self._take(8, name, "int64"))[0])

    def f64(self, name: str) -> float:
        return float(_F64.unpack_from(self._buf, self._take(8, name, "float64"))[0])

    def boolean(self, name: str) -> bool:
        return self._buf[self._take(1, name, "bool")] != 0

    def uuid(self, name: str) -> uuid.UUID:
        start = self._take(16, name, "uuid")
        return uuid.UUID(bytes=self._buf[start : start + 16])

    def raw(self, n: int, name: str) -> bytes:
        start = self._take(n, name, "bytes")
        return self._buf[start : start + n]

    def uvarint(self, name: str) -> int:
        """Unsigned varint of at most 5 bytes holding a value below 2**32 (Kafka's
        ``readUnsignedVarint`` rejects a 5th byte with the continuation bit)."""
        start = self.pos
        value = 0
        shift = 0
        while True:
            if self.pos >= self._end:
                raise self.fail(
                    f"{name} truncated inside an unsigned varint",
                    f"unsigned varint {name}",
                    start,
                )
            b = self._buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 28:
                raise self.fail(
                    f"unsigned varint {name} is longer than 5 bytes",
                    f"unsigned varint {name} of at most 5 bytes",
                    start,
                )
        if value > 0xFFFFFFFF:
            raise self.fail(
                f"unsigned varint {name} exceeds 32 bits",
                f"unsigned varint {name} below 2**32",
                start,
            )
        return value

    def _length(self, name: str, kind: str, nullable: bool, compact: bool, wide: bool) -> int:
        """A length prefix: int16 (strings) / int32 (bytes, arrays), or compact uvarint N+1.
        Returns -1 for null (only when nullable)."""
        start = self.pos
        if compact:
            n = self.uvarint(f"length of {name}") - 1
            form = "compact length (N+1, 0 = null)"
        elif wide:
            n = self.i32(f"length of {name}")
            form = "int32 length (-1 = null)"
        else:
            n = self.i16(f"length of {name}")
            form = "int16 length (-1 = null)"
        if n == -1:
            if not nullable:
                raise self.fail(
                    f"non-nullable {kind} {name} is null",
                    f"{form} >= 0 of {kind} {name}",
                    start,
                )
            return -1
        if n < -1:
            raise self.fail(f"{kind} {name} has negative length {n}", f"{form}", start)
        return n

    def string(self, name: str, *, nullable: bool = False, compact: bool = False) -> str | None:
        start = self.pos
        n = self._length(name, "string", nullable, compact, wide=False)
        if n < 0:
            return None
        if n > _MAX_STRING_BYTES:
            raise self.fail(
                f"string {name} has length {n} > {_MAX_STRING_BYTES}",
                f"string length <= {_MAX_STRING_BYTES}",
                start,
            )
        data_start = self._take(n, name, "string")
        try:
            return self._buf[data_start : data_start + n].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(
                f"string {name} is not valid UTF-8 ({exc.reason})",
                f"UTF-8 text of string {name}",
                data_start + exc.start,
            ) from None

    def text(self, name: str, *, compact: bool = False) -> str:
        """A non-nullable string."""
        value = self.string(name, nullable=False, compact=compact)
        assert value is not None  # non-nullable strings never come back None
        return value

    def blob(self, name: str, *, nullable: bool = False, compact: bool = False) -> bytes | None:
        n = self._length(name, "bytes", nullable, compact, wide=True)
        if n < 0:
            return None
        start = self._take(n, name, "bytes")
        return self._buf[start : start + n]

    def array_len(self, name: str, *, nullable: bool = False, compact: bool = False) -> int:
        """Element count of an array; -1 for null. Like Kafka, a count larger than the bytes
        left is refused before anything is allocated."""
        start = self.pos
        n = self._length(name, "array", nullable, compact, wide=True)
        if n > self.remaining:
            raise self.fail(
                f"array {name} claims {n} elements but only {self.remaining} bytes are left",
                f"element count of array {name} <= bytes left",
                start,
            )
        return n

    def tagged_fields(self, name: str) -> list[tuple[int, int, int]]:
        """The tagged-fields section: ``(tag, start, size)`` per field, the data skipped."""
        count = self.uvarint(f"tagged field count of {name}")
        out: list[tuple[int, int, int]] = []
        for _ in range(count):
            tag = self.uvarint(f"tag in {name}")
            size = self.uvarint(f"size of tag {tag} in {name}")
            start = self._take(size, f"tag {tag} of {name}", "tagged field")
            out.append((tag, start, size))
        return out

    def sub(self, start: int, size: int) -> _Reader:
        """A reader over ``size`` bytes at ``start`` (positions stay buffer positions)."""
        return _Reader(self._buf, self._what, start, start + size)

    def done(self, name: str) -> None:
        if self.pos != self._end:
            raise self.fail(
                f"{self._end - self.pos} unexpected bytes after the last field of {name}",
                f"end of {name}",
            )


def _raw_tags(r: _Reader, found: list[tuple[int, int, int]], known: Iterable[int] = ()) -> _RawTags:
    skip = set(known)
    return tuple(
        (tag, r.sub(start, size).raw(size, f"tag {tag}"))
        for tag, start, size in found
        if tag not in skip
    )


# --------------------------------------------------------------------------------------------
# Writing primitives
# --------------------------------------------------------------------------------------------


class _Writer:
    """Accumulates Kafka protocol types; bad values raise ``ValueError`` naming the field."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def _pack(self, st: struct.Struct, value: Any, name: str) -> None:
        try:
            self.buf += st.pack(value)
        except struct.error as exc:
            raise ValueError(f"{name}={value!r} does not fit its type: {exc}") from None

    def i8(self, v: int, name: str) -> None:
        self._pack(_I8, v, name)

    def i16(self, v: int, name: str) -> None:
        self._pack(_I16, v, name)

    def u16(self, v: int, name: str) -> None:
        self._pack(_U16, v, name)

    def i32(self, v: int, name: str) -> None:
        self._pack(_I32, v, name)

    def i64(self, v: int, name: str) -> None:
        self._pack(_I64, v, name)

    def f64(self, v: float, name: str) -> None:
        self._pack(_F64, v, name)

    def boolean(self, v: bool, name: str) -> None:
        self.buf.append(1 if v else 0)

    def uuid(self, v: uuid.UUID, name: str) -> None:
        if not isinstance(v, uuid.UUID):
            raise ValueError(f"{name} must be a uuid.UUID, not {type(v).__name__}")
        self.buf += v.bytes

    def uvarint(self, v: int) -> None:
        if not 0 <= v <= 0xFFFFFFFF:
            raise ValueError(f"unsigned varint out of range: {v}")
        while v >= 0x80:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)

    def _length(self, n: int, compact: bool, wide: bool) -> None:
        if compact:
            self.uvarint(n + 1)
        elif wide:
            self.buf += _I32.pack(n)
        else:
            self.buf += _I16.pack(n)

    def string(
        self, v: str | None, name: str, *, nullable: bool = False, compact: bool = False
    ) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"{name} is not nullable")
            self._length(-1, compact, wide=False)
            return
        if not isinstance(v, str):
            raise ValueError(f"{name} must be a str, not {type(v).__name__}")
        data = v.encode("utf-8")
        if len(data) > _MAX_STRING_BYTES:
            raise ValueError(f"{name} is {len(data)} bytes of UTF-8; Kafka allows at most 32767")
        self._length(len(data), compact, wide=False)
        self.buf += data

    def blob(
        self, v: bytes | None, name: str, *, nullable: bool = False, compact: bool = False
    ) -> None:
        if v is None:
            if not nullable:
                raise ValueError(f"{name} is not nullable")
            self._length(-1, compact, wide=True)
            return
        if not isinstance(v, bytes | bytearray | memoryview):
            raise ValueError(f"{name} must be bytes, not {type(v).__name__}")
        self._length(len(v), compact, wide=True)
        self.buf += v

    def array_len(self, n: int | None, compact: bool) -> None:
        self._length(-1 if n is None else n, compact, wide=True)

    def tagged_fields(self, fields: Iterable[tuple[int, bytes]]) -> None:
        """Write a tagged-fields section in ascending tag order (as Kafka does)."""
        ordered = sorted(fields, key=lambda tf: tf[0])
        for (a, _), (b, _) in pairwise(ordered):
            if a == b:
                raise ValueError(f"tagged field {a} given twice")
        self.uvarint(len(ordered))
        for tag, data in ordered:
            self.uvarint(tag)
            self.uvarint(len(data))
            self.buf += data

    def getvalue(self) -> bytes:
        return bytes(self.buf)


def _check_raw_tags(tags: _RawTags, flexible: bool, name: str) -> None:
    if tags and not flexible:
        raise ValueError(f"{name}: tagged fields need a flexible version")


# --------------------------------------------------------------------------------------------
# OffsetCommit (record types 0 and 1)
# --------------------------------------------------------------------------------------------


def _read_offset_commit_key(r: _Reader, version: int) -> OffsetCommitKey:
    group = r.text("group")
    topic = r.text("topic")
    partition = r.i32("partition")
    r.done("OffsetCommitKey")
    return OffsetCommitKey(group, topic, partition, version)


def _read_offset_commit_value(r: _Reader, key: OffsetCommitKey, version: int) -> OffsetCommit:
    flexible = version >= _FIRST_FLEXIBLE
    offset = r.i64("offset")
    leader_epoch = r.i32("leaderEpoch") if version >= 3 else -1
    metadata = r.text("metadata", compact=flexible)
    commit_ts = r.i64("commitTimestamp")
    expire_ts = r.i64("expireTimestamp") if version == 1 else -1
    topic_id: uuid.UUID | None = None
    unknown: _RawTags = ()
    if flexible:
        found = r.tagged_fields("OffsetCommitValue")
        for tag, start, size in found:
            if tag == _TAG_TOPIC_ID:
                sub = r.sub(start, size)
                topic_id = sub.uuid("topicId")
                sub.done("tagged field topicId")
        unknown = _raw_tags(r, found, (_TAG_TOPIC_ID,))
    r.done("OffsetCommitValue")
    return OffsetCommit(
        group=key.group,
        topic=key.topic,
        partition=key.partition,
        offset=offset,
        commit_timestamp=commit_ts,
        metadata=metadata,
        leader_epoch=leader_epoch,
        expire_timestamp=expire_ts,
        topic_id=topic_id,
        key_version=key.version,
        value_version=version,
        unknown_tags=unknown,
    )


def encode_offset_commit_key(group: str, topic: str, partition: int, *, version: int = 1) -> bytes:
    """Key of an offset commit; ``version`` 1 (0.9+) or 0 (0.8.2), same layout."""
    if version not in _OFFSET_COMMIT_KEY_VERSIONS:
        raise ValueError(f"OffsetCommitKey version must be 0 or 1, not {version}")
    w = _Writer()
    w.i16(version, "version")
    w.string(group, "group")
    w.string(topic, "topic")
    w.i32(partition, "partition")
    return w.getvalue()


def encode_offset_commit_value(
    *,
    offset: int,
    commit_timestamp: int,
    metadata: str = "",
    version: int = 3,
    leader_epoch: int = -1,
    expire_timestamp: int = -1,
    topic_id: uuid.UUID | None = None,
    unknown_tags: _RawTags = (),
) -> bytes:
    """Value of an offset commit in ``version`` 0..4.

    What each version can carry: ``expire_timestamp`` only v1 (written even when -1),
    ``leader_epoch`` v3+, ``topic_id`` and ``unknown_tags`` v4 (flexible). A non-default value
    a version cannot carry raises ``ValueError`` (Kafka would drop those "ignorable" fields).
    Kafka itself writes v1 when an expire timestamp is set, else v3 (v4 from 4.1 with a topic
    id).
    """
    if version not in _OFFSET_COMMIT_VALUE_VERSIONS:
        raise ValueError(f"OffsetCommitValue version must be 0..4, not {version}")
    if leader_epoch != -1 and version < 3:
        raise ValueError(f"OffsetCommitValue v{version} has no leaderEpoch (v3+)")
    if expire_timestamp != -1 and version != 1:
        raise ValueError(f"OffsetCommitValue v{version} has no expireTimestamp (v1 only)")
    flexible = version >= _FIRST_FLEXIBLE
    if topic_id is not None and not flexible:
        raise ValueError(f"OffsetCommitValue v{version} has no topicId (v4 tagged field)")
    _check_raw_tags(unknown_tags, flexible, "OffsetCommitValue")
    w = _Writer()
    w.i16(version, "version")
    w.i64(offset, "offset")
    if version >= 3:
        w.i32(leader_epoch, "leaderEpoch")
    w.string(metadata, "metadata", compact=flexible)
    w.i64(commit_timestamp, "commitTimestamp")
    if version == 1:
        w.i64(expire_timestamp, "expireTimestamp")
    if flexible:
        tags = list(unknown_tags)
        # Kafka omits a tagged field that holds its default (the zero uuid for topicId)
        if topic_id is not None and topic_id != _ZERO_UUID:
            tags.append((_TAG_TOPIC_ID, _uuid_bytes(topic_id, "topicId")))
        w.tagged_fields(tags)
    return w.getvalue()


def _uuid_bytes(v: uuid.UUID, name: str) -> bytes:
    if not isinstance(v, uuid.UUID):
        raise ValueError(f"{name} must be a uuid.UUID, not {type(v).__name__}")
    return v.bytes


def encode_offset_commit(record: OffsetCommit) -> tuple[bytes, bytes]:
    """``(key, value)`` bytes of an :class:`OffsetCommit`, in its key/value versions."""
    key = encode_offset_commit_key(
        record.group, record.topic, record.partition, version=record.key_version
    )
    value = encode_offset_commit_value(
        offset=record.offset,
        commit_timestamp=record.commit_timestamp,
        metadata=record.metadata,
        version=record.value_version,
        leader_epoch=record.leader_epoch,
        expire_timestamp=record.expire_timestamp,
        topic_id=record.topic_id,
        unknown_tags=record.unknown_tags,
    )
    return key, value


# --------------------------------------------------------------------------------------------
# GroupMetadata (record type 2)
# --------------------------------------------------------------------------------------------


def _read_group_metadata_key(r: _Reader, version: int) -> GroupMetadataKey:
    group = r.text("group")
    r.done("GroupMetadataKey")
    return GroupMetadataKey(group, version)


def _read_member(r: _Reader, version: int, index: int) -> GroupMember:
    flexible = version >= _FIRST_FLEXIBLE
    where = f"members[{index}]"
    member_id = r.text(f"{where}.memberId", compact=flexible)
    instance_id = (
        r.string(f"{where}.groupInstanceId", nullable=True, compact=flexible)
        if version >= 3
        else None
    )
    client_id = r.text(f"{where}.clientId", compact=flexible)
    client_host = r.text(f"{where}.clientHost", compact=flexible)
    rebalance_timeout = r.i32(f"{where}.rebalanceTimeout") if version >= 1 else -1
    session_timeout = r.i32(f"{where}.sessionTimeout")
    subscription = r.blob(f"{where}.subscription", compact=flexible)
    assignment = r.blob(f"{where}.assignment", compact=flexible)
    assert subscription is not None and assignment is not None  # non-nullable
    unknown: _RawTags = ()
    if flexible:
        unknown = _raw_tags(r, r.tagged_fields(where))
    return GroupMember(
        member_id=member_id,
        client_id=client_id,
        client_host=client_host,
        session_timeout=session_timeout,
        subscription=subscription,
        assignment=assignment,
        rebalance_timeout=rebalance_timeout,
        group_instance_id=instance_id,
        unknown_tags=unknown,
    )


def _read_group_metadata_value(r: _Reader, key: GroupMetadataKey, version: int) -> GroupMetadata:
    flexible = version >= _FIRST_FLEXIBLE
    protocol_type = r.text("protocolType", compact=flexible)
    generation = r.i32("generation")
    protocol = r.string("protocol", nullable=True, compact=flexible)
    leader = r.string("leader", nullable=True, compact=flexible)
    current_state_ts = r.i64("currentStateTimestamp") if version >= 2 else -1
    count = r.array_len("members", compact=flexible)
    members = tuple(_read_member(r, version, i) for i in range(count))
    unknown: _RawTags = ()
    if flexible:
        unknown = _raw_tags(r, r.tagged_fields("GroupMetadataValue"))
    r.done("GroupMetadataValue")
    return GroupMetadata(
        group=key.group,
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        members=members,
        current_state_timestamp=current_state_ts,
        key_version=key.version,
        value_version=version,
        unknown_tags=unknown,
    )


def encode_group_metadata_key(group: str) -> bytes:
    """Key of a classic group's metadata (record type 2)."""
    w = _Writer()
    w.i16(_GROUP_METADATA_KEY_VERSION, "version")
    w.string(group, "group")
    return w.getvalue()


def encode_group_metadata_value(
    *,
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    members: Sequence[GroupMember] = (),
    current_state_timestamp: int = -1,
    version: int = 3,
    unknown_tags: _RawTags = (),
) -> bytes:
    """Value of a classic group's metadata in ``version`` 0..4::

        protocolType string, generation int32, protocol nullable string,
        leader nullable string, [v2+ currentStateTimestamp int64],
        members [memberId string, [v3+ groupInstanceId nullable string], clientId string,
                 clientHost string, [v1+ rebalanceTimeout int32], sessionTimeout int32,
                 subscription bytes, assignment bytes]

    v4 is flexible (compact strings/bytes/array, a tagged-fields section per member and at
    the end). Kafka writes v0 (0.9/0.10.0), v1 (0.10.1+), v2 (2.1+), v3 (2.3+). A field the
    version cannot carry that holds a non-default value raises ``ValueError``.
    """
    if version not in _GROUP_METADATA_VALUE_VERSIONS:
        raise ValueError(f"GroupMetadataValue version must be 0..4, not {version}")
    flexible = version >= _FIRST_FLEXIBLE
    if current_state_timestamp != -1 and version < 2:
        raise ValueError(f"GroupMetadataValue v{version} has no currentStateTimestamp (v2+)")
    _check_raw_tags(unknown_tags, flexible, "GroupMetadataValue")
    w = _Writer()
    w.i16(version, "version")
    w.string(protocol_type, "protocolType", compact=flexible)
    w.i32(generation, "generation")
    w.string(protocol, "protocol", nullable=True, compact=flexible)
    w.string(leader, "leader", nullable=True, compact=flexible)
    if version >= 2:
        w.i64(current_state_timestamp, "currentStateTimestamp")
    w.array_len(len(members), flexible)
    for i, m in enumerate(members):
        where = f"members[{i}]"
        if m.group_instance_id is not None and version < 3:
            raise ValueError(f"GroupMetadataValue v{version} has no groupInstanceId (v3+)")
        if m.rebalance_timeout != -1 and version < 1:
            raise ValueError("GroupMetadataValue v0 has no rebalanceTimeout (v1+)")
        _check_raw_tags(m.unknown_tags, flexible, where)
        w.string(m.member_id, f"{where}.memberId", compact=flexible)
        if version >= 3:
            w.string(
                m.group_instance_id, f"{where}.groupInstanceId", nullable=True, compact=flexible
            )
        w.string(m.client_id, f"{where}.clientId", compact=flexible)
        w.string(m.client_host, f"{where}.clientHost", compact=flexible)
        if version >= 1:
            w.i32(m.rebalance_timeout, f"{where}.rebalanceTimeout")
        w.i32(m.session_timeout, f"{where}.sessionTimeout")
        w.blob(m.subscription, f"{where}.subscription", compact=flexible)
        w.blob(m.assignment, f"{where}.assignment", compact=flexible)
        if flexible:
            w.tagged_fields(m.unknown_tags)
    if flexible:
        w.tagged_fields(unknown_tags)
    return w.getvalue()


def encode_group_metadata(record: GroupMetadata) -> tuple[bytes, bytes]:
    """``(key, value)`` bytes of a :class:`GroupMetadata`, in its value version."""
    if record.key_version != _GROUP_METADATA_KEY_VERSION:
        raise ValueError(f"GroupMetadataKey version must be 2, not {record.key_version}")
    value = encode_group_metadata_value(
        protocol_type=record.protocol_type,
        generation=record.generation,
        protocol=record.protocol,
        leader=record.leader,
        members=record.members,
        current_state_timestamp=record.current_state_timestamp,
        version=record.value_version,
        unknown_tags=record.unknown_tags,
    )
    return encode_group_metadata_key(record.group), value


# --------------------------------------------------------------------------------------------
# New-coordinator records (types 3..24): a small schema interpreter
# --------------------------------------------------------------------------------------------


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

_PRIMITIVE_READ: Final[Mapping[str, str]] = {
    "int8": "i8",
    "int16": "i16",
    "uint16": "u16",
    "int32": "i32",
    "int64": "i64",
    "float64": "f64",
    "bool": "boolean",
    "uuid": "uuid",
}


def _read_one(r: _Reader, kind: str, name: str, nullable: bool, f: _Field) -> Any:
    """Read one (untagged) value of ``kind`` in flexible encoding."""
    if kind in _PRIMITIVE_READ:
        return getattr(r, _PRIMITIVE_READ[kind])(name)
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


def _read_struct(r: _Reader, fields: tuple[_Field, ...], name: str) -> dict[str, Any]:
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
    unknown = _raw_tags(r, found, tagged)
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


def _write_one(w: _Writer, kind: str, value: Any, name: str, nullable: bool, f: _Field) -> None:
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
    w: _Writer, fields: tuple[_Field, ...], value: Mapping[str, Any], name: str
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
            sub = _Writer()
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


def _read_coordinator_key(r: _Reader, record_type: int) -> CoordinatorKey:
    group = r.text("GroupId")
    member_id = r.text("MemberId") if record_type in _MEMBER_KEYED else None
    regex = r.text("RegularExpression") if record_type in _REGEX_KEYED else None
    r.done(f"{RECORD_TYPE_NAMES[record_type]}Key")
    return CoordinatorKey(record_type, group, member_id, regex)


def encode_coordinator_key(key: CoordinatorKey) -> bytes:
    """Key bytes of a new-coordinator record (types 3..24)."""
    t = key.record_type
    if t not in RECORD_TYPE_NAMES or t <= _GROUP_METADATA_KEY_VERSION:
        raise ValueError(f"record type {t} is not a new-coordinator record type (3..24)")
    w = _Writer()
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
    w = _Writer()
    w.i16(version, "version")
    _write_struct(w, schema, value, f"{RECORD_TYPE_NAMES[record_type]}Value")
    return w.getvalue()


def _read_coordinator_value(
    key: CoordinatorKey, key_bytes: bytes, value: bytes
) -> CoordinatorRecord | UnknownRecord:
    r = _Reader(value, "value")
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


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def _as_bytes(buf: bytes | bytearray | memoryview) -> bytes:
    return buf if isinstance(buf, bytes) else bytes(buf)


def decode_offsets_record(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
) -> OffsetsRecord:
    """Decode one ``__consumer_offsets`` record (see the module docstring for the contract).

    Raises:
        CorruptRecordError: malformed key or value bytes, or a missing key; ``position`` is
            the byte offset inside the buffer named at the start of the detail.
    """
    if key is None:
        raise CorruptRecordError(
            "key: __consumer_offsets record without a key",
            expected="a key starting with an int16 record type",
        )
    kb = _as_bytes(key)
    vb = None if value is None else _as_bytes(value)
    kr = _Reader(kb, "key")
    record_type = kr.i16("record type")

    decoded_key: OffsetsKey
    if record_type in _OFFSET_COMMIT_KEY_VERSIONS:
        decoded_key = _read_offset_commit_key(kr, record_type)
    elif record_type == _GROUP_METADATA_KEY_VERSION:
        decoded_key = _read_group_metadata_key(kr, record_type)
    elif record_type in RECORD_TYPE_NAMES:
        decoded_key = _read_coordinator_key(kr, record_type)
    else:
        # Kafka's loaders skip unknown record types (newer brokers), so do we.
        return UnknownRecord(record_type, kb, vb, f"unknown record type {record_type}")

    if vb is None:
        return Tombstone(decoded_key)

    if isinstance(decoded_key, CoordinatorKey):
        return _read_coordinator_value(decoded_key, kb, vb)

    vr = _Reader(vb, "value")
    version = vr.i16("value version")
    if isinstance(decoded_key, OffsetCommitKey):
        if version not in _OFFSET_COMMIT_VALUE_VERSIONS:
            return UnknownRecord(
                record_type, kb, vb, f"unknown OffsetCommitValue version {version}", decoded_key
            )
        return _read_offset_commit_value(vr, decoded_key, version)
    if version not in _GROUP_METADATA_VALUE_VERSIONS:
        return UnknownRecord(
            record_type, kb, vb, f"unknown GroupMetadataValue version {version}", decoded_key
        )
    return _read_group_metadata_value(vr, decoded_key, version)


def encode_key(key: OffsetsKey) -> bytes:
    """Key bytes for any decoded key (e.g. to write a :class:`Tombstone`)."""
    if isinstance(key, OffsetCommitKey):
        return encode_offset_commit_key(key.group, key.topic, key.partition, version=key.version)
    if isinstance(key, GroupMetadataKey):
        if key.version != _GROUP_METADATA_KEY_VERSION:
            raise ValueError(f"GroupMetadataKey version must be 2, not {key.version}")
        return encode_group_metadata_key(key.group)
    return encode_coordinator_key(key)


def encode_record(record: OffsetsRecord) -> tuple[bytes, bytes | None]:
    """``(key, value)`` bytes of any result of :func:`decode_offsets_record`.

    Undecoded parts (unknown records, raw share/streams values) are written back verbatim, so
    for broker-written bytes ``encode_record(decode_offsets_record(k, v)) == (k, v)``.
    """
    if isinstance(record, OffsetCommit):
        return encode_offset_commit(record)
    if isinstance(record, GroupMetadata):
        return encode_group_metadata(record)
    if isinstance(record, Tombstone):
        return encode_key(record.key), None
    if isinstance(record, UnknownRecord):
        return record.key, record.value
    key = encode_coordinator_key(record.key)
    if record.value is None:
        return key, _I16.pack(record.value_version) + record.raw_value
    return key, encode_coordinator_value(
        record.key.record_type, record.value, version=record.value_version
    )


# --------------------------------------------------------------------------------------------
# Partitioning
# --------------------------------------------------------------------------------------------


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units
    (a non-BMP character counts as its surrogate pair), wrapped to a signed 32-bit int."""
    units = array("H", s.encode("utf-16-le", "surrogatepass"))
    if sys.byteorder == "big":
        units.byteswap()
    h = 0
    for unit in units:
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def partition_for_group(group_id: str, num_partitions: int = DEFAULT_NUM_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition holding ``group_id``'s records.

    ``Utils.abs(groupId.hashCode()) % num_partitions`` where Kafka's ``Utils.abs`` maps
    ``Integer.MIN_VALUE`` to 0 (not to itself as ``Math.abs`` does). That has been the
    definition since the topic's introduction in 0.8.2 (core's ``Utils.abs`` was fixed by
    KAFKA-1469 before that release; the clients' copy, which once masked with ``0x7fffffff``,
    was aligned by KAFKA-1988), in both the old and the new group coordinator.
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, not {num_partitions}")
    h = java_string_hashcode(group_id)
    return (0 if h == -0x8000_0000 else abs(h)) % num_partitions
