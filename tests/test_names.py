"""Tests for segment_lib.names: segment file names, partition directory names, classification."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from segment_lib.errors import InvalidFileNameError
from segment_lib.names import (
    FileKind,
    PartitionDirName,
    classify_file,
    format_partition_dir_name,
    parse_partition_dir_name,
    parse_segment_file_name,
    segment_file_name,
)

INT64_MAX = 2**63 - 1


@pytest.mark.parametrize("suffix", [".log", ".index", ".timeindex", ".txnindex", ".snapshot"])
@pytest.mark.parametrize("offset", [0, 1, 90867, INT64_MAX])
def test_segment_name_round_trip(offset: int, suffix: str) -> None:
    name = segment_file_name(offset, suffix)  # type: ignore[arg-type]
    assert len(name) == 20 + len(suffix)
    assert name[:20].isdigit()
    assert parse_segment_file_name(name) == (offset, suffix, None)


def test_segment_name_examples() -> None:
    # Spelled out by hand from Kafka's 20-digit zero padding.
    assert segment_file_name(17212, ".log") == "00000000000000017212.log"
    assert parse_segment_file_name("00000000000000000000.log.swap") == (0, ".log", ".swap")
    assert parse_segment_file_name("00000000000000000000.timeindex.cleaned") == (
        0,
        ".timeindex",
        ".cleaned",
    )
    assert parse_segment_file_name("00000000000000000042.snapshot.deleted") == (
        42,
        ".snapshot",
        ".deleted",
    )
    assert segment_file_name(5, ".index", ".swap") == "00000000000000000005.index.swap"


@pytest.mark.parametrize(
    "name",
    [
        "0.log",  # not padded
        "000000000000000000000.log",  # 21 digits
        "0000000000000000000.log",  # 19 digits
        "00000000000000000000.LOG",
        "00000000000000000000.log.bak",
        "00000000000000000000.log.swap.deleted",
        "00000000000000000000",
        "99999999999999999999.log",  # beyond int64
        "00000000000000000000.snapshot.swap",  # snapshots are never swapped
        "00000000000000000000.snapshot.cleaned",
        "0000000000000000000a.log",
        "٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠٠.log",  # non-ASCII digits
        "00000000000000000000-0000000001.checkpoint",
    ],
)
def test_bad_segment_names(name: str) -> None:
    with pytest.raises(InvalidFileNameError) as info:
        parse_segment_file_name(name)
    assert info.value.position is None
    assert repr(name) in str(info.value)


def test_segment_file_name_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        segment_file_name(-1, ".log")
    with pytest.raises(ValueError):
        segment_file_name(INT64_MAX + 1, ".log")
    with pytest.raises(ValueError):
        segment_file_name(0, ".kafka")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-0", PartitionDirName("orders", 0)),
        ("__consumer_offsets-37", PartitionDirName("__consumer_offsets", 37)),
        ("alter-reassignments-topic-1-1", PartitionDirName("alter-reassignments-topic-1", 1)),
        ("__confluent.support.metrics-0", PartitionDirName("__confluent.support.metrics", 0)),
        (
            "test-topic-0.2308294e39dc4a44ab8183f587805af2-delete",
            PartitionDirName("test-topic", 0, "delete", "2308294e39dc4a44ab8183f587805af2"),
        ),
        ("my.topic-12.abc-future", PartitionDirName("my.topic", 12, "future", "abc")),
        ("a-b.c-3.ff-stray", PartitionDirName("a-b.c", 3, "stray", "ff")),
        ("t-2147483647", PartitionDirName("t", 2**31 - 1)),
    ],
)
def test_partition_dir_names(name: str, expected: PartitionDirName) -> None:
    assert parse_partition_dir_name(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "orders",  # no dash
        "orders-",  # empty partition
        "-0",  # empty topic
        "orders-x",
        "orders-+1",
        "orders-2147483648",  # beyond int32
        "kafka-11292028351815590561",  # a test harness log dir, not a partition
        "orders-0-delete",  # suffix without .uniqueId
        "orders-0.-delete",
        "orders-0.abc-future-x",  # partition is "x"
        "bad topic-0",
        "orders-0.ab c-delete",
        "bootstrap.checkpoint",
        "x" * 250 + "-0",  # topic longer than 249
    ],
)
def test_bad_partition_dir_names(name: str) -> None:
    with pytest.raises(InvalidFileNameError):
        parse_partition_dir_name(name)


def test_format_partition_dir_name_round_trip() -> None:
    for state in (None, "delete", "future", "stray"):
        uid = None if state is None else "0123456789abcdef0123456789abcdef"
        name = format_partition_dir_name("a.b-c", 7, state, uid)
        assert parse_partition_dir_name(name) == PartitionDirName("a.b-c", 7, state, uid)


def test_delete_dir_name_caps_length_like_kafka() -> None:
    topic = "t" * 249
    uid = "f" * 32
    name = format_partition_dir_name(topic, 123, "delete", uid)
    assert len(name) == 255
    parsed = parse_partition_dir_name(name)
    assert topic.startswith(parsed.topic) and parsed.topic != topic
    assert (parsed.partition, parsed.state, parsed.unique_id) == (123, "delete", uid)
    # -future is not capped in Kafka.
    assert len(format_partition_dir_name(topic, 123, "future", uid)) > 255
    with pytest.raises(ValueError):
        format_partition_dir_name("t", 0, "delete")


@pytest.mark.parametrize(
    ("name", "kind", "temporary"),
    [
        ("recovery-point-offset-checkpoint", FileKind.OFFSET_CHECKPOINT, False),
        ("recovery-point-offset-checkpoint.tmp", FileKind.OFFSET_CHECKPOINT, True),
        ("replication-offset-checkpoint", FileKind.OFFSET_CHECKPOINT, False),
        ("log-start-offset-checkpoint", FileKind.OFFSET_CHECKPOINT, False),
        ("cleaner-offset-checkpoint", FileKind.OFFSET_CHECKPOINT, False),
        ("leader-epoch-checkpoint", FileKind.LEADER_EPOCH_CHECKPOINT, False),
        ("leader-epoch-checkpoint.tmp", FileKind.LEADER_EPOCH_CHECKPOINT, True),
        ("partition.metadata", FileKind.PARTITION_METADATA, False),
        ("meta.properties", FileKind.META_PROPERTIES, False),
        ("00000000000000007334-0000000001.checkpoint", FileKind.KRAFT_SNAPSHOT, False),
        ("00000000000000007334-0000000001.checkpoint.part", FileKind.KRAFT_SNAPSHOT, False),
        ("bootstrap.checkpoint", FileKind.BOOTSTRAP_CHECKPOINT, False),
        ("quorum-state", FileKind.QUORUM_STATE, False),
        (".kafka_cleanshutdown", FileKind.CLEAN_SHUTDOWN, False),
        (".lock", FileKind.LOCK, False),
        ("00000000000000000000.kafka", FileKind.UNKNOWN, False),  # Kafka 0.7 segment
        ("SOURCES.md", FileKind.UNKNOWN, False),
        ("", FileKind.UNKNOWN, False),
        (".tmp", FileKind.UNKNOWN, False),
        ("00000000000000000000.log.tmp", FileKind.UNKNOWN, False),
    ],
)
def test_classify_file(name: str, kind: FileKind, temporary: bool) -> None:
    got = classify_file(name)
    assert (got.kind, got.temporary) == (kind, temporary)
    assert got.segment is None


def test_classify_segment_file() -> None:
    got = classify_file("00000000000000000036.index.swap")
    assert got.kind is FileKind.SEGMENT
    assert got.segment == (36, ".index", ".swap")


# --- real broker data -------------------------------------------------------------------------


def _walk(root: Path) -> list[tuple[Path, list[str], list[str]]]:
    return [(Path(d), dirs, files) for d, dirs, files in os.walk(root)]


def test_real_fixture_file_names_classify(real_broker_data: Path) -> None:
    """Every real file classifies without error, and the kinds match what we know is there."""
    seen: dict[FileKind, int] = {}
    for directory, _dirs, files in _walk(real_broker_data):
        for name in files:
            got = classify_file(name)
            seen[got.kind] = seen.get(got.kind, 0) + 1
            if got.kind is FileKind.SEGMENT:
                assert got.segment is not None
                assert segment_file_name(*got.segment) == name
                # A segment-family file lives in a partition directory (live or transient).
                parse_partition_dir_name(directory.name)
            if got.kind is FileKind.UNKNOWN:
                # The only unknowns in the fixtures are the survey's own files and the 0.7 segment.
                assert name in {"SOURCES.md", "MANIFEST.json"} or name.endswith(".kafka"), name
            if got.kind is FileKind.LEADER_EPOCH_CHECKPOINT or got.kind is FileKind.QUORUM_STATE:
                parse_partition_dir_name(directory.name)
    for kind in (
        FileKind.SEGMENT,
        FileKind.OFFSET_CHECKPOINT,
        FileKind.LEADER_EPOCH_CHECKPOINT,
        FileKind.PARTITION_METADATA,
        FileKind.META_PROPERTIES,
        FileKind.KRAFT_SNAPSHOT,
        FileKind.QUORUM_STATE,
        FileKind.CLEAN_SHUTDOWN,
        FileKind.LOCK,
        FileKind.BOOTSTRAP_CHECKPOINT,
    ):
        assert seen.get(kind, 0) > 0, kind


def test_real_fixture_transient_files(real_broker_data: Path) -> None:
    transients = [
        classify_file(p.name).segment
        for p in real_broker_data.rglob("*")
        if p.is_file() and p.name.endswith((".swap", ".cleaned", ".deleted"))
    ]
    assert transients, "fixtures hold cleaner .swap/.cleaned files"
    assert all(s is not None and s.transient is not None for s in transients)
    kinds = {(s.kind, s.transient) for s in transients if s is not None}
    assert (".log", ".swap") in kinds
    assert (".timeindex", ".cleaned") in kinds


def test_real_fixture_partition_dirs(real_broker_data: Path) -> None:
    """Directories holding a leader-epoch-checkpoint are partition dirs and parse."""
    states = []
    for cp in real_broker_data.rglob("leader-epoch-checkpoint"):
        parsed = parse_partition_dir_name(cp.parent.name)
        assert format_partition_dir_name(*parsed) == cp.parent.name
        states.append(parsed.state)
    assert None in states
    assert "delete" in states  # apache/kafka's test harness left a -delete dir
