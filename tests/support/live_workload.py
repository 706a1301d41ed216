"""A live workload for a real Kafka cluster: topics of every kind, produced to continuously.

Used by the real-cluster tests (``tests/real_kafka/``) and benchmarks. One
:class:`LiveWorkload` creates its own topics (names from ``prefix``) and, between
:meth:`LiveWorkload.start` and :meth:`LiveWorkload.stop`, runs one thread per producer or consumer
group, each writing through the real brokers with confluent-kafka. Everything acknowledged by a
broker is recorded (:attr:`LiveWorkload.records`, :class:`ProducedRecord`), and so is every offset
commit a group made (:attr:`LiveWorkload.commits`, :class:`GroupCommit`), so tests can compare
the archive, the catalog and replays with what really happened.

Topics (:attr:`LiveWorkload.topics`, role -> name; all with ``partitions`` partitions, RF 3,
``segment.ms`` = ``segment_ms`` so segments roll while the workload runs):

* ``codec-none``, ``codec-gzip``, ``codec-snappy``, ``codec-lz4``, ``codec-zstd``: one producer
  each with that ``compression.type`` (gzip/lz4/zstd idempotent, none/snappy not); CreateTime
  timestamps, about one record in four up to ``segment_ms / 5`` in the past (out of order);
  headers on every other record, including duplicate header names and ``None`` header values;
* ``logappend``: ``message.timestamp.type=LogAppendTime`` (recorded timestamp = the broker's);
* ``txn``: a transactional consume-transform-produce loop reading ``codec-none`` as group
  ``group_txn`` (read_committed); every third transaction is **aborted** (its records are
  recorded with ``committed=False``), the others commit, both with the group's offsets sent
  through ``send_offsets_to_transaction``;
* ``compacted``: ``cleanup.policy=compact`` with ``min.cleanable.dirty.ratio`` 0.01,
  ``min.compaction.lag.ms`` 0 and small segments, so the cleaner rewrites segments while the
  archiver runs; a key space of 16 keys, an occasional tombstone (value ``None``).

Groups: ``group_plain`` consumes ``codec-zstd`` and commits synchronously (plain OffsetCommit)
every few polls; ``group_txn`` commits inside the transactions above (only commits of committed
transactions are recorded).

Typical use::

    wl = LiveWorkload(cluster.bootstrap_servers, prefix=unique_name("live"))
    wl.create_topics()
    wl.start()
    time.sleep(10)              # ... archive repeatedly meanwhile ...
    wl.stop()                   # joins the threads; raises if any thread failed
    wl.seal()                   # one tiny record per partition: every workload segment rolls
    wl.committed_records(topic)  # what a read_committed consumer should see

``seal`` appends one record to every partition ``segment.ms`` after the last one, so every
segment holding workload records rolls (Kafka rolls on ``segment.ms`` when the *incoming*
record's timestamp is that much later than the segment's first batch, so the seal carries the
current time); its records are listed in :attr:`LiveWorkload.seals`, not in :attr:`records`,
and are the only records of the active segments.

Timestamps matter for rolling in the same way: a record older than the segment's first batch
never rolls it, a record ``segment.ms`` newer always does, so out-of-order timestamps are kept
within a fraction of ``segment_ms``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

__all__ = [
    "CODECS",
    "GroupCommit",
    "LiveWorkload",
    "ProducedRecord",
    "WorkloadError",
    "now_ms",
]

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: codecs whose producer is idempotent (enable.idempotence)
IDEMPOTENT_CODECS = ("gzip", "lz4", "zstd")

Headers = tuple[tuple[str, bytes | None], ...]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class WorkloadError(RuntimeError):
    """A workload thread failed (the first error of each thread, re-raised by ``stop``)."""


@dataclass(frozen=True, slots=True)
class ProducedRecord:
    """One record a broker acknowledged.

    ``timestamp`` is the record's timestamp as stored (for LogAppendTime topics the broker's);
    ``committed`` is False for records of aborted transactions; ``transactional`` tells whether
    a transactional producer wrote it.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    log_append_time: bool
    key: bytes | None
    value: bytes | None
    headers: Headers
    committed: bool
    transactional: bool
    producer: str


@dataclass(frozen=True, slots=True)
class GroupCommit:
    """One committed offset of a group: ``offset`` is the next offset to consume.

    ``requested_ms`` is the wall time just before the commit was sent, ``acked_ms`` just after
    the broker acknowledged it (for transactional commits: after ``commit_transaction``
    returned); the commit took effect somewhere in between.
    """

    group: str
    topic: str
    partition: int
    offset: int
    requested_ms: int
    acked_ms: int
    transactional: bool


@dataclass
class _Stats:
    transactions_committed: int = 0
    transactions_aborted: int = 0
    errors: list[str] = field(default_factory=list)


class LiveWorkload:
    """Topics of every kind and the threads that produce to them (see the module docstring).

    Args:
        bootstrap_servers: the cluster (e.g. ``LocalKafkaCluster.bootstrap_servers``).
        prefix: topic and group names start with it (use ``unique_name``).
        partitions: partitions of every topic.
        segment_ms: ``segment.ms`` of every topic (how soon segments roll).
        batch: records per produce round of each producer.
        pause_s: sleep between rounds of each producer (keeps a 2-core machine responsive).
        seed: the random choices (keys, sizes, out-of-order timestamps, headers).
        topic_config: extra topic configs for every topic.
        roles: which topics to create and drive (default: all; ``txn`` needs ``codec-none``).
    """

    ALL_ROLES = (*(f"codec-{c}" for c in CODECS), "logappend", "txn", "compacted")

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        prefix: str,
        partitions: int = 2,
        segment_ms: int = 800,
        batch: int = 10,
        pause_s: float = 0.1,
        seed: int = 0,
        topic_config: dict[str, str] | None = None,
        roles: Sequence[str] | None = None,
        replication: int = 3,
    ) -> None:
        self.bootstrap = bootstrap_servers
        self.replication = replication
        self.prefix = prefix
        self.partitions = partitions
        self.segment_ms = segment_ms
        self.batch = batch
        self.pause_s = pause_s
        self.seed = seed
        self.topic_config = dict(topic_config or {})
        self.roles = tuple(roles or self.ALL_ROLES)
        unknown = set(self.roles) - set(self.ALL_ROLES)
        if unknown:
            raise ValueError(f"unknown roles {sorted(unknown)}")
        if "txn" in self.roles and "codec-none" not in self.roles:
            raise ValueError("the txn role reads codec-none: include it")
        #: role -> topic name
        self.topics: dict[str, str] = {r: f"{prefix}-{r}" for r in self.roles}
        self.group_plain = f"{prefix}-plain"
        self.group_txn = f"{prefix}-txn"
        #: every acknowledged record (appended as delivery reports arrive; see ``stop``)
        self.records: list[ProducedRecord] = []
        #: every recorded group commit, in the order they were acknowledged
        self.commits: list[GroupCommit] = []
        #: the records ``seal`` wrote
        self.seals: list[ProducedRecord] = []
        self.stats = _Stats()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._ready = threading.Semaphore(0)
        self._failures: list[BaseException] = []
        self.started_ms = -1
        self.stopped_ms = -1

    # -- setup -------------------------------------------------------------------------------

    def topic_configs(self, role: str) -> dict[str, str]:
        cfg = {"segment.ms": str(self.segment_ms), "min.insync.replicas": "2"}
        if role == "logappend":
            cfg["message.timestamp.type"] = "LogAppendTime"
        if role == "compacted":
            cfg.update(
                {
                    "cleanup.policy": "compact",
                    "min.cleanable.dirty.ratio": "0.01",
                    "min.compaction.lag.ms": "0",
                    "delete.retention.ms": "1000",
                    "segment.ms": str(self.segment_ms),
                }
            )
        cfg.update(self.topic_config)
        return cfg

    def create_topics(self, timeout_s: float = 60.0) -> None:
        """Create every topic (RF ``replication``, 3 by default) and wait until each partition
        has a leader."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        new = [
            NewTopic(name, self.partitions, self.replication, config=self.topic_configs(role))
            for role, name in self.topics.items()
        ]
        for fut in admin.create_topics(new, operation_timeout=timeout_s).values():
            fut.result(timeout_s)
        deadline = time.monotonic() + timeout_s
        while True:
            md = admin.list_topics(timeout=10)
            ok = all(
                name in md.topics
                and len(md.topics[name].partitions) == self.partitions
                and all(p.leader >= 0 for p in md.topics[name].partitions.values())
                for name in self.topics.values()
            )
            if ok:
                return
            if time.monotonic() > deadline:
                raise WorkloadError(f"topics of {self.prefix} have no leaders in {timeout_s} s")
            time.sleep(0.2)

    def topic_partitions(self, roles: Iterable[str] | None = None) -> list[tuple[str, int]]:
        """``(topic, partition)`` of every (or the given roles') topic."""
        names = [self.topics[r] for r in (roles or self.roles)]
        return [(t, p) for t in names for p in range(self.partitions)]

    # -- running -----------------------------------------------------------------------------

    def start(self, ready_timeout_s: float = 90.0) -> None:
        """Start every producer and group thread; return when all are set up and producing."""
        self.started_ms = now_ms()
        loops: list[tuple[str, Callable[[random.Random], None]]] = []
        for codec in CODECS:
            if f"codec-{codec}" in self.roles:
                loops.append((f"codec-{codec}", self._codec_loop(codec)))
        if "logappend" in self.roles:
            loops.append(("logappend", self._logappend_loop))
        if "compacted" in self.roles:
            loops.append(("compacted", self._compacted_loop))
        if "txn" in self.roles:
            loops.append(("txn", self._txn_loop))
        if "codec-zstd" in self.roles:
            loops.append(("group-plain", self._plain_group_loop))
        self._ready = threading.Semaphore(0)
        for i, (name, fn) in enumerate(loops):
            rng = random.Random(self.seed * 1000 + i)
            t = threading.Thread(target=self._guard, args=(fn, rng), name=name, daemon=True)
            t.start()
            self._threads.append(t)
        # every producer/consumer is set up (the first transactional producer of a cluster
        # waits for __transaction_state) before the caller's clock starts
        for _ in self._threads:
            if not self._ready.acquire(timeout=ready_timeout_s):
                raise WorkloadError(f"workload threads not ready in {ready_timeout_s} s")
        self.check()

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop every thread, wait for their last deliveries; raise the first failure."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout_s)
            if t.is_alive():
                raise WorkloadError(f"workload thread {t.name} did not stop in {timeout_s} s")
        self._threads.clear()
        self.stopped_ms = now_ms()
        if self._failures:
            raise WorkloadError(f"workload thread failed: {self._failures[0]!r}") from (
                self._failures[0]
            )

    @property
    def producing(self) -> bool:
        """True until the threads were told to stop and have all finished."""
        return any(t.is_alive() for t in self._threads)

    def run_for(self, seconds: float, during: Callable[[], None] | None = None) -> None:
        """``start``, call ``during()`` repeatedly (or sleep) for ``seconds``, ``stop``."""
        self.start()
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                if during is not None:
                    during()
                else:
                    time.sleep(0.2)
                self.check()
        finally:
            self.stop()

    def check(self) -> None:
        """Raise if a thread has failed (call it while the workload runs)."""
        if self._failures:
            raise WorkloadError(f"workload thread failed: {self._failures[0]!r}") from (
                self._failures[0]
            )

    def seal(self, timeout_s: float = 30.0) -> None:
        """After ``segment.ms``, append one record (CreateTime now) to every partition, so the
        segments holding the workload's records all roll. Call after ``stop``."""
        time.sleep(self.segment_ms / 1000 + 0.3)
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all"})
        sink = _Sink(self, "seal", committed=True, transactional=False, into=self.seals)
        for topic, part in self.topic_partitions():
            producer.produce(
                topic,
                key=b"seal",
                value=b"seal",
                partition=part,
                timestamp=now_ms(),
                on_delivery=sink,
            )
        if producer.flush(timeout_s) != 0:
            raise WorkloadError("seal records not delivered")
        sink.raise_errors()

    # -- results -----------------------------------------------------------------------------

    def records_of(self, topic: str, partition: int | None = None) -> list[ProducedRecord]:
        """Acknowledged records of ``topic`` (and ``partition``), in offset order."""
        with self._lock:
            out = [
                r
                for r in self.records
                if r.topic == topic and (partition is None or r.partition == partition)
            ]
        return sorted(out, key=lambda r: (r.partition, r.offset))

    def committed_records(self, topic: str, partition: int | None = None) -> list[ProducedRecord]:
        """What a read_committed consumer sees (aborted transactions left out), offset order."""
        return [r for r in self.records_of(topic, partition) if r.committed]

    def commits_of(self, group: str) -> list[GroupCommit]:
        with self._lock:
            return [c for c in self.commits if c.group == group]

    # -- threads -----------------------------------------------------------------------------

    def _guard(self, fn: Callable[[random.Random], None], rng: random.Random) -> None:
        try:
            fn(rng)
        except BaseException as exc:  # reported by stop() and check()
            with self._lock:
                self._failures.append(exc)
            self._ready.release()  # start() must not wait for a thread that died

    def _value(self, rng: random.Random, n: int) -> bytes:
        words = (b"order", b"click", b"payment", b"refund", b"cart", b"eu", b"us", b"apac")
        out = b" ".join(rng.choice(words) for _ in range(rng.randint(1, 40)))
        return b"%d:" % n + out

    def _headers(self, rng: random.Random, n: int) -> list[tuple[str, str | bytes | None]] | None:
        if n % 2:
            return None
        hs: list[tuple[str, str | bytes | None]] = [("trace", b"%d" % n), ("trace", b"dup")]
        if rng.random() < 0.5:
            hs.append(("nullable", None))
        if rng.random() < 0.3:
            hs.append(("", b"empty-name"))
        return hs

    def _codec_loop(self, codec: str) -> Callable[[random.Random], None]:
        def loop(rng: random.Random) -> None:
            topic = self.topics[f"codec-{codec}"]
            conf: dict[str, Any] = {
                "bootstrap.servers": self.bootstrap,
                "compression.type": codec,
                "acks": "all",
                "linger.ms": 5,
                "enable.idempotence": codec in IDEMPOTENT_CODECS,
            }
            producer = Producer(conf)
            sink = _Sink(self, f"codec-{codec}", committed=True, transactional=False)
            self._ready.release()
            n = 0
            while not self._stop.is_set():
                for _ in range(self.batch):
                    ts = now_ms()
                    if rng.random() < 0.25:
                        # out of order, by less than segment.ms (see the module docstring)
                        ts -= rng.randint(1, max(2, self.segment_ms // 5))
                    producer.produce(
                        topic,
                        key=b"k%d" % rng.randint(0, 50) if n % 5 else None,
                        value=self._value(rng, n) if n % 7 else None,
                        headers=self._headers(rng, n),
                        timestamp=ts,
                        on_delivery=sink,
                    )
                    n += 1
                producer.poll(0)
                sink.raise_errors()
                time.sleep(self.pause_s)
            _flush(producer)
            sink.raise_errors()

        return loop

    def _logappend_loop(self, rng: random.Random) -> None:
        topic = self.topics["logappend"]
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "acks": "all", "compression.type": "lz4"}
        )
        sink = _Sink(self, "logappend", committed=True, transactional=False)
        self._ready.release()
        n = 0
        while not self._stop.is_set():
            for _ in range(self.batch):
                # the recorded timestamp is the broker's append time
                producer.produce(
                    topic,
                    key=b"k%d" % n,
                    value=self._value(rng, n),
                    headers=self._headers(rng, n),
                    on_delivery=sink,
                )
                n += 1
            producer.poll(0)
            sink.raise_errors()
            time.sleep(self.pause_s)
        _flush(producer)
        sink.raise_errors()

    def _compacted_loop(self, rng: random.Random) -> None:
        topic = self.topics["compacted"]
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True}
        )
        sink = _Sink(self, "compacted", committed=True, transactional=False)
        self._ready.release()
        n = 0
        while not self._stop.is_set():
            for _ in range(self.batch):
                key = b"key-%02d" % rng.randint(0, 15)
                value = None if rng.random() < 0.05 else self._value(rng, n)
                producer.produce(topic, key=key, value=value, on_delivery=sink)
                n += 1
            producer.poll(0)
            sink.raise_errors()
            time.sleep(self.pause_s)
        _flush(producer)
        sink.raise_errors()

    def _plain_group_loop(self, rng: random.Random) -> None:
        topic = self.topics["codec-zstd"]
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group_plain,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(self.partitions)])
        self._ready.release()
        polls = 0
        try:
            while not self._stop.is_set():
                msgs = consumer.consume(50, timeout=0.2)
                for m in msgs:
                    _raise_msg_error(m)
                polls += 1
                if msgs and polls % 3 == 0:
                    requested = now_ms()
                    done = consumer.commit(asynchronous=False)
                    acked = now_ms()
                    with self._lock:
                        for tp in done or []:
                            if tp.error is not None:
                                raise KafkaException(tp.error)
                            if tp.offset >= 0:
                                self.commits.append(
                                    GroupCommit(
                                        self.group_plain,
                                        tp.topic,
                                        tp.partition,
                                        tp.offset,
                                        requested,
                                        acked,
                                        transactional=False,
                                    )
                                )
                time.sleep(self.pause_s)
        finally:
            consumer.close()

    def _txn_loop(self, rng: random.Random) -> None:
        source = self.topics["codec-none"]
        topic = self.topics["txn"]
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group_txn,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        consumer.assign([TopicPartition(source, p, 0) for p in range(self.partitions)])
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": f"{self.prefix}-txn-producer",
                "acks": "all",
                "compression.type": "zstd",
                "linger.ms": 5,
            }
        )
        producer.init_transactions(60)
        self._ready.release()
        committed_pos: dict[int, int] = {p: 0 for p in range(self.partitions)}
        txn = 0
        try:
            while not self._stop.is_set():
                msgs = [m for m in consumer.consume(100, timeout=0.3) if not _is_eof(m)]
                for m in msgs:
                    _raise_msg_error(m)
                if not msgs:
                    continue
                txn += 1
                abort = txn % 3 == 0
                sink = _Sink(self, "txn", committed=not abort, transactional=True)
                producer.begin_transaction()
                pos = dict(committed_pos)
                for m in msgs:
                    part = m.partition()
                    assert part is not None
                    off = m.offset()
                    assert off is not None
                    pos[part] = off + 1
                    producer.produce(
                        topic,
                        key=m.key(),
                        value=m.value(),
                        headers=m.headers(),
                        partition=part,
                        on_delivery=sink,
                    )
                offsets = [TopicPartition(source, p, o) for p, o in pos.items()]
                producer.send_offsets_to_transaction(
                    offsets, consumer.consumer_group_metadata(), 30
                )
                _flush(producer)  # the records are written (so aborted data is in the log)
                requested = now_ms()
                if abort:
                    producer.abort_transaction(30)
                    # rewind: the aborted transaction's input is consumed again
                    for p, o in committed_pos.items():
                        consumer.seek(TopicPartition(source, p, o))
                    with self._lock:
                        self.stats.transactions_aborted += 1
                else:
                    producer.commit_transaction(30)
                    acked = now_ms()
                    with self._lock:
                        self.stats.transactions_committed += 1
                        for p, o in pos.items():
                            if o != committed_pos[p]:
                                self.commits.append(
                                    GroupCommit(
                                        self.group_txn, source, p, o, requested, acked, True
                                    )
                                )
                    committed_pos = pos
                sink.raise_errors()
                sink.commit_to(self)
                time.sleep(self.pause_s)
        finally:
            consumer.close()


class _Sink:
    """Delivery callback: records acknowledged messages (transactional ones on ``commit_to``)."""

    def __init__(
        self,
        wl: LiveWorkload,
        producer: str,
        *,
        committed: bool,
        transactional: bool,
        into: list[ProducedRecord] | None = None,
    ) -> None:
        self.wl = wl
        self.producer = producer
        self.committed = committed
        self.transactional = transactional
        self.into = into
        self.held: list[ProducedRecord] = []
        self.errors: list[KafkaError] = []

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self.errors.append(err)
            return
        ts_type, ts = msg.timestamp()
        part, off = msg.partition(), msg.offset()
        topic = msg.topic()
        assert part is not None and off is not None and topic is not None
        key, value = msg.key(), msg.value()
        rec = ProducedRecord(
            topic=topic,
            partition=part,
            offset=off,
            timestamp=ts,
            log_append_time=ts_type == TIMESTAMP_LOG_APPEND_TIME,
            key=key if isinstance(key, bytes | None) else bytes(key),
            value=value if isinstance(value, bytes | None) else bytes(value),
            headers=_headers_of(msg),
            committed=self.committed,
            transactional=self.transactional,
            producer=self.producer,
        )
        if self.transactional:
            self.held.append(rec)
            return
        with self.wl._lock:
            (self.into if self.into is not None else self.wl.records).append(rec)

    def commit_to(self, wl: LiveWorkload) -> None:
        with wl._lock:
            wl.records.extend(self.held)
        self.held.clear()

    def raise_errors(self) -> None:
        if self.errors:
            raise KafkaException(self.errors[0])


def _headers_of(msg: Message) -> Headers:
    raw: Any = msg.headers() or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    return tuple((str(h), v.encode() if isinstance(v, str) else v) for h, v in pairs)


def _flush(producer: Producer, timeout_s: float = 60.0) -> None:
    if producer.flush(timeout_s) != 0:
        raise WorkloadError(f"{len(producer)} messages not delivered in {timeout_s} s")


def _is_eof(m: Message) -> bool:
    err = m.error()
    return err is not None and err.code() == KafkaError._PARTITION_EOF


def _raise_msg_error(m: Message) -> None:
    err = m.error()
    if err is not None and err.code() != KafkaError._PARTITION_EOF:
        raise KafkaException(err)
