"""Tests for segment_lib.offset_index (Kafka ``.index`` files)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from _aux_fixtures import files_named, manifest
from hypothesis import given
from hypothesis import strategies as st

from segment_lib.errors import CorruptIndexError, InvalidFileNameError
from segment_lib.names import parse_segment_file_name, segment_file_name
from segment_lib.offset_index import (
    OffsetPosition,
    format_offset_index,
    parse_offset_index,
    read_offset_index,
)


def raw(*entries: tuple[int, int]) -> bytes:
    """Hand-built big-endian (relativeOffset, position) entries, independent of the writer."""
    return b"".join(struct.pack(">ii", r, p) for r, p in entries)


def test_parse_hand_built_entries() -> None:
    idx = parse_offset_index(raw((3, 7252), (13, 12660), (19, 17631)), base_offset=115)
    assert idx.entries == len(idx) == 3
    assert list(idx) == [(118, 7252), (128, 12660), (134, 17631)]
    assert idx.entry(1) == OffsetPosition(128, 12660)
    assert idx.last_offset == 134
    assert idx.tail_bytes == 0


def test_lookup_floor_matches_kafka_semantics() -> None:
    idx = parse_offset_index(raw((3, 100), (13, 200), (19, 300)), base_offset=115)
    assert idx.lookup_floor(0) == (115, 0)  # below the base: read from the start
    assert idx.lookup_floor(117) == (115, 0)  # below the first entry
    assert idx.lookup_floor(118) == (118, 100)  # exact hit
    assert idx.lookup_floor(127) == (118, 100)
    assert idx.lookup_floor(128) == (128, 200)
    assert idx.lookup_floor(10**15) == (134, 300)


def test_empty_index() -> None:
    idx = parse_offset_index(b"", base_offset=42)
    assert idx.entries == 0
    assert idx.last_offset == 42
    assert idx.lookup_floor(100) == (42, 0)
    assert list(idx) == []


def test_preallocated_tail_is_trimmed() -> None:
    data = raw((1, 4096), (5, 8192)) + bytes(8 * 1000)
    idx = parse_offset_index(data, base_offset=0)
    assert list(idx) == [(1, 4096), (5, 8192)]
    assert idx.tail_bytes == 8000


def test_last_entry_ending_in_zero_bytes_is_kept() -> None:
    # position 256 = 00 00 01 00: the entry's last byte is zero but the entry is real.
    data = raw((1, 256)) + bytes(16)
    assert list(parse_offset_index(data, 0)) == [(1, 256)]


def test_all_zero_file_is_empty() -> None:
    # A freshly preallocated active index: Kafka never writes an entry at position 0.
    idx = parse_offset_index(bytes(10 * 1024 * 1024 // 8 * 8), base_offset=7)
    assert idx.entries == 0
    assert idx.tail_bytes == 10 * 1024 * 1024 // 8 * 8


def test_memoryview_input() -> None:
    data = bytearray(raw((2, 10)) + bytes(8))
    assert list(parse_offset_index(memoryview(data), 5)) == [(7, 10)]


@pytest.mark.parametrize("size", [1, 7, 9, 15, 17])
def test_length_not_multiple_of_eight(size: int) -> None:
    data = (raw((1, 10), (2, 20), (3, 30)) + bytes(8))[:size]
    with pytest.raises(CorruptIndexError) as info:
        parse_offset_index(data, 0)
    assert info.value.position == size // 8 * 8
    assert info.value.path is None


@pytest.mark.parametrize(
    ("entries", "bad_entry"),
    [
        (((5, 10), (5, 20)), 1),  # repeated offset
        (((5, 10), (4, 20)), 1),  # decreasing offset
        (((1, 10), (2, 20), (3, 30), (2, 40)), 3),
        (((-1, 10),), 0),  # offset below base
        (((1, 10), (2, -5)), 1),  # negative position
        (((1, 10), (2, 20), (3, 15)), 2),  # position going backwards
        (((1, 10), (0, 0), (3, 30)), 1),  # a zero entry in the middle is not a tail
    ],
)
def test_invariant_violations_name_the_entry(
    entries: tuple[tuple[int, int], ...], bad_entry: int
) -> None:
    with pytest.raises(CorruptIndexError) as info:
        parse_offset_index(raw(*entries), 100)
    assert info.value.position == bad_entry * 8


def test_read_uses_name_and_reports_path(tmp_path: Path) -> None:
    good = tmp_path / segment_file_name(1000, ".index")
    good.write_bytes(raw((5, 4100)) + bytes(24))
    idx = read_offset_index(good)
    assert idx.base_offset == 1000
    assert list(idx) == [(1005, 4100)]

    bad = tmp_path / segment_file_name(0, ".index")
    bad.write_bytes(raw((5, 10), (2, 20)))
    with pytest.raises(CorruptIndexError) as info:
        read_offset_index(bad)
    assert info.value.path == str(bad)
    assert info.value.position == 8
    assert str(bad) in str(info.value)


def test_read_with_transient_name_and_explicit_base(tmp_path: Path) -> None:
    swap = tmp_path / "00000000000000000036.index.swap"
    swap.write_bytes(raw((1, 50)))
    assert read_offset_index(swap).entry(0) == (37, 50)
    other = tmp_path / "whatever.bin"
    other.write_bytes(raw((1, 50)))
    assert read_offset_index(other, base_offset=10).entry(0) == (11, 50)
    with pytest.raises(InvalidFileNameError) as info:
        read_offset_index(other)
    assert info.value.path == str(other)
    log_named = tmp_path / "00000000000000000000.log"
    log_named.write_bytes(b"")
    with pytest.raises(InvalidFileNameError):
        read_offset_index(log_named)


def test_writer_rejects_what_kafka_cannot_write() -> None:
    with pytest.raises(ValueError):
        format_offset_index(10, [(9, 100)])  # below base
    with pytest.raises(ValueError):
        format_offset_index(0, [(5, 100), (5, 200)])  # not increasing
    with pytest.raises(ValueError):
        format_offset_index(0, [(5, 100), (6, 50)])  # position decreasing
    with pytest.raises(ValueError):
        format_offset_index(0, [(5, 0)])  # Kafka never indexes position 0
    with pytest.raises(ValueError):
        format_offset_index(0, [(2**31, 100)])  # relative offset beyond int32


def test_writer_bytes_and_preallocation() -> None:
    assert format_offset_index(100, [(103, 7252)]) == raw((3, 7252))
    data = format_offset_index(100, [(103, 7252)], preallocate=8 * 10 + 5)
    assert len(data) == 80
    assert parse_offset_index(data, 100).tail_bytes == 72


@given(
    base=st.integers(0, 2**62),
    steps=st.lists(st.tuples(st.integers(1, 1000), st.integers(1, 10**5)), max_size=60),
    spare=st.integers(0, 20),
)
def test_round_trip(base: int, steps: list[tuple[int, int]], spare: int) -> None:
    entries = []
    offset, position = base, 0
    for d_off, d_pos in steps:
        offset += d_off
        position += d_pos
        entries.append((offset, position))
    data = format_offset_index(base, entries, preallocate=(len(entries) + spare) * 8)
    idx = parse_offset_index(data, base)
    assert list(idx) == entries
    assert idx.tail_bytes == spare * 8
    for target, expected in zip([o for o, _ in entries], entries, strict=True):
        assert idx.lookup_floor(target) == expected


# --- real broker data -------------------------------------------------------------------------


def test_real_offset_indexes(real_broker_data: Path) -> None:
    """Every real ``.index`` parses; entries lie inside their segment and its ``.log``."""
    facts = manifest(real_broker_data)
    paths = files_named(real_broker_data, "*.index")
    assert paths
    checked_against_manifest = 0
    for path in paths:
        idx = read_offset_index(path)
        base = parse_segment_file_name(path.name).base_offset
        assert idx.base_offset == base
        # Rolled / cleanly closed indexes were trimmed by Kafka: no zero tail.
        assert idx.tail_bytes == 0
        assert idx.entries == path.stat().st_size // 8
        log = path.with_name(segment_file_name(base, ".log"))
        log_size = log.stat().st_size
        offsets = [o for o, _ in idx]
        assert all(o >= base for o in offsets)
        assert offsets == sorted(set(offsets))
        for _offset, pos in idx:
            assert 0 < pos < log_size
        # Entries stay below the next segment's base offset, if there is a next segment.
        later = [
            s.base_offset
            for p in path.parent.glob("*.log")
            if (s := parse_segment_file_name(p.name)).base_offset > base
        ]
        if later and offsets:
            assert offsets[-1] < min(later)
        log_facts = facts.get(str(log.relative_to(real_broker_data)), {})
        if offsets and "last_offset" in log_facts:
            assert offsets[-1] <= log_facts["last_offset"]
            checked_against_manifest += 1
        # lookup agrees with a linear scan.
        for target in {base, *offsets, *(o + 1 for o in offsets)}:
            floor = [e for e in idx if e.offset <= target]
            assert idx.lookup_floor(target) == (floor[-1] if floor else (base, 0))
    assert checked_against_manifest > 0


def test_real_index_swap_files(real_broker_data: Path) -> None:
    """The cleaner's leftover ``.index.swap`` files (empty in the fixtures) parse as empty."""
    swaps = files_named(real_broker_data, "*.index.swap")
    assert swaps
    for path in swaps:
        assert read_offset_index(path).entries == path.stat().st_size // 8


@pytest.mark.parametrize("last_nonzero", [0, 7, 65535, 65536, 65537, 131071, 10 * (1 << 20) - 1])
def test_zero_tail_found_across_chunk_boundaries(last_nonzero: int) -> None:
    """valid_length skips the zero tail a 64 KiB chunk at a time: the one non-zero byte is found
    wherever it sits relative to the chunks (the rule: up to the last non-zero byte, rounded up
    to a whole entry)."""
    from segment_lib._index_util import valid_length

    data = bytearray(10 * (1 << 20))
    data[last_nonzero] = 1
    want = -(-(last_nonzero + 1) // 8) * 8
    for buf in (bytes(data), data, memoryview(data)):
        assert valid_length(buf, 8, "index") == want
