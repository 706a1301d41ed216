"""The last stable offset (LSO) of each partition's archived chain, kept in
``partition_stability`` (model :class:`~kafka_archive.catalog.models.PartitionStability`).

A transaction still open where the archive ends has no outcome yet: a ``read_committed``
consumer stops at its first offset, and so must a replay or an export (records at or above it
are neither delivered nor dropped: the run ends ``incomplete`` and a later run, once the
archive holds the marker, delivers them). This module knows that offset per partition:

* each serving segment's **transaction events** (``segment_lib.txn_state.scan_txn_events``:
  the first transactional batch of each producer's transaction and every COMMIT/ABORT
  marker) are read from its bytes once and kept in ``segments.txn_events`` (JSON). Segments
  without transactional or control batches (the catalog's header scan counted them) have
  none and are not read;
* :func:`chain_stability` folds the events of the chain's pieces in offset order
  (``segment_lib.txn_state.TxnFold``): the LSO is the first offset of the earliest
  transaction left open, or the chain's end;
* :func:`refresh_stability` (run by every ``catalog build``, after its writes) reads the
  missing events and rewrites the rows of the partitions whose chain changed.

Why from the bytes (not the broker's producer-state snapshots): see ``segment_lib.txn_state``.
A transaction whose marker lies in a hole of the chain stays open here: nothing in the archive
says how it ended (the hole itself is reported by ``catalog gaps``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy import Connection, delete, func, insert, or_, select, update

from kafka_archive.catalog import tables
from kafka_archive.catalog.db import Catalog
from kafka_archive.store import StoreError
from kafka_archive.store.base import ObjectStore, read_view
from kafka_archive.timeparse import now_ms
from segment_lib.errors import SegmentError
from segment_lib.txn_state import TxnEvent, TxnEventScanner, TxnFold

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

# Core columns, not the ORM classes: every replay plan reads the stability (issue 27)
_CP, _SEG, _PS = tables.chain_pieces.c, tables.segments.c, tables.partition_stability.c

__all__ = ["Stability", "chain_stability", "read_stability", "refresh_stability"]

log = logging.getLogger(__name__)

#: bytes per ranged read of a segment's transaction events
_CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Stability:
    """A partition chain's last stable offset: ``stable_offset`` (== ``end_offset`` when no
    transaction is open) for the chain ending at ``end_offset`` (exclusive), and the open
    transactions as ``(producer_id, first_offset)``."""

    stable_offset: int
    end_offset: int
    open_txns: tuple[tuple[int, int], ...] = field(default_factory=tuple)

    @property
    def stable(self) -> bool:
        return self.stable_offset >= self.end_offset


def _needs_events() -> object:
    return (_SEG.txn_events.is_(None)) & or_(
        _SEG.transactional_batches > 0, _SEG.control_batches > 0
    )


def chain_stability(s: Session | Connection, partition_id: int) -> Stability | None:
    """The LSO of the partition's chain from its segments' stored events (SQL only); ``None``
    when a serving segment with transactional or control batches has no events yet (a catalog
    from before revision 0005 not built since), or the partition has no chain."""
    rows = s.execute(
        select(
            _CP.lo,
            _CP.hi,
            _SEG.txn_events,
            _SEG.transactional_batches,
            _SEG.control_batches,
        )
        .join(tables.segments, _SEG.id == _CP.segment_id)
        .where(_CP.partition_id == partition_id)
        .order_by(_CP.lo)
    ).all()
    if not rows:
        return None
    fold = TxnFold()
    for lo, hi, events, txn, control in rows:
        if events is None:
            if txn or control:
                return None
            continue
        fold.add(json.loads(events), int(lo), int(hi))
    end = int(rows[-1][1]) + 1
    return Stability(fold.stable_offset(end), end, tuple(fold.open_transactions()))


def read_stability(s: Session | Connection, partition_id: int) -> Stability | None:
    """The partition's recorded LSO when it is for the chain as it is now, else the one
    computed from the stored events (:func:`chain_stability`); ``None``: not known."""
    row = s.execute(
        select(tables.partition_stability).where(_PS.partition_id == partition_id)
    ).first()
    end = s.scalar(select(func.max(_CP.hi)).where(_CP.partition_id == partition_id))
    if row is not None and end is not None and row.end_offset == int(end) + 1:
        opened = tuple((int(p), int(f)) for p, f in json.loads(row.open_txns))
        return Stability(int(row.stable_offset), int(row.end_offset), opened)
    return chain_stability(s, partition_id)


def _stale_partitions(s: Session | Connection) -> list[int]:
    """Partitions whose row is missing, or for another chain end, or whose chain serves a
    segment with no events yet."""
    ends = select(_CP.partition_id, (func.max(_CP.hi) + 1).label("end")).group_by(_CP.partition_id)
    recorded = {
        int(pid): int(end) for pid, end in s.execute(select(_PS.partition_id, _PS.end_offset))
    }
    out = {int(pid) for pid, end in s.execute(ends) if recorded.get(int(pid)) != int(end)}
    missing = (
        select(_CP.partition_id)
        .join(tables.segments, _SEG.id == _CP.segment_id)
        .where(_needs_events())  # type: ignore[arg-type]
        .distinct()
    )
    out.update(int(pid) for (pid,) in s.execute(missing))
    return sorted(out)


def _scan_object(store: ObjectStore, key: str, size: int) -> list[TxnEvent]:
    """The object's transaction events, read in ranged chunks (a segment may be 1 GiB)."""
    scanner = TxnEventScanner(verify_crc=False)  # the build checked every batch's CRC
    pos, chunk = 0, _CHUNK_BYTES
    while pos < size:
        stop = min(pos + chunk, size)
        used = scanner.feed(read_view(store, key, pos, stop))
        if used == 0:
            if stop >= size:
                break  # no whole batch left (a torn tail the build reported)
            chunk *= 2  # one batch larger than the chunk: read it whole
            continue
        pos += used
        chunk = _CHUNK_BYTES
    return scanner.events


def _read_events(catalog: Catalog, store: ObjectStore, partition_id: int) -> tuple[int, list[str]]:
    """Read and store the events of the partition's serving segments that have none yet:
    ``(segments read, failures)``."""
    with catalog.session() as s:
        todo = s.execute(
            select(_SEG.id, _SEG.object_key, _SEG.size_bytes)
            .join(tables.chain_pieces, _CP.segment_id == _SEG.id)
            .where(_CP.partition_id == partition_id, _needs_events())  # type: ignore[arg-type]
            .distinct()
        ).all()
    failures: list[str] = []
    done = 0
    for seg_id, key, size in todo:
        try:
            events = _scan_object(store, key, int(size))
        except (StoreError, SegmentError, OSError) as exc:
            failures.append(f"{key}: {exc}")
            continue
        text = json.dumps([list(e) for e in events], separators=(",", ":"))
        with catalog.session() as s, s.begin():
            s.execute(update(tables.segments).where(_SEG.id == seg_id).values(txn_events=text))
        done += 1
    return done, failures


def refresh_stability(
    catalog: Catalog, store: ObjectStore, partition_ids: Sequence[int] | None = None
) -> dict[str, object]:
    """Bring ``partition_stability`` up to date for ``partition_ids`` (``None``: every
    partition whose row is stale, see ``_stale_partitions``): read the missing events from
    ``store``, fold, rewrite the rows. A partition whose events cannot be read keeps no row
    (planning then refuses to guess, see :func:`read_stability`); the failures are returned
    and logged. Returns ``{"partitions": n, "segments_read": n, "failures": [...]}``."""
    with catalog.session() as s:
        ids: Iterable[int] = _stale_partitions(s) if partition_ids is None else partition_ids
        ids = list(ids)
    read = 0
    failures: list[str] = []
    for pid in ids:
        n, failed = _read_events(catalog, store, pid)
        read += n
        failures += failed
        with catalog.session() as s, s.begin():
            s.execute(delete(tables.partition_stability).where(_PS.partition_id == pid))
            st = chain_stability(s, pid)
            if st is None:
                continue
            s.execute(
                insert(tables.partition_stability).values(
                    partition_id=pid,
                    stable_offset=st.stable_offset,
                    end_offset=st.end_offset,
                    open_txns=json.dumps([list(t) for t in st.open_txns]),
                    computed_at_ms=now_ms(),
                )
            )
    for f in failures:
        log.warning("last stable offset: transaction events not read: %s", f)
    return {"partitions": len(ids), "segments_read": read, "failures": failures}
