"""Any ``__consumer_offsets`` record: decode by record type, encode back to Kafka's bytes.

:func:`decode_offsets_record` reads the key's int16 record type and hands key and value to
:mod:`.offset_commit`, :mod:`.group_metadata` or :mod:`.consumer_group`; the contract (what
each input decodes to, what raises) is the package docstring's. :func:`encode_record` is its
inverse: for broker-written bytes ``encode_record(decode_offsets_record(k, v)) == (k, v)``.
"""

from __future__ import annotations

from segment_lib.consumer_offsets._wire import I16, Reader
from segment_lib.consumer_offsets.consumer_group import (
    encode_coordinator_key,
    encode_coordinator_value,
    read_coordinator_key,
    read_coordinator_value,
)
from segment_lib.consumer_offsets.group_metadata import (
    GROUP_METADATA_VALUE_VERSIONS,
    encode_group_metadata,
    encode_group_metadata_key,
    read_group_metadata_key,
    read_group_metadata_value,
)
from segment_lib.consumer_offsets.model import (
    GROUP_METADATA_KEY_VERSION,
    RECORD_TYPE_NAMES,
    CoordinatorKey,
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
    OFFSET_COMMIT_KEY_VERSIONS,
    OFFSET_COMMIT_VALUE_VERSIONS,
    encode_offset_commit,
    encode_offset_commit_key,
    read_offset_commit_key,
    read_offset_commit_value,
)
from segment_lib.errors import CorruptRecordError

__all__ = ["decode_offsets_record", "encode_key", "encode_record"]


def _as_bytes(buf: bytes | bytearray | memoryview) -> bytes:
    return buf if isinstance(buf, bytes) else bytes(buf)


def decode_offsets_record(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
) -> OffsetsRecord:
    """Decode one ``__consumer_offsets`` record (see the package docstring of
    :mod:`segment_lib.consumer_offsets` for the contract).

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
    kr = Reader(kb, "key")
    record_type = kr.i16("record type")

    decoded_key: OffsetsKey
    if record_type in OFFSET_COMMIT_KEY_VERSIONS:
        decoded_key = read_offset_commit_key(kr, record_type)
    elif record_type == GROUP_METADATA_KEY_VERSION:
        decoded_key = read_group_metadata_key(kr, record_type)
    elif record_type in RECORD_TYPE_NAMES:
        decoded_key = read_coordinator_key(kr, record_type)
    else:
        # Kafka's loaders skip unknown record types (newer brokers), so do we.
        return UnknownRecord(record_type, kb, vb, f"unknown record type {record_type}")

    if vb is None:
        return Tombstone(decoded_key)

    if isinstance(decoded_key, CoordinatorKey):
        return read_coordinator_value(decoded_key, kb, vb)

    vr = Reader(vb, "value")
    version = vr.i16("value version")
    if isinstance(decoded_key, OffsetCommitKey):
        if version not in OFFSET_COMMIT_VALUE_VERSIONS:
            return UnknownRecord(
                record_type, kb, vb, f"unknown OffsetCommitValue version {version}", decoded_key
            )
        return read_offset_commit_value(vr, decoded_key, version)
    if version not in GROUP_METADATA_VALUE_VERSIONS:
        return UnknownRecord(
            record_type, kb, vb, f"unknown GroupMetadataValue version {version}", decoded_key
        )
    return read_group_metadata_value(vr, decoded_key, version)


def encode_key(key: OffsetsKey) -> bytes:
    """Key bytes for any decoded key (e.g. to write a :class:`Tombstone`)."""
    if isinstance(key, OffsetCommitKey):
        return encode_offset_commit_key(key.group, key.topic, key.partition, version=key.version)
    if isinstance(key, GroupMetadataKey):
        if key.version != GROUP_METADATA_KEY_VERSION:
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
        return key, I16.pack(record.value_version) + record.raw_value
    return key, encode_coordinator_value(
        record.key.record_type, record.value, version=record.value_version
    )
