"""Tests for segment_lib.txn_index (Kafka ``.txnindex`` files)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from _aux_fixtures import files_named
from hypothesis import given
from hypothesis import strategies as st

from segment_lib.errors import CorruptIndexError
from segment_lib.names import parse_segment_file_name, segment_file_name
from segment_lib.txn_index import (
    AbortedRange,
    AbortedTxn,
    format_txn_index,
    parse_txn_index,
    read_txn_index,
)

# The four transactions of Kafka's TransactionIndexTest.testCollectAbortedTransactions.
KAFKA_TXNS = [
    AbortedTxn(0, 0, 10, 11),
    AbortedTxn(1, 5, 15, 13),
    AbortedTxn(2, 18, 35, 25),
    AbortedTxn(3, 32, 50, 40),
]


def raw(version: int, pid: int, first: int, last: int, lso: int) -> bytes:
    return struct.pack(">hqqqq", version, pid, first, last, lso)


def test_entry_layout_by_hand() -> None:
    data = raw(0, 7, 100, 120, 99) + raw(0, 8, 121, 130, 121)
    assert len(data) == 68  # 34 bytes per entry
    idx = parse_txn_index(data, base_offset=100)
    assert idx.entries == (AbortedTxn(7, 100, 120, 99), AbortedTxn(8, 121, 130, 121))
    assert idx.aborted_ranges() == [AbortedRange(7, 100, 120), AbortedRange(8, 121, 130)]
    assert format_txn_index(idx.entries) == data


@pytest.mark.parametrize(
    ("fetch", "upper", "expected", "complete"),
    [
        # Expectations from Kafka's TransactionIndexTest.testCollectAbortedTransactions.
        (0, 100, slice(0, 4), False),
        (0, 32, slice(0, 3), True),
        (0, 35, slice(0, 4), True),
        (10, 35, slice(0, 4), True),
        (11, 35, slice(1, 4), True),
        (20, 41, slice(2, 4), False),
    ],
)
def test_collect_aborted_like_kafka(
    fetch: int, upper: int, expected: slice, complete: bool
) -> None:
    idx = parse_txn_index(format_txn_index(KAFKA_TXNS), 0)
    result = idx.collect_aborted(fetch, upper)
    assert list(result.aborted) == KAFKA_TXNS[expected]
    assert result.is_complete is complete


def test_empty_file() -> None:
    idx = parse_txn_index(b"", 5)
    assert len(idx) == 0
    assert idx.collect_aborted(0, 10) == ((), False)


@pytest.mark.parametrize("cut", [1, 33, 35, 67])
def test_partial_entry(cut: int) -> None:
    data = format_txn_index(KAFKA_TXNS)[:cut]
    with pytest.raises(CorruptIndexError) as info:
        parse_txn_index(data, 0)
    assert info.value.position == cut // 34 * 34


@pytest.mark.parametrize("version", [1, -1, 256])
def test_bad_version(version: int) -> None:
    data = raw(0, 1, 0, 5, 0) + raw(version, 2, 6, 9, 0)
    with pytest.raises(CorruptIndexError) as info:
        parse_txn_index(data, 0)
    assert info.value.position == 34


def test_last_offset_below_base_is_corrupt() -> None:
    # Kafka's testSanityCheck: the same entries reopened with start offset 100.
    with pytest.raises(CorruptIndexError) as info:
        parse_txn_index(format_txn_index(KAFKA_TXNS), 100)
    assert info.value.position == 0


@pytest.mark.parametrize(
    ("second", "why"),
    [
        ((0, 0, 0, 15, 11), "equal last offset"),
        ((0, 0, 0, 10, 11), "decreasing last offset"),
        ((0, 2, 30, 20, 11), "first after last"),
    ],
)
def test_ordering_violations(second: tuple[int, int, int, int, int], why: str) -> None:
    data = raw(0, 1, 5, 15, 13) + raw(*second)
    with pytest.raises(CorruptIndexError) as info:
        parse_txn_index(data, 0)
    assert info.value.position == 34, why


def test_read_reports_path(tmp_path: Path) -> None:
    path = tmp_path / segment_file_name(0, ".txnindex")
    path.write_bytes(format_txn_index(KAFKA_TXNS) + b"\0\0")
    with pytest.raises(CorruptIndexError) as info:
        read_txn_index(path)
    assert (info.value.path, info.value.position) == (str(path), 136)
    path.write_bytes(format_txn_index(KAFKA_TXNS))
    assert read_txn_index(path).entries == tuple(KAFKA_TXNS)


@given(
    st.lists(
        st.tuples(st.integers(0, 2**40), st.integers(0, 50), st.integers(1, 50), st.integers(0, 9)),
        max_size=30,
    )
)
def test_round_trip(steps: list[tuple[int, int, int, int]]) -> None:
    txns = []
    last = 1000
    for pid, gap, length, lso_back in steps:
        first = last + 1 + gap
        last = first + length
        txns.append(AbortedTxn(pid, first, last, last - lso_back))
    idx = parse_txn_index(format_txn_index(txns), 1000)
    assert list(idx.entries) == txns
    # collect over everything finds all of them.
    assert list(idx.collect_aborted(0, 2**62).aborted) == txns


def test_real_txn_indexes(real_broker_data: Path) -> None:
    paths = files_named(real_broker_data, "*.txnindex*")
    if not paths:
        pytest.skip("no .txnindex files in the real fixtures (SOURCES.md: none found)")
    for path in paths:
        idx = read_txn_index(path)
        base = parse_segment_file_name(path.name).base_offset
        assert all(t.last_offset >= base for t in idx.entries)
