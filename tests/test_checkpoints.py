"""Tests for segment_lib.checkpoints (offset checkpoints and leader-epoch-checkpoint)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _aux_fixtures import files_named, manifest
from hypothesis import given
from hypothesis import strategies as st

from segment_lib.checkpoints import (
    EpochEntry,
    TopicPartition,
    format_leader_epoch_checkpoint,
    format_offset_checkpoint,
    parse_leader_epoch_checkpoint,
    parse_offset_checkpoint,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
)
from segment_lib.errors import InvalidCheckpointError
from segment_lib.names import (
    FileKind,
    classify_file,
    parse_partition_dir_name,
    parse_segment_file_name,
)

# ---- offset checkpoints ----------------------------------------------------------------------


def test_parse_offset_checkpoint() -> None:
    data = b"0\n3\n_confluent-metrics 7 304\n__consumer_offsets 12 0\nmy.topic-x 1 9\n"
    assert parse_offset_checkpoint(data) == {
        ("_confluent-metrics", 7): 304,
        ("__consumer_offsets", 12): 0,
        ("my.topic-x", 1): 9,
    }
    key = next(iter(parse_offset_checkpoint(data)))
    assert isinstance(key, TopicPartition) and key.topic == "_confluent-metrics"


@pytest.mark.parametrize(
    "data",
    [b"", b"0\n", b"0", b"0\n0\n", b"0\r\n0\r\n", b"0\n0"],
)
def test_empty_offset_checkpoints(data: bytes) -> None:
    # Kafka creates the file empty; a version line alone also reads as no entries.
    assert parse_offset_checkpoint(data) == {}


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_line_endings(eol: bytes) -> None:
    data = eol.join([b"0", b"2", b"a 0 5", b"b 1 6"]) + eol
    assert parse_offset_checkpoint(data) == {("a", 0): 5, ("b", 1): 6}
    assert parse_offset_checkpoint(data[: -len(eol)]) == {("a", 0): 5, ("b", 1): 6}


def test_whitespace_runs_and_signs_like_java() -> None:
    assert parse_offset_checkpoint(b"0\n1\na\t 0   +5  \n") == {("a", 0): 5}
    assert parse_offset_checkpoint(b"0\n1\na 0 -1\n") == {("a", 0): -1}


BAD_OFFSET_CHECKPOINTS = [
    # (bytes, byte position of the reported problem)
    (b"1\n0\n", 0),  # unknown version
    (b"x\n0\n", 0),
    (b" 0\n0\n", 0),  # Integer.parseInt does not trim
    (b"0\nfive\n", 2),
    (b"0\n-1\n", 2),
    (b"0\n2\na 0 5\n", 10),  # one entry missing: reported at the end of the file
    (b"0\n1\na 0 5\nb 0 6\n", 10),  # one entry too many
    (b"0\n1\na 0 5\n\n", 10),  # a blank line is an extra (malformed) line
    (b"0\n1\na 0\n", 4),
    (b"0\n1\na 0 5 7\n", 4),
    (b"0\n1\n a 0 5\n", 4),  # leading whitespace makes an empty first field
    (b"0\n1\na x 5\n", 4),
    (b"0\n1\na 0 1.5\n", 4),
    (b"0\n1\na 0 1_000\n", 4),  # Python int() would accept this; Java does not
    (b"0\n1\na 2147483648 5\n", 4),  # partition beyond int32
    (b"0\n1\na 0 9223372036854775808\n", 4),  # offset beyond int64
    (b"0\n2\na 0 5\na 0 6\n", 10),  # duplicate topic-partition
    (b"0\n1\n\xff 0 5\n", 4),  # invalid UTF-8: position of the bad byte
    (b"0\n1\nab\xc3 0 5\n", 6),
    (b"0\n99999999999\n", 2),  # count beyond int32
]


@pytest.mark.parametrize(("data", "position"), BAD_OFFSET_CHECKPOINTS)
def test_bad_offset_checkpoints(data: bytes, position: int) -> None:
    with pytest.raises(InvalidCheckpointError) as info:
        parse_offset_checkpoint(data)
    assert info.value.position == position
    assert info.value.path is None


def test_offset_checkpoint_writer_matches_kafka_layout() -> None:
    data = format_offset_checkpoint({("orders", 0): 17212, ("__consumer_offsets", 3): 0})
    assert data == b"0\n2\norders 0 17212\n__consumer_offsets 3 0\n"
    assert format_offset_checkpoint({}) == b"0\n0\n"
    for bad in ({("a b", 0): 1}, {("", 0): 1}, {("a", 2**31): 1}, {("a", 0): 2**63}):
        with pytest.raises(ValueError):
            format_offset_checkpoint(bad)


topics = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=30)


@given(
    st.dictionaries(
        st.tuples(topics, st.integers(0, 2**31 - 1)), st.integers(-1, 2**63 - 1), max_size=40
    )
)
def test_offset_checkpoint_round_trip(offsets: dict[tuple[str, int], int]) -> None:
    assert parse_offset_checkpoint(format_offset_checkpoint(offsets)) == offsets


def test_read_offset_checkpoint_names_path(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    path.write_bytes(b"0\n1\norders 0 oops\n")
    with pytest.raises(InvalidCheckpointError) as info:
        read_offset_checkpoint(path)
    assert (info.value.path, info.value.position) == (str(path), 4)
    assert "oops" in str(info.value) and str(path) in str(info.value)


# ---- leader-epoch-checkpoint -----------------------------------------------------------------


def test_parse_leader_epoch_checkpoint() -> None:
    assert parse_leader_epoch_checkpoint(b"0\n3\n0 0\n2 25\n38 4000\n") == [
        EpochEntry(0, 0),
        EpochEntry(2, 25),
        EpochEntry(38, 4000),
    ]
    assert parse_leader_epoch_checkpoint(b"0\n1\n1 0") == [(1, 0)]  # apache/kafka harness file
    assert parse_leader_epoch_checkpoint(b"0\n0\n") == []
    assert parse_leader_epoch_checkpoint(b"") == []


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b"2\n0\n", 0),
        (b"0\n1\n0\n", 4),
        (b"0\n1\n0 0 0\n", 4),
        (b"0\n1\n2147483648 0\n", 4),  # epoch beyond int32
        (b"0\n1\n0 x\n", 4),
        (b"0\n2\n0 0\n", 8),
        (b"0\n1\n0 0\n1 5\n", 8),
    ],
)
def test_bad_leader_epoch_checkpoints(data: bytes, position: int) -> None:
    with pytest.raises(InvalidCheckpointError) as info:
        parse_leader_epoch_checkpoint(data)
    assert info.value.position == position


def test_leader_epoch_writer_and_reader(tmp_path: Path) -> None:
    data = format_leader_epoch_checkpoint([(0, 0), (5, 12)])
    assert data == b"0\n2\n0 0\n5 12\n"
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(data)
    assert read_leader_epoch_checkpoint(path) == [(0, 0), (5, 12)]
    path.write_bytes(data[:-4])
    with pytest.raises(InvalidCheckpointError) as info:
        read_leader_epoch_checkpoint(path)
    assert (info.value.path, info.value.position) == (str(path), 8)
    with pytest.raises(ValueError):
        format_leader_epoch_checkpoint([(2**31, 0)])


# ---- real broker data ------------------------------------------------------------------------


def _live_partitions(log_dir: Path) -> set[tuple[str, int]]:
    found = set()
    for sub in log_dir.iterdir():
        if not sub.is_dir():
            continue
        parsed = parse_partition_dir_name(sub.name)
        # KRaft's __cluster_metadata log is not part of the broker's log checkpoints.
        if parsed.state is None and parsed.topic != "__cluster_metadata":
            found.add((parsed.topic, parsed.partition))
    return found


def test_real_offset_checkpoints(real_broker_data: Path) -> None:
    paths = [
        p
        for p in real_broker_data.rglob("*")
        if p.is_file() and classify_file(p.name).kind is FileKind.OFFSET_CHECKPOINT
    ]
    assert any(p.name.endswith(".tmp") for p in paths)
    with_dir = 0
    for path in paths:
        offsets = read_offset_checkpoint(path)
        for (topic, partition), offset in offsets.items():
            # Checkpointed names are legal topic-partitions, offsets are real offsets.
            assert parse_partition_dir_name(f"{topic}-{partition}") == (
                topic,
                partition,
                None,
                None,
            )
            assert offset >= 0
            partition_dir = path.parent / f"{topic}-{partition}"
            if partition_dir.is_dir():
                assert any(partition_dir.glob("*.log")), partition_dir
                with_dir += 1
    assert with_dir > 0


def test_real_checkpoints_after_clean_shutdown(real_broker_data: Path) -> None:
    """After a clean shutdown Kafka has checkpointed every log at its log end offset.

    The log end offset is cross-checked two independent ways: the survey's last offset of the
    partition's ``.log`` files (MANIFEST.json) and the producer snapshot Kafka writes at the log
    end offset when it closes a log.
    """
    facts = manifest(real_broker_data)
    checked = 0
    for marker in real_broker_data.rglob(".kafka_cleanshutdown"):
        log_dir = marker.parent
        recovery = read_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint")
        high_watermarks = read_offset_checkpoint(log_dir / "replication-offset-checkpoint")
        present = _live_partitions(log_dir)
        assert present <= recovery.keys(), log_dir
        assert present <= high_watermarks.keys(), log_dir
        for tp in present:
            partition_dir = log_dir / f"{tp[0]}-{tp[1]}"
            snapshots = [parse_segment_file_name(p.name) for p in partition_dir.glob("*.snapshot")]
            assert recovery[tp] == max(s.base_offset for s in snapshots)
            lasts = [
                fact["last_offset"]
                for log in partition_dir.glob("*.log")
                if "last_offset" in (fact := facts.get(str(log.relative_to(real_broker_data)), {}))
            ]
            if lasts:
                assert recovery[tp] == max(lasts) + 1
            assert high_watermarks[tp] <= recovery[tp]
            checked += 1
    assert checked > 0


def test_real_leader_epoch_checkpoints(real_broker_data: Path) -> None:
    paths = files_named(real_broker_data, "leader-epoch-checkpoint")
    assert paths
    non_empty = 0
    for path in paths:
        entries = read_leader_epoch_checkpoint(path)
        epochs = [e.epoch for e in entries]
        starts = [e.start_offset for e in entries]
        # LeaderEpochFileCache keeps epochs increasing and start offsets non-decreasing.
        assert epochs == sorted(set(epochs))
        assert starts == sorted(starts)
        assert all(e >= 0 for e in epochs) and all(s >= 0 for s in starts)
        non_empty += bool(entries)
    assert non_empty > 0
