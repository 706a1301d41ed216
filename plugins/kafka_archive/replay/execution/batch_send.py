"""Batch-level replay's producing step: a source batch goes to the target as a batch.

:class:`BatchSender` is batch-level replay's :class:`~.batch_produce.Batches`: it reads the
next committed group of a :class:`~.reader.PartitionReader` (made with ``raw_batches``) and hands
one record batch to the :class:`~kafka_archive.kafka_protocol.transactions.TxnBatchProducer`:

* **as stored** - a whole magic 2 CreateTime batch with consecutive offsets inside the range (the
  reader's :class:`~.reader.RawBatch`) whose records have their own timestamps: only its producer
  fields are re-stamped (this producer's id and epoch, the partition's next base sequence, the
  transactional flag) and its CRC-32C recomputed (:func:`segment_lib.batch_encode.restamp_v2`);
  compressed records stay compressed, nothing is decoded. The common case, and the fast one.
* **re-encoded** - every other committed group: a batch cut by the replay's range, a compacted
  batch whose offsets have gaps (a broker refuses a produced batch whose record count is not
  its offset span), a LogAppendTime batch (a consumer saw the append time on every record: the
  records are given it as CreateTime, as the record path does), a cleaned batch whose first
  timestamp field is the delete horizon. Its committed records become one new batch with the
  source codec (:func:`segment_lib.batch_encode.encode_batch_v2`); a record with no timestamp
  (-1) takes the time of sending, as a producer stamps it.

Either way the target gives the batch consecutive offsets from the one the leader answers, so
each run's target offsets (the progress record's source->target ranges) follow from the
answer: no per-record callback. Counted in :attr:`BatchSender.reencoded`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from kafka_archive.kafka_protocol.transactions import TxnBatchProducer
from kafka_archive.replay.execution.ratelimit import RateLimiter
from kafka_archive.replay.execution.reader import BatchRecords, PartitionReader, RawBatch
from kafka_archive.replay.execution.txn_runs import OpenTxn, Run, same_runs
from segment_lib.batch_encode import WriteRecord, encode_batch_v2, restamp_v2
from segment_lib.compression import Codec
from segment_lib.record_batch import has_delete_horizon
from segment_lib.records import BatchHeader, Record, TimestampType

__all__ = ["BatchSender", "sendable_as_stored"]


def sendable_as_stored(header: BatchHeader) -> bool:
    """Whether a whole committed batch can go to the target as stored (re-stamped only): a
    CreateTime data batch whose first timestamp field is its first record's time."""
    return (
        header.timestamp_type is TimestampType.CREATE_TIME
        and not has_delete_horizon(header)
        and header.first_timestamp >= 0
        and header.max_timestamp >= 0
    )


class _Bounds:
    """Fills the runs of one sent batch with their target offsets once the leader answered:
    the batch's records take consecutive offsets from ``base``, run after run."""

    __slots__ = ("runs",)

    def __init__(self, runs: list[Run]) -> None:
        self.runs = runs

    def __call__(self, base: int) -> None:
        for run in self.runs:
            run.target_first = base
            run.target_last = base + run.count - 1
            base += run.count


class BatchSender:
    """Send the batches of ``reader`` one at a time into the producer's open transaction.

    Args:
        producer: the transactional batch producer (a transaction is open around each call).
        target_topic: where the batches go (the source partition's number: ``same`` mapping).
        partition: the source partition replayed.
        reader: the partition's committed groups from the resume point (``raw_batches``).
        limiter: the active records/s limiter, or ``None``.
    """

    def __init__(
        self,
        producer: TxnBatchProducer,
        *,
        target_topic: str,
        partition: int,
        reader: PartitionReader,
        limiter: RateLimiter | None,
    ) -> None:
        self.producer = producer
        self.topic = target_topic
        self.partition = partition
        self.stats = reader.stats
        self.limiter = limiter
        #: batches sent re-encoded (not as stored), see the module docstring
        self.reencoded = 0
        #: batches sent in all
        self.sent = 0
        self._groups: Iterator[list[Record] | RawBatch] = iter(reader)

    def close(self) -> None:
        """Stop reading (the range ended before the reader's iteration did)."""
        close = getattr(self._groups, "close", None)
        if close is not None:
            close()

    def produce_next(self, txn: OpenTxn) -> tuple[int, int] | None:
        """Send the next source batch; ``(records, bytes read)`` or ``None`` at the end."""
        bytes_before = self.stats.bytes_read
        group = next(self._groups, None)
        if group is None:
            return None
        if isinstance(group, RawBatch) and sendable_as_stored(group.header):
            runs = self._as_stored(group)
        else:
            records = group.records() if isinstance(group, RawBatch) else group
            header = group.header if isinstance(group, (RawBatch, BatchRecords)) else None
            if not records:
                return 0, self.stats.bytes_read - bytes_before
            runs = self._reencoded(records, header)
        self.sent += 1
        n = sum(r.count for r in runs)
        nbytes = self.stats.bytes_read - bytes_before
        txn.add(runs, runs[0].source_first, runs[-1].source_last, n, nbytes)
        return n, nbytes

    def _as_stored(self, batch: RawBatch) -> list[Run]:
        h = batch.header
        producer = self.producer
        n = h.record_count
        data = restamp_v2(
            batch.view[h.position : h.position + h.size],
            h,
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            base_sequence=producer.sequence(self.topic, self.partition, n),
        )
        runs = [Run(self.partition, h.base_offset, h.last_offset, n)]
        producer.append(self.topic, self.partition, data, _Bounds(runs))
        return runs

    def _reencoded(self, records: list[Record], header: BatchHeader | None) -> list[Run]:
        producer = self.producer
        now = int(time.time() * 1000)
        n = len(records)
        rows = [
            WriteRecord(r.key, r.value, r.headers, r.timestamp if r.timestamp >= 0 else now)
            for r in records
        ]
        encoded = encode_batch_v2(
            0,
            rows,
            codec=header.codec if header is not None else Codec.NONE,
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            base_sequence=producer.sequence(self.topic, self.partition, n),
            transactional=True,
        )
        runs = [run for run, _members in same_runs(records, self.partition)]
        producer.append(self.topic, self.partition, encoded.data, _Bounds(runs))
        self.reencoded += 1
        return runs
