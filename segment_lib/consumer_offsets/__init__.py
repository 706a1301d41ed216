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

Modules (this package's ``__init__`` re-exports the public API; import from here):

* :mod:`.model`: the decoded forms (keys, values, tombstones, unknown records) and the
  record-type table;
* :mod:`.offset_commit` (types 0, 1), :mod:`.group_metadata` (type 2),
  :mod:`.consumer_group` (types 3..24, KIP-848 values): read and encode one kind;
* :mod:`.codec`: :func:`decode_offsets_record` and :func:`encode_record` for any record;
* :mod:`.partitioner`: :func:`partition_for_group`;
* :mod:`._wire`: the Kafka protocol reader and writer underneath (private).
"""

from segment_lib.consumer_offsets.codec import decode_offsets_record, encode_key, encode_record
from segment_lib.consumer_offsets.consumer_group import (
    CONSUMER_GROUP_RECORD_TYPES,
    encode_coordinator_key,
    encode_coordinator_value,
)
from segment_lib.consumer_offsets.group_metadata import (
    encode_group_metadata,
    encode_group_metadata_key,
    encode_group_metadata_value,
)
from segment_lib.consumer_offsets.model import (
    RECORD_TYPE_NAMES,
    CoordinatorKey,
    CoordinatorRecord,
    GroupMember,
    GroupMetadata,
    GroupMetadataKey,
    OffsetCommit,
    OffsetCommitKey,
    OffsetsKey,
    OffsetsRecord,
    Tombstone,
    UnknownRecord,
)
from segment_lib.consumer_offsets.offset_commit import (
    encode_offset_commit,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from segment_lib.consumer_offsets.partitioner import (
    DEFAULT_NUM_PARTITIONS,
    java_string_hashcode,
    partition_for_group,
)

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
