"""A real producer's transaction left open across a segment roll (issue 20, point 2).

On the real cluster (tests/support/real_kafka.py): plain records, then a transactional
producer's records with the transaction left open, more plain records, and a segment roll
(``segment.ms``) so all of it is in a rolled, archivable segment. The archive and the catalog
build run over the brokers' log dirs; a replay of the archived range into another topic of the
same cluster stops at the open transaction (the last stable offset) and ends ``incomplete``,
delivering exactly what a read_committed consumer of the source sees while the transaction is
open. The transaction is then committed, the new segments archived, and the same replay
command delivers the rest: the target then holds what a read_committed consumer of the source
sees below the range's end.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka_archive.archive.runner import run_archive
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.models import Partition, PartitionStability
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive.store import ObjectStore, open_store
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.cli_json import cli

from tests.support.real_kafka import unique_name

pytestmark = pytest.mark.timeout(600)

CLUSTER = "real-open-txn"
SEGMENT_MS = 1500


def _archive(cluster: LocalKafkaCluster, store: ObjectStore, catalog: Catalog, state: Path) -> None:
    for node_id, log_dir in sorted(cluster.log_dirs.items()):
        run_archive(
            cluster=CLUSTER, broker_id=node_id, log_dirs=[str(log_dir)], store=store,
            state_dir=str(state / str(node_id)),
        )  # fmt: skip
    build_catalog(catalog, store.uri, cluster=CLUSTER)


def _roll(plain: Producer, topic: str, tag: str) -> None:
    """One record after ``segment.ms``: the broker rolls the segment before appending it."""
    time.sleep(SEGMENT_MS / 1000 + 0.5)
    plain.produce(topic, f"{tag}".encode(), partition=0)
    plain.flush(30)


def _broker_lso(bs: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": unique_name("lso"),
                  "isolation.level": "read_committed"})  # fmt: skip
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)[1])
    finally:
        c.close()


def _stability(catalog: Catalog, topic: str) -> PartitionStability:
    with catalog.session() as s:
        pid = s.query(Partition.id).filter_by(cluster=CLUSTER, topic=topic, partition=0).scalar()
        row = s.get(PartitionStability, pid)
        assert row is not None
        s.expunge(row)
        return row


def test_replay_of_a_real_open_transaction_matches_a_read_committed_consumer(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = kafka_cluster.create_topic(
        unique_name("open-txn-src"), 1, config={"segment.ms": str(SEGMENT_MS)}
    )
    plain = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(5):
        plain.produce(topic, f"before-{i}".encode(), partition=0)
    plain.flush(30)
    txn = Producer(
        {"bootstrap.servers": bs, "transactional.id": unique_name("open-txn"),
         "transaction.timeout.ms": 300_000}
    )  # fmt: skip
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(3):
        txn.produce(topic, f"txn-{i}".encode(), partition=0)
    txn.flush(30)
    for i in range(4):
        plain.produce(topic, f"after-{i}".encode(), partition=0)
    plain.flush(30)
    _roll(plain, topic, "roll-1")  # the open transaction is in a rolled segment now

    # the broker's last stable offset (ListOffsets of a read_committed client): where a
    # read_committed consumer stops while the transaction is open
    lso = _broker_lso(bs, topic)
    assert lso == 5

    store = open_store(str(tmp_path / "store"))
    catalog = open_catalog(f"sqlite:///{tmp_path / 'catalog.db'}", create=True)
    try:
        _archive(kafka_cluster, store, catalog, tmp_path / "state")
        first = _stability(catalog, topic)
        assert first.stable_offset == lso < first.end_offset  # the catalog agrees
        end = first.end_offset
        target = kafka_cluster.create_topic(unique_name("open-txn-dst"), 1)
        args = [
            "replay", "run", "--cluster", CLUSTER, "--topic", topic, "--from", "earliest",
            "--to", f"offset:{end}", "--target", bs, "--target-topic", target,
            "--store", store.uri, "--db", f"sqlite:///{tmp_path / 'catalog.db'}", "--json",
        ]  # fmt: skip
        code, out, text = cli(*args)
        assert code == 1, text
        report = out[-1]
        assert report["status"] == "incomplete"
        assert [row["stable_offset"] for row in report["incomplete"]] == [lso]
        got = [r.value for r in read_to_end(bs, target, [0])[0]]
        assert got == [f"before-{i}".encode() for i in range(5)]

        txn.commit_transaction(30)
        _roll(plain, topic, "roll-2")  # the COMMIT marker is in a rolled segment now
        # archive rounds until the marker's segment is archived: the archiver takes a rolled
        # segment once the broker's checkpoints cover it, a moment after the roll on a busy
        # machine (the shared cluster holds every suite module's topics by now)
        deadline = time.monotonic() + 60
        while True:
            _archive(kafka_cluster, store, catalog, tmp_path / "state")
            if _stability(catalog, topic).stable_offset > end or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert _stability(catalog, topic).stable_offset > end
        code, out, text = cli(*args)
        assert code == 0, text
        assert out[-1]["status"] == "complete"
        # the broker's own read_committed view of the source, below the range's end
        source = [r.value for r in read_to_end(bs, topic, [0])[0] if r.offset < end]
        assert [r.value for r in read_to_end(bs, target, [0])[0]] == source
        assert set(source) >= {f"txn-{i}".encode() for i in range(3)}
    finally:
        catalog.close()
