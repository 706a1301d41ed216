"""Tests for segment_lib.consumer_offsets (``__consumer_offsets`` keys and values).

Expected bytes below are spelled out by hand from Kafka's message schemas
(group-coordinator/src/main/resources/common/message/OffsetCommitKey.json, OffsetCommitValue.json,
GroupMetadataKey.json, GroupMetadataValue.json, ConsumerGroup*.json) with the test's own tiny
encoders (``s16``, ``cstr``, ``uv``...), not copied from the module's output. A second, independent
implementation of the flexible-version rules (kafka-python 3's schema-driven codec) is used as a
cross-check where installed. Real broker bytes come through the ``real_broker_data`` fixture.
"""

from __future__ import annotations

import io
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segment_lib import consumer_offsets as co
from segment_lib.errors import CorruptRecordError

# ------------------------------------------------------------------------------------------
# The test's own encoders of Kafka protocol primitives (from the protocol guide)
# ------------------------------------------------------------------------------------------


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s16(text: str) -> bytes:
    """Classic STRING: int16 length + UTF-8."""
    data = text.encode()
    return i16(len(data)) + data


def b32(data: bytes) -> bytes:
    """Classic BYTES: int32 length + bytes."""
    return i32(len(data)) + data


def uv(n: int) -> bytes:
    """Unsigned varint, 7 bits a byte, low group first."""
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def cstr(text: str | None) -> bytes:
    """COMPACT_(NULLABLE_)STRING: uvarint N+1 (0 = null) + UTF-8."""
    if text is None:
        return uv(0)
    data = text.encode()
    return uv(len(data) + 1) + data


def cbytes(data: bytes) -> bytes:
    return uv(len(data) + 1) + data


NO_TAGS = uv(0)

# ------------------------------------------------------------------------------------------
# OffsetCommit: hand-built bytes per version
# ------------------------------------------------------------------------------------------

KEY_V1 = i16(1) + s16("grp") + s16("orders") + i32(7)
TOPIC_ID = uuid.UUID("0b3c9a1e-4f1d-4a7b-9d27-7a0a3f5e6c11")

VALUES: dict[int, bytes] = {
    0: i16(0) + i64(42) + s16("meta") + i64(1_600_000_000_000),
    1: i16(1) + i64(42) + s16("meta") + i64(1_600_000_000_000) + i64(1_600_086_400_000),
    2: i16(2) + i64(42) + s16("meta") + i64(1_600_000_000_000),
    3: i16(3) + i64(42) + i32(5) + s16("meta") + i64(1_600_000_000_000),
    # v4: compact metadata, then the tagged-field section with tag 0 = topicId (16 bytes)
    4: i16(4)
    + i64(42)
    + i32(5)
    + cstr("meta")
    + i64(1_600_000_000_000)
    + uv(1)
    + uv(0)
    + uv(16)
    + TOPIC_ID.bytes,
}


@pytest.mark.parametrize("version", sorted(VALUES))
def test_offset_commit_hand_built_bytes(version: int) -> None:
    rec = co.decode_offsets_record(KEY_V1, VALUES[version])
    assert isinstance(rec, co.OffsetCommit)
    assert (rec.group, rec.topic, rec.partition) == ("grp", "orders", 7)
    assert rec.offset == 42
    assert rec.metadata == "meta"
    assert rec.commit_timestamp == 1_600_000_000_000
    assert rec.leader_epoch == (5 if version >= 3 else -1)
    assert rec.expire_timestamp == (1_600_086_400_000 if version == 1 else -1)
    assert rec.topic_id == (TOPIC_ID if version == 4 else None)
    assert (rec.key_version, rec.value_version) == (1, version)
    assert rec.key == co.OffsetCommitKey("grp", "orders", 7, 1)
    # and the encoder writes exactly those bytes back
    assert co.encode_offset_commit(rec) == (KEY_V1, VALUES[version])
    assert co.encode_offset_commit_key("grp", "orders", 7) == KEY_V1


def test_offset_commit_key_version_0_same_layout() -> None:
    key0 = i16(0) + s16("grp") + s16("orders") + i32(7)
    rec = co.decode_offsets_record(key0, VALUES[0])
    assert isinstance(rec, co.OffsetCommit)
    assert rec.key_version == 0
    assert co.encode_offset_commit_key("grp", "orders", 7, version=0) == key0


def test_offset_commit_v4_unknown_tags_kept_and_rewritten_in_tag_order() -> None:
    head = i16(4) + i64(1) + i32(-1) + cstr("") + i64(2)
    # tags 3 and 200 (a two-byte varint) around the known tag 0, written in ascending order
    tags = (
        uv(3)
        + uv(0)
        + uv(16)
        + TOPIC_ID.bytes
        + uv(3)
        + uv(2)
        + b"\x01\x02"
        + uv(200)
        + uv(1)
        + b"\xff"
    )
    value = head + tags
    rec = co.decode_offsets_record(KEY_V1, value)
    assert isinstance(rec, co.OffsetCommit)
    assert rec.topic_id == TOPIC_ID
    assert rec.unknown_tags == ((3, b"\x01\x02"), (200, b"\xff"))
    assert co.encode_record(rec) == (KEY_V1, value)


def test_offset_commit_v4_zero_topic_id_is_omitted_like_kafka() -> None:
    # Kafka writes a tagged field only when it differs from its default (ZERO_UUID).
    value = co.encode_offset_commit_value(
        offset=1, commit_timestamp=2, version=4, topic_id=uuid.UUID(int=0)
    )
    assert value == i16(4) + i64(1) + i32(-1) + cstr("") + i64(2) + NO_TAGS


# ------------------------------------------------------------------------------------------
# GroupMetadata: hand-built bytes
# ------------------------------------------------------------------------------------------

GM_KEY = i16(2) + s16("payments")


def _member_classic(version: int) -> bytes:
    out = s16("m-1")
    if version >= 3:
        out += i16(-1)  # groupInstanceId null
    out += s16("client") + s16("/10.0.0.1")
    if version >= 1:
        out += i32(300_000)
    return out + i32(45_000) + b32(b"SUB") + b32(b"ASSIGN")


def _group_value_classic(version: int) -> bytes:
    out = i16(version) + s16("consumer") + i32(9) + s16("range") + s16("m-1")
    if version >= 2:
        out += i64(1_700_000_000_000)
    return out + i32(1) + _member_classic(version)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_metadata_hand_built_classic_versions(version: int) -> None:
    value = _group_value_classic(version)
    rec = co.decode_offsets_record(GM_KEY, value)
    assert isinstance(rec, co.GroupMetadata)
    assert rec.group == "payments"
    assert (rec.protocol_type, rec.generation, rec.protocol, rec.leader) == (
        "consumer",
        9,
        "range",
        "m-1",
    )
    assert rec.current_state_timestamp == (1_700_000_000_000 if version >= 2 else -1)
    (m,) = rec.members
    assert (m.member_id, m.client_id, m.client_host) == ("m-1", "client", "/10.0.0.1")
    assert m.group_instance_id is None
    assert m.rebalance_timeout == (300_000 if version >= 1 else -1)
    assert m.session_timeout == 45_000
    assert (m.subscription, m.assignment) == (b"SUB", b"ASSIGN")
    assert co.encode_group_metadata(rec) == (GM_KEY, value)


def test_group_metadata_v4_flexible_hand_built() -> None:
    member = (
        cstr("m-1")
        + cstr("static-1")
        + cstr("client")
        + cstr("host")
        + i32(10)
        + i32(20)
        + cbytes(b"S")
        + cbytes(b"")
        + uv(1)
        + uv(7)
        + uv(1)
        + b"\x2a"  # one unknown member-level tag
    )
    value = (
        i16(4)
        + cstr("consumer")
        + i32(1)
        + cstr(None)
        + cstr(None)
        + i64(-1)
        + uv(2)
        + member
        + NO_TAGS
    )
    rec = co.decode_offsets_record(GM_KEY, value)
    assert isinstance(rec, co.GroupMetadata)
    assert rec.protocol is None and rec.leader is None
    (m,) = rec.members
    assert m.group_instance_id == "static-1"
    assert (m.rebalance_timeout, m.session_timeout) == (10, 20)
    assert (m.subscription, m.assignment) == (b"S", b"")
    assert m.unknown_tags == ((7, b"\x2a"),)
    assert co.encode_record(rec) == (GM_KEY, value)


def test_empty_group_metadata_as_written_for_an_empty_group() -> None:
    # An Empty group: no protocol, no leader, no members.
    value = i16(3) + s16("consumer") + i32(0) + i16(-1) + i16(-1) + i64(0) + i32(0)
    rec = co.decode_offsets_record(GM_KEY, value)
    assert rec == co.GroupMetadata("payments", "consumer", 0, None, None, (), 0, 2, 3)


# ------------------------------------------------------------------------------------------
# Round trips for every version (hypothesis)
# ------------------------------------------------------------------------------------------

texts = st.text(st.characters(codec="utf-8"), max_size=12)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
nonzero_uuids = st.uuids().filter(lambda u: u.int != 0)


def raw_tags(min_tag: int) -> st.SearchStrategy[tuple[tuple[int, bytes], ...]]:
    return st.dictionaries(st.integers(min_tag, 400), st.binary(max_size=6), max_size=3).map(
        lambda d: tuple(sorted(d.items()))
    )


@st.composite
def offset_commits(draw: st.DrawFn, with_unknown_tags: bool = True) -> co.OffsetCommit:
    v = draw(st.integers(0, 4))
    return co.OffsetCommit(
        group=draw(texts),
        topic=draw(texts),
        partition=draw(int32s),
        offset=draw(int64s),
        commit_timestamp=draw(int64s),
        metadata=draw(texts),
        leader_epoch=draw(int32s) if v >= 3 else -1,
        expire_timestamp=draw(int64s) if v == 1 else -1,
        topic_id=draw(st.none() | nonzero_uuids) if v >= 4 else None,
        key_version=draw(st.sampled_from([0, 1])),
        value_version=v,
        unknown_tags=draw(raw_tags(1)) if v >= 4 and with_unknown_tags else (),
    )


@st.composite
def group_metadatas(draw: st.DrawFn, with_unknown_tags: bool = True) -> co.GroupMetadata:
    v = draw(st.integers(0, 4))
    tags = raw_tags(0) if v >= 4 and with_unknown_tags else st.just(())
    members = draw(
        st.lists(
            st.builds(
                co.GroupMember,
                member_id=texts,
                client_id=texts,
                client_host=texts,
                session_timeout=int32s,
                subscription=st.binary(max_size=20),
                assignment=st.binary(max_size=20),
                rebalance_timeout=int32s if v >= 1 else st.just(-1),
                group_instance_id=st.none() | texts if v >= 3 else st.none(),
                unknown_tags=tags,
            ),
            max_size=3,
        )
    )
    return co.GroupMetadata(
        group=draw(texts),
        protocol_type=draw(texts),
        generation=draw(int32s),
        protocol=draw(st.none() | texts),
        leader=draw(st.none() | texts),
        members=tuple(members),
        current_state_timestamp=draw(int64s) if v >= 2 else -1,
        value_version=v,
        unknown_tags=draw(tags),
    )


@settings(deadline=None)
@given(offset_commits())
def test_offset_commit_round_trip(rec: co.OffsetCommit) -> None:
    key, value = co.encode_offset_commit(rec)
    assert co.decode_offsets_record(key, value) == rec
    # a tombstone of the same key carries the same key back
    assert co.decode_offsets_record(key, None) == co.Tombstone(rec.key)


@settings(deadline=None)
@given(group_metadatas())
def test_group_metadata_round_trip(rec: co.GroupMetadata) -> None:
    key, value = co.encode_group_metadata(rec)
    assert co.decode_offsets_record(key, value) == rec
    assert co.decode_offsets_record(key, None) == co.Tombstone(rec.key)


@settings(deadline=None)
@given(offset_commits(), st.sampled_from(["bytes", "bytearray", "memoryview"]))
def test_decoder_accepts_any_buffer_type(rec: co.OffsetCommit, kind: str) -> None:
    key, value = co.encode_offset_commit(rec)
    wrap: Any = {"bytes": bytes, "bytearray": bytearray, "memoryview": memoryview}[kind]
    assert co.decode_offsets_record(wrap(key), wrap(value)) == rec


# ------------------------------------------------------------------------------------------
# Cross-check against kafka-python 3's schema-driven codec (independent implementation of
# classic + flexible encodings). Schemas transcribed from Kafka's JSON files.
# ------------------------------------------------------------------------------------------

OFFSET_COMMIT_VALUE_SCHEMA = {
    "name": "OffsetCommitValue",
    "type": "OffsetCommitValue",
    "versions": "0-4",
    "fields": [
        {"name": "offset", "type": "int64", "versions": "0+"},
        {"name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1},
        {"name": "metadata", "type": "string", "versions": "0+"},
        {"name": "commitTimestamp", "type": "int64", "versions": "0+"},
        {"name": "expireTimestamp", "type": "int64", "versions": "1", "default": -1},
        {"name": "topicId", "type": "uuid", "versions": "4+", "taggedVersions": "4+", "tag": 0},
    ],
}
GROUP_METADATA_VALUE_SCHEMA = {
    "name": "GroupMetadataValue",
    "type": "GroupMetadataValue",
    "versions": "0-4",
    "fields": [
        {"name": "protocolType", "versions": "0+", "type": "string"},
        {"name": "generation", "versions": "0+", "type": "int32"},
        {"name": "protocol", "versions": "0+", "type": "string", "nullableVersions": "0+"},
        {"name": "leader", "versions": "0+", "type": "string", "nullableVersions": "0+"},
        {"name": "currentStateTimestamp", "versions": "2+", "type": "int64", "default": -1},
        {
            "name": "members",
            "versions": "0+",
            "type": "[]MemberMetadata",
            "fields": [
                {"name": "memberId", "versions": "0+", "type": "string"},
                {
                    "name": "groupInstanceId",
                    "versions": "3+",
                    "type": "string",
                    "default": "null",
                    "nullableVersions": "3+",
                },
                {"name": "clientId", "versions": "0+", "type": "string"},
                {"name": "clientHost", "versions": "0+", "type": "string"},
                {"name": "rebalanceTimeout", "versions": "1+", "type": "int32", "default": -1},
                {"name": "sessionTimeout", "versions": "0+", "type": "int32"},
                {"name": "subscription", "versions": "0+", "type": "bytes"},
                {"name": "assignment", "versions": "0+", "type": "bytes"},
            ],
        },
    ],
}


_KP_STRUCTS: dict[str, Any] = {}


def _kafka_python_struct(schema: dict[str, Any]) -> Any:
    fields = pytest.importorskip("kafka.protocol.schemas.fields.struct")
    name = schema["name"]
    if name not in _KP_STRUCTS:
        _KP_STRUCTS[name] = fields.StructField(schema)
    return _KP_STRUCTS[name]


@settings(max_examples=60, deadline=None)
@given(offset_commits(with_unknown_tags=False))
def test_offset_commit_matches_kafka_python(rec: co.OffsetCommit) -> None:
    sf = _kafka_python_struct(OFFSET_COMMIT_VALUE_SCHEMA)
    v = rec.value_version
    flexible = v >= 4
    item = {
        "offset": rec.offset,
        "leader_epoch": rec.leader_epoch,
        "metadata": rec.metadata,
        "commit_timestamp": rec.commit_timestamp,
        "expire_timestamp": rec.expire_timestamp,
    }
    if rec.topic_id is not None:
        item["topic_id"] = rec.topic_id
    theirs = sf.encode(item, version=v, compact=flexible, tagged=flexible)
    _, mine = co.encode_offset_commit(rec)
    assert mine == i16(v) + theirs
    back = sf.decode(io.BytesIO(mine[2:]), version=v, compact=flexible, tagged=flexible)
    assert back["offset"] == rec.offset and back["metadata"] == rec.metadata
    assert back["commit_timestamp"] == rec.commit_timestamp
    assert back.get("topic_id") == rec.topic_id


@settings(max_examples=60, deadline=None)
@given(group_metadatas(with_unknown_tags=False))
def test_group_metadata_matches_kafka_python(rec: co.GroupMetadata) -> None:
    sf = _kafka_python_struct(GROUP_METADATA_VALUE_SCHEMA)
    v = rec.value_version
    flexible = v >= 4
    item = {
        "protocol_type": rec.protocol_type,
        "generation": rec.generation,
        "protocol": rec.protocol,
        "leader": rec.leader,
        "current_state_timestamp": rec.current_state_timestamp,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout": m.rebalance_timeout,
                "session_timeout": m.session_timeout,
                "subscription": m.subscription,
                "assignment": m.assignment,
            }
            for m in rec.members
        ],
    }
    theirs = sf.encode(item, version=v, compact=flexible, tagged=flexible)
    _, mine = co.encode_group_metadata(rec)
    assert mine == i16(v) + theirs


# ------------------------------------------------------------------------------------------
# KIP-848 consumer-group records, share/streams records
# ------------------------------------------------------------------------------------------

CLASSIC_MEMBER_SCHEMA = {
    # ConsumerGroupMemberMetadataValue.json (Kafka 4.0), version 0, flexible
    "name": "ConsumerGroupMemberMetadataValue",
    "type": "X",
    "versions": "0",
    "fields": [
        {"name": "InstanceId", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {"name": "RackId", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {"name": "ClientId", "versions": "0+", "type": "string"},
        {"name": "ClientHost", "versions": "0+", "type": "string"},
        {"name": "SubscribedTopicNames", "versions": "0+", "type": "[]string"},
        {
            "name": "SubscribedTopicRegex",
            "versions": "0+",
            "nullableVersions": "0+",
            "type": "string",
        },
        {"name": "RebalanceTimeoutMs", "type": "int32", "versions": "0+", "default": -1},
        {"name": "ServerAssignor", "versions": "0+", "nullableVersions": "0+", "type": "string"},
        {
            "name": "ClassicMemberMetadata",
            "versions": "0+",
            "nullableVersions": "0+",
            "type": "ClassicMemberMetadata",
            "default": "null",
            "taggedVersions": "0+",
            "tag": 0,
            "fields": [
                {"name": "SessionTimeoutMs", "type": "int32", "versions": "0+"},
                {
                    "name": "SupportedProtocols",
                    "type": "[]ClassicProtocol",
                    "versions": "0+",
                    "fields": [
                        {"name": "Name", "type": "string", "versions": "0+"},
                        {"name": "Metadata", "type": "bytes", "versions": "0+"},
                    ],
                },
            ],
        },
    ],
}


def _member_value(classic: bool) -> dict[str, Any]:
    return {
        "instanceId": None,
        "rackId": "rack-a",
        "clientId": "cli",
        "clientHost": "/1.2.3.4",
        "subscribedTopicNames": ["a", "bb"],
        "subscribedTopicRegex": None,
        "rebalanceTimeoutMs": 60_000,
        "serverAssignor": "uniform",
        "classicMemberMetadata": (
            {
                "sessionTimeoutMs": 45_000,
                "supportedProtocols": [{"name": "range", "metadata": b"\x00\x01"}],
            }
            if classic
            else None
        ),
    }


@pytest.mark.parametrize("classic", [False, True])
def test_consumer_group_member_metadata_value(classic: bool) -> None:
    key = i16(5) + s16("g") + s16("member-1")
    value = co.encode_coordinator_value(5, _member_value(classic))
    # hand-built expectation
    expected = (
        i16(0)
        + cstr(None)
        + cstr("rack-a")
        + cstr("cli")
        + cstr("/1.2.3.4")
        + uv(3)
        + cstr("a")
        + cstr("bb")
        + cstr(None)
        + i32(60_000)
        + cstr("uniform")
    )
    if classic:
        struct_body = i32(45_000) + uv(2) + cstr("range") + cbytes(b"\x00\x01") + NO_TAGS + NO_TAGS
        # tagged nullable struct: size = body + 1, then the unsigned-varint presence marker 1
        expected += uv(1) + uv(0) + uv(len(struct_body) + 1) + uv(1) + struct_body
    else:
        expected += NO_TAGS
    assert value == expected
    rec = co.decode_offsets_record(key, value)
    assert isinstance(rec, co.CoordinatorRecord)
    assert rec.key == co.CoordinatorKey(5, "g", member_id="member-1")
    assert rec.name == "ConsumerGroupMemberMetadata"
    assert rec.value == _member_value(classic)
    assert rec.value_error is None
    assert co.encode_record(rec) == (key, value)


@pytest.mark.parametrize("classic", [False, True])
def test_consumer_group_member_metadata_matches_kafka_python(classic: bool) -> None:
    sf = _kafka_python_struct(CLASSIC_MEMBER_SCHEMA)
    v = _member_value(classic)
    item = {
        "instance_id": v["instanceId"],
        "rack_id": v["rackId"],
        "client_id": v["clientId"],
        "client_host": v["clientHost"],
        "subscribed_topic_names": v["subscribedTopicNames"],
        "subscribed_topic_regex": None,
        "rebalance_timeout_ms": v["rebalanceTimeoutMs"],
        "server_assignor": v["serverAssignor"],
    }
    if classic:
        item["classic_member_metadata"] = {
            "session_timeout_ms": 45_000,
            "supported_protocols": [{"name": "range", "metadata": b"\x00\x01"}],
        }
    theirs = sf.encode(item, version=0, compact=True, tagged=True)
    assert co.encode_coordinator_value(5, v) == i16(0) + theirs


def test_consumer_group_assignment_and_small_values() -> None:
    tid = uuid.UUID(int=0x1234)
    # ConsumerGroupCurrentMemberAssignmentValue: epochs, state int8, two []TopicPartitions
    value8 = (
        i16(0)
        + i32(12)
        + i32(11)
        + b"\x02"
        + uv(2)
        + tid.bytes
        + uv(3)
        + i32(0)
        + i32(4)
        + NO_TAGS
        + uv(1)
        + NO_TAGS
    )
    rec = co.decode_offsets_record(i16(8) + s16("g") + s16("m"), value8)
    assert isinstance(rec, co.CoordinatorRecord)
    assert rec.value == {
        "memberEpoch": 12,
        "previousMemberEpoch": 11,
        "state": 2,
        "assignedPartitions": [{"topicId": tid, "partitions": [0, 4]}],
        "partitionsPendingRevocation": [],
    }
    assert co.encode_record(rec)[1] == value8
    # ConsumerGroupMetadataValue (epoch) and TargetAssignmentMetadataValue (assignmentEpoch)
    rec3 = co.decode_offsets_record(i16(3) + s16("g"), i16(0) + i32(7) + NO_TAGS)
    assert isinstance(rec3, co.CoordinatorRecord) and rec3.value == {"epoch": 7}
    rec6 = co.decode_offsets_record(i16(6) + s16("g"), i16(0) + i32(8) + NO_TAGS)
    assert isinstance(rec6, co.CoordinatorRecord) and rec6.value == {"assignmentEpoch": 8}
    # ConsumerGroupRegularExpression: key (group, regex); value topics, version, timestamp
    key16 = i16(16) + s16("g") + s16("orders-.*")
    value16 = i16(0) + uv(2) + cstr("orders-1") + i64(99) + i64(1_700_000_000_000) + NO_TAGS
    rec16 = co.decode_offsets_record(key16, value16)
    assert isinstance(rec16, co.CoordinatorRecord)
    assert rec16.key.regular_expression == "orders-.*"
    assert rec16.value == {"topics": ["orders-1"], "version": 99, "timestamp": 1_700_000_000_000}
    assert co.encode_record(rec16) == (key16, value16)


def test_consumer_group_unknown_tag_is_kept() -> None:
    # e.g. a tagged field added by a later Kafka (such as a metadata hash)
    value = i16(0) + i32(7) + uv(1) + uv(0) + uv(8) + i64(-5)
    rec = co.decode_offsets_record(i16(3) + s16("g"), value)
    assert isinstance(rec, co.CoordinatorRecord)
    assert rec.value == {"epoch": 7, "_unknownTaggedFields": {0: i64(-5)}}
    assert co.encode_record(rec)[1] == value


def test_consumer_group_value_of_another_layout_is_kept_raw() -> None:
    # Kafka 3.7's ConsumerGroupPartitionMetadataValue began with an int32 epoch; 4.0 does not.
    value = i16(0) + i32(3) + uv(1) + NO_TAGS
    rec = co.decode_offsets_record(i16(4) + s16("g"), value)
    assert isinstance(rec, co.CoordinatorRecord)
    assert rec.value is None
    assert rec.value_error is not None and "value" in rec.value_error
    assert rec.raw_value == value[2:]
    assert co.encode_record(rec) == (i16(4) + s16("g"), value)


def test_consumer_group_unknown_value_version() -> None:
    rec = co.decode_offsets_record(i16(3) + s16("g"), i16(1) + b"whatever")
    assert isinstance(rec, co.UnknownRecord)
    assert rec.decoded_key == co.CoordinatorKey(3, "g")
    assert "version 1" in rec.reason


@pytest.mark.parametrize("record_type", [9, 10, 11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23, 24])
def test_share_and_streams_records_keep_raw_values(record_type: int) -> None:
    member_keyed = record_type in {10, 13, 14, 19, 21, 22}
    key = i16(record_type) + s16("grp") + (s16("mem") if member_keyed else b"")
    value = i16(0) + b"\x01\x02\x03"
    rec = co.decode_offsets_record(key, value)
    assert isinstance(rec, co.CoordinatorRecord)
    assert rec.key.group == "grp"
    assert rec.key.member_id == ("mem" if member_keyed else None)
    assert (rec.value, rec.value_error, rec.raw_value) == (None, None, b"\x01\x02\x03")
    assert co.encode_record(rec) == (key, value)
    tomb = co.decode_offsets_record(key, None)
    assert isinstance(tomb, co.Tombstone) and tomb.group == "grp"
    assert co.encode_record(tomb) == (key, None)


# ------------------------------------------------------------------------------------------
# Tombstones and unknown records
# ------------------------------------------------------------------------------------------


def test_tombstones_carry_decoded_keys() -> None:
    assert co.decode_offsets_record(KEY_V1, None) == co.Tombstone(
        co.OffsetCommitKey("grp", "orders", 7, 1)
    )
    tomb = co.decode_offsets_record(GM_KEY, None)
    assert tomb == co.Tombstone(co.GroupMetadataKey("payments"))
    assert isinstance(tomb, co.Tombstone) and tomb.group == "payments"
    assert co.encode_record(tomb) == (GM_KEY, None)


@pytest.mark.parametrize("record_type", [25, 99, 32767, -1, -32768])
@pytest.mark.parametrize("value", [None, b"", b"\x00\x00garbage"])
def test_unknown_record_types_are_not_errors(record_type: int, value: bytes | None) -> None:
    key = i16(record_type) + b"\xff\xfe anything at all"
    rec = co.decode_offsets_record(key, value)
    assert rec == co.UnknownRecord(record_type, key, value, f"unknown record type {record_type}")
    assert co.encode_record(rec) == (key, value)


@pytest.mark.parametrize("version", [5, 6, -1, 32767])
def test_unknown_value_versions_are_not_errors(version: int) -> None:
    rec = co.decode_offsets_record(KEY_V1, i16(version) + b"future bytes")
    assert isinstance(rec, co.UnknownRecord)
    assert rec.decoded_key == co.OffsetCommitKey("grp", "orders", 7, 1)
    rec2 = co.decode_offsets_record(GM_KEY, i16(version))
    assert isinstance(rec2, co.UnknownRecord)
    assert rec2.decoded_key == co.GroupMetadataKey("payments")


# ------------------------------------------------------------------------------------------
# Malformed bytes
# ------------------------------------------------------------------------------------------


def _corrupt(key: bytes | None, value: bytes | None) -> CorruptRecordError:
    with pytest.raises(CorruptRecordError) as info:
        co.decode_offsets_record(key, value)
    assert info.value.path is None
    return info.value


def test_every_truncated_key_is_an_error() -> None:
    for keyb in (KEY_V1, GM_KEY, i16(5) + s16("g") + s16("m")):
        for cut in range(len(keyb)):
            err = _corrupt(keyb[:cut], VALUES[3])
            assert err.detail.startswith("key:")
            assert err.position is not None and 0 <= err.position <= cut


@pytest.mark.parametrize(
    "value",
    [*VALUES.values(), _group_value_classic(0), _group_value_classic(3)],
)
def test_every_truncated_value_is_an_error(value: bytes) -> None:
    key = KEY_V1 if value in VALUES.values() else GM_KEY
    for cut in range(len(value)):
        err = _corrupt(key, value[:cut])
        assert err.detail.startswith("value:")
        assert err.position is not None and 0 <= err.position <= cut


def test_trailing_bytes_are_errors_at_their_position() -> None:
    err = _corrupt(KEY_V1 + b"\x00", VALUES[3])
    assert err.position == len(KEY_V1) and "unexpected" in err.detail
    err = _corrupt(KEY_V1, VALUES[2] + b"\x00\x00")
    assert err.position == len(VALUES[2])
    err = _corrupt(GM_KEY, _group_value_classic(1) + b"x")
    assert err.position == len(_group_value_classic(1))


def test_negative_and_null_lengths() -> None:
    # group length -2: position 2 (right after the record type)
    err = _corrupt(i16(1) + i16(-2) + b"gg" + s16("t") + i32(0), VALUES[0])
    assert err.position == 2 and "negative length" in err.detail
    # group length -1: null in a non-nullable string
    err = _corrupt(i16(1) + i16(-1) + s16("t") + i32(0), VALUES[0])
    assert err.position == 2 and "non-nullable" in err.detail
    # member subscription bytes with length -1
    bad = _group_value_classic(0).replace(b32(b"SUB"), i32(-1))
    err = _corrupt(GM_KEY, bad)
    assert err.position == bad.index(i32(-1) + b32(b"ASSIGN")) and "subscription" in err.detail


def test_invalid_utf8_is_reported_at_the_bad_byte() -> None:
    key = i16(1) + s16("g") + i16(3) + b"a\xffb" + i32(0)
    err = _corrupt(key, VALUES[0])
    assert err.position == 2 + 3 + 2 + 1  # type, "g", length, then 'a'
    assert "UTF-8" in err.detail


def test_overlong_and_oversized_compact_lengths() -> None:
    head = i16(4) + i64(0) + i32(0)
    # six-byte varint
    err = _corrupt(KEY_V1, head + b"\x80\x80\x80\x80\x80\x01")
    assert err.position == len(head) and "longer than 5 bytes" in err.detail
    # five-byte varint whose value needs more than 32 bits
    err = _corrupt(KEY_V1, head + b"\xff\xff\xff\xff\x1f")
    assert err.position == len(head) and "32 bits" in err.detail
    # compact string longer than the buffer
    err = _corrupt(KEY_V1, head + uv(51) + b"short")
    assert err.position == len(head) + 1 and "truncated" in err.detail
    # compact string longer than Kafka's 32767-byte limit
    err = _corrupt(KEY_V1, head + uv(40_001) + b"x" * 40_000 + i64(0) + NO_TAGS)
    assert err.position == len(head) and "32767" in err.detail


def test_bad_tagged_fields() -> None:
    head = i16(4) + i64(0) + i32(0) + cstr("") + i64(0)
    # topicId with 15 bytes instead of 16
    err = _corrupt(KEY_V1, head + uv(1) + uv(0) + uv(15) + b"\x00" * 15)
    assert "topicId" in err.detail
    # declared size beyond the end
    err = _corrupt(KEY_V1, head + uv(1) + uv(9) + uv(10) + b"abc")
    assert err.position == len(head) + 3 and "truncated" in err.detail
    # missing tagged-field section altogether
    err = _corrupt(KEY_V1, head)
    assert err.position == len(head)


def test_array_count_larger_than_the_buffer() -> None:
    value = i16(0) + s16("consumer") + i32(1) + i16(-1) + i16(-1) + i32(1_000_000)
    err = _corrupt(GM_KEY, value)
    assert err.position == len(value) - 4 and "members" in err.detail


def test_missing_or_short_key() -> None:
    err = _corrupt(None, VALUES[0])
    assert err.position is None
    err = _corrupt(b"\x00", VALUES[0])
    assert err.position == 0
    # a value too short to hold its version
    err = _corrupt(KEY_V1, b"\x00")
    assert err.position == 0 and err.detail.startswith("value:")


# ------------------------------------------------------------------------------------------
# Encoder validation
# ------------------------------------------------------------------------------------------


def test_encoders_refuse_fields_a_version_cannot_carry() -> None:
    with pytest.raises(ValueError, match="leaderEpoch"):
        co.encode_offset_commit_value(offset=1, commit_timestamp=1, version=2, leader_epoch=3)
    with pytest.raises(ValueError, match="expireTimestamp"):
        co.encode_offset_commit_value(offset=1, commit_timestamp=1, version=3, expire_timestamp=9)
    with pytest.raises(ValueError, match="topicId"):
        co.encode_offset_commit_value(offset=1, commit_timestamp=1, version=3, topic_id=TOPIC_ID)
    with pytest.raises(ValueError, match="version"):
        co.encode_offset_commit_value(offset=1, commit_timestamp=1, version=5)
    with pytest.raises(ValueError, match="version"):
        co.encode_offset_commit_key("g", "t", 0, version=2)
    with pytest.raises(ValueError, match="32767"):
        co.encode_offset_commit_key("g" * 40_000, "t", 0)
    with pytest.raises(ValueError, match="partition"):
        co.encode_offset_commit_key("g", "t", 2**31)
    member = co.GroupMember("m", "c", "h", 1, b"", b"", group_instance_id="static")
    with pytest.raises(ValueError, match="groupInstanceId"):
        co.encode_group_metadata_value(
            protocol_type="consumer",
            generation=0,
            protocol=None,
            leader=None,
            members=[member],
            version=2,
        )
    with pytest.raises(ValueError, match="currentStateTimestamp"):
        co.encode_group_metadata_value(
            protocol_type="consumer",
            generation=0,
            protocol=None,
            leader=None,
            current_state_timestamp=5,
            version=1,
        )


# ------------------------------------------------------------------------------------------
# Java String.hashCode and partition_for_group
# ------------------------------------------------------------------------------------------


def reference_java_hash(s: str) -> int:
    """Java's definition, literally: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units,
    reduced to a signed 32-bit int. Surrogate pairs are computed by hand here."""
    units: list[int] = []
    for ch in s:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    n = len(units)
    total: int = sum(u * 31 ** (n - 1 - i) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


def test_java_hashcode_known_values() -> None:
    assert co.java_string_hashcode("") == 0
    assert co.java_string_hashcode("a") == 97
    assert co.java_string_hashcode("abc") == 97 * 31 * 31 + 98 * 31 + 99
    # the classic collision "Aa" / "BB": 65*31+97 == 66*31+66 == 2112
    assert co.java_string_hashcode("Aa") == co.java_string_hashcode("BB") == 2112
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16
    assert co.java_string_hashcode("\U0001f600") == 0xD83D * 31 + 0xDE00
    # the well-known Java string whose hashCode is Integer.MIN_VALUE
    assert reference_java_hash("polygenelubricants") == -(2**31)
    assert co.java_string_hashcode("polygenelubricants") == -(2**31)


@settings(deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=40))
def test_java_hashcode_matches_reference(s: str) -> None:
    assert co.java_string_hashcode(s) == reference_java_hash(s)


@settings(deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=40), st.integers(1, 200))
def test_partition_for_group_is_kafka_utils_abs_mod_n(s: str, n: int) -> None:
    h = reference_java_hash(s)
    expected = (0 if h == -(2**31) else abs(h)) % n  # Utils.abs: MIN_VALUE -> 0
    assert co.partition_for_group(s, n) == expected
    assert 0 <= co.partition_for_group(s) < 50


def test_partition_for_group_edge_cases() -> None:
    # Integer.MIN_VALUE: Math.abs would stay negative; Kafka's Utils.abs gives 0
    assert co.partition_for_group("polygenelubricants", 50) == 0
    assert co.partition_for_group("polygenelubricants", 7) == 0
    # a negative hash uses abs(), not a 0x7fffffff mask (the two differ here)
    s = "my-group"
    h = reference_java_hash(s)
    assert h < 0
    assert co.partition_for_group(s, 50) == (-h) % 50 != (h & 0x7FFFFFFF) % 50
    with pytest.raises(ValueError):
        co.partition_for_group("g", 0)


# ------------------------------------------------------------------------------------------
# Real broker data
# ------------------------------------------------------------------------------------------

#: 2010-01-01 .. 2035-01-01 in epoch milliseconds
PLAUSIBLE_MS = (1_262_304_000_000, 2_051_222_400_000)


def _offsets_partition_count(log_dir: Path) -> int | None:
    """Number of __consumer_offsets partitions the broker had, from its checkpoint file."""
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        path = log_dir / name
        if path.is_file():
            lines = path.read_text().splitlines()[2:]
            return sum(1 for line in lines if line.startswith("__consumer_offsets "))
    return None


def test_real_consumer_offsets_partitions(real_broker_data: Path) -> None:
    from segment_lib.log_file import open_log

    dirs = sorted(p for p in real_broker_data.rglob("__consumer_offsets-*") if p.is_dir())
    assert dirs, "no __consumer_offsets partitions in the fixtures"
    seen: dict[str, int] = {}
    for part_dir in dirs:
        partition = int(part_dir.name.rsplit("-", 1)[1])
        num_partitions = _offsets_partition_count(part_dir.parent)
        segments = sorted([*part_dir.glob("*.log"), *part_dir.glob("*.log.swap")])
        for seg in segments:
            with open_log(seg) as log:
                for batch, record in log.iter_records(allow_torn_tail=True):
                    where = f"{seg} offset {record.offset}"
                    rec = co.decode_offsets_record(record.key, record.value)
                    assert isinstance(
                        rec,
                        co.OffsetCommit
                        | co.GroupMetadata
                        | co.Tombstone
                        | co.CoordinatorRecord
                        | co.UnknownRecord,
                    ), where
                    seen[type(rec).__name__] = seen.get(type(rec).__name__, 0) + 1
                    # broker-written bytes are canonical: re-encoding reproduces them exactly
                    assert co.encode_record(rec) == (record.key, record.value), where
                    if isinstance(rec, co.OffsetCommit):
                        assert rec.group and rec.topic, where
                        assert rec.partition >= 0 and rec.offset >= 0, where
                        assert PLAUSIBLE_MS[0] < rec.commit_timestamp < PLAUSIBLE_MS[1], where
                        assert rec.expire_timestamp == -1 or (
                            rec.expire_timestamp > rec.commit_timestamp
                        ), where
                    if isinstance(rec, co.GroupMetadata):
                        assert rec.group and rec.generation >= 0, where
                        if rec.current_state_timestamp != -1:
                            assert PLAUSIBLE_MS[0] < rec.current_state_timestamp < PLAUSIBLE_MS[1]
                        for m in rec.members:
                            assert m.member_id and m.session_timeout > 0, where
                    group = getattr(rec, "group", None)
                    if group is not None and num_partitions == 50:
                        assert co.partition_for_group(group) == partition, where
                    # Kafka 0.10.1 (inter-broker protocol < 2.1) writes OffsetCommitValue v1
                    # and, since KIP-62, GroupMetadataValue v1, in magic 1 messages.
                    if "xpxwo100" in str(seg) and isinstance(
                        rec, co.OffsetCommit | co.GroupMetadata
                    ):
                        assert rec.value_version == 1, where
                        assert batch.magic == 1
    assert seen.get("OffsetCommit", 0) > 0 and seen.get("GroupMetadata", 0) > 0
    assert seen.get("Tombstone", 0) > 0
