"""Kafka's aborted-transaction index (``<base offset>.txnindex``).

Format (``AbortedTxn.java``, ``TransactionIndex.java``): a plain append-only sequence of 34-byte
big-endian entries, one per *aborted* transaction whose ABORT marker landed in the segment:
``version:int16`` (0), ``producerId:int64``, ``firstOffset:int64``, ``lastOffset:int64`` (the
marker's offset) and ``lastStableOffset:int64`` (the partition's LSO when the abort completed).
The file is not preallocated and only exists once a segment has an aborted transaction.

Checks made by :func:`parse_txn_index` (raising :class:`~segment_lib.errors.CorruptIndexError` at
the offending entry's byte):

* the length is a multiple of 34 -- stricter than Kafka, whose reader silently ignores a partial
  trailing entry; here it is reported so a torn write is visible;
* version is 0 -- Kafka reads only the first byte of the int16 and rejects values above 0; the
  whole int16 must be 0 here;
* ``lastOffset >= base offset`` (Kafka's ``sanityCheck``), ``firstOffset <= lastOffset``, and
  last offsets strictly increase (Kafka's ``append`` refuses anything else).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, NamedTuple

from segment_lib._index_util import Buffer, read_index_file
from segment_lib.errors import CorruptIndexError

__all__ = [
    "CURRENT_VERSION",
    "ENTRY",
    "AbortedRange",
    "AbortedTxn",
    "TransactionIndex",
    "TxnIndexSearchResult",
    "format_txn_index",
    "parse_txn_index",
    "read_txn_index",
]

ENTRY: Final = struct.Struct(
    ">"
    "h"  # version (0)
    "q"  # producerId
    "q"  # firstOffset: first offset of the aborted transaction
    "q"  # lastOffset: offset of its ABORT control marker
    "q"  # lastStableOffset: the LSO once the abort completed
)
CURRENT_VERSION: Final = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One entry of a transaction index."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION


class AbortedRange(NamedTuple):
    """The records of ``producer_id`` in ``[first_offset, last_offset]`` were aborted."""

    producer_id: int
    first_offset: int
    last_offset: int


class TxnIndexSearchResult(NamedTuple):
    """Kafka's ``TxnIndexSearchResult``: matches, and whether later segments can be skipped."""

    aborted: tuple[AbortedTxn, ...]
    is_complete: bool


@dataclass(frozen=True, slots=True)
class TransactionIndex:
    """A parsed ``.txnindex``: its entries in file order."""

    base_offset: int
    entries: tuple[AbortedTxn, ...]

    def __len__(self) -> int:
        return len(self.entries)

    def aborted_ranges(self) -> list[AbortedRange]:
        """``(producer_id, first_offset, last_offset)`` of every aborted transaction."""
        return [AbortedRange(t.producer_id, t.first_offset, t.last_offset) for t in self.entries]

    def collect_aborted(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """Kafka's ``collectAbortedTxns``: transactions overlapping ``[fetch_offset, upper)``.

        An entry matches when ``last_offset >= fetch_offset`` and ``first_offset < upper``. The
        scan stops at the first entry whose ``last_stable_offset >= upper`` (then
        ``is_complete`` is True): no later segment can hold an abort relevant to the range.
        """
        found: list[AbortedTxn] = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(tuple(found), True)
        return TxnIndexSearchResult(tuple(found), False)


def parse_txn_index(data: Buffer, base_offset: int) -> TransactionIndex:
    """Parse the bytes of a ``.txnindex`` file; error positions are relative to ``data``."""
    size = len(data)
    whole = size - size % ENTRY.size
    entries: list[AbortedTxn] = []
    for i, (version, pid, first, last, lso) in enumerate(
        ENTRY.iter_unpack(memoryview(data)[:whole])
    ):
        where = i * ENTRY.size
        if version != CURRENT_VERSION:
            raise CorruptIndexError(
                f"aborted transaction entry {i} has version {version}",
                position=where,
                expected=f"version {CURRENT_VERSION}",
            )
        if last < base_offset:
            raise CorruptIndexError(
                f"entry {i} last offset {last} is below the segment base offset {base_offset}",
                position=where,
                expected="last offset >= base offset",
            )
        if first > last:
            raise CorruptIndexError(
                f"entry {i} first offset {first} is after its last offset {last}",
                position=where,
                expected="first offset <= last offset",
            )
        if entries and last <= entries[-1].last_offset:
            raise CorruptIndexError(
                f"entry {i} last offset {last} does not increase "
                f"(previous {entries[-1].last_offset})",
                position=where,
                expected="strictly increasing last offsets",
            )
        entries.append(AbortedTxn(pid, first, last, lso, version))
    if whole != size:
        raise CorruptIndexError(
            f"transaction index ends with a partial {size - whole}-byte entry",
            position=whole,
            expected=f"whole {ENTRY.size}-byte entries",
        )
    return TransactionIndex(base_offset, tuple(entries))


def read_txn_index(
    path: str | os.PathLike[str], base_offset: int | None = None
) -> TransactionIndex:
    """Read and parse a ``.txnindex``; the base offset defaults to the one in its name."""
    return read_index_file(path, ".txnindex", base_offset, parse_txn_index)


def format_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    """Bytes of a ``.txnindex`` holding ``entries`` (in order, as Kafka appends them)."""
    return b"".join(
        ENTRY.pack(t.version, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
        for t in entries
    )
