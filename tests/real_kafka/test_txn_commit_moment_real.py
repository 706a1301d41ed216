"""A transactional offset commit takes effect at its COMMIT marker (issue 20, point 4).

``send_offsets_to_transaction`` appends the group's TxnOffsetCommit record to
``__consumer_offsets`` at once; the broker's group coordinator applies it only when the
transaction's COMMIT marker is written, and never when it aborts. Against a real cluster: a
plain commit, then a transaction that sends offsets, waits, and commits, then one that aborts.
At moments between append and marker, after the marker and after the abort, the broker's own
answer (OffsetFetch through ``list_consumer_group_offsets``, not requiring stable offsets) is
recorded. ``group-offsets --at T`` must give the broker's answer at every moment twice:
first from the follower alone (nothing archived yet: the follower finds each transactional
commit's COMMIT marker in the raw batches it fetches beside its read_committed consumer), then
once the segments are archived and cataloged too (the archive's resolution and the follower's
rows agree, each commit counted once).

The broker is asked with ``require_stable=False``: while a transactional commit is pending,
``require_stable=True`` answers UNSTABLE_OFFSET_COMMIT instead of an offset, which is what
:func:`_wait_stable` waits out before the moment after a marker is taken.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from kafka_archive.archive import run_archive
from kafka_archive.catalog.build import InProcessRunner, build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.models import FollowedCommitRow, OffsetCommitRow
from kafka_archive.catalog.queries import group_offsets
from kafka_archive.offsets_follower.loop import follow_offsets
from kafka_archive.store import open_store
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from sqlalchemy import select
from support.real_kafka import unique_name

from segment_lib.consumer_offsets import partition_for_group

CLUSTER = "txn-moment"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _broker_offset(admin: AdminClient, group: str, tp: TopicPartition) -> int:
    """The group's committed offset of ``tp`` as the broker answers now (-1: none)."""
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(tp.topic, tp.partition)])
    res = admin.list_consumer_group_offsets([req], require_stable=False)[group].result(30)
    (got,) = res.topic_partitions
    return int(got.offset) if got.offset >= 0 else -1


def _wait_stable(admin: AdminClient, group: str, tp: TopicPartition) -> None:
    """Until the group has no pending transactional offset for ``tp``: OffsetFetch requiring
    stable offsets answers it instead of UNSTABLE_OFFSET_COMMIT (a partition-level error)."""
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(tp.topic, tp.partition)])
    deadline = time.monotonic() + 60
    while True:
        try:
            res = admin.list_consumer_group_offsets([req], require_stable=True)[group].result(30)
            (got,) = res.topic_partitions
            if got.error is None:
                return
        except KafkaException:
            pass
        assert time.monotonic() < deadline, "the transaction's markers were never applied"
        time.sleep(0.2)


def _commit(consumer: Consumer, tp: TopicPartition, offset: int) -> None:
    for attempt in range(120):  # the coordinator may still be loading at first
        try:
            consumer.commit(
                offsets=[TopicPartition(tp.topic, tp.partition, offset)], asynchronous=False
            )
            return
        except Exception:
            if attempt == 119:
                raise
            time.sleep(0.5)


def _moment(admin: AdminClient, group: str, tp: TopicPartition) -> tuple[int, int]:
    """(a moment, the broker's answer at it): the moment is taken strictly between two
    milliseconds so that nothing the test does lands on it."""
    time.sleep(0.002)
    at = now_ms()
    time.sleep(0.002)
    return at, _broker_offset(admin, group, tp)


def _history(bs: str, admin: AdminClient, tp: TopicPartition, group: str) -> list[tuple[int, int]]:
    """A plain commit (5), a transaction committing 10 and one aborting 20, each transaction
    kept open a while after its offsets were sent; returns (moment, broker's answer) pairs."""
    consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    moments: list[tuple[int, int]] = []
    try:
        _commit(consumer, tp, 5)
        moments.append(_moment(admin, group, tp))
        for offset, commit in ((10, True), (20, False)):
            producer = Producer({"bootstrap.servers": bs, "transactional.id": unique_name("tm")})
            producer.init_transactions(60)
            producer.begin_transaction()
            producer.produce(tp.topic, value=b"x", partition=tp.partition)
            producer.send_offsets_to_transaction(
                [TopicPartition(tp.topic, tp.partition, offset)],
                consumer.consumer_group_metadata(),
                30,
            )
            # appended to __consumer_offsets, the transaction still open: not in effect
            for _ in range(3):
                moments.append(_moment(admin, group, tp))
                time.sleep(0.3)
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
            # EndTxn returns once the outcome is logged; the markers follow asynchronously:
            # a moment is taken once the broker's group coordinator applied the outcome
            _wait_stable(admin, group, tp)
            moments.append(_moment(admin, group, tp))
            producer.flush(10)
    finally:
        consumer.close()
    return moments


def test_group_offsets_take_transactional_commits_at_their_marker(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bs = kafka_cluster.bootstrap_servers
    nparts = int(kafka_cluster.config["offsets.topic.num.partitions"])
    topic = kafka_cluster.create_topic(unique_name("tm-src"), 1)
    tp = TopicPartition(topic, 0)
    group = unique_name("tm-group")
    roller = unique_name("tm-roller")  # commits to the same __consumer_offsets partition
    while partition_for_group(roller, nparts) != partition_for_group(group, nparts):
        roller = unique_name("tm-roller")
    admin = AdminClient({"bootstrap.servers": bs})
    cat = open_catalog(str(tmp_path / "catalog.db"), create=True)
    try:
        # the follower runs meanwhile, as in production (the broker's cleaner compacts rolled
        # segments of __consumer_offsets within seconds here), then catches up
        stop = threading.Event()
        running = threading.Thread(
            target=follow_offsets, args=(cat, CLUSTER, bs), kwargs={"stop": stop}, daemon=True
        )
        running.start()
        try:
            moments = _history(bs, admin, tp, group)
        finally:
            stop.set()
            running.join(60)
        answers = [b for _, b in moments]
        assert answers[:5] == [5, 5, 5, 5, 10], moments
        assert answers[5:] == [10, 10, 10, 10], moments  # the aborted one never took effect
        report = follow_offsets(cat, CLUSTER, bs, until_caught_up=True)
        assert report.caught_up, report
        # the follower alone (segments not archived: days, in production)
        _check_followed(cat, group, topic, moments)
        # roll that segment (log.roll.ms is 3 s: the next append rolls it), so it is archived
        time.sleep(3.5)
        rolling = Consumer({"bootstrap.servers": bs, "group.id": roller})
        try:
            _commit(rolling, tp, 1)
        finally:
            rolling.close()
        store = open_store(str(tmp_path / "store"))
        for node_id, log_dir in sorted(kafka_cluster.log_dirs.items()):
            run_archive(
                cluster=CLUSTER,
                broker_id=node_id,
                log_dirs=[str(log_dir)],
                store=store,
                state_dir=str(tmp_path / "state" / str(node_id)),
            )
        build_catalog(cat, store.uri, runner=InProcessRunner())
        _check(cat, group, topic, moments)
    finally:
        cat.close()


def _answers_wrong(
    cat: Catalog, group: str, topic: str, moments: list[tuple[int, int]]
) -> list[tuple[int, dict[tuple[str, int], int], int]]:
    wrong = []
    for at, broker in moments:
        got = {(o.topic, o.partition): o.offset for o in group_offsets(cat, CLUSTER, group, at)}
        if got.get((topic, 0), -1) != broker:
            wrong.append((at, got, broker))
    return wrong


def _check_followed(cat: Catalog, group: str, topic: str, moments: list[tuple[int, int]]) -> None:
    """From the follower's rows alone: the broker's answer at every moment; the transactional
    commit stored at its COMMIT marker (a later offset and time than its record's), the
    aborted one never stored."""
    oc, fc = OffsetCommitRow, FollowedCommitRow
    with cat.session() as s:
        assert s.execute(select(oc.id).where(oc.cluster == CLUSTER)).first() is None
        seen = s.execute(
            select(
                fc.log_offset,
                fc.committed_offset,
                fc.record_timestamp,
                fc.effective_offset,
                fc.visible_ts,
            ).where(fc.cluster == CLUSTER, fc.group_id == group)
        ).all()
    by_offset = {r.committed_offset: r for r in seen}
    assert set(by_offset) == {5, 10}, seen
    plain, txn = by_offset[5], by_offset[10]
    assert (plain.effective_offset, plain.visible_ts) == (plain.log_offset, plain.record_timestamp)
    assert txn.effective_offset > txn.log_offset and txn.visible_ts > txn.record_timestamp, seen
    assert _answers_wrong(cat, group, topic, moments) == [], (moments, seen)


def _check(cat: Catalog, group: str, topic: str, moments: list[tuple[int, int]]) -> None:
    """The catalog's answer at every moment is the broker's."""
    oc, fc = OffsetCommitRow, FollowedCommitRow
    with cat.session() as s:
        arch = s.execute(
            select(oc.log_offset, oc.committed_offset, oc.txn_state, oc.visible_ts).where(
                oc.cluster == CLUSTER, oc.group_id == group
            )
        ).all()
        seen = s.execute(
            select(fc.log_offset, fc.committed_offset, fc.record_timestamp).where(
                fc.cluster == CLUSTER, fc.group_id == group
            )
        ).all()
    # the archive resolved the committed transaction against its marker
    assert (10, "committed") in {(a[1], a[2]) for a in arch}, arch
    assert _answers_wrong(cat, group, topic, moments) == [], (moments, seen, arch)
