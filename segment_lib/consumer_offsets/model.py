"""What a ``__consumer_offsets`` record decodes to: keys, values, tombstones, unknown records.

Frozen dataclasses and the record-type table, nothing else: decoding and encoding live in
:mod:`.offset_commit` (types 0, 1), :mod:`.group_metadata` (type 2), :mod:`.consumer_group`
(types 3..24) and :mod:`.codec` (any record). Fields a value version cannot carry hold
Kafka's defaults (documented per class), so one class serves every version.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from segment_lib.consumer_offsets._wire import RawTags

__all__ = [
    "FIRST_FLEXIBLE",
    "GROUP_METADATA_KEY_VERSION",
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
]

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

#: record type (the old coordinator's key version) of GroupMetadataKey
GROUP_METADATA_KEY_VERSION: Final = 2
#: first flexible (KIP-482 compact/tagged) version of OffsetCommitValue and GroupMetadataValue
FIRST_FLEXIBLE: Final = 4


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
    version: int = GROUP_METADATA_KEY_VERSION

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
    unknown_tags: RawTags = ()

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
    unknown_tags: RawTags = ()


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
    key_version: int = GROUP_METADATA_KEY_VERSION
    value_version: int = 3
    unknown_tags: RawTags = ()

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
