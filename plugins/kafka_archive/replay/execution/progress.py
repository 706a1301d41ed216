"""Durable replay progress, committed atomically with the replayed data.

Every replay transaction on the target also writes one **progress record** to the compacted
topic ``__kafka_archive_replay_progress`` (on the target cluster): key
``<replay_id>/<source partition>``, value :class:`ProgressRecord` as JSON. Data and progress are
committed - or aborted - together, so the newest *committed* progress record of a key is exactly
where the replayed data ends: the authoritative resume point.

Reading it back (:func:`load_progress`) happens *after* the restarted producer's
``init_transactions()``, which fences any zombie of the same ``transactional.id`` and makes the
broker abort its open transaction; only then does a read_committed read of the progress
partition show the truth. The partition of a key is Kafka's default murmur2 partition of the
key, so every client agrees on it.

The committed-read itself is behind :class:`CommittedLogReader` so that it can be swapped: the
default :class:`KafkaCommittedReader` is a confluent-kafka ``read_committed`` consumer that reads
up to the high watermark observed at the start (waiting while another producer's open
transaction holds the last stable offset below it). The high watermark is asked with a
read_uncommitted client: a read_committed client's ListOffsets answers the last stable offset,
and reading only up to that missed committed progress behind another replay's open transaction
(a resume from stale progress, i.e. records replayed twice).

Each progress record also carries the source->target offset ranges of *its* transaction, so a
catalog mirror that missed a transaction (a crash between commit and the catalog update) is
completed from Kafka on resume.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import suppress
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from pydantic import BaseModel, ConfigDict

from kafka_archive.kafka_protocol.config import librdkafka_config
from kafka_archive.replay.errors import ReplayTargetError
from kafka_archive.replay.target.clients import CLIENT_LOG_SETTINGS
from kafka_archive.replay.target.murmur2 import murmur2_partition

__all__ = [
    "CLIENT_DEFAULTS",
    "PROGRESS_VERSION",
    "RETRIABLE_CODES",
    "CommittedLogReader",
    "KafkaCommittedReader",
    "OffsetRange",
    "ProgressRecord",
    "RunClaim",
    "claim_key",
    "is_retriable",
    "load_progress",
    "newer_claim",
    "progress_key",
    "progress_partition",
]

#: librdkafka settings of every client the replay makes (producers, the progress reader, the
#: guard rails' metadata client), before the target's own settings. A new client's first
#: metadata answer comes over its bootstrap connection; librdkafka then drops that for
#: connections by broker id, made after reconnect.backoff.ms (default 100 ms, jittered): the
#: guard rails' second question and every init_transactions waited ~35-50 ms for it. 10 ms
#: (then exponential up to reconnect.backoff.max.ms, 10 s) keeps failed brokers from being
#: hammered all the same.
#: Every client also gets :data:`~.client_log.CLIENT_LOG_SETTINGS`: librdkafka's log lines and
#: errors are captured and summarised in the replay's errors, never streamed to the terminal.
CLIENT_DEFAULTS: dict[str, Any] = {**CLIENT_LOG_SETTINGS, "reconnect.backoff.ms": 10}

PROGRESS_VERSION = 1

#: errors a client gets while a partition has no (or a moving) leader - right after the topic is
#: created, or while a broker is down - and that go away by asking again (librdkafka marks most,
#: not all, of them retriable)
RETRIABLE_CODES = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.REPLICA_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._WAIT_COORD,
        KafkaError._NOENT,
        KafkaError._DESTROY_BROKER,  # its broker was decommissioned (dead, left the cluster)
    }
)


def is_retriable(err: KafkaError) -> bool:
    """Whether asking again (after a short wait) may succeed: see :data:`RETRIABLE_CODES`."""
    return not err.fatal() and (err.retriable() or err.code() in RETRIABLE_CODES)


class OffsetRange(BaseModel):
    """Source offsets ``source_first..source_last`` of one source partition landed at target
    offsets ``target_first..target_last`` of ``target_partition`` (``count`` records).

    ``exact`` when both spans are contiguous (``count`` records each way): then the mapping is
    offset-for-offset. Otherwise (source gaps from filtered/aborted records with a hashed
    mapping, or another producer interleaving on the target) only the bounds are known.
    """

    model_config = ConfigDict(frozen=True)

    target_partition: int
    source_first: int
    source_last: int
    target_first: int
    target_last: int
    count: int

    @property
    def exact(self) -> bool:
        return (
            self.source_last - self.source_first
            == self.target_last - self.target_first
            == self.count - 1
        )


class ProgressRecord(BaseModel):
    """The committed state of one source partition of one replay (cumulative counters)."""

    model_config = ConfigDict(frozen=True)

    v: int = PROGRESS_VERSION
    replay_id: str
    source_cluster: str
    source_topic: str
    source_partition: int
    target_topic: str
    #: the next source offset to read: every record below it is replayed or deliberately skipped
    next_offset: int
    end_offset: int
    #: transactions committed so far for this partition (1-based sequence of this record)
    txn_seq: int
    records_sent: int
    first_offset: int = -1
    last_offset: int = -1
    aborted_records: int = 0
    control_batches: int = 0
    filtered_records: int = 0
    open_txn_records: int = 0
    done: bool = False
    updated_at_ms: int = 0
    #: this transaction's offset ranges
    ranges: list[OffsetRange] = []


def progress_key(replay_id: str, source_partition: int) -> bytes:
    return f"{replay_id}/{source_partition}".encode()


def claim_key(replay_id: str) -> bytes:
    """The key of a replay's run claims in the progress topic (see :class:`RunClaim`)."""
    return f"{replay_id}/run".encode()


class RunClaim(BaseModel):
    """One run of a replay announcing itself: the value of a ``<replay id>/run`` record in the
    progress topic, written (and acknowledged by every in-sync replica) before the run
    initialises any partition's transactional producer.

    The transactional ids are per (replay, partition), so two runs of the same replay fence
    each other partition by partition - whichever calls ``init_transactions`` last - and two
    runs started at once could each win some partitions and both fail. The claim makes the
    outcome whole: the run with the **newest** claim (the highest offset) owns the replay. A
    run checks, after each ``init_transactions`` and whenever it is fenced, whether a newer
    claim exists: if so it stops (:class:`~.errors.ReplayFencedError`, before writing when
    the check comes first); if not, whoever fenced it was an older run on its way out, so it
    makes a new producer (fencing that one back) and resumes from the committed progress.
    Newest wins, as with Kafka's own fencing: a resumed replay takes over from a stuck one.
    """

    model_config = ConfigDict(frozen=True)

    v: int = PROGRESS_VERSION
    replay_id: str
    run: str
    claimed_at_ms: int = 0
    #: where the claim is: progress partition and offset (not part of the record's value)
    partition: int = -1
    offset: int = -1


def newer_claim(reader: CommittedLogReader, topic: str, claim: RunClaim) -> RunClaim | None:
    """The newest claim of ``claim``'s replay written after it (``None`` if it is the newest)."""
    key = claim_key(claim.replay_id)
    newest: RunClaim | None = None
    for offset, k, value in reader.read(topic, claim.partition, claim.offset + 1):
        if k != key or value is None:
            continue
        found = RunClaim.model_validate_json(value)
        if found.run != claim.run:
            newest = found.model_copy(update={"partition": claim.partition, "offset": offset})
    return newest


def progress_partition(key: bytes, num_partitions: int) -> int:
    """The progress topic partition of ``key`` (Kafka's default partitioner)."""
    return murmur2_partition(key, num_partitions)


class CommittedLogReader(Protocol):
    """Reads the committed records of one partition from ``start_offset`` to its end."""

    def read(
        self, topic: str, partition: int, start_offset: int
    ) -> Iterator[tuple[int, bytes | None, bytes | None]]:
        """Yield ``(offset, key, value)`` of committed records in offset order."""
        ...


class KafkaCommittedReader:
    """A confluent-kafka ``read_committed`` consumer (see the module docstring)."""

    def __init__(self, client_config: dict[str, str], *, timeout_s: float = 120.0) -> None:
        self.config = client_config
        self.timeout_s = timeout_s
        self._warm: tuple[Consumer, Consumer] | None = None

    def _consumer(self, isolation: str) -> Consumer:
        return Consumer(
            librdkafka_config(
                {
                    **CLIENT_DEFAULTS,
                    **self.config,
                    "group.id": "kafka-archive-replay-progress-reader",
                    "enable.auto.commit": False,
                    "isolation.level": isolation,
                    "enable.partition.eof": True,
                    "auto.offset.reset": "earliest",
                    # progress partitions are small: do not let the broker hold fetches back
                    "fetch.wait.max.ms": 10,
                }
            )
        )

    def _consumers(self) -> tuple[Consumer, Consumer]:
        """``(reader, watermarks)``: the read_committed consumer that reads, and a
        read_uncommitted one that only asks for the high watermark. (A read_committed client's
        ListOffsets answers the *last stable offset*: with another producer's transaction open
        on the partition - or the markers of a commit not written yet - that is below committed
        progress records, which a read up to it would silently miss.)"""
        return self._consumer("read_committed"), self._consumer("read_uncommitted")

    def connect(self) -> None:
        """Create the consumers of the next :meth:`read` now: they connect and fetch metadata
        in the background but read nothing (partitions are assigned only by :meth:`read`), so
        a caller can overlap the clients' start-up with its own (e.g. ``init_transactions``,
        which must come *before* the read, not before the consumers exist)."""
        if self._warm is None:
            self._warm = self._consumers()

    def read(
        self, topic: str, partition: int, start_offset: int
    ) -> Iterator[tuple[int, bytes | None, bytes | None]]:
        (consumer, watermarks), self._warm = self._warm or self._consumers(), None
        unused = False  # nothing was read: the next read takes both clients as they are
        try:
            tp = TopicPartition(topic, partition)
            deadline = time.monotonic() + self.timeout_s
            high = self._high_watermark(watermarks, tp, deadline)
            if high <= start_offset:
                # (a claim check finding no newer claim: the resume point's read follows, and
                # saves making and connecting two clients)
                unused = self._warm is None
                return
            watermarks.close()
            # the topic's metadata asked first: a consumer assigned a partition of a topic it
            # has not asked about yet may start fetching only at librdkafka's next topic scan,
            # up to 1 s after it was created (measured: 0.7-1.0 s in half the reads of a
            # consumer created 0.05-0.3 s before its assign, none with this round trip)
            with suppress(KafkaException):  # (the read below reports a real failure)
                consumer.list_topics(topic, timeout=max(1.0, min(5.0, self.timeout_s)))
            consumer.assign([TopicPartition(topic, partition, start_offset)])
            last_error = ""
            while time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        # read_committed stops at the last stable offset: done once it has
                        # passed the high watermark seen at the start
                        pos = consumer.position([tp])[0].offset
                        if pos >= high:
                            return
                        continue
                    if is_retriable(err):
                        # a leader moving (a broker down, a topic just created): the consumer
                        # finds the new leader and fetches again by itself
                        last_error = f" (last error: {err.str()})"
                        continue
                    raise ReplayTargetError(f"reading {topic}-{partition}: {err.str()}")
                yield msg.offset() or 0, msg.key(), msg.value()
                if (msg.offset() or 0) + 1 >= high:
                    return
            raise ReplayTargetError(
                f"timed out reading the committed records of {topic}-{partition} up to "
                f"{high}{last_error}",
                hint="Another producer's open transaction holds the last stable offset back "
                "(it is aborted after its transaction.timeout.ms), or the partition has no "
                "leader. Retry then.",
            )
        finally:
            if unused:
                self._warm = (consumer, watermarks)
            else:
                watermarks.close()  # (closed already once the high watermark is known: harmless)
                consumer.close()

    @staticmethod
    def _high_watermark(consumer: Consumer, tp: TopicPartition, deadline: float) -> int:
        """The partition's high watermark from its leader, asking again while the answer is a
        retriable error (no leader yet, leader moving) until ``deadline``.

        Each try is short and followed by a metadata request: librdkafka sends ListOffsets to
        the leader it has cached and, when that broker is dead, waits for it rather than ask
        who leads now (seen with a target broker killed mid-replay: 120 s on a dead leader).
        """
        while True:
            try:
                _low, high = consumer.get_watermark_offsets(
                    tp, timeout=max(1.0, min(5.0, deadline - time.monotonic()))
                )
                return int(high)
            except KafkaException as exc:
                err = exc.args[0]
                if not isinstance(err, KafkaError) or not is_retriable(err):
                    raise ReplayTargetError(
                        f"reading {tp.topic}-{tp.partition}: "
                        f"{err.str() if isinstance(err, KafkaError) else err}"
                    ) from None
                if time.monotonic() >= deadline:
                    raise ReplayTargetError(
                        f"{tp.topic}-{tp.partition} did not answer ListOffsets in time: "
                        f"{err.str()}",
                        hint="The partition has no leader; check the target brokers and retry.",
                    ) from None
                with suppress(KafkaException):
                    consumer.list_topics(tp.topic, timeout=5)  # who leads it now
                time.sleep(0.1)


def load_progress(
    reader: CommittedLogReader,
    topic: str,
    partition: int,
    key: bytes,
    *,
    start_offset: int = 0,
) -> tuple[ProgressRecord | None, int | None]:
    """The newest committed progress record of ``key`` at or after ``start_offset`` and its
    offset in the progress partition (``(None, None)`` if there is none)."""
    latest: ProgressRecord | None = None
    latest_offset: int | None = None
    for offset, k, value in reader.read(topic, partition, start_offset):
        if k != key or value is None:
            continue
        record = ProgressRecord.model_validate_json(value)
        if latest is None or record.txn_seq >= latest.txn_seq:
            latest, latest_offset = record, offset
    return latest, latest_offset
