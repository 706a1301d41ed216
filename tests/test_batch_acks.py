"""Batch-level replay's Produce requests without a broker (issue 27, the >= 3x target): only a
partition's last batch of a transaction asks ``acks=all``, and it goes after every other batch
of the partition (its answer then means the high watermark passed them all).

The real-broker proof (exactly once across kill -9, fencing, aborts) is
tests/real_kafka/test_batch_replay_real.py, test_replay_real.py and test_replay_rerun_real.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kafka_archive.kafka_protocol.transactions import TxnBatchProducer, TxnRetry


class _FakeClient:
    """Records the Produce requests sent; answers each with the next offsets."""

    timeout_ms = 1000

    def __init__(self) -> None:
        self.sent: list[tuple[str, int, bytes, int]] = []
        self.next_offset = 100

    def send(self, node: int, request: Any) -> Any:
        topic = request.topic_data[0]
        part = topic.partition_data[0]
        self.sent.append((topic.name, part.index, bytes(part.records), request.acks))
        answer = SimpleNamespace(index=part.index, error_code=0, base_offset=self.next_offset)
        self.next_offset += 10
        return SimpleNamespace(
            responses=[SimpleNamespace(name=topic.name, partition_responses=[answer])]
        )

    def wait(self, future: Any, what: str) -> Any:
        return future

    def close(self) -> None:
        pass


def _producer() -> tuple[TxnBatchProducer, _FakeClient]:
    producer = TxnBatchProducer({"bootstrap.servers": "127.0.0.1:1"}, "tid")
    producer.client.close()
    fake = _FakeClient()
    producer.client = fake  # type: ignore[assignment]
    producer._leaders = {"t": {0: 1, 1: 2}, "p": {3: 1}}
    producer._added = {("t", 0), ("t", 1), ("p", 3)}
    return producer, fake


def test_only_each_partitions_last_batch_asks_acks_all_and_goes_last() -> None:
    producer, fake = _producer()
    offsets: list[tuple[bytes, int]] = []

    def answered(batch: bytes) -> Any:
        return lambda offset: offsets.append((batch, offset))

    for batch in (b"a0", b"a1", b"a2"):
        producer.append("t", 0, batch, answered(batch))
    producer.append("t", 1, b"b0")
    producer.append("t", 1, b"b1")
    # nothing of a partition waits but its latest batch
    assert [(t, p, b, a) for t, p, b, a in fake.sent] == [
        ("t", 0, b"a0", 1),
        ("t", 0, b"a1", 1),
        ("t", 1, b"b0", 1),
    ]
    producer.flush()
    assert fake.sent[3:] == [("t", 0, b"a2", -1), ("t", 1, b"b1", -1)]
    # every batch's answer reached its callback, in the order sent
    assert [b for b, _o in offsets] == [b"a0", b"a1", b"a2"]
    assert [o for _b, o in offsets] == sorted(o for _b, o in offsets)
    # the progress record of a transaction: alone in its partition, so acks=all
    producer.append("p", 3, b"progress")
    producer.flush()
    assert fake.sent[-1] == ("p", 3, b"progress", -1)
    assert len(fake.sent) == 6


def test_a_given_up_transaction_sends_nothing_it_held() -> None:
    producer, fake = _producer()
    producer.append("t", 0, b"a0")
    producer._drop_in_flight()  # what abort() and init() do first
    producer.flush()
    assert fake.sent == []


def test_a_batch_the_leader_refused_fails_the_transaction_at_flush() -> None:
    """An ``acks=1`` batch refused (a new leader without this producer's previous batch answers
    OUT_OF_ORDER_SEQUENCE_NUMBER) fails the transaction before it can be committed."""
    producer, fake = _producer()
    send = fake.send

    def refuse_second(node: int, request: Any) -> Any:
        answer = send(node, request)
        if len(fake.sent) == 2:
            answer.responses[0].partition_responses[0].error_code = 45
        return answer

    fake.send = refuse_second  # type: ignore[method-assign]
    for batch in (b"a0", b"a1", b"a2"):
        producer.append("t", 0, batch)
    with pytest.raises(TxnRetry, match="OUT_OF_ORDER_SEQUENCE"):
        producer.flush()
