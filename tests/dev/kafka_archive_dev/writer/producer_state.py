"""Producer state of one partition, as Kafka's ``ProducerStateManager`` keeps it.

The parts that shape files: per producer the epoch, the last
``ProducerStateEntry.NUM_BATCHES_TO_RETAIN`` batches (sequence numbers, offsets), the
coordinator epoch and the open transaction's first offset; the open transactions of the
partition; and the ``<offset>.snapshot`` bytes (:meth:`ProducerState.take_snapshot`, only when
the state moved beyond the previous snapshot).

Transactions: COMMIT/ABORT control batches complete a producer's open transaction
(:meth:`ProducerState.append_chunk` returns them). The writer appends an aborted transaction
that had data to the ``.txnindex`` of the segment holding its marker as ``(producerId,
firstOffset, lastOffset = marker offset, lastStableOffset)``, where the LSO
(:meth:`ProducerState.last_stable_offset`) is the first offset of the earliest still-open
transaction of *another* producer, else marker offset + 1. A non-transactional batch inside
its producer's open transaction raises ``ValueError``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from kafka_archive_dev.writer.encode import NO_SEQUENCE, EncodedBatch
from segment_lib.control import ControlType
from segment_lib.producer_snapshot import ProducerSnapshotEntry, format_producer_snapshot
from segment_lib.records import NO_TIMESTAMP
from segment_lib.txn_state import OngoingTxns

__all__ = ["BatchMetadata", "CompletedTxn", "ProducerEntry", "ProducerState"]

_BATCHES_TO_RETAIN: Final = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN


@dataclass(slots=True)
class BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = -1
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=_BATCHES_TO_RETAIN))

    def maybe_update_epoch(self, epoch: int) -> None:
        if self.epoch != epoch:
            self.batches.clear()
            self.epoch = epoch

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def snapshot_entry(self) -> ProducerSnapshotEntry:
        last = self.batches[-1] if self.batches else None
        return ProducerSnapshotEntry(
            producer_id=self.producer_id,
            epoch=self.epoch,
            last_sequence=last.last_seq if last else NO_SEQUENCE,
            last_offset=last.last_offset if last else -1,
            offset_delta=last.offset_delta if last else 0,
            timestamp=self.last_timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_first_offset=(
                -1 if self.current_txn_first_offset is None else self.current_txn_first_offset
            ),
        )


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerState:
    """The parts of ``ProducerStateManager`` that shape files: entries, open transactions,
    snapshot offsets."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing = OngoingTxns()
        self.last_map_offset = 0
        self.last_snap_offset = 0

    def append_chunk(self, batches: Sequence[EncodedBatch]) -> list[CompletedTxn]:
        """Apply a chunk; return the completed transactions (LSO computed by the caller after
        :meth:`start_pending`)."""
        started: list[tuple[int, int]] = []
        completed: list[CompletedTxn] = []
        for b in batches:
            if not b.has_producer_id:
                continue
            entry = self.producers.setdefault(b.producer_id, ProducerEntry(b.producer_id))
            if b.is_control:
                assert b.control_type is not None
                if entry.current_txn_first_offset is not None:
                    completed.append(
                        CompletedTxn(
                            b.producer_id,
                            entry.current_txn_first_offset,
                            b.base_offset,
                            b.control_type is ControlType.ABORT,
                        )
                    )
                # ProducerStateEntry.update(epoch, coordinatorEpoch, timestamp): the marker
                # record's timestamp is the batch max timestamp (single record, delta 0)
                entry.maybe_update_epoch(b.producer_epoch)
                entry.coordinator_epoch = b.coordinator_epoch
                entry.current_txn_first_offset = None
                entry.last_timestamp = b.max_timestamp
            else:
                entry.maybe_update_epoch(b.producer_epoch)
                entry.batches.append(
                    BatchMetadata(
                        b.last_sequence,
                        b.last_offset,
                        b.last_offset - b.base_offset,
                        b.max_timestamp,
                    )
                )
                entry.last_timestamp = b.max_timestamp
                if entry.current_txn_first_offset is None and b.is_transactional:
                    entry.current_txn_first_offset = b.base_offset
                    started.append((b.base_offset, b.producer_id))
                elif entry.current_txn_first_offset is not None and not b.is_transactional:
                    raise ValueError(
                        f"non-transactional batch at {b.base_offset} from producer "
                        f"{b.producer_id} inside its open transaction"
                    )
        # ProducerStateManager.update adds the transactions started in this append
        for first, pid in started:
            self.ongoing.start(first, pid)
        return completed

    def last_stable_offset(self, txn: CompletedTxn) -> int:
        return self.ongoing.last_stable_offset(txn.producer_id, txn.last_offset)

    def complete(self, txn: CompletedTxn) -> None:
        self.ongoing.complete(txn.first_offset)

    def first_unstable_offset(self) -> int | None:
        return self.ongoing.first_unstable_offset()

    def take_snapshot(self) -> tuple[int, bytes] | None:
        if self.last_map_offset <= self.last_snap_offset:
            return None
        self.last_snap_offset = self.last_map_offset
        entries = [self.producers[pid].snapshot_entry() for pid in sorted(self.producers)]
        return self.last_map_offset, format_producer_snapshot(entries)
