"""Tests for segment_lib.metadata_files (meta.properties and partition.metadata)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from pathlib import Path

import pytest
from _aux_fixtures import files_named
from hypothesis import given
from hypothesis import strategies as st

from segment_lib.errors import InvalidMetadataFileError
from segment_lib.metadata_files import (
    MetaProperties,
    PartitionMetadata,
    decode_kafka_uuid,
    encode_kafka_uuid,
    format_meta_properties,
    format_partition_metadata,
    parse_java_properties,
    parse_meta_properties,
    parse_partition_metadata,
    read_meta_properties,
    read_partition_metadata,
)
from segment_lib.names import parse_partition_dir_name

# Kafka's Uuid.METADATA_TOPIC_ID is new Uuid(0, 1); its string form is this.
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"

# ---- Kafka UUIDs -----------------------------------------------------------------------------


def test_kafka_uuid_encoding() -> None:
    assert decode_kafka_uuid(METADATA_TOPIC_ID) == uuid.UUID(int=1)
    assert encode_kafka_uuid(uuid.UUID(int=1)) == METADATA_TOPIC_ID
    assert decode_kafka_uuid(METADATA_TOPIC_ID + "==") == uuid.UUID(int=1)  # padding optional
    # '-' and '_' are the URL-safe alphabet's 62 and 63.
    assert decode_kafka_uuid("____________________-w").bytes == b"\xff" * 15 + b"\xfb"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "AAAA",
        "AAAAAAAAAAAAAAAAAAAAAQAA",
        "AAAAAAAAAAAAAAAAAAAA+Q",
        "AAAAAAAAAAAAAAAAAAAAA",
        "x" * 25,
    ],
)
def test_bad_kafka_uuids(text: str) -> None:
    with pytest.raises(ValueError):
        decode_kafka_uuid(text)


@given(st.uuids())
def test_kafka_uuid_round_trip(value: uuid.UUID) -> None:
    text = encode_kafka_uuid(value)
    assert len(text) == 22
    assert decode_kafka_uuid(text) == value


# ---- Java properties -------------------------------------------------------------------------


def test_java_properties_syntax() -> None:
    data = (
        b"# comment\n"
        b"! also a comment\n"
        b"   \n"
        b"  a=1\n"
        b"b : 2\n"
        b"c 3\n"
        b"d=x\\\n"
        b"    y\n"
        b"e\\=f=g\\u0041\\t\n"
        b"empty=\n"
        b"h==5\r\n"
        b"a=again\r"
        b"last"
    )
    props = {k: v for k, (v, _) in parse_java_properties(data).items()}
    assert props == {
        "a": "again",  # later duplicates win
        "b": "2",
        "c": "3",
        "d": "xy",  # continuation drops the next line's leading blanks
        "e=f": "gA\t",
        "empty": "",
        "h": "=5",  # only one separator is skipped
        "last": "",
    }
    positions = {k: p for k, (_, p) in parse_java_properties(data).items()}
    assert positions["b"] == data.index(b"b : 2")
    assert positions["a"] == data.index(b"a=again")
    assert positions["d"] == data.index(b"d=x")


def test_java_properties_bad_unicode_escape() -> None:
    data = b"a=1\nkey=\\u12G4\n"
    with pytest.raises(InvalidMetadataFileError) as info:
        parse_java_properties(data)
    assert info.value.position == 4


# ---- meta.properties -------------------------------------------------------------------------

ZK_META = b"#\n#Fri Nov 18 10:00:00 CST 2016\nversion=0\nbroker.id=0\n"
KRAFT_META = (
    b"#\n#Mon Jan 29 10:16:22 CET 2024\nnode.id=1\ndirectory.id=hmVkgd6wQOGANqVGvXUZVA\n"
    b"version=1\ncluster.id=ljAoerGESXi5val3QKEeFQ\n"
)


def test_parse_zookeeper_era_meta_properties() -> None:
    meta = parse_meta_properties(ZK_META)
    assert meta == MetaProperties(version=0, node_id=0)
    assert meta.properties == {"version": "0", "broker.id": "0"}


def test_parse_kraft_meta_properties() -> None:
    meta = parse_meta_properties(KRAFT_META)
    assert meta == MetaProperties(1, 1, "ljAoerGESXi5val3QKEeFQ", "hmVkgd6wQOGANqVGvXUZVA")


def test_meta_properties_kafka_quirks() -> None:
    # No version means 0; version 0 ignores node.id; version is trimmed, ids are not.
    assert parse_meta_properties(b"node.id=3\n").node_id is None
    assert parse_meta_properties(b"version= 0 \nbroker.id=4\n").node_id == 4
    assert parse_meta_properties(b"").version == 0


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"version=2\n", 0),
        (b"version=x\n", 0),
        (b"#\nversion=0\nbroker.id=one\n", 2),
        (b"#\nversion=0\nbroker.id=1 \n", 2),  # Integer.parseInt does not trim
        (b"version=0\nbroker.id=2147483648\n", 1),
        (b"version=1\ncluster.id=c\n", None),  # node.id missing
        (b"version=1\nnode.id=1\n", None),  # cluster.id missing
        (b"version=1\nnode.id=1\ncluster.id=c\ndirectory.id=nope\n", 3),
    ],
)
def test_bad_meta_properties(data: bytes, line: int | None) -> None:
    with pytest.raises(InvalidMetadataFileError) as info:
        parse_meta_properties(data)
    if line is None:
        assert info.value.position == len(data)
    else:
        assert info.value.position == sum(len(x) + 1 for x in data.split(b"\n")[:line])


def test_meta_properties_writer_round_trip(tmp_path: Path) -> None:
    for meta in (
        MetaProperties(0, 5),
        MetaProperties(0),
        MetaProperties(1, 2, "cl:us=ter #1 é", encode_kafka_uuid(uuid.UUID(int=7))),
    ):
        data = format_meta_properties(meta)
        assert data.startswith(b"#\n")
        path = tmp_path / "meta.properties"
        path.write_bytes(data)
        assert read_meta_properties(path) == meta
    assert format_meta_properties(MetaProperties(0, 5)) == b"#\nversion=0\nbroker.id=5\n"
    extra = MetaProperties(0, 1, properties={"custom.key": "v", "broker.id": "ignored"})
    assert parse_meta_properties(format_meta_properties(extra)).properties == {
        "version": "0",
        "broker.id": "1",
        "custom.key": "v",
    }
    with pytest.raises(ValueError):
        format_meta_properties(MetaProperties(1, None, "c"))
    with pytest.raises(ValueError):
        format_meta_properties(MetaProperties(3))


def test_read_meta_properties_names_path(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    path.write_bytes(b"#\nversion=7\n")
    with pytest.raises(InvalidMetadataFileError) as info:
        read_meta_properties(path)
    assert (info.value.path, info.value.position) == (str(path), 2)


# ---- partition.metadata ----------------------------------------------------------------------


def test_parse_partition_metadata() -> None:
    pm = parse_partition_metadata(b"version: 0\ntopic_id: " + METADATA_TOPIC_ID.encode())
    assert pm == PartitionMetadata(0, METADATA_TOPIC_ID)
    assert pm.topic_uuid == uuid.UUID(int=1)
    # Kafka accepts later versions (downgrades), a trailing newline and extra lines.
    assert (
        parse_partition_metadata(b"version: 3\ntopic_id: AAAAAAAAAAAAAAAAAAAAAg\n\nx").version == 3
    )
    assert parse_partition_metadata(b"version: 0\r\ntopic_id:\tAAAAAAAAAAAAAAAAAAAAAg").version == 0


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b"", 0),
        (b"version: 0", 10),  # no topic_id line
        (b"version: 0\n", 11),
        (b"version:0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 0),
        (b"version: x\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 0),
        (b"version: -1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 0),
        (b"vers: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 0),
        (b"version: 0\ntopic: AAAAAAAAAAAAAAAAAAAAAQ", 11),
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", 11),  # zero UUID
        (b"version: 0\ntopic_id: AAAA", 11),
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ: x", 11),
        (b"version: 0\n\xfftopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 11),  # invalid UTF-8
        ("vérsion: 0\nx".encode(), 0),
        (b"version: 0\n\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 11),  # blank second line
        ("version: 0\ntopic_id: é".encode(), 11),
    ],
)
def test_bad_partition_metadata(data: bytes, position: int) -> None:
    with pytest.raises(InvalidMetadataFileError) as info:
        parse_partition_metadata(data)
    assert info.value.position == position


def test_partition_metadata_writer(tmp_path: Path) -> None:
    data = format_partition_metadata(uuid.UUID(int=1))
    assert data == b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    path = tmp_path / "partition.metadata"
    path.write_bytes(data)
    assert read_partition_metadata(path) == PartitionMetadata(0, METADATA_TOPIC_ID)
    with pytest.raises(ValueError):
        format_partition_metadata(uuid.UUID(int=0))
    path.write_bytes(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(InvalidMetadataFileError) as info:
        read_partition_metadata(path)
    assert (info.value.path, info.value.position) == (str(path), 11)


# ---- real broker data ------------------------------------------------------------------------


def test_real_meta_properties(real_broker_data: Path) -> None:
    paths = files_named(real_broker_data, "meta.properties")
    assert paths
    versions = set()
    for path in paths:
        meta = read_meta_properties(path)
        versions.add(meta.version)
        if meta.version == 1:
            assert meta.node_id is not None and meta.node_id >= 0
            assert meta.cluster_id
        else:
            assert meta.node_id is not None and meta.node_id >= 0  # every fixture has broker.id
        # The parsed fields survive a write / re-read.
        assert parse_meta_properties(format_meta_properties(meta)) == meta
    assert versions == {0, 1}


def test_real_partition_metadata(real_broker_data: Path) -> None:
    paths = files_named(real_broker_data, "partition.metadata")
    assert paths
    ids_by_topic: dict[tuple[Path, str], set[str]] = defaultdict(set)
    for path in paths:
        data = path.read_bytes()
        pm = read_partition_metadata(path)
        assert pm.version == 0
        # Kafka writes exactly this text, so re-encoding reproduces the file byte for byte.
        assert format_partition_metadata(pm.topic_id, pm.version) == data
        topic = parse_partition_dir_name(path.parent.name).topic
        if topic == "__cluster_metadata":
            assert pm.topic_id == METADATA_TOPIC_ID
        else:
            assert pm.topic_id != METADATA_TOPIC_ID
        ids_by_topic[(path.parent.parent, topic)].add(pm.topic_id)
    # All partitions of one topic in one log directory share the topic id.
    assert all(len(ids) == 1 for ids in ids_by_topic.values())
    assert any(t == "__cluster_metadata" for _, t in ids_by_topic)
