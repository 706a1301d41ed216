"""A classic group's metadata (record type 2): read from and encode to Kafka's bytes.

Key: group string. Value versions 0..4 (layout in :func:`encode_group_metadata_value`; v4 is
flexible). Readers take a :class:`~segment_lib.consumer_offsets._wire.Reader` positioned
after the key's record type or the value's version and raise ``CorruptRecordError`` on
malformed bytes; encoders refuse a field the version cannot carry with ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from segment_lib.consumer_offsets._wire import RawTags, Reader, Writer, check_raw_tags, raw_tags
from segment_lib.consumer_offsets.model import (
    FIRST_FLEXIBLE,
    GROUP_METADATA_KEY_VERSION,
    GroupMember,
    GroupMetadata,
    GroupMetadataKey,
)

__all__ = [
    "GROUP_METADATA_VALUE_VERSIONS",
    "encode_group_metadata",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "read_group_metadata_key",
    "read_group_metadata_value",
]

GROUP_METADATA_VALUE_VERSIONS: Final = range(0, 5)


def read_group_metadata_key(r: Reader, version: int) -> GroupMetadataKey:
    group = r.text("group")
    r.done("GroupMetadataKey")
    return GroupMetadataKey(group, version)


def _read_member(r: Reader, version: int, index: int) -> GroupMember:
    flexible = version >= FIRST_FLEXIBLE
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
    unknown: RawTags = ()
    if flexible:
        unknown = raw_tags(r, r.tagged_fields(where))
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


def read_group_metadata_value(r: Reader, key: GroupMetadataKey, version: int) -> GroupMetadata:
    flexible = version >= FIRST_FLEXIBLE
    protocol_type = r.text("protocolType", compact=flexible)
    generation = r.i32("generation")
    protocol = r.string("protocol", nullable=True, compact=flexible)
    leader = r.string("leader", nullable=True, compact=flexible)
    current_state_ts = r.i64("currentStateTimestamp") if version >= 2 else -1
    count = r.array_len("members", compact=flexible)
    members = tuple(_read_member(r, version, i) for i in range(count))
    unknown: RawTags = ()
    if flexible:
        unknown = raw_tags(r, r.tagged_fields("GroupMetadataValue"))
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
    w = Writer()
    w.i16(GROUP_METADATA_KEY_VERSION, "version")
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
    unknown_tags: RawTags = (),
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
    if version not in GROUP_METADATA_VALUE_VERSIONS:
        raise ValueError(f"GroupMetadataValue version must be 0..4, not {version}")
    flexible = version >= FIRST_FLEXIBLE
    if current_state_timestamp != -1 and version < 2:
        raise ValueError(f"GroupMetadataValue v{version} has no currentStateTimestamp (v2+)")
    check_raw_tags(unknown_tags, flexible, "GroupMetadataValue")
    w = Writer()
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
        check_raw_tags(m.unknown_tags, flexible, where)
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
    if record.key_version != GROUP_METADATA_KEY_VERSION:
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
