"""Tests for segment_lib.time_index (Kafka ``.timeindex`` files)."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import pytest
from _aux_fixtures import files_named, manifest
from hypothesis import given
from hypothesis import strategies as st

from segment_lib.errors import CorruptIndexError
from segment_lib.names import parse_segment_file_name, segment_file_name
from segment_lib.time_index import (
    NO_TIMESTAMP,
    TimestampOffset,
    format_time_index,
    parse_time_index,
    read_time_index,
)


def raw(*entries: tuple[int, int]) -> bytes:
    """Hand-built big-endian (timestamp int64, relativeOffset int32) entries."""
    return b"".join(struct.pack(">qi", t, r) for t, r in entries)


def test_parse_and_lookup() -> None:
    idx = parse_time_index(raw((1000, 3), (2000, 8), (3000, 8)), base_offset=50)
    assert idx.entries == len(idx) == 3
    assert list(idx) == [(1000, 53), (2000, 58), (3000, 58)]
    assert idx.last_entry == TimestampOffset(3000, 58)
    assert idx.lookup_floor(999) == (NO_TIMESTAMP, 50)
    assert idx.lookup_floor(1000) == (1000, 53)
    assert idx.lookup_floor(1999) == (1000, 53)
    assert idx.lookup_floor(2500) == (2000, 58)
    assert idx.lookup_floor(10**13) == (3000, 58)


def test_equal_timestamps_lookup_returns_first() -> None:
    idx = parse_time_index(raw((10, 1), (20, 2), (20, 5), (30, 6)), base_offset=0)
    assert idx.lookup_floor(25) == (20, 2)
    assert idx.lookup_floor(20) == (20, 2)


def test_empty() -> None:
    idx = parse_time_index(b"", 9)
    assert idx.entries == 0
    assert idx.last_entry == (-1, 9)
    assert idx.lookup_floor(0) == (-1, 9)


def test_preallocated_tail_is_trimmed() -> None:
    data = raw((1_600_000_000_000, 0), (1_600_000_000_500, 4)) + bytes(12 * 100)
    idx = parse_time_index(data, 0)
    assert list(idx) == [(1_600_000_000_000, 0), (1_600_000_000_500, 4)]
    assert idx.tail_bytes == 1200


def test_timestamp_zero_first_entry_kept_when_followed() -> None:
    idx = parse_time_index(raw((0, 0), (5, 3)) + bytes(24), 100)
    assert list(idx) == [(0, 100), (5, 103)]


def test_all_zero_file_reads_empty_and_lookup_points_at_base() -> None:
    idx = parse_time_index(bytes(12 * 50), 100)
    assert idx.entries == 0
    assert idx.lookup_floor(0).offset == 100


@pytest.mark.parametrize("size", [1, 11, 13, 23, 25])
def test_length_not_multiple_of_twelve(size: int) -> None:
    data = (raw((1, 1), (2, 2)) + bytes(12))[:size]
    with pytest.raises(CorruptIndexError) as info:
        parse_time_index(data, 0)
    assert info.value.position == size // 12 * 12


@pytest.mark.parametrize(
    ("entries", "bad_entry"),
    [
        (((100, 1), (99, 2)), 1),  # timestamp going back
        (((100, 5), (200, 4)), 1),  # offset going back
        (((100, -1),), 0),  # offset below base
        (((100, 1), (200, 2), (300, 3), (250, 4)), 3),
        (((100, 1), (0, 0), (300, 3)), 1),  # zeros in the middle are not a tail
    ],
)
def test_invariant_violations(entries: tuple[tuple[int, int], ...], bad_entry: int) -> None:
    with pytest.raises(CorruptIndexError) as info:
        parse_time_index(raw(*entries), 0)
    assert info.value.position == bad_entry * 12


def test_read_reports_path(tmp_path: Path) -> None:
    path = tmp_path / segment_file_name(66, ".timeindex")
    path.write_bytes(raw((5, 1), (4, 2)))
    with pytest.raises(CorruptIndexError) as info:
        read_time_index(path)
    assert (info.value.path, info.value.position) == (str(path), 12)
    path.write_bytes(raw((5, 1)) + b"\0")
    with pytest.raises(CorruptIndexError) as info:
        read_time_index(path)
    assert (info.value.path, info.value.position) == (str(path), 12)
    path.write_bytes(raw((5, 1)))
    assert read_time_index(path).entry(0) == (5, 67)


def test_writer_rules() -> None:
    assert format_time_index(10, [(7, 12)]) == raw((7, 2))
    with pytest.raises(ValueError):
        format_time_index(0, [(5, 1), (5, 2)])  # Kafka only appends larger timestamps
    with pytest.raises(ValueError):
        format_time_index(0, [(5, 3), (6, 2)])
    with pytest.raises(ValueError):
        format_time_index(0, [(-2, 0)])
    with pytest.raises(ValueError):
        format_time_index(10, [(5, 9)])
    assert len(format_time_index(0, [], preallocate=12 * 3 + 11)) == 36


@given(
    base=st.integers(0, 2**62),
    steps=st.lists(st.tuples(st.integers(1, 10**6), st.integers(0, 500)), max_size=50),
    spare=st.integers(0, 10),
)
def test_round_trip(base: int, steps: list[tuple[int, int]], spare: int) -> None:
    entries = []
    ts, off = 1_500_000_000_000, base
    for d_ts, d_off in steps:
        ts += d_ts
        off += d_off
        entries.append((ts, off))
    data = format_time_index(base, entries, preallocate=(len(entries) + spare) * 12)
    idx = parse_time_index(data, base)
    assert list(idx) == entries
    assert idx.tail_bytes == spare * 12
    for t, o in entries:
        assert idx.lookup_floor(t) == (t, o)
        assert idx.lookup_floor(t - 1).timestamp < t


# --- real broker data -------------------------------------------------------------------------


def _time_index_files(root: Path) -> list[Path]:
    found: list[Path] = files_named(root, "*.timeindex") + files_named(root, "*.timeindex.cleaned")
    return found


def test_real_time_indexes(real_broker_data: Path) -> None:
    facts = manifest(real_broker_data)
    paths = _time_index_files(real_broker_data)
    assert any(p.name.endswith(".cleaned") for p in paths)
    cross_checked = 0
    for path in paths:
        idx = read_time_index(path)
        base = parse_segment_file_name(path.name).base_offset
        assert idx.tail_bytes == 0  # only trimmed (rolled / closed) indexes were saved
        assert idx.entries == path.stat().st_size // 12
        entries = list(idx)
        timestamps = [t for t, _ in entries]
        offsets = [o for _, o in entries]
        # Kafka appends only strictly larger timestamps; offsets never go back.
        assert all(a < b for a, b in itertools.pairwise(timestamps))
        assert offsets == sorted(offsets)
        assert all(o >= base for o in offsets)
        # Real timestamps are epoch milliseconds after 2010 (all fixtures are later).
        assert all(t > 1_262_304_000_000 for t in timestamps)
        log = path.parent / segment_file_name(base, ".log")
        log_facts = facts.get(str(log.relative_to(real_broker_data)), {})
        if entries and "last_offset" in log_facts and not path.name.endswith(".cleaned"):
            assert offsets[-1] <= log_facts["last_offset"]
            cross_checked += 1
        for t in {*timestamps, *(t - 1 for t in timestamps), *(t + 1 for t in timestamps)}:
            floor = [e for e in entries if e.timestamp <= t]
            assert idx.lookup_floor(t) == (floor[-1] if floor else (-1, base))
    assert cross_checked > 0
