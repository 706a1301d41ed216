"""Tests for segment_lib.producer_snapshot (Kafka producer-state ``.snapshot`` files)."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from _aux_fixtures import files_named
from hypothesis import given
from hypothesis import strategies as st

from segment_lib.errors import InvalidCheckpointError
from segment_lib.names import parse_segment_file_name
from segment_lib.producer_snapshot import (
    ProducerSnapshotEntry,
    format_producer_snapshot,
    parse_producer_snapshot,
    read_producer_snapshot,
)

# An empty snapshot exactly as real brokers wrote it (e.g. the 10-byte .snapshot files of
# suryavansh__food-ordering-service): version 1, CRC-32C of the 4-byte zero count, count 0.
EMPTY_SNAPSHOT = bytes.fromhex("000148674bc700000000")

ENTRY_A = ProducerSnapshotEntry(
    producer_id=1000,
    epoch=0,
    last_sequence=4,
    last_offset=17211,
    offset_delta=0,
    timestamp=1_700_000_000_123,
    coordinator_epoch=-1,
    current_txn_first_offset=-1,
)
ENTRY_B = ProducerSnapshotEntry(2001, 3, 99, 17000, 2, 1_700_000_000_000, 5, 16990)


def hand_built(*entries: tuple[int, ...], version: int = 1) -> bytes:
    """Snapshot bytes assembled field by field, independently of the module's writer."""
    body = struct.pack(">i", len(entries))
    for e in entries:
        body += struct.pack(">qhiqiqiq", *e)
    return struct.pack(">hI", version, crc32c.crc32c(body)) + body


def test_empty_snapshot_matches_real_broker_bytes() -> None:
    assert format_producer_snapshot([]) == EMPTY_SNAPSHOT
    snap = parse_producer_snapshot(EMPTY_SNAPSHOT)
    assert (snap.version, snap.crc, snap.entries) == (1, 0x48674BC7, ())


def test_hand_built_entries() -> None:
    data = hand_built(
        (1000, 0, 4, 17211, 0, 1_700_000_000_123, -1, -1),
        (2001, 3, 99, 17000, 2, 1_700_000_000_000, 5, 16990),
    )
    assert len(data) == 10 + 2 * 46
    snap = parse_producer_snapshot(data)
    assert snap.entries == (ENTRY_A, ENTRY_B)
    assert not ENTRY_A.has_ongoing_txn and ENTRY_B.has_ongoing_txn
    assert format_producer_snapshot([ENTRY_A, ENTRY_B]) == data


@pytest.mark.parametrize("size", [0, 1, 2, 5, 9])
def test_shorter_than_header(size: int) -> None:
    with pytest.raises(InvalidCheckpointError) as info:
        parse_producer_snapshot(EMPTY_SNAPSHOT[:size])
    assert info.value.position == size


@pytest.mark.parametrize("version", [0, 2, -1])
def test_unknown_version(version: int) -> None:
    with pytest.raises(InvalidCheckpointError) as info:
        parse_producer_snapshot(hand_built(version=version))
    assert info.value.position == 0
    assert "version" in str(info.value)


def test_negative_count() -> None:
    data = bytearray(EMPTY_SNAPSHOT)
    data[6:10] = struct.pack(">i", -1)
    with pytest.raises(InvalidCheckpointError) as info:
        parse_producer_snapshot(bytes(data))
    assert info.value.position == 6


@pytest.mark.parametrize("cut", [1, 45, 46, 47, 91])
def test_truncated_entries(cut: int) -> None:
    data = format_producer_snapshot([ENTRY_A, ENTRY_B])
    truncated = data[: len(data) - cut]
    with pytest.raises(InvalidCheckpointError) as info:
        parse_producer_snapshot(truncated)
    # The error names the start of the first entry that is not complete.
    complete = (len(truncated) - 10) // 46
    assert info.value.position == 10 + complete * 46


def test_trailing_bytes() -> None:
    data = format_producer_snapshot([ENTRY_A]) + b"\0"
    with pytest.raises(InvalidCheckpointError) as info:
        parse_producer_snapshot(data)
    assert info.value.position == 56


@pytest.mark.parametrize("flip", [10, 17, 30, 55])
def test_crc_mismatch(flip: int) -> None:
    data = bytearray(format_producer_snapshot([ENTRY_A]))
    data[flip] ^= 0x01
    with pytest.raises(InvalidCheckpointError) as info:
        parse_producer_snapshot(bytes(data))
    assert info.value.position == 2
    assert "CRC" in str(info.value)


def test_corrupt_count_is_structural_before_crc() -> None:
    # Like Kafka, structure is validated before the CRC: count 1 -> 0 leaves 46 stray bytes.
    data = bytearray(format_producer_snapshot([ENTRY_A]))
    data[9] ^= 0x01
    with pytest.raises(InvalidCheckpointError) as info:
        parse_producer_snapshot(bytes(data))
    assert info.value.position == 10


def test_stored_crc_corrupt() -> None:
    data = bytearray(EMPTY_SNAPSHOT)
    data[3] ^= 0xFF
    with pytest.raises(InvalidCheckpointError) as info:
        parse_producer_snapshot(bytes(data))
    assert info.value.position == 2


def test_read_reports_path(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000005.snapshot"
    path.write_bytes(EMPTY_SNAPSHOT[:-1])
    with pytest.raises(InvalidCheckpointError) as info:
        read_producer_snapshot(path)
    assert (info.value.path, info.value.position) == (str(path), 9)
    path.write_bytes(format_producer_snapshot([ENTRY_B]))
    assert read_producer_snapshot(path).entries == (ENTRY_B,)


int64 = st.integers(-(2**63), 2**63 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int16 = st.integers(-(2**15), 2**15 - 1)


@given(
    st.lists(
        st.builds(ProducerSnapshotEntry, int64, int16, int32, int64, int32, int64, int32, int64)
    )
)
def test_round_trip(entries: list[ProducerSnapshotEntry]) -> None:
    data = format_producer_snapshot(entries)
    assert len(data) == 10 + 46 * len(entries)
    assert list(parse_producer_snapshot(data).entries) == entries


# --- real broker data -------------------------------------------------------------------------


def test_real_snapshots(real_broker_data: Path) -> None:
    paths = files_named(real_broker_data, "*.snapshot")
    assert paths
    with_entries = 0
    for path in paths:
        snap = read_producer_snapshot(path)  # verifies the CRC-32C
        end_offset = parse_segment_file_name(path.name).base_offset
        assert path.stat().st_size == 10 + 46 * len(snap)
        ids = [e.producer_id for e in snap.entries]
        assert len(set(ids)) == len(ids)  # one entry per producer
        for e in snap.entries:
            assert e.producer_id >= 0
            assert e.epoch >= 0
            # The snapshot holds the state *before* its end offset.
            assert e.last_offset < end_offset
            assert e.current_txn_first_offset < end_offset
            # Real timestamps are epoch milliseconds after 2010.
            assert e.timestamp > 1_262_304_000_000
        with_entries += bool(snap.entries)
    # SOURCES.md lists snapshots with entries in rjmfernandes, NikhilDighe9975, ItumelengMogase.
    assert with_entries >= 3
