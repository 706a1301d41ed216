"""Offset commits (record types 0 and 1): read from and encode to Kafka's bytes.

Key: group string, topic string, partition int32 (type 0, written by 0.8.2, and type 1 share
the layout). Value versions 0..4 (see :func:`encode_offset_commit_value` for what each
carries; v4 is flexible with the topic id as tagged field 0). Readers take a
:class:`~segment_lib.consumer_offsets._wire.Reader` positioned after the key's record type or
the value's version and raise ``CorruptRecordError`` on malformed bytes; encoders refuse a
field the version cannot carry with ``ValueError``.
"""

from __future__ import annotations

import uuid
from typing import Final

from segment_lib.consumer_offsets._wire import RawTags, Reader, Writer, check_raw_tags, raw_tags
from segment_lib.consumer_offsets.model import FIRST_FLEXIBLE, OffsetCommit, OffsetCommitKey

__all__ = [
    "OFFSET_COMMIT_KEY_VERSIONS",
    "OFFSET_COMMIT_VALUE_VERSIONS",
    "encode_offset_commit",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "read_offset_commit_key",
    "read_offset_commit_value",
]

OFFSET_COMMIT_KEY_VERSIONS: Final = (0, 1)
OFFSET_COMMIT_VALUE_VERSIONS: Final = range(0, 5)
#: OffsetCommitValue v4 tagged field: topicId (KAFKA-19141, Kafka 4.1)
_TAG_TOPIC_ID: Final = 0
_ZERO_UUID: Final = uuid.UUID(int=0)


def read_offset_commit_key(r: Reader, version: int) -> OffsetCommitKey:
    group = r.text("group")
    topic = r.text("topic")
    partition = r.i32("partition")
    r.done("OffsetCommitKey")
    return OffsetCommitKey(group, topic, partition, version)


def read_offset_commit_value(r: Reader, key: OffsetCommitKey, version: int) -> OffsetCommit:
    flexible = version >= FIRST_FLEXIBLE
    offset = r.i64("offset")
    leader_epoch = r.i32("leaderEpoch") if version >= 3 else -1
    metadata = r.text("metadata", compact=flexible)
    commit_ts = r.i64("commitTimestamp")
    expire_ts = r.i64("expireTimestamp") if version == 1 else -1
    topic_id: uuid.UUID | None = None
    unknown: RawTags = ()
    if flexible:
        found = r.tagged_fields("OffsetCommitValue")
        for tag, start, size in found:
            if tag == _TAG_TOPIC_ID:
                sub = r.sub(start, size)
                topic_id = sub.uuid("topicId")
                sub.done("tagged field topicId")
        unknown = raw_tags(r, found, (_TAG_TOPIC_ID,))
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
    if version not in OFFSET_COMMIT_KEY_VERSIONS:
        raise ValueError(f"OffsetCommitKey version must be 0 or 1, not {version}")
    w = Writer()
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
    unknown_tags: RawTags = (),
) -> bytes:
    """Value of an offset commit in ``version`` 0..4.

    What each version can carry: ``expire_timestamp`` only v1 (written even when -1),
    ``leader_epoch`` v3+, ``topic_id`` and ``unknown_tags`` v4 (flexible). A non-default value
    a version cannot carry raises ``ValueError`` (Kafka would drop those "ignorable" fields).
    Kafka itself writes v1 when an expire timestamp is set, else v3 (v4 from 4.1 with a topic
    id).
    """
    if version not in OFFSET_COMMIT_VALUE_VERSIONS:
        raise ValueError(f"OffsetCommitValue version must be 0..4, not {version}")
    if leader_epoch != -1 and version < 3:
        raise ValueError(f"OffsetCommitValue v{version} has no leaderEpoch (v3+)")
    if expire_timestamp != -1 and version != 1:
        raise ValueError(f"OffsetCommitValue v{version} has no expireTimestamp (v1 only)")
    flexible = version >= FIRST_FLEXIBLE
    if topic_id is not None and not flexible:
        raise ValueError(f"OffsetCommitValue v{version} has no topicId (v4 tagged field)")
    check_raw_tags(unknown_tags, flexible, "OffsetCommitValue")
    w = Writer()
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
