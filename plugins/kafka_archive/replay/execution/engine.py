"""Replaying one source partition into the target, exactly once and resumable.

:class:`PartitionReplay` reads its partition's committed records (:mod:`.reader`) and produces
them with a **transactional** confluent-kafka producer whose ``transactional.id`` is
``kafka-archive-replay.<intent>.<source partition>`` (the request's intent,
:attr:`~.plan.ReplayPlan.txn_base`: every run of the same request fences a killed one). Per
transaction (at most ``txn_max_records`` records, ``txn_max_bytes`` payload bytes or
``txn_max_ms``):

1. ``begin_transaction``; produce records (key, value, headers, CreateTime timestamp as given,
   target partition from the mapping; :mod:`.batch_produce`, one source batch at a time);
   per-partition order is the producer's (idempotent, ordered) order;
2. ``flush``: every record delivered, the target offsets of run boundaries known;
3. produce the progress record (:mod:`.progress`) - next source offset, cumulative counters and
   this transaction's source->target offset ranges (:mod:`.txn_runs`) - to the progress topic;
4. ``commit_transaction`` (which first flushes the progress record and fails if any message of
   the transaction failed): data and progress become visible together, or neither does;
5. mirror the progress record into the catalog (:mod:`.ledger`).

Crash anywhere: before 4 the transaction never commits (the restarted producer's
``init_transactions`` fences the zombie and the broker aborts it); after 4 the progress topic
holds the new position even if 5 did not happen, and the resume mirrors it then. Resume order
matters: ``init_transactions`` first, *then* read the committed progress.

Errors: each class (:mod:`.kafka_errors`) has its answer, bounded, never breaking step 4's rule -
retriable: the same call again (:mod:`.txn_calls`); abortable: abort and redo from the last
committed position; fatal, or a commit of unknown outcome: a new producer resumes from the
progress *committed in the target* (:meth:`PartitionReplay.run`); fenced: stop, or take the id
back. Past the bounds: a typed :class:`~kafka_archive.replay.errors.ReplayTargetError` saying to
re-run the same command.

Offset ranges cost no per-message callback: delivery callbacks are attached only to the first
and last record of each *run* (records of one source batch going to one target partition with
consecutive source offsets - in ``same`` mapping, source gaps split runs; in hashed mappings a
run is a batch's records for one partition and only its bounds are exact).

Cost per record (see docs/performance.md, Replay, and :mod:`.batch_produce`): the records of a
batch go to ``produce()`` with no Python work per record in the common case, and everything
else - runs, offset-map bookkeeping, rate limiting, ``poll(0)``, progress callbacks, hooks -
happens once per source batch, with the garbage collector paused (:mod:`.gc_pause`), and commit
work once per transaction.

:meth:`PartitionReplay.prepare` (producer, ``init_transactions``, committed progress) can run
ahead of :meth:`PartitionReplay.run`, so that a runner replaying partitions one after another
overlaps the next partition's round trips with the current one's production.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import suppress
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from kafka_archive.kafka_protocol.config import librdkafka_config
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.errors import ReplayFencedError, ReplayTargetError
from kafka_archive.replay.execution import txn_calls
from kafka_archive.replay.execution.batch_produce import (
    PROVENANCE_HEADER,
    Batches,
    BatchProducer,
    streams,
)
from kafka_archive.replay.execution.gc_pause import GC_PAUSE
from kafka_archive.replay.execution.kafka_errors import ProducerFailed, TxnAbort, raise_kafka
from kafka_archive.replay.execution.partition_result import PartitionResult
from kafka_archive.replay.execution.progress import (
    CLIENT_DEFAULTS,
    CommittedLogReader,
    KafkaCommittedReader,
    ProgressRecord,
    RunClaim,
    newer_claim,
    progress_key,
    progress_partition,
)
from kafka_archive.replay.execution.ratelimit import RateLimiter
from kafka_archive.replay.execution.reader import PartitionReader
from kafka_archive.replay.execution.resume import committed_progress, progress_partition_count
from kafka_archive.replay.execution.txn_calls import RERUN
from kafka_archive.replay.execution.txn_runs import OpenTxn, merge_runs, next_progress
from kafka_archive.replay.planning.filters import KeyFilter
from kafka_archive.replay.planning.plan import PartitionPlan, ReplayPlan
from kafka_archive.replay.planning.stability import INCOMPLETE
from kafka_archive.store.base import ObjectStore

__all__ = [
    "PRODUCER_DEFAULTS",
    "PROVENANCE_HEADER",
    "Hook",
    "PartitionReplay",
    "PartitionResult",
    "transactional_id",
]

#: ``hook(point, info)`` is called at named points (tests kill the process there):
#: ``txn_begin``, ``produced`` (after each source batch), ``before_progress``, ``before_commit``,
#: ``after_commit``, ``after_catalog``
Hook = Callable[[str, dict[str, Any]], None]

_MAX_TXN_RETRIES = 8

#: how often a run that owns the replay (newest claim) makes a new producer after an older run
#: fenced it on its way out
_MAX_TAKEBACKS = 5

#: how many new producers a partition makes after fatal (not fenced) failures or commits of
#: unknown outcome (:class:`~.kafka_errors.ProducerFailed`)
_MAX_RECREATES = 3

#: the replay producer's librdkafka settings (before the target's client settings and the
#: transactional id; ``producer_config`` overrides them). Also the reference configuration of
#: ``benchmarks/bench_replay.py``'s bare produce loops.
PRODUCER_DEFAULTS: dict[str, Any] = {
    **CLIENT_DEFAULTS,
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 512 * 1024,
    "transaction.timeout.ms": 60_000,
}


def transactional_id(txn_base: str, source_partition: int) -> str:
    """The producer's transactional id: stable per (intent, partition) - ``txn_base`` is
    :attr:`~.plan.ReplayPlan.txn_base` - so a restart, a resume or any other run of the same
    request fences a killed producer at once (its open transaction is aborted)."""
    return f"kafka-archive-replay.{txn_base}.{source_partition}"


class PartitionReplay:
    """Replay one source partition of ``plan`` (see the module docstring).

    Args:
        plan: the replay plan.
        partition: the source partition to replay.
        store: where the archived objects are.
        target_partitions: the target topic's partition count.
        ledger: the catalog mirror (``None``: Kafka progress only).
        committed_reader: how to read committed progress (default: confluent read_committed).
        hook: called at named points (tests).
        on_records: called with the number of records after each produced batch (progress bar).
        producer_config: extra librdkafka producer settings (override the defaults).
    """

    def __init__(
        self,
        plan: ReplayPlan,
        partition: int,
        *,
        store: ObjectStore,
        target_partitions: int,
        ledger: ReplayLedger | None = None,
        committed_reader: CommittedLogReader | None = None,
        progress_partitions: int | None = None,
        hook: Hook | None = None,
        on_records: Callable[[int], None] | None = None,
        producer_config: dict[str, Any] | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        self.plan = plan
        self.spec = plan.spec
        self.part: PartitionPlan = plan.partition(partition)
        self.partition = partition
        self.store = store
        self.target_partitions = target_partitions
        self.ledger = ledger
        client = self.spec.target.client_config()
        self.reader_of_progress = committed_reader or KafkaCommittedReader(client)
        self.hook = hook
        self.on_records = on_records
        self.limiter = rate_limiter or RateLimiter(
            self.spec.rate_limit_records,
            None if self.spec.rate_limit_mb is None else self.spec.rate_limit_mb * 1_000_000,
        )
        self.key_filter = KeyFilter.parse(self.spec.key_filter) if self.spec.key_filter else None
        self.key = progress_key(plan.replay_id, partition)
        self._progress_partitions = progress_partitions
        #: this run's claim on the replay (see progress.RunClaim); ``None``: no run-level check.
        #: May be the future of a claim still being acknowledged (the runner announces the claim
        #: while the partitions start): :meth:`_check_claim`, the first of which follows this
        #: partition's ``init_transactions``, waits for it (and fails with it).
        self.claim: RunClaim | Future[RunClaim] | None = None
        self._committed: ProgressRecord | None = None
        self._open_txns: list[tuple[int, int]] = []
        #: this run's records, bytes and transactions, across new producers (see run())
        self._this_run = [0, 0, 0]
        self._resumed_from: int | None = None
        self._retries = self._attempts = 0
        self._unsure = False  # a producer was replaced: a commit may have happened unseen
        self._run_started: float | None = None
        #: (producer, committed progress, progress partition) once :meth:`prepare` has run
        self._lock = threading.Lock()  # connect/prepare/close may come from another thread
        self._producer: Any = None
        self._prepared: tuple[Any, ProgressRecord | None, int] | None = None
        self._started: float | None = None
        #: why this partition takes the path it takes (in its result; see .batch_engine)
        self.path_note = ""
        self.producer_config: dict[str, Any] = {
            **client,
            "transactional.id": transactional_id(plan.txn_base, partition),
            **PRODUCER_DEFAULTS,
            **(producer_config or {}),
        }

    # -- helpers ---------------------------------------------------------------------------------

    def _hook(self, point: str, **info: Any) -> None:
        if self.hook is not None:
            self.hook(point, {"partition": self.partition, **info})

    def _resume_point(self, producer: Any) -> tuple[ProgressRecord | None, int]:
        """The committed progress and the progress partition (:mod:`.resume`)."""
        if self._progress_partitions is None:
            self._progress_partitions = progress_partition_count(producer, self.spec.progress_topic)
        ppart = progress_partition(self.key, self._progress_partitions)
        record = committed_progress(
            self.reader_of_progress,
            self.spec.progress_topic,
            ppart,
            self.key,
            ledger=self.ledger,
            replay_id=self.plan.replay_id,
            partition=self.partition,
        )
        return record, ppart

    # -- the replay ------------------------------------------------------------------------------

    def connect(self) -> None:
        """Create the producer, which starts connecting to the target and fetching metadata in
        the background; nothing transactional happens, nothing is written, and it does not
        block. Lets a caller overlap the client's start-up with other work (the target checks).
        Idempotent; :meth:`prepare` calls it if nobody did."""
        with self._lock:
            if self._producer is None:
                self._started = time.monotonic()
                self._producer = self._new_producer()
                if isinstance(self.reader_of_progress, KafkaCommittedReader):
                    self.reader_of_progress.connect()  # read only after init_transactions

    def close(self) -> None:
        """Drop a producer that :meth:`connect` or :meth:`prepare` made, without running (the
        client closes when released; an initialised but unused transactional id is harmless)."""
        with self._lock:
            producer = self._producer
            self._producer = self._prepared = self._started = None
        if producer is not None:
            self._release(producer, 0)  # (batch-level replay's producer has no flush timeout)

    def prepare(self) -> None:
        """:meth:`connect`, ``init_transactions()`` (fencing any zombie of this partition's
        transactional id), *then* read the committed progress. Idempotent; :meth:`run` calls it
        if nobody did. Nothing is produced here, so preparing ahead of time is always safe."""
        self.connect()
        with self._lock:  # one preparation, whichever thread asks first
            if self._prepared is not None:
                return
            producer = self._producer
            assert producer is not None
            try:
                self._initialise(producer)
                self._check_claim()
                progress, ppart = self._resume_point(producer)
            except BaseException:
                self._producer = None
                self._release(producer, 0)
                raise
            self._prepared = (producer, progress, ppart)

    # -- what differs between the record path (here) and batch-level replay (.batch_engine) ------

    def _new_producer(self) -> Any:
        """The producer (made by :meth:`connect`: it must not block)."""
        return Producer(librdkafka_config(self.producer_config))

    def _initialise(self, producer: Any) -> None:
        """Make ``producer`` this partition's only live producer (``init_transactions``)."""
        # Two metadata round trips before init_transactions: librdkafka answers the first over
        # its bootstrap connection, then replaces it by connections by broker id; the second
        # waits for one of those. Without one, init_transactions finds no broker to ask for its
        # coordinator and asks again only after 500 ms (seen on 1 partition in 12 of the replay
        # benchmark, prepared while another produced).
        for _ in range(2):
            producer.list_topics(self.spec.progress_topic, timeout=30)
        txn_calls.init_transactions(producer, self.producer_config["transactional.id"])

    def _abort(self, producer: Any) -> None:
        """Abort the open transaction (it is redone from the last committed position)."""
        txn_calls.abort_transaction(producer, self.partition)

    def _release(self, producer: Any, timeout_s: float = 5) -> None:
        """Let ``producer`` go (what it still holds is delivered for up to ``timeout_s``)."""
        with suppress(KafkaException, SystemError):  # fenced / failed: nothing to deliver
            producer.flush(timeout_s)

    def _source(
        self, producer: Any, start: int, limiter: RateLimiter | None
    ) -> tuple[PartitionReader, Batches]:
        """The partition's reader from ``start`` and what produces its batches."""
        reader = PartitionReader(
            self.store,
            self.part,
            start_offset=start,
            key_filter=self.key_filter,
            raw_batches=streams(self.spec, limiter),
        )
        batches = BatchProducer(
            producer,
            self.spec,
            target_topic=self.plan.target_topic,
            partition=self.partition,
            target_partitions=self.target_partitions,
            reader=reader,
            limiter=limiter,
        )
        return reader, batches

    def run(self) -> PartitionResult:
        """Replay the partition (preparing it first if nobody did); see the module docstring.

        Fenced with a claim (:class:`~.progress.RunClaim`): when no newer run has claimed the
        replay, the fencer was an older run stopping on its own, so a new producer takes the
        transactional id back and the replay resumes from the committed progress.

        A producer that failed fatally (:class:`~.kafka_errors.ProducerFailed`) is replaced the
        same way, at most ``_MAX_RECREATES`` times (and never when a newer run owns the
        replay); then the run fails with a typed error saying to re-run.

        Raises:
            ReplayFencedError: a newer run of the replay owns it.
            ReplayTargetError: the target kept failing; re-running resumes.
        """
        takebacks = recreated = 0
        self._this_run = [0, 0, 0]
        self._resumed_from = None
        self._retries = self._attempts = 0
        self._unsure = False
        self._run_started = None
        while True:
            try:
                return self._run_once()
            except ReplayFencedError:
                if self.claim is None or takebacks >= _MAX_TAKEBACKS:
                    raise
                self._check_claim()  # raises when a newer run owns the replay
                takebacks += 1
                self._retries += 1
            except ProducerFailed as exc:
                recreated += 1
                self._retries += 1
                if recreated > _MAX_RECREATES:
                    raise ReplayTargetError(
                        f"{exc} (after {_MAX_RECREATES} new producers); {RERUN}"
                    ) from None
                self._check_claim()  # a newer run may be why: then it owns the replay
                self._unsure = True  # its last commit may have happened: see _run_once
                txn_calls.backoff(min(0.5 * 2**recreated, 5.0))

    def _check_claim(self) -> None:
        """Refuse to go on when a newer run of this replay has claimed it."""
        claim = self.claim
        if claim is None:
            return
        if isinstance(claim, Future):
            claim = self.claim = claim.result()  # acknowledged by every in-sync replica
        newer = newer_claim(self.reader_of_progress, self.spec.progress_topic, claim)
        if newer is not None:
            raise ReplayFencedError(
                f"partition {self.partition}: another run of replay {self.plan.replay_id} "
                f"(run {newer.run}, started after this one) owns it now; this run stops",
                hint="Let the other run finish (see `kafka-archive replay status`); nothing is "
                "written twice.",
            )

    def _run_once(self) -> PartitionResult:
        if self._prepared is None:
            self.prepare()
        assert self._prepared is not None and self._started is not None
        producer, progress, ppart = self._prepared
        if self._run_started is None:
            self._run_started = self._started
        started = self._run_started
        try:
            this_run = self._this_run  # records, bytes, transactions
            if self._unsure:
                self._count_unseen_commits(progress)
            if progress is not None and progress.done:
                status = "already-done" if self._attempts == 0 else "done"
                return self._result(
                    progress, self._resumed_from, started, this_run, self._retries, status
                )
            if self._attempts == 0 and progress is not None:
                self._resumed_from = progress.next_offset
            self._attempts += 1
            # from the progress committed in the target (read by prepare()): after a new
            # producer, what the old one committed last is known only there
            self._committed = progress
            aborts = 0
            while True:
                try:
                    progress = self._replay_from(producer, self._committed, ppart, this_run)
                    break
                except TxnAbort as exc:
                    aborts += 1
                    self._retries += 1
                    self._abort(producer)
                    if aborts > _MAX_TXN_RETRIES:
                        raise ReplayTargetError(
                            f"partition {self.partition}: transaction failed {aborts} times: "
                            f"{exc}; {RERUN}"
                        ) from None
                    txn_calls.backoff(min(0.2 * 2**aborts, 5.0))
            assert progress is not None
            status = "done" if progress.done else INCOMPLETE
            return self._result(
                progress, self._resumed_from, started, this_run, self._retries, status
            )
        finally:
            # a later run() prepares a fresh producer; this one is released with the object
            self._producer = self._prepared = self._started = None
            self._release(producer)

    def _count_unseen_commits(self, progress: ProgressRecord | None) -> None:
        """Count in this run the transactions a replaced producer committed without seeing it
        (its commit failed on the client after the coordinator had committed): the committed
        ``progress`` is ahead of the last commit seen. Their bytes are not known."""
        self._unsure = False
        seen = self._committed
        if progress is not None and progress.txn_seq > (seen.txn_seq if seen else 0):
            self._this_run[0] += progress.records_sent - (seen.records_sent if seen else 0)
            self._this_run[2] += progress.txn_seq - (seen.txn_seq if seen else 0)

    def _result(
        self,
        progress: ProgressRecord,
        resumed_from: int | None,
        started: float,
        this_run: Sequence[int],
        retries: int,
        status: str,
    ) -> PartitionResult:
        result = PartitionResult.of(
            progress,
            self.part,
            resumed_from=resumed_from,
            started=started,
            this_run=this_run,
            retries=retries,
            status=status,
            open_txns=self._open_txns,
        )
        result.path_note = self.path_note
        return result

    def _replay_from(
        self,
        producer: Any,
        progress: ProgressRecord | None,
        ppart: int,
        this_run: list[int],
    ) -> ProgressRecord:
        """Replay from the committed ``progress``; return the final committed progress.

        One transaction after another (:meth:`_begin`, source batches by
        :class:`~.batch_produce.BatchProducer`, :meth:`_commit`) until the range is exhausted;
        the last transaction also marks the partition done. ``this_run`` counts records, bytes
        and transactions committed."""
        part = self.part
        start = progress.next_offset if progress is not None else part.start_offset
        limiter = self.limiter if self.limiter.active else None
        reader, batches = self._source(producer, start, limiter)
        self._open_txns = []
        base = progress
        seq = base.txn_seq if base is not None else 0
        txn: OpenTxn | None = None
        while True:
            if txn is None:
                txn = self._begin(producer, seq + 1)
            with GC_PAUSE.paused():
                produced = batches.produce_next(txn)
            if produced is None:
                break
            self._after_batch(producer, txn, produced, limiter)
            if reader.position >= part.deliver_end:
                # every record of the range is produced (nothing held behind an open
                # transaction, or the position could not be here): this transaction also marks
                # the partition done - no transaction of its own for that
                batches.close()
                break
            if self._txn_full(txn):
                seq += 1
                base = self._commit(
                    producer, txn, base, reader, reader.position, seq, ppart, done=False
                )
                _count(this_run, txn)
                txn = None
        # the range is exhausted: the open transaction (or a new one) marks the partition done,
        # or - when the reader stopped at the archive's last stable offset (a transaction open
        # where the archive ends) - records that position, so a later run delivers the rest
        self._open_txns = list(reader.stats.open_txns)
        stop = reader.position
        if txn is None:
            txn = self._begin(producer, seq + 1)
        seq += 1
        done = stop >= part.end_offset
        base = self._commit(producer, txn, base, reader, stop, seq, ppart, done=done)
        _count(this_run, txn)
        return base

    def _begin(self, producer: Any, seq: int) -> OpenTxn:
        """Begin transaction number ``seq``."""
        self._hook("txn_begin", seq=seq)
        try:
            producer.begin_transaction()
        except KafkaException as exc:
            raise_kafka(exc, self.partition)
        return OpenTxn(started=time.monotonic())

    def _after_batch(
        self,
        producer: Any,
        txn: OpenTxn,
        produced: tuple[int, int],
        limiter: RateLimiter | None,
    ) -> None:
        """Once per produced source batch of ``(records, bytes)``: rate limit, serve the
        producer's callbacks, hooks and the progress callback."""
        n, nbytes = produced
        if limiter is not None:
            limiter.acquire(n, nbytes)
        try:
            producer.poll(0)
        except (KafkaException, SystemError) as exc:
            raise_kafka(exc, self.partition)
        if self.hook is not None:
            self._hook("produced", records=n, offset=txn.last_offset)
        if self.on_records is not None:
            self.on_records(n)

    def _txn_full(self, txn: OpenTxn) -> bool:
        """Whether the open transaction reached a bound (records, bytes or time)."""
        spec = self.spec
        return (
            txn.records >= spec.txn_max_records
            or txn.bytes >= spec.txn_max_bytes
            or time.monotonic() - txn.started >= spec.txn_max_ms / 1000
        )

    def _commit(
        self,
        producer: Any,
        txn: OpenTxn,
        base: ProgressRecord | None,
        reader: PartitionReader,
        next_offset: int,
        seq: int,
        ppart: int,
        *,
        done: bool,
    ) -> ProgressRecord:
        """Steps 2-5 of the module docstring for the open transaction ``txn``."""
        try:
            remaining = producer.flush(60)
        except (KafkaException, SystemError) as exc:
            raise_kafka(exc, self.partition)
        if remaining:
            raise TxnAbort(f"{remaining} records not delivered within 60 s")
        record = self._next_record(txn, base, reader, next_offset, seq, done=done)
        self._hook("before_progress", seq=seq)
        offsets: list[int] = []

        def on_progress(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                offsets.append(msg.offset())

        try:
            producer.produce(
                self.spec.progress_topic,
                record.model_dump_json().encode(),
                self.key,
                ppart,
                on_progress,
            )
        except KafkaException as exc:
            raise_kafka(exc, self.partition)
        self._hook("before_commit", seq=seq)
        # commit_transaction() flushes first (the progress record included) and fails if any
        # message of the transaction failed; it also serves the delivery reports, so no flush of
        # our own (one round trip per transaction less)
        txn_calls.commit_transaction(producer, self.partition)
        self._committed = record
        self._hook("after_commit", seq=seq)
        if not offsets:
            # committed, hence delivered: its report is at most one poll away
            deadline = time.monotonic() + 30
            while not offsets and time.monotonic() < deadline:
                try:
                    producer.poll(0.1)
                except (KafkaException, SystemError):
                    break  # (fenced right after the commit): the report is lost, see below
            if not offsets:
                raise ReplayTargetError(
                    f"partition {self.partition}: transaction {seq} is committed but the progress "
                    f"record's delivery report never came; the catalog mirror is behind; {RERUN}",
                    hint="Run the replay again: it resumes from Kafka and completes the mirror.",
                )
        self._mirror(record, ppart, offsets[0], seq)
        return record

    def _next_record(
        self,
        txn: OpenTxn,
        base: ProgressRecord | None,
        reader: PartitionReader,
        next_offset: int,
        seq: int,
        *,
        done: bool,
    ) -> ProgressRecord:
        """The progress record of the transaction ``txn`` (every run's target offsets known);
        the reader's counters restart (they are cumulative in the record)."""
        ranges = merge_runs(txn.runs)
        if any(r.target_first < 0 or r.target_last < 0 for r in ranges):
            raise TxnAbort("a delivery report carried an error")
        stats = reader.stats
        record = next_progress(
            base,
            txn,
            stats,
            ranges,
            replay_id=self.plan.replay_id,
            source_cluster=self.spec.cluster,
            source_topic=self.spec.topic,
            source_partition=self.partition,
            target_topic=self.plan.target_topic,
            next_offset=next_offset,
            end_offset=self.part.end_offset,
            txn_seq=seq,
            done=done,
        )
        stats.aborted_records = stats.control_batches = 0
        stats.filtered_records = stats.open_txn_records = 0
        return record

    def _mirror(self, record: ProgressRecord, ppart: int, offset: int, seq: int) -> None:
        """After the commit: mirror the progress record (at ``offset`` of progress partition
        ``ppart``) into the catalog."""
        if self.ledger is not None:
            self.ledger.mirror(record, ppart, offset)
        self._hook("after_catalog", seq=seq)


def _count(this_run: list[int], txn: OpenTxn) -> None:
    """Add a committed transaction to this run's records, bytes and transactions."""
    this_run[0] += txn.records
    this_run[1] += txn.bytes
    this_run[2] += 1
