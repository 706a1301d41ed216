"""The embedded cluster and :func:`read_to_end`, the read-back the demo and the tests rely on."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, Producer
from kafka_archive_dev.embedded_kafka import ConsumedRecord, EmbeddedKafka, read_to_end


def test_created_topic_reads_back_exactly_what_was_produced() -> None:
    with EmbeddedKafka(3) as kafka:
        kafka.create_topic("t", 5)
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        assert len(producer.list_topics("t", timeout=10).topics["t"].partitions) == 5
        sent = []
        for i in range(40):
            p, headers = i % 3, [("n", str(i).encode()), ("none", None)]
            producer.produce("t", b"v%d" % i, b"k%d" % i, p, timestamp=1_000 + i, headers=headers)
            sent.append((p, 1_000 + i, b"k%d" % i, b"v%d" % i, tuple(headers)))
        assert producer.flush(10) == 0
        got = read_to_end(kafka.bootstrap_servers, "t", [0, 1, 2, 3, 4], timeout_s=20)
    assert sorted(got) == [0, 1, 2, 3, 4] and got[3] == got[4] == []
    for p in range(3):
        want = [s for s in sent if s[0] == p]
        assert got[p] == [ConsumedRecord(p, n, *s[1:]) for n, s in enumerate(want)]


def test_unreachable_cluster_raises_instead_of_returning_a_partial_read() -> None:
    with EmbeddedKafka(1) as kafka:
        kafka.create_topic("t", 1)
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        producer.produce("t", b"x", partition=0)
        assert producer.flush(10) == 0
        kafka.broker_down(1)
        with pytest.raises((TimeoutError, KafkaException)):
            read_to_end(kafka.bootstrap_servers, "t", [0], timeout_s=3)
