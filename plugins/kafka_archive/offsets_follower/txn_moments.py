"""When a followed record took effect: its COMMIT marker for a transactional one.

A ``TxnOffsetCommit`` (``send_offsets_to_transaction``) is appended to ``__consumer_offsets``
while its transaction is open; the group coordinator applies it only when the transaction's
COMMIT marker is written (an aborted one never). The follower's librdkafka consumer reads
``read_committed``, so it delivers such a record only after the marker, but shows neither
the producer id, nor the transactional flag, nor the marker. :class:`TxnMomentResolver` scans
the partition's raw batches (:mod:`kafka_archive.offsets_follower.raw_batches`) forward,
incrementally, and tells for each delivered offset whether its batch is transactional and, if
so, the offset and timestamp of its producer's next COMMIT marker.

Why the scan always ends: ``read_committed`` delivers a transactional record only once its
transaction committed, so the marker is already in the log, at or below the last stable
offset, after the record: scanning forward from the record finds it.

State per partition (kept small): the scan position, the batches scanned (their offset spans,
producer and flag) and the markers seen, both pruned below the consumer's position
(:meth:`TxnMomentResolver.prune`). A delivered offset below what is kept (a re-read after a
position conflict) restarts that partition's scan there.

A delivered offset no scanned batch holds (compacted away between the consumer's read and the
raw Fetch) or a transactional record whose COMMIT marker the scan did not reach (the broker
answered nothing more) is left unresolved: it counts at its record time, as before, and is
counted (``unresolved``) and logged.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_archive.offsets_follower.raw_batches import RawBatch, RawBatchSource

__all__ = ["Moment", "TxnMomentResolver"]

log = logging.getLogger(__name__)

#: (marker offset, marker timestamp) of a transactional record's COMMIT marker
Moment = tuple[int, int]


@dataclass(slots=True)
class _PartitionScan:
    """Raw batches of one partition from ``start`` up to ``next_offset`` (exclusive)."""

    start: int
    next_offset: int
    #: batches by base offset: (base, last, producer id, transactional), in offset order
    spans: list[tuple[int, int, int, bool]] = field(default_factory=list)
    #: producer id -> its markers in offset order: (offset, timestamp, committed)
    markers: dict[int, list[tuple[int, int, bool]]] = field(default_factory=dict)

    def add(self, batches: Iterable[RawBatch]) -> bool:
        """Take the batches at or after ``next_offset``; True when the scan moved."""
        moved = False
        for b in batches:
            if b.last_offset < self.next_offset:
                continue
            if b.control:
                if b.marker:
                    self.markers.setdefault(b.producer_id, []).append(
                        (b.marker_offset, b.marker_ts, b.marker == "commit")
                    )
            else:
                self.spans.append((b.base_offset, b.last_offset, b.producer_id, b.transactional))
            self.next_offset = b.last_offset + 1
            moved = True
        return moved

    def batch_of(self, offset: int) -> tuple[int, int, int, bool] | None:
        i = bisect.bisect_right(self.spans, (offset, 1 << 62)) - 1
        if i >= 0 and self.spans[i][0] <= offset <= self.spans[i][1]:
            return self.spans[i]
        return None

    def marker_after(self, producer_id: int, offset: int) -> tuple[int, int, bool] | None:
        ms = self.markers.get(producer_id, [])
        i = bisect.bisect_right(ms, (offset, 1 << 62, True))
        return ms[i] if i < len(ms) else None

    def prune(self, below: int) -> None:
        cut = bisect.bisect_left(self.spans, (below, -1, -1, False))
        # keep the batch holding ``below`` (a batch's later records may come next)
        if cut > 0 and self.spans[cut - 1][1] >= below:
            cut -= 1
        del self.spans[:cut]
        for pid in list(self.markers):
            kept = [m for m in self.markers[pid] if m[0] >= below]
            if kept:
                self.markers[pid] = kept
            else:
                del self.markers[pid]
        self.start = max(self.start, below)


class TxnMomentResolver:
    """For delivered ``__consumer_offsets`` offsets: the COMMIT marker of each transactional
    one (see the module docstring). ``max_idle_fetches``: fetches in a row that bring nothing
    new before a wanted marker is given up (logged, counted in :attr:`unresolved`)."""

    def __init__(self, source: RawBatchSource, *, max_idle_fetches: int = 3) -> None:
        self.source = source
        self.max_idle_fetches = max_idle_fetches
        self.unresolved = 0
        self._scans: dict[int, _PartitionScan] = {}

    def resolve(self, partition: int, offsets: Iterable[int]) -> dict[int, Moment]:
        """``offset -> (marker offset, marker timestamp)`` for each of ``offsets`` (delivered
        by a ``read_committed`` consumer) whose batch is transactional; the others (plain
        commits, group records) are not in the answer.

        Raises:
            RawFetchError / SegmentError: from the raw source (a failed Fetch, bad bytes).
        """
        wanted = sorted(set(offsets))
        if not wanted:
            return {}
        scan = self._scans.get(partition)
        if scan is None or wanted[0] < scan.start:
            scan = self._scans[partition] = _PartitionScan(wanted[0], wanted[0])
        self._scan_to(partition, scan, wanted[-1] + 1)
        out: dict[int, Moment] = {}
        pending: dict[int, list[int]] = {}  # producer -> its transactional offsets, no marker
        for off in wanted:
            span = scan.batch_of(off)
            if span is None:
                if off < scan.next_offset:
                    self._give_up(partition, off, "no raw batch holds it (compacted since?)")
                continue
            if span[3]:
                pending.setdefault(span[2], []).append(off)
        for pid, offs in pending.items():
            idle = 0
            while True:
                marker = scan.marker_after(pid, offs[-1])
                if marker is not None or idle >= self.max_idle_fetches:
                    break
                moved = scan.add(self.source.fetch(partition, scan.next_offset))
                idle = 0 if moved else idle + 1
            for off in offs:
                m = scan.marker_after(pid, off)
                if m is None:
                    self._give_up(partition, off, "its COMMIT marker was not found")
                elif not m[2]:
                    self._give_up(partition, off, f"its marker at {m[0]} is an ABORT")
                else:
                    out[off] = (m[0], m[1])
        return out

    def _scan_to(self, partition: int, scan: _PartitionScan, end: int) -> None:
        idle = 0
        while scan.next_offset < end and idle < self.max_idle_fetches:
            moved = scan.add(self.source.fetch(partition, scan.next_offset))
            idle = 0 if moved else idle + 1

    def _give_up(self, partition: int, offset: int, why: str) -> None:
        self.unresolved += 1
        log.warning(
            "__consumer_offsets-%d@%d: counted at its record time: %s", partition, offset, why
        )

    def prune(self, partition: int, below: int) -> None:
        """Forget what lies below ``below`` (the consumer's stored position) in ``partition``."""
        scan = self._scans.get(partition)
        if scan is not None:
            scan.prune(below)

    def close(self) -> None:
        self.source.close()
