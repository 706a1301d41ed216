"""Producing one source batch into the open replay transaction, at the cost of the hot path.

:class:`BatchProducer` reads the next source batch of a :class:`~.reader.PartitionReader` and
hands its records to the transactional producer's ``produce()``, booking the batch's runs
(:mod:`.txn_runs`) in the open transaction; committing is the caller's
(:class:`~.engine.PartitionReplay`). Cost per record (see docs/performance.md, Replay):

* *streaming* - ``same`` partition mapping, no provenance headers, no key filter, no MB/s
  limit: the reader hands over whole committed batches undecoded
  (:class:`~kafka_archive.replay.execution.reader.RawBatch`) and
  ``segment_lib.record_batch.emit_records_v2`` decodes each record in C straight into the
  arguments of ``produce()`` and calls it (no Record objects, no Python loop per record; what
  ``produce()`` raises comes back with the index to resume at: a full queue is served and the
  batch resumed);
* otherwise batches are decoded by the compiled decoder and the records between a run's bounds
  go to ``produce()`` in one tight Python loop with no callback and no other per-record object
  than the header list ``produce()`` requires.

Delivery callbacks (which give the target offsets) are attached only to the first and last
record of each run. Client errors go through :func:`~.kafka_errors.raise_kafka`.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Protocol

from confluent_kafka import KafkaException, Producer

from kafka_archive.replay.execution.kafka_errors import raise_kafka
from kafka_archive.replay.execution.ratelimit import RateLimiter
from kafka_archive.replay.execution.reader import PartitionReader, RawBatch
from kafka_archive.replay.execution.txn_runs import OpenTxn, Run, hashed_runs, same_runs
from kafka_archive.replay.planning.plan import ReplaySpec
from kafka_archive.replay.target.murmur2 import murmur2_partition
from segment_lib.record_batch import first_record_timestamp
from segment_lib.records import Record, TimestampType

__all__ = ["PROVENANCE_HEADER", "BatchProducer", "Batches", "streams"]

#: header added with --provenance-headers: ``<cluster>/<topic>/<partition>/<offset>``
PROVENANCE_HEADER = "kafka-archive.source"

#: where Producer.produce's positional parameters (topic, value, key, partition, on_delivery,
#: callback, timestamp, headers) take a record's value, key, timestamp, headers and the delivery
#: callback (segment_lib.record_batch.emit_records_v2's slots)
_PRODUCE_SLOTS = (1, 2, 6, 7, 4)

# The hot loop unpacks records as tuples (faster than attribute access): fail loudly at import if
# segment_lib's Record ever changes its field order.
if Record._fields != ("offset", "timestamp", "key", "value", "headers"):  # pragma: no cover
    raise ImportError(f"segment_lib.records.Record fields changed: {Record._fields}")


class Batches(Protocol):
    """What a partition's replay produces its source batches with (:class:`BatchProducer`
    here, :class:`~.batch_send.BatchSender` for batch-level replay)."""

    def produce_next(self, txn: OpenTxn) -> tuple[int, int] | None:
        """Produce the next source batch into ``txn``: ``(records, bytes)``, ``None`` at the
        end."""

    def close(self) -> None:
        """Stop reading (the range ended first)."""


def streams(spec: ReplaySpec, limiter: RateLimiter | None) -> bool:
    """Whether whole batches go from the bytes to produce() (the streaming path, above): each
    record keeps its partition and nothing per record is added or counted."""
    return (
        spec.partition_mapping == "same"
        and not spec.provenance_headers
        and (limiter is None or limiter.bytes is None)
    )


class BatchProducer:
    """Produce the batches of ``reader`` one at a time into the open transaction.

    Args:
        producer: the transactional producer (a transaction is open around each call).
        spec: the replay request (mapping, provenance headers, timestamps).
        target_topic: where the records go.
        partition: the source partition replayed.
        target_partitions: the target topic's partition count.
        reader: the partition's committed records, from the resume point.
        limiter: the active rate limiter, or ``None``.
    """

    def __init__(
        self,
        producer: Producer,
        spec: ReplaySpec,
        *,
        target_topic: str,
        partition: int,
        target_partitions: int,
        reader: PartitionReader,
        limiter: RateLimiter | None,
    ) -> None:
        self.produce = producer.produce
        self.poll = producer.poll
        self.topic = target_topic
        self.mapping = spec.partition_mapping
        self.nparts = target_partitions
        self.provenance = spec.provenance_headers
        self.prov_prefix = f"{spec.cluster}/{spec.topic}/{partition}/"
        self.keep_ts = spec.preserve_timestamps
        self.partition = partition
        self.limiter = limiter
        self.stats = reader.stats
        self._batches = iter(reader)  # a generator: closed early when the range ends first

    def close(self) -> None:
        """Stop reading (the range ended before the reader's iteration did)."""
        self._batches.close()

    def produce_next(self, txn: OpenTxn) -> tuple[int, int] | None:
        """Read (decode) the next source batch and produce it; ``(records, payload bytes)``
        or ``None`` at the end. Run it with the garbage collector paused (see
        :mod:`.gc_pause`): the batch's records must not outlive this call, so they never leave
        its frame."""
        bytes_before = self.stats.bytes_read
        group = next(self._batches, None)
        if group is None:
            return None
        if isinstance(group, RawBatch):  # (made only when streaming: see the reader)
            return self._stream_batch(txn, group, bytes_before)
        return self._decoded_batch(txn, group, bytes_before)

    # -- the decoded path ------------------------------------------------------------------------

    def _runs(self, group: list[Record]) -> list[tuple[Run, list[Record]]]:
        """The target partitions and runs of one source batch."""
        source_partition = self.partition
        if self.mapping == "same":
            return same_runs(group, source_partition)
        nparts = self.nparts
        if self.mapping == "murmur2":
            targets = [
                murmur2_partition(r.key, nparts) if r.key is not None else source_partition % nparts
                for r in group
            ]
        else:
            rr = self.partition
            targets = [(r.offset + rr) % nparts for r in group]
        return hashed_runs(group, targets)

    def _decoded_batch(
        self, txn: OpenTxn, group: list[Record], bytes_before: int
    ) -> tuple[int, int]:
        runs = self._runs(group)
        ok_ts = self.keep_ts and group[0].timestamp >= 0 and group[-1].timestamp >= 0
        for run, members in runs:
            self._produce_run(run, members, ok_ts)
        n = len(group)
        limiter = self.limiter
        if limiter is not None and limiter.bytes is not None:
            # payload bytes: only computed when a MB/s limit asks for them
            nbytes = sum(len(r.value or b"") + len(r.key or b"") for r in group)
        else:
            nbytes = self.stats.bytes_read - bytes_before
        txn.add((run for run, _m in runs), group[0].offset, group[-1].offset, n, nbytes)
        return n, nbytes

    def _produce_run(self, run: Run, members: list[Record], ok_ts: bool) -> None:
        """Produce one run; delivery reports (target offsets) only for its first and last
        record."""
        q = run.target_partition
        k = len(members)
        one = self._one
        one(members[0], q, run.both if k == 1 else run.first, ok_ts)
        if k > 2:
            if self.provenance:
                for r in islice(members, 1, k - 1):
                    one(r, q, None, ok_ts)
            else:
                # The per-record path: tuple unpacking (Record is a NamedTuple, checked at
                # import) instead of attribute lookups, no callback, a header list only
                # when there are headers (produce() takes lists, not tuples). Try blocks
                # cost nothing in 3.11 until they catch.
                produce_, topic_ = self.produce, self.topic
                for _off, ts, key, value, hdrs in members[1:-1]:
                    try:
                        produce_(
                            topic_, value, key, q, None, None, ts if ok_ts else 0,
                            [*hdrs] if hdrs else None,
                        )  # fmt: skip
                    except BufferError:
                        self._send(value, key, q, None, ts if ok_ts else 0,
                                   [*hdrs] if hdrs else None)  # fmt: skip
                    except KafkaException as exc:
                        raise_kafka(exc, self.partition)
        if k > 1:
            one(members[-1], q, run.last, ok_ts)

    def _one(self, r: Record, q: int, cb: Any, ok_ts: bool) -> None:
        hdrs: list[Any] | None = list(r.headers) if r.headers else None
        if self.provenance:
            prov = (PROVENANCE_HEADER, (self.prov_prefix + str(r.offset)).encode())
            hdrs = [*hdrs, prov] if hdrs else [prov]
        self._send(r.value, r.key, q, cb, r.timestamp if ok_ts else 0, hdrs)

    def _send(
        self, value: bytes | None, key: bytes | None, q: int, cb: Any, ts: int, headers: Any
    ) -> None:
        while True:
            try:
                self.produce(self.topic, value, key, q, cb, None, ts, headers)
                return
            except BufferError:
                self.poll(0.05)
            except KafkaException as exc:
                raise_kafka(exc, self.partition)

    # -- the streaming path ----------------------------------------------------------------------

    def _stream_batch(self, txn: OpenTxn, batch: RawBatch, bytes_before: int) -> tuple[int, int]:
        """Produce a whole batch straight from its bytes (one run, same partition)."""
        h = batch.header
        source_partition = self.partition
        run = Run(source_partition, h.base_offset, h.last_offset, h.record_count)
        # as the decode path decides on its first and last record's timestamps (under
        # LogAppendTime every record has the batch's max timestamp; a cleaned batch's first
        # timestamp field may hold the delete horizon: its first record tells)
        ok_ts = (
            self.keep_ts
            and h.max_timestamp >= 0
            and (
                h.timestamp_type is TimestampType.LOG_APPEND_TIME
                or first_record_timestamp(batch.view, h) >= 0
            )
        )
        template = (self.topic, None, None, source_partition, None, None, 0, None)
        marks = (run.first, run.last, run.both)
        done = 0
        while True:
            done, err = batch.emit(self.produce, template, _PRODUCE_SLOTS, start=done,
                                   marks=marks, zero_timestamps=not ok_ts)  # fmt: skip
            if err is None:
                break
            if isinstance(err, BufferError):
                self.poll(0.05)  # the producer's queue is full: serve it, then resume
            elif isinstance(err, KafkaException):
                raise_kafka(err, self.partition)
            else:
                raise err
        n = h.record_count
        nbytes = self.stats.bytes_read - bytes_before
        txn.add((run,), h.base_offset, h.last_offset, n, nbytes)
        return n, nbytes
