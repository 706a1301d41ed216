"""Replaying one source partition into the target, exactly once and resumable.

:class:`PartitionReplay` reads its partition's committed records (:mod:`.reader`) and produces
them with a **transactional** confluent-kafka producer whose ``transactional.id`` is
``kafka-archive-replay.<replay_id>.<source partition>``. Per transaction (at most
``txn_max_records`` records, ``txn_max_bytes`` payload bytes or ``txn_max_ms``):

1. ``begin_transaction``; produce records (key, value, headers, CreateTime timestamp as given,
   target partition from the mapping); per-partition order is the producer's (idempotent,
   ordered) order;
2. ``flush``: every record delivered, the target offsets of run boundaries known;
3. produce the progress record (:mod:`.progress`) - next source offset, cumulative counters and
   this transaction's source->target offset ranges - to the progress topic;
4. ``commit_transaction`` (which first flushes the progress record and fails if any message of
   the transaction failed): data and progress become visible together, or neither does;
5. mirror the progress record into the catalog (:mod:`.ledger`).

Crash anywhere: before 4 the transaction never commits (the restarted producer's
``init_transactions`` fences the zombie and the broker aborts it); after 4 the progress topic
holds the new position even if 5 did not happen, and the resume mirrors it then. Resume order
matters: ``init_transactions`` first, *then* read the committed progress.

Errors: an abortable transaction error (a delivery failure, a broker-side abort) aborts the
transaction and redoes it from the last committed position (bounded retries with backoff);
a retriable commit error retries the commit; a fatal error (fenced by a newer run) raises
:class:`~kafka_archive.replay.errors.ReplayFencedError`.

Offset ranges cost no per-message callback: delivery callbacks are attached only to the first
and last record of each *run* (records of one source batch going to one target partition with
consecutive source offsets - in ``same`` mapping, source gaps split runs; in hashed mappings a
run is a batch's records for one partition and only its bounds are exact).

Cost per record (see docs/performance.md, Replay). The common case - ``same`` partition mapping,
no provenance headers, no key filter, no MB/s limit - *streams*: the reader hands over whole
committed batches undecoded (:class:`~kafka_archive.replay.reader.RawBatch`) and
``segment_lib.record_batch.emit_records_v2`` decodes each record in C straight into the arguments
of ``produce()`` and calls it (no Record objects, no Python loop per record; what ``produce()``
raises comes back with the index to resume at: a full queue is served and the batch resumed).
Otherwise batches are decoded by the compiled decoder and the records between a run's bounds go
to ``produce()`` in one tight Python loop with no callback and no other per-record object than the
header list ``produce()`` requires. Either way everything else - runs, offset-map bookkeeping,
rate limiting, ``poll(0)``, progress callbacks, hooks - happens once per source batch, and commit
work once per transaction.

:meth:`PartitionReplay.prepare` (producer, ``init_transactions``, committed progress) can run
ahead of :meth:`PartitionReplay.run`, so that a runner replaying partitions one after another
overlaps the next partition's round trips with the current one's production.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from kafka_archive.replay.errors import ReplayFencedError, ReplayTargetError
from kafka_archive.replay.filters import KeyFilter
from kafka_archive.replay.ledger import ReplayLedger
from kafka_archive.replay.murmur2 import murmur2_partition
from kafka_archive.replay.plan import PartitionPlan, ReplayPlan
from kafka_archive.replay.progress import (
    CLIENT_DEFAULTS,
    CommittedLogReader,
    KafkaCommittedReader,
    OffsetRange,
    ProgressRecord,
    RunClaim,
    load_progress,
    newer_claim,
    progress_key,
    progress_partition,
)
from kafka_archive.replay.ratelimit import RateLimiter
from kafka_archive.replay.reader import PartitionReader, RawBatch
from kafka_archive.store.base import ObjectStore
from segment_lib.records import Record, TimestampType

__all__ = [
    "PROVENANCE_HEADER",
    "Hook",
    "PartitionReplay",
    "PartitionResult",
    "transactional_id",
]

#: header added with --provenance-headers: ``<cluster>/<topic>/<partition>/<offset>``
PROVENANCE_HEADER = "kafka-archive.source"

#: ``hook(point, info)`` is called at named points (tests kill the process there):
#: ``txn_begin``, ``produced`` (after each source batch), ``before_progress``, ``before_commit``,
#: ``after_commit``, ``after_catalog``
Hook = Callable[[str, dict[str, Any]], None]

_MAX_TXN_RETRIES = 8

#: how often a run that owns the replay (newest claim) makes a new producer after an older run
#: fenced it on its way out
_MAX_TAKEBACKS = 5

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

#: where Producer.produce's positional parameters (topic, value, key, partition, on_delivery,
#: callback, timestamp, headers) take a record's value, key, timestamp, headers and the delivery
#: callback (segment_lib.record_batch.emit_records_v2's slots)
_PRODUCE_SLOTS = (1, 2, 6, 7, 4)

# The hot loop unpacks records as tuples (faster than attribute access): fail loudly at import if
# segment_lib's Record ever changes its field order.
if Record._fields != ("offset", "timestamp", "key", "value", "headers"):  # pragma: no cover
    raise ImportError(f"segment_lib.records.Record fields changed: {Record._fields}")


def transactional_id(replay_id: str, source_partition: int) -> str:
    """The producer's transactional id: stable per (replay, partition), so a restart fences."""
    return f"kafka-archive-replay.{replay_id}.{source_partition}"


@dataclass(slots=True)
class PartitionResult:
    """What one partition's replay did (cumulative over resumes, except ``*_this_run``)."""

    partition: int
    start_offset: int
    end_offset: int
    first_offset: int
    last_offset: int
    records: int
    records_this_run: int
    bytes_this_run: int
    transactions_this_run: int
    aborted_records: int
    control_batches: int
    filtered_records: int
    open_txn_records: int
    open_txns: list[tuple[int, int]]
    status: str  # done | already-done
    resumed_from: int | None
    duration_s: float
    retries: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "records": self.records,
            "records_this_run": self.records_this_run,
            "bytes_this_run": self.bytes_this_run,
            "transactions_this_run": self.transactions_this_run,
            "skipped_aborted_records": self.aborted_records,
            "skipped_control_batches": self.control_batches,
            "filtered_records": self.filtered_records,
            "open_txn_records": self.open_txn_records,
            "open_txns": [list(t) for t in self.open_txns],
            "status": self.status,
            "resumed_from": self.resumed_from,
            "duration_s": round(self.duration_s, 3),
            "retries": self.retries,
        }


class _Abort(Exception):
    """Internal: the current transaction must be aborted and redone."""


@dataclass(slots=True)
class _Run:
    """A run of records produced to one target partition, bounds filled by delivery reports."""

    target_partition: int
    source_first: int
    source_last: int
    count: int
    target_first: int = -1
    target_last: int = -1

    def first(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.target_first = msg.offset()

    def last(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.target_last = msg.offset()

    def both(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.target_first = self.target_last = msg.offset()


@dataclass(slots=True)
class _Txn:
    runs: list[_Run] = field(default_factory=list)
    records: int = 0
    bytes: int = 0
    first_offset: int = -1
    last_offset: int = -1
    started: float = 0.0
    errors: list[str] = field(default_factory=list)

    def add(self, runs: Iterable[_Run], first: int, last: int, records: int, nbytes: int) -> None:
        """Book one produced source batch: its runs, source offsets ``first..last``, counts."""
        self.runs.extend(runs)
        if self.first_offset < 0:
            self.first_offset = first
        self.last_offset = last
        self.records += records
        self.bytes += nbytes


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
        #: this run's claim on the replay (see progress.RunClaim); ``None``: no run-level check
        self.claim: RunClaim | None = None
        self._committed: ProgressRecord | None = None
        self._open_txns: list[tuple[int, int]] = []
        #: (producer, committed progress, progress partition) once :meth:`prepare` has run
        self._lock = threading.Lock()  # connect/prepare/close may come from another thread
        self._producer: Producer | None = None
        self._prepared: tuple[Producer, ProgressRecord | None, int] | None = None
        self._started: float | None = None
        self.producer_config: dict[str, Any] = {
            **client,
            "transactional.id": transactional_id(plan.replay_id, partition),
            **PRODUCER_DEFAULTS,
            **(producer_config or {}),
        }

    # -- helpers ---------------------------------------------------------------------------------

    def _hook(self, point: str, **info: Any) -> None:
        if self.hook is not None:
            self.hook(point, {"partition": self.partition, **info})

    def _progress_partition_count(self, producer: Producer) -> int:
        if self._progress_partitions is None:
            md = producer.list_topics(self.spec.progress_topic, timeout=30)
            topic = md.topics.get(self.spec.progress_topic)
            if topic is None or topic.error is not None or not topic.partitions:
                raise ReplayTargetError(
                    f"the progress topic {self.spec.progress_topic} is not available on the target",
                    hint="Create it (compacted) or let `replay run` create it.",
                )
            self._progress_partitions = len(topic.partitions)
        return self._progress_partitions

    def _resume_point(self, producer: Producer) -> tuple[ProgressRecord | None, int]:
        """The committed progress (Kafka, authoritative; the catalog gives a start offset)."""
        n = self._progress_partition_count(producer)
        ppart = progress_partition(self.key, n)
        start = 0
        mirrored = None
        if self.ledger is not None:
            mirrored = self.ledger.progress(self.plan.replay_id, self.partition)
            if mirrored is not None and mirrored.progress_partition == ppart:
                start = mirrored.progress_offset
        record, offset = load_progress(
            self.reader_of_progress, self.spec.progress_topic, ppart, self.key, start_offset=start
        )
        if record is None and start > 0:
            # the catalog points past what Kafka holds (topic recreated?): scan it all
            record, offset = load_progress(
                self.reader_of_progress, self.spec.progress_topic, ppart, self.key
            )
        if record is not None and offset is not None and self.ledger is not None:
            # complete a mirror that a crash between commit and catalog update left behind
            self.ledger.mirror(record, ppart, offset)
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
                self._producer = Producer(self.producer_config)
                if isinstance(self.reader_of_progress, KafkaCommittedReader):
                    self.reader_of_progress.connect()  # read only after init_transactions

    def close(self) -> None:
        """Drop a producer that :meth:`connect` or :meth:`prepare` made, without running (the
        client closes when released; an initialised but unused transactional id is harmless)."""
        with self._lock:
            producer = self._producer
            self._producer = self._prepared = self._started = None
        if producer is not None:
            producer.flush(0)

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
                # Two metadata round trips before init_transactions: librdkafka answers the first
                # over its bootstrap connection, then replaces it by connections by broker id;
                # the second waits for one of those. Without one, init_transactions finds no
                # broker to ask for its coordinator and asks again only after 500 ms (seen on
                # 1 partition in 12 of the replay benchmark, prepared while another produced).
                for _ in range(2):
                    producer.list_topics(self.spec.progress_topic, timeout=30)
                self._init(producer)
                self._check_claim()
                progress, ppart = self._resume_point(producer)
            except BaseException:
                self._producer = None
                producer.flush(0)
                raise
            self._prepared = (producer, progress, ppart)

    def run(self) -> PartitionResult:
        """Replay the partition (preparing it first if nobody did); see the module docstring.

        Fenced with a claim (:class:`~.progress.RunClaim`): when no newer run has claimed the
        replay, the fencer was an older run stopping on its own, so a new producer takes the
        transactional id back and the replay resumes from the committed progress.
        """
        takebacks = 0
        while True:
            try:
                return self._run_once()
            except ReplayFencedError:
                if self.claim is None or takebacks >= _MAX_TAKEBACKS:
                    raise
                self._check_claim()  # raises when a newer run owns the replay
                takebacks += 1

    def _check_claim(self) -> None:
        """Refuse to go on when a newer run of this replay has claimed it."""
        if self.claim is None:
            return
        newer = newer_claim(self.reader_of_progress, self.spec.progress_topic, self.claim)
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
        started = self._started
        try:
            if progress is not None and progress.done:
                return self._result(progress, None, started, 0, 0, 0, 0, "already-done")
            resumed_from = progress.next_offset if progress is not None else None
            self._committed = progress
            retries = 0
            this_run = [0, 0, 0]  # records, bytes, transactions
            while True:
                try:
                    progress = self._replay_from(producer, self._committed, ppart, this_run)
                    break
                except _Abort as exc:
                    retries += 1
                    self._abort(producer)
                    if retries > _MAX_TXN_RETRIES:
                        raise ReplayTargetError(
                            f"partition {self.partition}: transaction failed {retries} times: {exc}"
                        ) from None
                    time.sleep(min(0.2 * 2**retries, 5.0))
            assert progress is not None
            result = self._result(
                progress,
                resumed_from,
                started,
                this_run[0],
                this_run[1],
                this_run[2],
                retries,
                "done",
            )
            return result
        finally:
            # a later run() prepares a fresh producer; this one is released with the object
            self._producer = self._prepared = self._started = None
            with suppress(KafkaException, SystemError):  # fenced / failed: nothing to deliver
                producer.flush(5)

    def _init(self, producer: Producer) -> None:
        try:
            producer.init_transactions(60)
        except KafkaException as exc:
            raise ReplayTargetError(
                f"init_transactions for {self.producer_config['transactional.id']} failed: "
                f"{exc.args[0].str() if exc.args else exc}"
            ) from None

    def _abort(self, producer: Producer) -> None:
        try:
            producer.abort_transaction(60)
        except (KafkaException, SystemError) as exc:
            err = _kafka_exception(exc).args[0]
            if err.fatal():
                raise ReplayFencedError(f"aborting failed fatally: {err.str()}") from None
            # an abort of a transaction the coordinator already ended: nothing to undo

    def _result(
        self,
        progress: ProgressRecord,
        resumed_from: int | None,
        started: float,
        records: int,
        nbytes: int,
        txns: int,
        retries: int,
        status: str,
    ) -> PartitionResult:
        return PartitionResult(
            partition=self.partition,
            start_offset=self.part.start_offset,
            end_offset=self.part.end_offset,
            first_offset=progress.first_offset,
            last_offset=progress.last_offset,
            records=progress.records_sent,
            records_this_run=records,
            bytes_this_run=nbytes,
            transactions_this_run=txns,
            aborted_records=progress.aborted_records,
            control_batches=progress.control_batches,
            filtered_records=progress.filtered_records,
            open_txn_records=progress.open_txn_records,
            open_txns=list(self._open_txns if status == "done" else []),
            status=status,
            resumed_from=resumed_from,
            duration_s=time.monotonic() - started,
            retries=retries,
        )

    # TODO(issue 11): split: the 212-line replay loop with nested closures named in issue 11
    def _replay_from(  # noqa: C901, PLR0915
        self,
        producer: Producer,
        progress: ProgressRecord | None,
        ppart: int,
        this_run: list[int],
    ) -> ProgressRecord:
        """Replay from the committed ``progress``; return the final committed progress."""
        part = self.part
        start = progress.next_offset if progress is not None else part.start_offset
        spec = self.spec
        limiter = self.limiter if self.limiter.active else None
        # The streaming path (module docstring): whole batches go from the bytes to produce()
        # when each record keeps its partition and nothing per record is added or counted.
        streaming = (
            spec.partition_mapping == "same"
            and not spec.provenance_headers
            and (limiter is None or limiter.bytes is None)
        )
        reader = PartitionReader(
            self.store,
            part,
            start_offset=start,
            key_filter=self.key_filter,
            raw_batches=streaming,
        )
        self._open_txns = []
        base = progress
        topic = self.plan.target_topic
        mapping = spec.partition_mapping
        nparts = self.target_partitions
        provenance = spec.provenance_headers
        prov_prefix = f"{spec.cluster}/{spec.topic}/{self.partition}/"
        keep_ts = spec.preserve_timestamps
        max_records, max_bytes, max_s = (
            spec.txn_max_records,
            spec.txn_max_bytes,
            spec.txn_max_ms / 1000,
        )
        produce = producer.produce
        poll = producer.poll
        rr = self.partition
        source_partition = self.partition
        txn: _Txn | None = None
        seq = base.txn_seq if base is not None else 0

        def begin() -> _Txn:
            self._hook("txn_begin", seq=seq + 1)
            try:
                producer.begin_transaction()
            except KafkaException as exc:
                self._raise_kafka(exc)
            return _Txn(started=time.monotonic())

        def one(r: Record, q: int, cb: Any, ok_ts: bool) -> None:
            hdrs: list[Any] | None = list(r.headers) if r.headers else None
            if provenance:
                prov = (PROVENANCE_HEADER, (prov_prefix + str(r.offset)).encode())
                hdrs = [*hdrs, prov] if hdrs else [prov]
            send(r.value, r.key, q, cb, r.timestamp if ok_ts else 0, hdrs)

        def send(
            value: bytes | None, key: bytes | None, q: int, cb: Any, ts: int, headers: Any
        ) -> None:
            while True:
                try:
                    produce(topic, value, key, q, cb, None, ts, headers)
                    return
                except BufferError:
                    poll(0.05)
                except KafkaException as exc:
                    self._raise_kafka(exc)

        stats = reader.stats
        batches = reader.__iter__()  # a generator: closed early when the range ends first

        # TODO(issue 11): split: with _replay_from (a closure of it)
        def produce_batch(txn: _Txn) -> tuple[int, int] | None:  # noqa: PLR0912
            """Read (decode) the next source batch and produce it; ``(records, payload bytes)``
            or ``None`` at the end. Runs with the garbage collector paused (see _gc_paused): the
            batch's records must not outlive this call, so they never leave its frame."""
            bytes_before = stats.bytes_read
            group = next(batches, None)
            if group is None:
                return None
            if isinstance(group, RawBatch):  # (made only when streaming: see the reader above)
                return stream_batch(txn, group, bytes_before)
            produce_, topic_ = produce, topic
            # target partitions and runs of this source batch
            if mapping == "same":
                runs = _same_runs(group, source_partition)
            else:
                if mapping == "murmur2":
                    targets = [
                        murmur2_partition(r.key, nparts)
                        if r.key is not None
                        else source_partition % nparts
                        for r in group
                    ]
                else:
                    targets = [(r.offset + rr) % nparts for r in group]
                runs = _hashed_runs(group, targets)
            ok_ts = keep_ts and group[0].timestamp >= 0 and group[-1].timestamp >= 0
            for run, members in runs:
                q = run.target_partition
                k = len(members)
                # delivery reports (target offsets) only for each run's first and last record
                one(members[0], q, run.both if k == 1 else run.first, ok_ts)
                if k > 2:
                    if provenance:
                        for r in islice(members, 1, k - 1):
                            one(r, q, None, ok_ts)
                    else:
                        # The per-record path: tuple unpacking (Record is a NamedTuple, checked at
                        # import) instead of attribute lookups, no callback, a header list only
                        # when there are headers (produce() takes lists, not tuples). Try blocks
                        # cost nothing in 3.11 until they catch.
                        for _off, ts, key, value, hdrs in members[1:-1]:
                            try:
                                produce_(
                                    topic_, value, key, q, None, None, ts if ok_ts else 0,
                                    [*hdrs] if hdrs else None,
                                )  # fmt: skip
                            except BufferError:
                                send(value, key, q, None, ts if ok_ts else 0,
                                     [*hdrs] if hdrs else None)  # fmt: skip
                            except KafkaException as exc:
                                self._raise_kafka(exc)
                if k > 1:
                    one(members[-1], q, run.last, ok_ts)
            n = len(group)
            if limiter is not None and limiter.bytes is not None:
                # payload bytes: only computed when a MB/s limit asks for them
                nbytes = sum(len(r.value or b"") + len(r.key or b"") for r in group)
            else:
                nbytes = stats.bytes_read - bytes_before
            txn.add((run for run, _m in runs), group[0].offset, group[-1].offset, n, nbytes)
            return n, nbytes

        def stream_batch(txn: _Txn, batch: RawBatch, bytes_before: int) -> tuple[int, int]:
            """Produce a whole batch straight from its bytes (one run, same partition)."""
            h = batch.header
            run = _Run(source_partition, h.base_offset, h.last_offset, h.record_count)
            # as the decode path decides on its first and last record's timestamps (under
            # LogAppendTime every record has the batch's max timestamp)
            ok_ts = (
                keep_ts
                and h.max_timestamp >= 0
                and (h.first_timestamp >= 0 or h.timestamp_type is TimestampType.LOG_APPEND_TIME)
            )
            template = (topic, None, None, source_partition, None, None, 0, None)
            marks = (run.first, run.last, run.both)
            done = 0
            while True:
                done, err = batch.emit(produce, template, _PRODUCE_SLOTS, start=done,
                                       marks=marks, zero_timestamps=not ok_ts)  # fmt: skip
                if err is None:
                    break
                if isinstance(err, BufferError):
                    poll(0.05)  # the producer's queue is full: serve it, then resume
                elif isinstance(err, KafkaException):
                    self._raise_kafka(err)
                else:
                    raise err
            n = h.record_count
            nbytes = stats.bytes_read - bytes_before
            txn.add((run,), h.base_offset, h.last_offset, n, nbytes)
            return n, nbytes

        while True:
            if txn is None:
                txn = begin()
            with _gc_paused():
                produced = produce_batch(txn)
            if produced is None:
                break
            n, nbytes = produced
            if limiter is not None:
                limiter.acquire(n, nbytes)
            try:
                poll(0)
            except (KafkaException, SystemError) as exc:
                self._raise_kafka(exc)
            if self.hook is not None:
                self._hook("produced", records=n, offset=txn.last_offset)
            if self.on_records is not None:
                self.on_records(n)
            if reader.position >= part.end_offset:
                # every record of the range is produced (nothing held behind an open
                # transaction, or the position could not be here): this transaction also marks
                # the partition done - no transaction of its own for that
                batches.close()
                break
            if (
                txn.records >= max_records
                or txn.bytes >= max_bytes
                or time.monotonic() - txn.started >= max_s
            ):
                seq += 1
                base = self._commit(
                    producer, txn, base, reader, reader.position, seq, ppart, done=False
                )
                this_run[0] += txn.records
                this_run[1] += txn.bytes
                this_run[2] += 1
                txn = None
        # the range is exhausted: the open transaction (or a new one) marks the partition done
        self._open_txns = list(reader.stats.open_txns)
        if txn is None:
            txn = begin()
        seq += 1
        base = self._commit(producer, txn, base, reader, part.end_offset, seq, ppart, done=True)
        this_run[0] += txn.records
        this_run[1] += txn.bytes
        this_run[2] += 1
        return base

    def _raise_kafka(self, exc: BaseException) -> None:
        """Turn a client exception into :class:`ReplayFencedError` (fenced, fatal) or
        :class:`_Abort` (redo the transaction)."""
        exc = _kafka_exception(exc)
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError):
            if err.fatal() or err.code() in (
                KafkaError._FENCED,
                KafkaError.PRODUCER_FENCED,
                KafkaError.INVALID_PRODUCER_EPOCH,
            ):
                raise ReplayFencedError(
                    f"partition {self.partition}: producer fenced or failed fatally: {err.str()}"
                ) from None
            raise _Abort(err.str()) from None
        raise _Abort(str(exc)) from None

    def _commit(
        self,
        producer: Producer,
        txn: _Txn,
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
            self._raise_kafka(exc)
        if remaining:
            raise _Abort(f"{remaining} records not delivered within 60 s")
        ranges = _merge_runs(txn.runs)
        if any(r.target_first < 0 or r.target_last < 0 for r in ranges):
            raise _Abort("a delivery report carried an error")
        stats = reader.stats
        prev = base
        record = ProgressRecord(
            replay_id=self.plan.replay_id,
            source_cluster=self.spec.cluster,
            source_topic=self.spec.topic,
            source_partition=self.partition,
            target_topic=self.plan.target_topic,
            next_offset=next_offset,
            end_offset=self.part.end_offset,
            txn_seq=seq,
            records_sent=(prev.records_sent if prev else 0) + txn.records,
            first_offset=(
                prev.first_offset
                if prev is not None and prev.first_offset >= 0
                else txn.first_offset
            ),
            last_offset=txn.last_offset
            if txn.last_offset >= 0
            else (prev.last_offset if prev else -1),
            aborted_records=(prev.aborted_records if prev else 0) + stats.aborted_records,
            control_batches=(prev.control_batches if prev else 0) + stats.control_batches,
            filtered_records=(prev.filtered_records if prev else 0) + stats.filtered_records,
            open_txn_records=(prev.open_txn_records if prev else 0) + stats.open_txn_records,
            done=done,
            updated_at_ms=int(time.time() * 1000),
            ranges=ranges,
        )
        # counters are cumulative in the record: restart the reader's from here
        stats.aborted_records = stats.control_batches = 0
        stats.filtered_records = stats.open_txn_records = 0
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
            self._raise_kafka(exc)
        self._hook("before_commit", seq=seq)
        # commit_transaction() flushes first (the progress record included) and fails if any
        # message of the transaction failed; it also serves the delivery reports, so no flush of
        # our own (one round trip per transaction less)
        self._commit_txn(producer)
        self._committed = record
        self._hook("after_commit", seq=seq)
        if not offsets:
            # committed, hence delivered: its report is at most one poll away
            deadline = time.monotonic() + 30
            while not offsets and time.monotonic() < deadline:
                producer.poll(0.1)
            if not offsets:
                raise ReplayTargetError(
                    f"partition {self.partition}: transaction {seq} is committed but the progress "
                    "record's delivery report never came; the catalog mirror is behind",
                    hint="Run the replay again: it resumes from Kafka and completes the mirror.",
                )
        if self.ledger is not None:
            self.ledger.mirror(record, ppart, offsets[0])
        self._hook("after_catalog", seq=seq)
        return record

    def _commit_txn(self, producer: Producer) -> None:
        for attempt in range(5):
            try:
                producer.commit_transaction(60)
                return
            except (KafkaException, SystemError) as exc:
                err = _kafka_exception(exc).args[0]
                if err.retriable() and not err.txn_requires_abort() and attempt < 4:
                    time.sleep(0.5 * (attempt + 1))
                    continue
                self._raise_kafka(exc)


def _kafka_exception(exc: BaseException) -> BaseException:
    """The :class:`KafkaException` behind ``exc``. confluent-kafka reports an error raised
    while it serves delivery callbacks (a producer fenced during ``flush()``) as a
    ``SystemError`` "returned a result with an exception set", caused by the KafkaException:
    seen when a second run of a replay fenced the first on a real broker."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KafkaException):
            return seen
        seen = seen.__cause__ or seen.__context__
    if isinstance(exc, SystemError):
        raise exc
    return exc


# -- garbage collector pauses -------------------------------------------------------------------
#
# Decoding a batch creates three GC-tracked tuples per record (the Record, its headers tuple, each
# Header) that live only until the batch is produced. Left alone, the cyclic collector runs every
# 700 tracked allocations, finds the batch alive and promotes it to the older generations; those
# promotions then trigger full collections, which walk the whole heap: in a process holding a
# large heap (an Airflow worker; the benchmark's reference messages) that cost more than the
# decoding itself (profile: one ~0.18 s full collection per 300,000 replayed records on a heap of
# 700,000 objects). So the collector is paused while one batch is decoded and produced - reference
# counting frees the batch at the end of the pause, nothing of it is ever promoted - and resumed
# between batches, where any collection that came due runs on an almost empty young generation.
# The pause is process-wide (gc.disable): it is reference-counted across replay threads, never
# enables a collector that was disabled before, and when overlapping pauses of parallel partitions
# keep it off for more than _GC_VALVE_S, a young-generation collection runs anyway so that cyclic
# garbage of other threads cannot pile up.

_GC_VALVE_S = 5.0
_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False
_gc_paused_since = 0.0


@contextmanager
def _gc_paused() -> Iterator[None]:
    global _gc_pauses, _gc_was_enabled, _gc_paused_since
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
            _gc_paused_since = time.monotonic()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0:
                if _gc_was_enabled:
                    gc.enable()
            elif _gc_was_enabled and time.monotonic() - _gc_paused_since > _GC_VALVE_S:
                _gc_paused_since = time.monotonic()
                gc.collect(1)


def _same_runs(group: list[Record], q: int) -> list[tuple[_Run, list[Record]]]:
    """``same`` mapping: one run per stretch of consecutive source offsets (usually one)."""
    first, last = group[0].offset, group[-1].offset
    if last - first == len(group) - 1:
        return [(_Run(q, first, last, len(group)), group)]
    out: list[tuple[_Run, list[Record]]] = []
    start = 0
    for i in range(1, len(group) + 1):
        if i == len(group) or group[i].offset != group[i - 1].offset + 1:
            members = group[start:i]
            out.append((_Run(q, members[0].offset, members[-1].offset, len(members)), members))
            start = i
    return out


def _hashed_runs(group: list[Record], targets: list[int]) -> list[tuple[_Run, list[Record]]]:
    """Hashed mappings: one run per target partition of the batch (only its bounds exact)."""
    by_q: dict[int, list[Record]] = {}
    for r, q in zip(group, targets, strict=True):
        by_q.setdefault(q, []).append(r)
    return [
        (_Run(q, members[0].offset, members[-1].offset, len(members)), members)
        for q, members in by_q.items()
    ]


def _merge_runs(runs: list[_Run]) -> list[OffsetRange]:
    """Merge a transaction's runs into ranges: per target partition, consecutive runs join when
    both their source and target offsets continue exactly."""
    out: list[OffsetRange] = []
    by_q: dict[int, list[_Run]] = {}
    for run in runs:
        by_q.setdefault(run.target_partition, []).append(run)
    for q in sorted(by_q):
        cur: _Run | None = None
        for run in by_q[q]:
            exact = (
                run.source_last - run.source_first
                == run.target_last - run.target_first
                == run.count - 1
            )
            if (
                cur is not None
                and exact
                and cur.source_last - cur.source_first
                == cur.target_last - cur.target_first
                == cur.count - 1
                and run.source_first == cur.source_last + 1
                and run.target_first == cur.target_last + 1
            ):
                cur.source_last = run.source_last
                cur.target_last = run.target_last
                cur.count += run.count
                continue
            if cur is not None:
                out.append(_range(cur))
            cur = _Run(
                q, run.source_first, run.source_last, run.count, run.target_first, run.target_last
            )
        if cur is not None:
            out.append(_range(cur))
    return out


def _range(run: _Run) -> OffsetRange:
    return OffsetRange(
        target_partition=run.target_partition,
        source_first=run.source_first,
        source_last=run.source_last,
        target_first=run.target_first,
        target_last=run.target_last,
        count=run.count,
    )
