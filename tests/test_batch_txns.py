"""Batch-level replay's transactions without a broker (issue 27, the >= 3x target): which
Produce requests ask ``acks=all`` (a partition's last batch of a transaction, sent last), the
two transactional ids used in turn, and a record-level run that resumes a replay whose progress
says the second id was used fences it before trusting the progress (librdkafka's mock cluster).

The real-broker proof (exactly once across kill -9, fencing, aborts) is
tests/real_kafka/test_batch_replay_real.py, test_replay_real.py and test_replay_rerun_real.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kafka_archive.kafka_protocol.transactions import TxnBatchProducer, TxnRetry
from kafka_archive.replay.execution import engine, resume
from kafka_archive.replay.execution.batch_txns import TxnPair
from kafka_archive.replay.execution.progress import load_progress, progress_key, progress_partition
from kafka_archive.replay.runner import execute

from tests.support.kafka_mock import MarkerAwareReader, MockCluster
from tests.test_replay_mock import (
    PROGRESS,
    Source,
    _assert_exactly_once,
    _plan,
    fresh_topic,
    mock,
    src,
)

__all__ = ["mock", "src"]  # the fixtures, shared with test_replay_mock

pytestmark = pytest.mark.timeout(300)


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


class _FakeTxn:
    def __init__(self, name: str, log: list[str], fail_commit: bool = False) -> None:
        self.transactional_id, self.log, self.fail_commit = name, log, fail_commit
        self.producer_id, self.producer_epoch = hash(name) & 0xFFFF, 0

    def __getattr__(self, call: str) -> Any:
        def record(*_a: Any) -> None:
            self.log.append(f"{self.transactional_id}.{call}")
            if call == "commit" and self.fail_commit:
                raise TxnRetry("refused")

        return record


def test_the_pair_alternates_after_each_commit_and_redoes_an_abort_on_the_same_id() -> None:
    log: list[str] = []
    first, second = _FakeTxn("A", log), _FakeTxn("B", log)
    pair = TxnPair(first, second)  # type: ignore[arg-type]
    pair.init()
    assert sorted(log) == ["A.init", "B.init"]  # both fenced before anything is read or sent
    log.clear()
    for _ in range(3):
        pair.begin([("t", 0)])
        pair.append("t", 0, b"x")
        pair.commit()
    assert log == [f"{n}.{c}" for n in "ABA" for c in ("begin", "append", "commit")]
    log.clear()
    pair.begin([("t", 0)])  # on B
    pair.abort()
    pair.begin([("t", 0)])
    pair.commit()
    pair.begin([("t", 0)])
    assert log == ["B.begin", "B.abort", "B.begin", "B.commit", "A.begin"]
    assert pair.transactional_id == "A"


def test_a_refused_commit_keeps_the_transaction_on_its_id() -> None:
    log: list[str] = []
    pair = TxnPair(_FakeTxn("A", log, fail_commit=True), _FakeTxn("B", log))  # type: ignore[arg-type]
    with pytest.raises(TxnRetry):
        pair.commit()
    pair.abort()
    assert log == ["A.commit", "A.abort"]


def test_a_record_level_resume_fences_the_second_id_a_batch_run_used(
    src: Source, mock: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first run whose progress records say the second transactional id was used (as a
    batch-level run's do) stops after its first commit; the record-level run that resumes it
    fences that id for every partition before trusting the progress, and the result is exactly
    once. A replay whose records never say so fences nothing more."""
    target = fresh_topic(mock)
    plan = _plan(src, mock, target)

    class Stop(Exception):
        pass

    def stop_after_first_commit(point: str, info: dict[str, Any]) -> None:
        if point == "after_catalog":
            raise Stop

    reader = MarkerAwareReader(mock.bootstrap_servers)
    monkeypatch.setattr(engine.PartitionReplay, "ALTERNATES", True)
    with pytest.raises(Stop):
        execute(plan, store=src.store, committed_reader=reader, hook=stop_after_first_commit)
    for p in range(3):
        key = progress_key(plan.replay_id, p)
        record, _off = load_progress(reader, PROGRESS, progress_partition(key, 6), key)
        assert record is not None and record.alternate_txn_id
    monkeypatch.setattr(engine.PartitionReplay, "ALTERNATES", False)
    fenced: list[str] = []
    real = resume.fence_alternate

    def spy(config: dict[str, Any], alternate: str) -> None:
        fenced.append(alternate)
        real(config, alternate)

    monkeypatch.setattr(engine, "fence_alternate", spy)
    report = execute(plan, store=src.store, committed_reader=reader)
    assert report.status == "complete"
    assert sorted(fenced) == sorted(
        engine.alternate_transactional_id(plan.txn_base, p) for p in range(3)
    )
    _assert_exactly_once(src, mock, target)
    # the flag is sticky: the record-level run's own records kept it
    for p in range(3):
        key = progress_key(plan.replay_id, p)
        record, _off = load_progress(reader, PROGRESS, progress_partition(key, 6), key)
        assert record is not None and record.done and record.alternate_txn_id
    # a replay that never used the second id: nothing more is fenced
    fenced.clear()
    other = fresh_topic(mock)
    assert execute(_plan(src, mock, other), store=src.store, committed_reader=reader).status == (
        "complete"
    )
    assert fenced == []
