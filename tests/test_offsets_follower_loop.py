"""The offsets follower's consume loop (:func:`follow_offsets`) against a Kafka-protocol peer:
librdkafka's mock cluster (:class:`EmbeddedKafka`), whose ``__consumer_offsets`` topic the
test fills with synthetic coordinator records. The exactly-once store itself is tested without
Kafka in tests/test_offsets_follower.py; here: a run until caught up stores every record once
and a second run resumes at the stored positions; the stop conditions (stop event, duration,
SIGTERM, no topic yet); a position moved by another follower mid-run is re-read, not fatal.

The follower's raw-batch reader (kafka-python) cannot talk to the mock cluster; it reads a
mirror of what each test produced there (:func:`support.raw_batches.mirror_raw_source`): the
same offsets, plain batches, as the synthetic records are."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.models import FollowedCommitRow
from kafka_archive.offsets_follower.follower import (
    CONSUMER_OFFSETS_TOPIC,
    BatchResult,
    ReadRecord,
    decode_records,
    load_positions,
)
from kafka_archive.offsets_follower.loop import follow_offsets
from kafka_archive_dev.embedded_kafka import EmbeddedKafka
from sqlalchemy import select
from support.offsets_records import synthetic_records
from support.raw_batches import LogRawSource, mirror_raw_source

CLUSTER = "c1"
PARTITIONS = 3


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    cat = open_catalog(f"sqlite:///{tmp_path / 'catalog.db'}", create=True)
    try:
        yield cat
    finally:
        cat.close()


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddedKafka]:
    with EmbeddedKafka(1) as k:
        _MIRROR[k.bootstrap_servers] = mirror_raw_source(monkeypatch, k.bootstrap_servers)
        yield k


#: the raw batches each mock cluster holds (what the test produced there)
_MIRROR: dict[str, LogRawSource] = {}


def _produce(kafka: EmbeddedKafka, records: Sequence[ReadRecord]) -> list[ReadRecord]:
    """Produce ``records`` to ``__consumer_offsets`` (their partitions and timestamps) and
    return them with the offsets the cluster gave them (dense, per partition)."""
    ends = _log_ends(kafka)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    out = []
    for r in records:
        producer.produce(
            CONSUMER_OFFSETS_TOPIC,
            key=r.key,
            value=r.value,
            partition=r.partition,
            timestamp=r.timestamp,
        )
        out.append(ReadRecord(r.partition, ends[r.partition], r.timestamp, r.key, r.value))
        mirror = _MIRROR[kafka.bootstrap_servers]
        assert mirror.end(r.partition) == ends[r.partition]
        mirror.plain(r.partition, [(r.timestamp, r.key, r.value)])
        ends[r.partition] += 1
    assert producer.flush(30) == 0
    return out


def _log_ends(kafka: EmbeddedKafka) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "probe"})
    try:
        return {
            p: consumer.get_watermark_offsets(
                TopicPartition(CONSUMER_OFFSETS_TOPIC, p), timeout=30.0
            )[1]
            for p in range(PARTITIONS)
        }
    finally:
        consumer.close()


def _stored(cat: Catalog) -> list[tuple[Any, ...]]:
    fc = FollowedCommitRow
    with cat.session() as s:
        return sorted(
            tuple(r)
            for r in s.execute(
                select(
                    fc.source_partition,
                    fc.log_offset,
                    fc.group_id,
                    fc.topic,
                    fc.partition,
                    fc.kind,
                    fc.committed_offset,
                    fc.commit_timestamp,
                    fc.record_timestamp,
                ).where(fc.cluster == CLUSTER)
            )
        )


def _expected(records: Sequence[ReadRecord]) -> list[tuple[Any, ...]]:
    rows, _ = decode_records(CLUSTER, records, 0)
    return sorted(
        (
            r["source_partition"],
            r["log_offset"],
            r["group_id"],
            r["topic"],
            r["partition"],
            r["kind"],
            r["committed_offset"],
            r["commit_timestamp"],
            r["record_timestamp"],
        )
        for r in rows
    )


def _ends(records: Sequence[ReadRecord]) -> dict[int, int]:
    return {p: max(r.offset for r in records if r.partition == p) + 1 for p in range(PARTITIONS)}


def test_until_caught_up_stores_every_record_once_and_resumes(
    kafka: EmbeddedKafka, catalog: Catalog
) -> None:
    kafka.create_topic(CONSUMER_OFFSETS_TOPIC, PARTITIONS)
    first = _produce(kafka, synthetic_records(400, PARTITIONS, seed=1))
    batches: list[BatchResult] = []
    report = follow_offsets(
        catalog, CLUSTER, kafka.bootstrap_servers, until_caught_up=True, on_batch=batches.append
    )
    _, counts = decode_records(CLUSTER, first, 0)
    assert (report.caught_up, report.stopped_by, report.partitions) == (True, "caught up", 3)
    assert report.records_read == len(first)
    assert (report.commits_recorded, report.tombstones_recorded) == (
        counts.commits,
        counts.tombstones,
    )
    assert (report.group_records, report.undecodable) == (counts.group_records, counts.undecodable)
    assert report.transactions == len(batches) >= 1
    assert sum(b.rows_written for b in batches) == len(_expected(first))
    assert report.positions == load_positions(catalog, CLUSTER) == _ends(first)
    assert report.behind_log_start == {} and report.conflicts == 0
    # every delivered record was found in a raw batch: plain ones, stored at their own time
    assert (report.transactional_records, report.unresolved_markers) == (0, 0)
    assert _MIRROR[kafka.bootstrap_servers].fetches >= 1
    assert _stored(catalog) == _expected(first)
    # more commits: the next run starts at the stored positions, reads only the new records
    second = _produce(kafka, synthetic_records(150, PARTITIONS, seed=2))
    again = follow_offsets(catalog, CLUSTER, kafka.bootstrap_servers, until_caught_up=True)
    assert again.caught_up and again.records_read == len(second)
    assert _stored(catalog) == _expected([*first, *second])
    assert again.positions == _ends([*first, *second])
    # nothing new: a caught-up run reads nothing and writes nothing
    idle = follow_offsets(catalog, CLUSTER, kafka.bootstrap_servers, until_caught_up=True)
    assert (idle.caught_up, idle.records_read, idle.commits_recorded) == (True, 0, 0)
    assert _stored(catalog) == _expected([*first, *second])


def test_small_batches_are_one_transaction_each(kafka: EmbeddedKafka, catalog: Catalog) -> None:
    kafka.create_topic(CONSUMER_OFFSETS_TOPIC, PARTITIONS)
    records = _produce(kafka, synthetic_records(300, PARTITIONS, seed=3))
    batches: list[BatchResult] = []
    report = follow_offsets(
        catalog,
        CLUSTER,
        kafka.bootstrap_servers,
        until_caught_up=True,
        batch_records=20,
        on_batch=batches.append,
    )
    assert report.caught_up and report.records_read == len(records)
    assert report.transactions == len(batches) >= len(records) // 20
    assert _stored(catalog) == _expected(records)


def test_a_position_moved_by_another_follower_is_reread(
    kafka: EmbeddedKafka, catalog: Catalog
) -> None:
    """After this follower's first batch, another follower stores everything: this one's next
    transaction conflicts, it re-reads the positions, seeks there and ends caught up with every
    record stored once."""
    kafka.create_topic(CONSUMER_OFFSETS_TOPIC, PARTITIONS)
    records = _produce(kafka, synthetic_records(300, PARTITIONS, seed=4))
    other: list[Any] = []

    def another_follower(_: BatchResult) -> None:
        if not other:
            other.append(
                follow_offsets(catalog, CLUSTER, kafka.bootstrap_servers, until_caught_up=True)
            )

    report = follow_offsets(
        catalog,
        CLUSTER,
        kafka.bootstrap_servers,
        until_caught_up=True,
        batch_records=10,
        on_batch=another_follower,
    )
    assert other and other[0].caught_up
    assert report.conflicts >= 1
    assert (report.caught_up, report.stopped_by) == (True, "caught up")
    assert report.records_read + other[0].records_read >= len(records)
    assert _stored(catalog) == _expected(records)
    assert report.positions == _ends(records)


def test_stop_event_and_duration_end_a_run(kafka: EmbeddedKafka, catalog: Catalog) -> None:
    kafka.create_topic(CONSUMER_OFFSETS_TOPIC, PARTITIONS)
    records = _produce(kafka, synthetic_records(100, PARTITIONS, seed=5))
    stop = threading.Event()
    stop.set()
    stopped = follow_offsets(catalog, CLUSTER, kafka.bootstrap_servers, stop=stop)
    assert (stopped.stopped_by, stopped.caught_up, stopped.records_read) == (
        "stop requested",
        False,
        0,
    )
    timed = follow_offsets(catalog, CLUSTER, kafka.bootstrap_servers, duration_s=0.0)
    assert (timed.stopped_by, timed.records_read, timed.positions) == ("duration", 0, {})
    # a run for ever, stopped from another thread once everything is stored
    stop = threading.Event()

    def stop_when_done(_: BatchResult) -> None:
        if load_positions(catalog, CLUSTER) == _ends(records):
            stop.set()

    forever = follow_offsets(
        catalog, CLUSTER, kafka.bootstrap_servers, stop=stop, on_batch=stop_when_done
    )
    assert (forever.stopped_by, forever.caught_up) == ("stop requested", False)
    assert _stored(catalog) == _expected(records)


def test_sigterm_stops_a_run_that_handles_signals(kafka: EmbeddedKafka, catalog: Catalog) -> None:
    kafka.create_topic(CONSUMER_OFFSETS_TOPIC, PARTITIONS)
    records = _produce(kafka, synthetic_records(60, PARTITIONS, seed=6))
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

    def terminate(_: BatchResult) -> None:
        signal.raise_signal(signal.SIGTERM)

    try:
        report = follow_offsets(
            catalog, CLUSTER, kafka.bootstrap_servers, on_batch=terminate, handle_signals=True
        )
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert report.stopped_by == "stop requested"
    assert report.positions == load_positions(catalog, CLUSTER)
    assert report.records_read > 0 and report.records_read <= len(records)


def test_no_consumer_offsets_topic_yet(kafka: EmbeddedKafka, catalog: Catalog) -> None:
    caught = follow_offsets(catalog, CLUSTER, kafka.bootstrap_servers, until_caught_up=True)
    assert (caught.partitions, caught.caught_up, caught.stopped_by) == (
        0,
        True,
        "no __consumer_offsets topic yet",
    )
    # a long-running follower waits for the topic until its duration is up
    waited = follow_offsets(catalog, CLUSTER, kafka.bootstrap_servers, duration_s=0.0)
    assert (waited.partitions, waited.caught_up, waited.stopped_by) == (
        0,
        False,
        "no __consumer_offsets topic yet",
    )
    assert waited.positions == {} and _stored(catalog) == []


class _LateLeaderConsumer:
    """A consumer whose broker does not know the partition for the first ``misses`` asks
    (a ``__consumer_offsets`` created a moment ago), then answers; or fails for good."""

    def __init__(self, misses: int, code: int) -> None:
        self.misses, self.code, self.asks = misses, code, 0

    def get_watermark_offsets(self, tp: Any, timeout: float, cached: bool) -> tuple[int, int]:
        from confluent_kafka import KafkaError, KafkaException

        self.asks += 1
        if self.asks <= self.misses:
            raise KafkaException(KafkaError(self.code))
        return 3, 17


def _loop_over(consumer: Any) -> Any:
    from kafka_archive.offsets_follower.loop import FollowLoop

    loop = FollowLoop.__new__(FollowLoop)  # only the consumer is used by _watermarks
    object.__setattr__(loop, "consumer", consumer)
    return loop


def test_watermarks_are_asked_again_while_the_partition_is_being_created() -> None:
    from confluent_kafka import KafkaError, KafkaException, TopicPartition

    late = _LateLeaderConsumer(2, KafkaError.UNKNOWN_TOPIC_OR_PART)
    assert _loop_over(late)._watermarks(TopicPartition(CONSUMER_OFFSETS_TOPIC, 0)) == (3, 17)
    assert late.asks == 3
    # an error that does not pass is raised at once
    denied = _LateLeaderConsumer(5, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        _loop_over(denied)._watermarks(TopicPartition(CONSUMER_OFFSETS_TOPIC, 0))
    assert denied.asks == 1
    # one that passes, but not within the time given, is raised too
    stuck = _LateLeaderConsumer(10**6, KafkaError.LEADER_NOT_AVAILABLE)
    with pytest.raises(KafkaException):
        _loop_over(stuck)._watermarks(TopicPartition(CONSUMER_OFFSETS_TOPIC, 0), timeout_s=0.6)
    assert 1 < stuck.asks < 10
