"""Which transactions are still open where a chain of log segments ends: the last stable offset.

A ``read_committed`` consumer never reads past a partition's **last stable offset** (LSO): the
first offset of the earliest transaction still open (a transactional batch of producer P with
no later COMMIT/ABORT marker of P), or the log end when none is open. The records at or above
it may still be committed or aborted; nobody can tell yet.

This module derives it from a segment's bytes, in two steps:

* :func:`scan_txn_events` walks one segment's batches (headers only, plus the one control
  record of each control batch) and returns its **transaction events** in offset order:
  ``(offset, producer_id, BEGIN)`` for the first transactional batch of a producer since its
  previous marker in this segment (or since the segment's start: it may continue a transaction
  begun in an earlier segment), and ``(offset, producer_id, END)`` for each COMMIT or ABORT
  marker. A few events per transaction, however many batches it holds.
* :class:`TxnFold` folds the events of consecutive segments (or of the pieces of them that a
  chain serves) in offset order: BEGIN keeps the first offset of a producer's open transaction
  (a continuation keeps the earlier one), END closes it. :meth:`TxnFold.stable_offset` is the
  LSO of everything folded.

Why from the bytes and not from the broker's producer-state ``.snapshot`` files
(:mod:`segment_lib.producer_snapshot`, whose entries carry ``currentTxnFirstOffset``): the
bytes are exact for exactly the data that was archived - every batch and marker that decides
a transaction's state is in them, whatever the broker kept. A snapshot describes the state at
its own offset only; the broker writes one per roll but deletes old ones, may have none for the
archive's last segment end (or one from an unclean shutdown), and it cannot say anything about
a chain assembled from several replicas. It is at best a cross-check.

Bytes only: no storage, no catalog. Batches are expected to be CRC-checked by the caller
(``verify_crc`` is passed through).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, NamedTuple

from segment_lib.control import ControlType, decode_control_record
from segment_lib.errors import TornTailError
from segment_lib.log_file import decode_batch, iter_batches
from segment_lib.records import BatchHeader

__all__ = [
    "BEGIN",
    "END",
    "OngoingTxns",
    "TxnEvent",
    "TxnEventScanner",
    "TxnFold",
    "scan_txn_events",
]

#: a producer's first transactional batch since its previous marker (or the segment's start)
BEGIN: Final = 0
#: a COMMIT or ABORT marker of a producer
END: Final = 1


class TxnEvent(NamedTuple):
    """One transaction event of a segment (see the module docstring)."""

    offset: int
    producer_id: int
    kind: int


def scan_txn_events(buf: bytes | memoryview, *, verify_crc: bool = True) -> list[TxnEvent]:
    """The transaction events of one whole segment's bytes, in offset order.

    Control batches that are not COMMIT/ABORT (e.g. KRaft's leader-change records) are no
    event. A torn tail (an active segment being written) ends the scan where the last complete
    batch ends.

    Raises:
        SegmentError: malformed batches (as :func:`~segment_lib.log_file.iter_batches`).
    """
    scanner = TxnEventScanner(verify_crc=verify_crc)
    scanner.feed(buf)
    return scanner.events


class TxnEventScanner:
    """:func:`scan_txn_events` over a segment fed in consecutive pieces (ranged reads of a
    large object): :meth:`feed` takes bytes starting at a batch boundary and says how many it
    consumed (whole batches); the caller feeds the rest again with the next bytes."""

    def __init__(self, *, verify_crc: bool = True) -> None:
        self.verify_crc = verify_crc
        self.events: list[TxnEvent] = []
        self._since_marker: set[int] = set()  # producers with a BEGIN after their last marker

    def feed(self, buf: bytes | memoryview) -> int:
        """Scan the whole batches of ``buf``; returns the bytes they take (0: not one whole
        batch)."""
        view = memoryview(buf)
        consumed = 0
        try:
            for h in iter_batches(view, verify_crc=self.verify_crc):
                consumed = h.next_position
                if h.is_control:
                    if _is_txn_marker(view, h):
                        self._since_marker.discard(h.producer_id)
                        self.events.append(TxnEvent(h.base_offset, h.producer_id, END))
                elif h.is_transactional and h.producer_id not in self._since_marker:
                    self._since_marker.add(h.producer_id)
                    self.events.append(TxnEvent(h.base_offset, h.producer_id, BEGIN))
        except TornTailError:
            pass
        return consumed


def _is_txn_marker(view: memoryview, header: BatchHeader) -> bool:
    for rec in decode_batch(view, header):
        control = decode_control_record(rec.key, rec.value)
        return control.type in (ControlType.COMMIT, ControlType.ABORT)
    return False


class TxnFold:
    """Transactions open after the events folded so far (see the module docstring)."""

    def __init__(self) -> None:
        #: producer id -> first offset of its open transaction
        self.open: dict[int, int] = {}

    def add(self, events: Iterable[TxnEvent | tuple[int, int, int]], lo: int = 0,
            hi: int | None = None) -> None:  # fmt: skip
        """Fold ``events`` (offset order) whose offset lies in ``[lo, hi]`` (inclusive; the piece
        of a segment that a chain serves)."""
        for offset, pid, kind in events:
            if offset < lo or (hi is not None and offset > hi):
                continue
            if kind == END:
                self.open.pop(pid, None)
            else:
                self.open.setdefault(pid, offset)

    def open_transactions(self) -> list[tuple[int, int]]:
        """``(producer_id, first_offset)`` of each open transaction, by first offset."""
        return sorted(((pid, first) for pid, first in self.open.items()), key=lambda t: t[::-1])

    def stable_offset(self, log_end: int) -> int:
        """The last stable offset: the first offset of the earliest open transaction, or
        ``log_end`` (one past the last folded offset) when none is open."""
        return min(self.open.values(), default=log_end)


class OngoingTxns:
    """``ProducerStateManager.ongoingTxns`` as the broker uses it to write ``.txnindex`` entries.

    Kafka adds the transactions an append started only after the whole append
    (``update(appendInfo)``), then, for each transaction the append completed, takes the
    :meth:`last_stable_offset` and removes it (:meth:`complete`): so a transaction started in
    the same append as another's marker counts as open for that marker's entry.
    """

    def __init__(self, open_txns: dict[int, int] | None = None) -> None:
        #: first offset -> producer id (a TreeMap in Kafka: iterated in offset order)
        self.by_first_offset: dict[int, int] = dict(open_txns or {})

    def start(self, first_offset: int, producer_id: int) -> None:
        self.by_first_offset[first_offset] = producer_id

    def last_stable_offset(self, producer_id: int, marker_offset: int) -> int:
        """``lastStableOffset(completedTxn)``: the first offset of the earliest open transaction
        of another producer, else the marker's offset + 1."""
        for first in sorted(self.by_first_offset):
            if self.by_first_offset[first] != producer_id:
                return first
        return marker_offset + 1

    def complete(self, first_offset: int) -> None:
        self.by_first_offset.pop(first_offset, None)

    def first_unstable_offset(self) -> int | None:
        return min(self.by_first_offset, default=None)
