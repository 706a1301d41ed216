"""Batch-level replay of one source partition: the archived batches themselves go to the target.

:class:`BatchPartitionReplay` is :class:`~.engine.PartitionReplay` with another producer: a
:class:`~kafka_archive.kafka_protocol.transactions.TxnBatchProducer` (Kafka's transaction
protocol over kafka-python's request classes) fed by a :class:`~.batch_send.BatchSender`, which
sends each committed source batch as stored - re-stamped with this producer's id, epoch and
sequence, compressed bytes untouched - instead of handing its records one by one to
librdkafka. Everything else is the engine's, unchanged: the transactional id per (intent,
partition), ``InitProducerId`` before the committed progress is read, transactions bounded by
records/bytes/time, the progress record produced to the progress topic *in the same
transaction* (:meth:`_commit`), the catalog mirror after the commit, the claim of the run,
fencing, the hooks at the same named points, the completeness contract (open transactions,
``incomplete``).

When it is used (:func:`batch_level`): the replay asks no per-record change - ``same``
partition mapping, no provenance headers, no key filter, timestamps preserved, no MB/s limit -
and the target's client settings are ones the protocol client can apply; under ``auto`` also
only for a partition whose archived batches are not small (:func:`small_batches`: a Produce
request carries one batch per partition and a broker serves one request per connection at a
time, so small batches move fewer records per second than librdkafka's ~1 MB batches of the
record path; ``--replay-path batch`` sends them whole anyway). Otherwise, or when
the target refuses a batch's size (``max.message.bytes``), the partition falls back to the
record path (:class:`~.engine.PartitionReplay`), resuming from what this path committed; the
partition's result says which path ran and why (:attr:`~.partition_result.PartitionResult.path`).

Errors map onto the engine's classes: a transient failure
(:class:`~kafka_archive.kafka_protocol.transactions.TxnRetry`, a connection error) aborts the
transaction, which is redone (:class:`~.kafka_errors.TxnAbort`; the abort is a new epoch, so
nothing of the failed attempt can land); a commit whose answer never came is of unknown outcome
(:class:`~.kafka_errors.ProducerFailed`: a new producer resumes from the progress committed in
the target); fenced is :class:`~kafka_archive.replay.errors.ReplayFencedError`; the rest is a
:class:`~kafka_archive.replay.errors.ReplayTargetError` saying to re-run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from kafka_archive.errors import InternalSignal
from kafka_archive.kafka_protocol.client import ProtocolClient, ProtocolConnectionError
from kafka_archive.kafka_protocol.config import UnsupportedRawSetting, kafka_python_config
from kafka_archive.kafka_protocol.transactions import (
    TxnBatchProducer,
    TxnFatal,
    TxnFenced,
    TxnRetry,
    TxnTooLarge,
)
from kafka_archive.replay.errors import ReplayFencedError, ReplayTargetError
from kafka_archive.replay.execution.batch_produce import streams
from kafka_archive.replay.execution.batch_send import BatchSender
from kafka_archive.replay.execution.engine import PartitionReplay
from kafka_archive.replay.execution.kafka_errors import ProducerFailed, TxnAbort
from kafka_archive.replay.execution.partition_result import PartitionResult
from kafka_archive.replay.execution.progress import ProgressRecord
from kafka_archive.replay.execution.ratelimit import RateLimiter
from kafka_archive.replay.execution.reader import PartitionReader
from kafka_archive.replay.execution.txn_calls import RERUN
from kafka_archive.replay.execution.txn_runs import OpenTxn
from kafka_archive.replay.planning.plan import ReplayPlan, ReplaySpec
from segment_lib.batch_encode import WriteRecord, encode_batch_v2

__all__ = [
    "BatchPartitionReplay",
    "batch_level",
    "partition_replay",
    "probe_ahead",
    "reachable",
    "replay_path_refusal",
    "small_batches",
]


class _RecordPathNeeded(InternalSignal):
    """The target refused what batch-level replay sends: the record path takes over."""


def batch_level(spec: ReplaySpec, client_config: dict[str, Any]) -> str | None:
    """``None`` when the replay of ``spec`` can send whole batches, else why not (one line,
    said in the report)."""
    if spec.replay_path == "records":
        return "the record path was asked for (--replay-path records)"
    if spec.partition_mapping != "same":
        return f"partition mapping {spec.partition_mapping} re-partitions records"
    if spec.provenance_headers:
        return "provenance headers are added to every record"
    if spec.key_filter:
        return "a key filter chooses records"
    if not spec.preserve_timestamps:
        return "timestamps are not preserved"
    limiter = RateLimiter(spec.rate_limit_records, spec.rate_limit_mb)
    if not streams(spec, limiter if limiter.active else None):
        return "an MB/s limit counts record bytes"
    try:
        kafka_python_config(client_config)
    except UnsupportedRawSetting as exc:
        return f"the target's client settings: {exc}"
    return None


#: under ``auto``, a partition whose archived batches hold fewer records than this on average
#: is replayed record by record. Measured into a real 3-broker cluster (docs/performance.md,
#: "Batch-level replay", 512-byte values, zstd): whole batches were 0.54x the record path's
#: records/s with 32-record batches (16 KB, the Java producer's default batch.size), 0.83x with
#: 64, 1.17x with 100, 2.08x with 500, 3.25x with 2,000 - the cost of a batch is per request,
#: the record path's per record
MIN_RECORDS_PER_BATCH = 100


def small_batches(records_per_batch: float | None) -> str | None:
    """Why ``auto`` replays a partition record by record for its batches' size (said in its
    result), ``None`` when they are large enough or their size is unknown (a plan made before
    batches were counted: whole batches, as before)."""
    if records_per_batch is None or records_per_batch >= MIN_RECORDS_PER_BATCH:
        return None
    return (
        f"the archived batches hold {records_per_batch:.0f} records on average (under "
        f"{MIN_RECORDS_PER_BATCH}: librdkafka's larger batches move more records per second; "
        "--replay-path batch sends them whole)"
    )


#: seconds the protocol client may take to reach the target before the record path is taken
PROBE_TIMEOUT_S = 3.0
_probed: dict[str, str | None] = {}
_probe_lock = threading.Lock()


def reachable(client_config: dict[str, Any]) -> str | None:
    """``None`` when kafka-python's protocol client bootstraps from the target within
    :data:`PROBE_TIMEOUT_S`, else why not; a yes (or the mock) is remembered per process and
    target servers, a failure is asked again next time.

    librdkafka's mock cluster (the tests' fallback where Java is missing) is known by its
    cluster id and answered at once: its ApiVersions reply is one kafka-python cannot decode.
    A target the protocol client cannot reach is replayed record by record, which then reports
    a real outage in its own words."""
    servers = str(client_config.get("bootstrap.servers", ""))
    with _probe_lock:
        if servers in _probed:
            return _probed[servers]
        why, lasting = _probe(client_config)
        if lasting:  # a transient failure is asked again by the next replay
            _probed[servers] = why
        return why


def _probe(client_config: dict[str, Any]) -> tuple[str | None, bool]:
    """``(why not, whether the answer lasts)``."""
    from confluent_kafka import Consumer, KafkaException

    from kafka_archive.replay.execution.progress import CLIENT_DEFAULTS
    from kafka_archive.replay.target.clients import new_client

    consumer = new_client(
        Consumer, {**CLIENT_DEFAULTS, **client_config, "group.id": "kafka-archive-replay-probe"}
    )
    try:
        cluster_id = consumer.list_topics(timeout=PROBE_TIMEOUT_S).cluster_id
    except KafkaException:  # unreachable: the target checks report it in their words
        return "the target did not answer its metadata request", False
    finally:
        consumer.close()
    if cluster_id is not None and cluster_id.startswith("mockCluster"):
        return "librdkafka's mock cluster (kafka-python's protocol client cannot talk to it)", True
    client = ProtocolClient(
        client_config, client_id="kafka-archive-replay", timeout_ms=int(PROBE_TIMEOUT_S * 1000)
    )
    try:
        client.bootstrap()
    except ProtocolConnectionError as exc:
        return f"the Kafka protocol client could not reach the target ({exc})", False
    finally:
        client.close()
    return None, True


def probe_ahead(plan: ReplayPlan) -> None:
    """Start asking :func:`reachable` for ``plan``'s target in a thread, when its request could
    go by batches: the probe (a metadata request, kafka-python's import and bootstrap: ~0.2 s
    measured) then overlaps the caller's other start-up work (the target checks: round trips
    waited for outside the GIL) instead of delaying the partitions' start. The answer is
    cached, so the runner's own :func:`replay_path_refusal` takes it, waiting for it if it is
    still under way; a probe that fails unexpectedly is not cached and is asked again there,
    where its error surfaces.
    Nothing is written. Not a daemon: the process waits for it (at most the probe's time)."""
    config = plan.spec.target.client_config()
    if batch_level(plan.spec, config) is not None:
        return  # the record path whatever the target says: nothing to ask

    def ask() -> None:
        with suppress(Exception):  # asked again by the runner, which reports it
            reachable(config)

    threading.Thread(target=ask, name="replay-path-probe").start()


def replay_path_refusal(plan: ReplayPlan) -> str | None:
    """``None`` when ``plan`` is replayed by whole batches, else why it is not (said in each
    partition's result under ``auto``)."""
    config = plan.spec.target.client_config()
    return batch_level(plan.spec, config) or reachable(config)


def partition_replay(
    plan: ReplayPlan, partition: int, *, why_not: str | None = "", **kwargs: Any
) -> PartitionReplay:
    """The replay of one partition of ``plan`` on the path :func:`replay_path_refusal` allows
    and, under ``auto``, :func:`small_batches` judges faster (``why_not``: the first's answer,
    when the caller asked it once for every partition; same other arguments as
    :class:`~.engine.PartitionReplay`); a record-path replay not asked for says why in its
    result."""
    if why_not == "":
        why_not = replay_path_refusal(plan)
    if why_not is None and plan.spec.replay_path == "auto":
        why_not = small_batches(plan.partition(partition).records_per_batch)
    if why_not is None:
        return BatchPartitionReplay(plan, partition, **kwargs)
    replay = PartitionReplay(plan, partition, **kwargs)
    if plan.spec.replay_path != "records":
        replay.path_note = f"record path: {why_not}"
    return replay


class BatchPartitionReplay(PartitionReplay):
    """Replay one source partition by whole batches (see the module docstring); same
    arguments as :class:`~.engine.PartitionReplay`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._args, self._kwargs = args, kwargs
        self._ppart = -1
        self._sender: BatchSender | None = None

    # -- the producer -----------------------------------------------------------------------------

    def _new_producer(self) -> TxnBatchProducer:
        return TxnBatchProducer(
            self.spec.target.client_config(),
            self.producer_config["transactional.id"],
            transaction_timeout_ms=int(self.producer_config["transaction.timeout.ms"]),
        )

    def _initialise(self, producer: TxnBatchProducer) -> None:
        try:
            with self._mapped(commit=False):
                producer.init()
                if self._progress_partitions is None:
                    self._progress_partitions = producer.partitions(self.spec.progress_topic)
        except TxnAbort as exc:  # (transient, but nothing to redo yet: the run stops)
            raise ReplayTargetError(f"partition {self.partition}: {exc}; {RERUN}") from None

    def _abort(self, producer: TxnBatchProducer) -> None:
        try:
            with self._mapped(commit=False):
                producer.abort()
        except TxnAbort as exc:  # the abort itself failed: a new producer resumes
            raise ProducerFailed(f"partition {self.partition}: abort failed: {exc}") from None

    def _release(self, producer: TxnBatchProducer, timeout_s: float = 5) -> None:
        producer.close()

    @contextmanager
    def _mapped(self, *, commit: bool) -> Iterator[None]:
        """The producer's errors as the engine's (module docstring); ``commit``: a lost answer
        leaves the outcome unknown."""
        where = f"partition {self.partition}"
        try:
            yield
        except TxnRetry as exc:
            raise TxnAbort(str(exc)) from None
        except ProtocolConnectionError as exc:
            if commit:
                raise ProducerFailed(f"{where}: the commit's outcome is unknown: {exc}") from None
            raise TxnAbort(str(exc)) from None
        except TxnFenced as exc:
            raise ReplayFencedError(f"{where}: fenced by a newer producer ({exc})") from None
        except TxnTooLarge as exc:
            raise _RecordPathNeeded(str(exc)) from None
        except TxnFatal as exc:
            raise ReplayTargetError(f"{where}: {exc}; {RERUN}") from None

    # -- the replay -------------------------------------------------------------------------------

    def run(self) -> PartitionResult:
        """Replay the partition by batches; when the target refuses a batch's size, the record
        path resumes from what was committed (see the module docstring)."""
        try:
            result = super().run()
        except _RecordPathNeeded as exc:
            self._producer = self._prepared = self._started = None
            fallback = PartitionReplay(*self._args, **self._kwargs)
            fallback.claim = self.claim
            fallback.target_partitions = self.target_partitions
            result = fallback.run()
            result.path = "records"
            result.path_note = f"fell back to the record path: {exc}"
            result.records_this_run += self._this_run[0]
            result.bytes_this_run += self._this_run[1]
            result.transactions_this_run += self._this_run[2]
            return result
        result.path = "batches"
        if self._sender is not None and self._sender.reencoded:
            result.path_note = (
                f"{self._sender.reencoded} of {self._sender.sent} batches re-encoded "
                "(cut by the range, compacted, LogAppendTime or without timestamps)"
            )
        return result

    def _replay_from(
        self,
        producer: TxnBatchProducer,
        progress: ProgressRecord | None,
        ppart: int,
        this_run: list[int],
    ) -> ProgressRecord:
        # the batches sent by the BatchSender (inside the engine's loop) fail the same way
        with self._mapped(commit=False):
            return super()._replay_from(producer, progress, ppart, this_run)

    def _source(
        self, producer: TxnBatchProducer, start: int, limiter: RateLimiter | None
    ) -> tuple[PartitionReader, BatchSender]:
        reader = PartitionReader(self.store, self.part, start_offset=start, raw_batches=True)
        self._sender = BatchSender(
            producer,
            target_topic=self.plan.target_topic,
            partition=self.partition,
            reader=reader,
            limiter=limiter,
        )
        return reader, self._sender

    def _begin(self, producer: TxnBatchProducer, seq: int) -> OpenTxn:
        assert self._prepared is not None
        self._hook("txn_begin", seq=seq)
        ppart = self._prepared[2]
        with self._mapped(commit=False):
            producer.begin(
                [(self.plan.target_topic, self.partition), (self.spec.progress_topic, ppart)]
            )
        return OpenTxn(started=time.monotonic())

    def _after_batch(
        self,
        producer: TxnBatchProducer,
        txn: OpenTxn,
        produced: tuple[int, int],
        limiter: RateLimiter | None,
    ) -> None:
        n, nbytes = produced
        if limiter is not None:
            limiter.acquire(n, nbytes)
        if self.hook is not None:
            self._hook("produced", records=n, offset=txn.last_offset)
        if self.on_records is not None:
            self.on_records(n)

    def _commit(
        self,
        producer: TxnBatchProducer,
        txn: OpenTxn,
        base: ProgressRecord | None,
        reader: PartitionReader,
        next_offset: int,
        seq: int,
        ppart: int,
        *,
        done: bool,
    ) -> ProgressRecord:
        """The engine's steps 2-5 with this producer: every batch answered (target offsets
        known), the progress record appended to the same transaction, ``EndTxn``, mirror."""
        with self._mapped(commit=False):
            producer.flush()
        record = self._next_record(txn, base, reader, next_offset, seq, done=done)
        self._hook("before_progress", seq=seq)
        offsets: list[int] = []
        topic = self.spec.progress_topic
        progress = encode_batch_v2(
            0,
            [WriteRecord(self.key, record.model_dump_json().encode(), (), int(time.time() * 1000))],
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            base_sequence=producer.sequence(topic, ppart, 1),
            transactional=True,
        )
        with self._mapped(commit=False):
            producer.append(topic, ppart, progress.data, offsets.append)
            producer.flush()
        self._hook("before_commit", seq=seq)
        with self._mapped(commit=True):
            producer.commit()
        self._committed = record
        self._hook("after_commit", seq=seq)
        self._mirror(record, ppart, offsets[0], seq)
        return record
