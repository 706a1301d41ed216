"""A log start moved past the fetch archiver's position is a recorded, named hole, for real.

A topic is archived up to its end; more records are written; ``DeleteRecords`` (what retention
does, on demand) moves the log start past the archive's end; the next run reports the hole
``[archive end, new log start)``, its first manifest names it (``fetch.hole_from``), and it
archives everything from the new log start, byte for byte the leader's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka_archive.kafka_protocol.client import ProtocolClient
from kafka_archive.store import LocalStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.fetched_archive import (
    archived_batches,
    broker_batches,
    fetch_cli,
    partition_manifests,
)
from support.real_kafka import unique_name

pytestmark = pytest.mark.timeout(240)

CLUSTER = "fetched-hole"


def _produce(bootstrap: str, topic: str, n: int, tag: bytes) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, tag + b"%d" % i, None, 0)
        if i % 20 == 19:
            producer.flush(30)  # several batches
    assert producer.flush(30) == 0


def test_records_deleted_before_they_were_archived_are_a_named_hole(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = kafka_cluster.create_topic(unique_name("fetch-hole"), 1)
    store = LocalStore(tmp_path / "store")
    _produce(bootstrap, topic, 100, b"first-")
    first = fetch_cli(CLUSTER, bootstrap, store.uri, topic)
    assert first["ok"] and not first["holes"]
    end = first["partitions"][0]["high_watermark"]
    assert end == 100
    _produce(bootstrap, topic, 100, b"second-")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (fut,) = admin.delete_records([TopicPartition(topic, 0, 150)]).values()
    assert fut.result(30).low_watermark == 150  # the new log start
    second = fetch_cli(CLUSTER, bootstrap, store.uri, topic)
    assert second["ok"]
    assert second["holes"] == [{"topic": topic, "partition": 0, "start": 100, "end": 150}]
    ms = partition_manifests(store, CLUSTER, topic, 0)
    after = [m for m in ms if m.base_offset >= 100]
    assert after and after[0].fetch is not None and after[0].fetch.hole_from == 100
    assert after[-1].end_offset == 200
    client = ProtocolClient({"bootstrap.servers": bootstrap}, client_id="fetch-hole-test")
    try:
        leader = client.leaders(topic)[0]
    finally:
        client.close()
    broker = broker_batches(kafka_cluster.log_dirs[leader] / f"{topic}-0")
    ours = archived_batches(store, after)
    assert ours and all(broker[o] == data for o, data in ours.items())
    # the batch holding offset 150 is kept whole (as the broker keeps it), none after is missed
    assert set(ours) == {o for o in broker if o >= min(ours)}
    assert min(ours) <= 150
