"""``segment_lib.cluster_metadata``: metadata record values decoded as Kafka's serde reads them
and its JSON converters print them; unknown and damaged values reported, never raised; SCRAM
secrets kept out; files (segments and snapshots) read with offsets, times and control types.

The byte layouts here are written by hand with the protocol writer, field by field from Kafka's
JSON schemas; the real-broker fixture test and tests/real_kafka/test_metadata_dump_vs_kafka.py
check the same decoder against bytes Kafka wrote and against kafka-dump-log's own output.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_archive_dev.writer.encode import WriteRecord, encode_batch_v2

from segment_lib.cluster_metadata import (
    RECORD_TYPES,
    UNKNOWN_TYPE,
    decode_control_value,
    decode_metadata_record,
    iter_metadata_file,
    kafka_json,
    parse_snapshot_name,
)
from segment_lib.cluster_metadata.codec import java_double
from segment_lib.cluster_metadata.schemas import CONTROL_MESSAGES, METADATA_MESSAGES
from segment_lib.consumer_offsets._wire import Writer
from segment_lib.control import ControlType
from segment_lib.errors import CorruptRecordError
from segment_lib.records import Codec, Header

TOPIC_ID = uuid.UUID("00000000-0000-0000-0000-000000000001")
TOPIC_ID_TEXT = "AAAAAAAAAAAAAAAAAAAAAQ"  # Kafka's Uuid.toString() of TOPIC_ID


def _header(w: Writer, type_id: int, version: int, frame: int = 1) -> None:
    w.uvarint(frame)
    w.uvarint(type_id)
    w.uvarint(version)


def topic_record(name: str = "orders", topic_id: uuid.UUID = TOPIC_ID) -> bytes:
    w = Writer()
    _header(w, 2, 0)
    w.string(name, "name", compact=True)
    w.uuid(topic_id, "topicId")
    w.tagged_fields(())
    return w.getvalue()


def config_record(resource: str, name: str, value: str | None) -> bytes:
    w = Writer()
    _header(w, 4, 0)
    w.i8(2, "resourceType")
    w.string(resource, "resourceName", compact=True)
    w.string(name, "name", compact=True)
    w.string(value, "value", nullable=True, compact=True)
    w.tagged_fields(())
    return w.getvalue()


def scram_record() -> bytes:
    w = Writer()
    _header(w, 11, 0)
    w.string("alice", "name", compact=True)
    w.i8(1, "mechanism")
    w.blob(b"salty", "salt", compact=True)
    w.blob(b"stored-key", "storedKey", compact=True)
    w.blob(b"server-key", "serverKey", compact=True)
    w.i32(8192, "iterations")
    w.tagged_fields(())
    return w.getvalue()


def _int32_array(values: list[int]) -> bytes:
    w = Writer()
    w.array_len(len(values), compact=True)
    for v in values:
        w.i32(v, "v")
    return w.getvalue()


def partition_change_record(tags: list[tuple[int, bytes]]) -> bytes:
    w = Writer()
    _header(w, 5, 0)
    w.i32(3, "partitionId")
    w.uuid(TOPIC_ID, "topicId")
    w.tagged_fields(tags)
    return w.getvalue()


def test_topic_record_decodes_as_kafkas_json_converter_prints_it() -> None:
    rec = decode_metadata_record(topic_record())
    assert (rec.type_name, rec.type_id, rec.version, rec.error) == ("TOPIC_RECORD", 2, 0, None)
    assert rec.data == {"name": "orders", "topicId": TOPIC_ID_TEXT}
    assert kafka_json({"type": rec.type_name, "version": rec.version, "data": rec.data}) == (
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"orders",'
        '"topicId":"AAAAAAAAAAAAAAAAAAAAAQ"}}'
    )


def test_uuid_is_url_safe_base64_without_padding() -> None:
    raw = bytes(range(250, 256)) + bytes(10)
    rec = decode_metadata_record(topic_record(topic_id=uuid.UUID(bytes=raw)))
    assert rec.data["topicId"] == base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert "-" in rec.data["topicId"] or "_" in rec.data["topicId"]


def test_nullable_config_value_is_none_for_a_deleted_override() -> None:
    rec = decode_metadata_record(config_record("orders", "retention.ms", None))
    assert rec.type_name == "CONFIG_RECORD"
    assert rec.data == {
        "resourceType": 2,
        "resourceName": "orders",
        "name": "retention.ms",
        "value": None,
    }


def test_scram_secrets_never_enter_data_unless_asked() -> None:
    rec = decode_metadata_record(scram_record())
    assert rec.type_name == "USER_SCRAM_CREDENTIAL_RECORD"
    assert rec.data == {"name": "alice", "mechanism": 1, "iterations": 8192}
    raw = decode_metadata_record(scram_record(), include_secrets=True)
    assert raw.data["salt"] == base64.b64encode(b"salty").decode()
    assert list(raw.data) == ["name", "mechanism", "salt", "storedKey", "serverKey", "iterations"]


def test_tagged_fields_at_their_default_are_omitted_and_others_printed() -> None:
    plain = decode_metadata_record(partition_change_record([]))
    assert plain.data == {"partitionId": 3, "topicId": TOPIC_ID_TEXT}
    leader = (7).to_bytes(4, "big")
    isr = _int32_array([1, 2])
    rec = decode_metadata_record(partition_change_record([(1, leader), (0, isr)]))
    # schema order, not tag order
    assert list(rec.data.items()) == [
        ("partitionId", 3),
        ("topicId", TOPIC_ID_TEXT),
        ("isr", [1, 2]),
        ("leader", 7),
    ]
    at_default = (-2).to_bytes(4, "big", signed=True)  # leader's schema default
    assert "leader" not in decode_metadata_record(partition_change_record([(1, at_default)])).data


def test_unknown_tagged_fields_are_skipped() -> None:
    rec = decode_metadata_record(partition_change_record([(99, b"\x01\x02")]))
    assert rec.error is None
    assert rec.data == {"partitionId": 3, "topicId": TOPIC_ID_TEXT}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"\x01\x7f\x00\x00", "unknown metadata record type 127"),
        (b"\x01\x02\x09\x00", "TOPIC_RECORD version 9 is not known"),
        (b"\x00\x02\x00\x00", "unsupported frame version 0"),
        (b"\x02\x02\x00\x00", "unsupported frame version 2"),
        (topic_record() + b"\x00", "1 unexpected bytes after the last field of TOPIC_RECORD"),
        (topic_record()[:9], "truncated"),
        (b"", "frame version truncated"),
    ],
)
def test_bad_values_are_unknown_records_naming_where_and_the_byte(
    value: bytes, message: str
) -> None:
    rec = decode_metadata_record(value, where="m.log offset 5", position=100)
    assert rec.type_name == UNKNOWN_TYPE
    assert rec.data == {}
    assert rec.error is not None
    assert message in rec.error
    assert rec.error.startswith("m.log offset 5 at byte 1")


def test_unknown_record_keeps_the_type_and_version_it_read() -> None:
    rec = decode_metadata_record(b"\x01\x02\x09\x00")
    assert (rec.type_id, rec.version) == (2, 9)


def test_schema_table_covers_every_record_type_kafka_writes() -> None:
    # MetadataRecordType of Kafka 4.4: 0..29; 6, 13 and 16 were retired before KRaft shipped
    assert set(RECORD_TYPES) == set(range(30)) - {6, 13, 16}
    assert RECORD_TYPES[2] == "TOPIC_RECORD"
    assert RECORD_TYPES[21] == "ZK_MIGRATION_STATE_RECORD"
    assert RECORD_TYPES[28] == "CLEAR_ELR_RECORD"
    names = [m.type_name for m in METADATA_MESSAGES]
    assert len(names) == len(set(names))
    assert set(CONTROL_MESSAGES) == {
        ControlType.LEADER_CHANGE.name,
        ControlType.SNAPSHOT_HEADER.name,
        ControlType.SNAPSHOT_FOOTER.name,
        ControlType.KRAFT_VERSION.name,
        ControlType.KRAFT_VOTERS.name,
    }


def test_control_values_decode_at_version_zero() -> None:
    w = Writer()
    w.i16(0, "version")
    w.i64(1_700_000_000_000, "lastContainedLogTimestamp")
    w.tagged_fields(())
    assert decode_control_value("SNAPSHOT_HEADER", w.getvalue()) == {
        "version": 0,
        "lastContainedLogTimestamp": 1_700_000_000_000,
    }
    assert decode_control_value("COMMIT", b"") is None
    with pytest.raises(CorruptRecordError) as err:
        decode_control_value("SNAPSHOT_FOOTER", b"\x00", where="x.checkpoint", position=40)
    assert err.value.path == "x.checkpoint"
    assert err.value.position == 40


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1024.0, "1024.0"),
        (0.5, "0.5"),
        (1e7, "1.0E7"),
        (12345678.0, "1.2345678E7"),
        (1.5e-5, "1.5E-5"),
        (0.001, "0.001"),
        (-2.5e20, "-2.5E20"),
        (0.0, "0.0"),
    ],
)
def test_doubles_print_as_java_does(value: float, text: str) -> None:
    assert java_double(value) == text


def test_kafka_json_escapes_as_jackson_does() -> None:
    assert kafka_json({"a": 'x\n\x01\u00e9"', "b": [None, True, 1]}) == (
        '{"a":"x\\n\\u0001\u00e9\\"","b":[null,true,1]}'
    )


def test_snapshot_names() -> None:
    assert parse_snapshot_name("00000000000000001234-0000000007.checkpoint") == (1234, 7)
    assert parse_snapshot_name("00000000000000001234-0000000007.checkpoint.part") is None
    assert parse_snapshot_name("00000000000000001234.log") is None


def _write_log(path: Path, values: list[bytes], base_offset: int = 0) -> None:
    batch = encode_batch_v2(
        base_offset,
        [WriteRecord(None, v, (), 1_700_000_000_000 + i) for i, v in enumerate(values)],
        partition_leader_epoch=3,
    )
    path.write_bytes(batch.data)


def test_iter_metadata_file_reads_a_segment_and_names_bad_records(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000010.log"
    _write_log(log, [topic_record(), b"\x01\x7f\x00\x00", scram_record()], base_offset=10)
    entries = list(iter_metadata_file(log))
    assert [e.offset for e in entries] == [10, 11, 12]
    assert [e.timestamp_ms for e in entries] == [1_700_000_000_000 + i for i in range(3)]
    assert all(e.control is None and e.snapshot_id is None for e in entries)
    records = [e.record for e in entries]
    assert records[0] is not None and records[0].type_name == "TOPIC_RECORD"
    assert records[1] is not None and records[1].type_name == UNKNOWN_TYPE
    assert records[1].error is not None
    assert str(log) in records[1].error and "offset 11" in records[1].error
    assert records[2] is not None and "salt" not in records[2].data


def test_iter_metadata_file_takes_the_snapshot_id_from_the_name(tmp_path: Path) -> None:
    snap = tmp_path / "00000000000000000042-0000000003.checkpoint"
    _write_log(snap, [topic_record()])
    (entry,) = iter_metadata_file(snap)
    assert entry.snapshot_id == "42-3"


def test_control_batches_are_entries_with_their_type(tmp_path: Path) -> None:
    from kafka_archive_dev.writer.encode import encode_control_batch

    log = tmp_path / "00000000000000000000.log"
    marker = encode_control_batch(
        0, ControlType.COMMIT, producer_id=1, producer_epoch=0, timestamp=5
    )
    log.write_bytes(marker.data)
    (entry,) = iter_metadata_file(log)
    assert (entry.record, entry.control) == (None, "COMMIT")


_ = Header  # headers are never written on metadata records


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_raise(value: bytes) -> None:
    rec = decode_metadata_record(value, where="fuzz")
    assert rec.type_name in set(RECORD_TYPES.values()) | {UNKNOWN_TYPE}
    assert (rec.error is None) == (rec.type_name != UNKNOWN_TYPE)


_SEEDS = [topic_record(), config_record("t", "n", "v"), scram_record()]


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(_SEEDS),
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 255)), max_size=4),
    st.integers(0, 300),
)
def test_mutated_records_never_raise(seed: bytes, flips: list[tuple[int, int]], cut: int) -> None:
    buf = bytearray(seed)
    for pos, byte in flips:
        if buf:
            buf[pos % len(buf)] = byte
    rec = decode_metadata_record(bytes(buf[: max(cut, 3)]), where="fuzz")
    assert (rec.error is None) == (rec.type_name != UNKNOWN_TYPE)
    for name in ("LEADER_CHANGE", "KRAFT_VOTERS", "SNAPSHOT_HEADER"):
        try:
            decode_control_value(name, bytes(buf))
        except CorruptRecordError:
            pass


def _seed_file() -> bytes:
    return encode_batch_v2(
        0,
        [WriteRecord(None, v, (), 1_700_000_000_000) for v in _SEEDS],
        partition_leader_epoch=1,
    ).data


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6),
    st.integers(0, 10_000),
    st.booleans(),
)
def test_mutated_metadata_files_only_raise_segment_errors(
    flips: list[tuple[int, int]], cut: int, verify_crc: bool
) -> None:
    """A damaged segment or snapshot: decoded records are UNKNOWN or the read stops with the
    typed error naming the byte, never anything else (CRC checks off: the decoder sees the
    garbage)."""
    from segment_lib.cluster_metadata.files import iter_metadata_buffer
    from segment_lib.errors import SegmentError
    from segment_lib.log_file import LogBuffer

    buf = bytearray(_seed_file())
    for pos, byte in flips:
        buf[pos % len(buf)] = byte
    data = bytes(buf[: max(cut, 1)])
    try:
        with LogBuffer(data, "fuzz.log", verify_crc=verify_crc) as log:
            for entry in iter_metadata_buffer(log, allow_torn_tail=True):
                if entry.record is not None:
                    assert (entry.record.error is None) == (entry.record.type_name != "UNKNOWN")
    except SegmentError as exc:
        assert exc.path is not None and exc.path.startswith("fuzz.log")


def test_a_control_batch_without_a_key_is_named(tmp_path: Path) -> None:
    from segment_lib.batch_encode import assemble_v2, encode_record_v2, v2_attributes
    from segment_lib.errors import SegmentError

    payload = encode_record_v2(0, 0, None, b"x", ())
    batch = assemble_v2(
        base_offset=7,
        partition_leader_epoch=1,
        attributes=v2_attributes(Codec.NONE, False, False, True, False),
        last_offset_delta=0,
        first_timestamp=1,
        max_timestamp=1,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        record_count=1,
        payload=payload,
    )
    log = tmp_path / "00000000000000000007.log"
    log.write_bytes(batch)
    with pytest.raises(SegmentError) as err:
        list(iter_metadata_file(log))
    assert err.value.path is not None and str(log) in err.value.path
    assert "offset 7" in err.value.path
