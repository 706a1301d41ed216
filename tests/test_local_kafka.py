"""The project's real Kafka cluster: it starts, rolls segments the archiver can read, survives a
killed node, and runs Kafka's own tools from the same jars."""

from __future__ import annotations

import time

from confluent_kafka import Producer
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.real_kafka import broker_down, unique_name


def test_cluster_rolls_segments_into_readable_log_dirs(kafka_cluster: LocalKafkaCluster) -> None:
    topic = unique_name("smoke")
    kafka_cluster.create_topic(topic, 2, config={"segment.ms": "500"})
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "acks": "all"})
    for _round in range(3):
        for i in range(50):
            producer.produce(topic, key=str(i).encode(), value=b"v" * 100, partition=i % 2)
        producer.flush(30)
        time.sleep(0.7)
    got = read_to_end(kafka_cluster.bootstrap_servers, topic, [0, 1])
    assert sum(len(v) for v in got.values()) == 150
    # every broker holds every partition (RF 3); segments rolled: several .log files each
    for node_id, log_dir in kafka_cluster.log_dirs.items():
        logs = sorted((log_dir / f"{topic}-0").glob("*.log"))
        assert len(logs) >= 2, (node_id, logs)
        assert (log_dir / "meta.properties").read_text().find(kafka_cluster.cluster_id) >= 0


def test_killed_node_comes_back(kafka_cluster: LocalKafkaCluster) -> None:
    topic = unique_name("smoke-kill")
    kafka_cluster.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "acks": "all"})
    with broker_down(kafka_cluster, 2):
        assert not kafka_cluster.running(2)
        producer.produce(topic, value=b"while node 2 is down")
        assert producer.flush(30) == 0
    assert kafka_cluster.running(2)
    assert [r.value for r in read_to_end(kafka_cluster.bootstrap_servers, topic, [0])[0]] == [
        b"while node 2 is down"
    ]


def test_kafka_tools_run_from_the_same_jars(kafka_cluster: LocalKafkaCluster) -> None:
    topic = unique_name("smoke-tools")
    kafka_cluster.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    for _ in range(7):
        producer.produce(topic, value=b"x")
    producer.flush(30)
    out = kafka_cluster.run_tool(
        "org.apache.kafka.tools.GetOffsetShell",
        ["--bootstrap-server", kafka_cluster.bootstrap_servers, "--topic", topic],
    )
    assert out.stdout.split() == [f"{topic}:0:7"]
