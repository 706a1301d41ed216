"""Batch-level replay's transactions on two transactional ids, one after the other.

Why: after ``EndTxn`` the coordinator still writes the transaction's markers (to the target
partition and the progress partition, each ``acks=all``) and then its own completion record;
until it has, it answers ``CONCURRENT_TRANSACTIONS`` to the next ``AddPartitionsToTxn`` of the
*same* transactional id. Measured on the real 3-broker cluster that wait was ~1.6 s of the
three partitions' 9 s of threads (docs/performance.md, "Batch-level replay into a real
cluster"). A partition's transactions therefore alternate between two transactional ids - the
partition's own (:func:`~.engine.transactional_id`) and its alternate
(:func:`~.engine.alternate_transactional_id`) - so the next transaction starts as soon as the
previous one's ``EndTxn`` is answered, while the coordinator completes that one.

What stays exactly as with one id:

* **order**: a transaction is begun only after the previous one's ``EndTxn`` (commit) was
  answered, i.e. after all its batches and its progress record were acknowledged: the target
  partition holds the source's records in source order, and the progress partition holds the
  progress records in commit order (the previous transaction's markers may land among the next
  one's batches: read_committed consumers see each transaction at its own marker; the offset
  ranges come from the leaders' answers, so they are exact either way);
* **what is committed**: a transaction's commit is asked only after the previous one's commit
  was answered, so no transaction commits unless every earlier one did; an abort concerns the
  open transaction only (the other id has none open);
* **fencing and resume**: :meth:`TxnPair.init` gives *both* ids a new epoch (``InitProducerId``
  fences every older producer of either and aborts what they left open) before the committed
  progress is read. Every progress record the batch path commits says so
  (:attr:`~.progress.ProgressRecord.alternate_txn_id`, sticky): a record-level replay that
  resumes such a replay fences the alternate id too and reads the progress again
  (:meth:`~.engine.PartitionReplay._resume_point`), and ``replay release`` fences both.

Not thread safe, like the producers it holds.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from kafka_archive.kafka_protocol.transactions import OnOffset, TxnBatchProducer

__all__ = ["TxnPair"]


class TxnPair:
    """Two :class:`~kafka_archive.kafka_protocol.transactions.TxnBatchProducer` s used in
    turn, one transaction each (see the module docstring); the interface of one producer,
    which the engine and :class:`~.batch_send.BatchSender` use unchanged: every call goes to
    the producer of the open (or next) transaction, and :meth:`commit` hands over to the other.
    """

    def __init__(self, first: TxnBatchProducer, second: TxnBatchProducer) -> None:
        self._producers = (first, second)
        self._current = 0

    @property
    def current(self) -> TxnBatchProducer:
        """The producer of the open (or next) transaction."""
        return self._producers[self._current]

    @property
    def transactional_id(self) -> str:
        return self.current.transactional_id

    @property
    def producer_id(self) -> int:
        return self.current.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.current.producer_epoch

    def close(self) -> None:
        for producer in self._producers:
            producer.close()

    def partitions(self, topic: str) -> int:
        return self.current.partitions(topic)

    def init(self) -> None:
        """A new epoch for both transactional ids (fencing older producers of either, aborting
        what they left open); the next transaction goes on the first. The second id's
        ``InitProducerId`` is asked from a thread meanwhile (a round trip waited outside the
        GIL: the replay's start is not one round trip longer); both are answered on return.

        Raises:
            TxnError: either was refused (the first's error when both were).
        """
        first, second = self._producers
        failed: list[BaseException] = []

        def init_second() -> None:
            try:
                second.init()
            except BaseException as exc:  # re-raised by the caller's thread below
                failed.append(exc)

        thread = threading.Thread(target=init_second, name="replay-txn-init")
        thread.start()
        try:
            first.init()
        finally:
            thread.join()
        if failed:
            raise failed[0]
        self._current = 0

    def begin(self, partitions: Sequence[tuple[str, int]]) -> None:
        self.current.begin(partitions)

    def sequence(self, topic: str, partition: int, records: int) -> int:
        return self.current.sequence(topic, partition, records)

    def append(
        self,
        topic: str,
        partition: int,
        batch: bytes | bytearray,
        on_offset: OnOffset | None = None,
    ) -> None:
        self.current.append(topic, partition, batch, on_offset)

    def flush(self) -> None:
        self.current.flush()

    def commit(self) -> None:
        """Commit the open transaction; the next one goes on the other transactional id (whose
        previous transaction was completed long ago: no ``CONCURRENT_TRANSACTIONS`` wait)."""
        self.current.commit()
        self._current ^= 1

    def abort(self) -> None:
        """Abort the open transaction (a new epoch for its transactional id); the redo goes on
        the same id."""
        self.current.abort()
