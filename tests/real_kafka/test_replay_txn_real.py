"""Real broker failures inside a replay transaction: whatever class of error librdkafka reports
(kafka_archive.replay.execution.kafka_errors), the target ends with exactly the committed source
records.

The cluster is tests/support/real_kafka.py's (Apache Kafka 4.x, 3 KRaft nodes, the coordinator
aborting timed-out transactions every 2 s); the source and the checks are
test_replay_real.py's.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kafka_archive.replay.execution import engine, txn_calls
from kafka_archive.replay.execution.kafka_errors import TxnAbort
from kafka_archive.replay.runner import execute
from kafka_archive_dev.local_kafka import LocalKafkaCluster

from tests.real_kafka import test_replay_real
from tests.real_kafka.test_replay_real import TOPIC, Source, assert_exactly_once, make_plan
from tests.support.real_kafka import unique_name

pytestmark = pytest.mark.timeout(300)

# test_replay_real's archived source (built again for this module)
# (these inject librdkafka errors: the record path; batch-level replay has its own tests)
src = test_replay_real.src


def _observe_commits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record what each failed ``commit_transaction`` of the replay raised (class: message)."""
    seen: list[str] = []
    commit = txn_calls.commit_transaction

    def observed(producer: Any, partition: int) -> None:
        try:
            commit(producer, partition)
        except Exception as exc:
            seen.append(f"{type(exc).__name__}: {exc}")
            raise

    monkeypatch.setattr(txn_calls, "commit_transaction", observed)
    return seen


def test_transaction_timed_out_by_the_coordinator_mid_commit(
    src: Source, kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Partition 0's second transaction stalls (10 s) between its last record and its commit,
    past its 4 s ``transaction.timeout.ms``: the coordinator aborts it (and bumps the epoch), so
    the commit fails on the real broker. The replay answers by the error's class and ends
    complete, every record exactly once."""
    commits = _observe_commits(monkeypatch)
    target = kafka_cluster.create_topic(unique_name("replayed-txn-timeout"), 3)
    plan = make_plan(src, kafka_cluster, TOPIC, target, txn_max_records=40, replay_path="records")
    stalled = threading.Event()

    def hook(point: str, info: dict[str, Any]) -> None:
        stall = point == "before_commit" and info["partition"] == 0 and info["seq"] == 2
        if stall and not stalled.is_set():
            stalled.set()
            time.sleep(10)

    report = execute(
        plan,
        store=src.store,
        hook=hook,
        producer_config={"transaction.timeout.ms": 4000, "message.timeout.ms": 4000},
    )
    assert stalled.is_set()
    print(f"the commit after the coordinator's timeout: {commits}")
    assert commits, "the stalled commit must fail on the broker"
    assert report.status == "complete"
    assert report.partitions[0]["retries"] >= 1
    assert report.records_sent == sum(len(v) for v in src.expected[TOPIC].values())
    assert_exactly_once(src, kafka_cluster, TOPIC, target)


def test_abort_right_after_the_first_record_of_a_transaction(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    """The CI failure's shape (librdkafka#4849): a transaction aborted right after its first
    produce() - five times on partition 0 - while the AddPartitionsToTxn may still be in
    flight. The abort flushes first, so its EndTxn never meets an ``Empty`` transaction: no
    fatal INVALID_TXN_STATE, no new producer, and exactly the source records in the end."""
    target = kafka_cluster.create_topic(unique_name("replayed-abort-early"), 3)
    plan = make_plan(src, kafka_cluster, TOPIC, target, txn_max_records=40, replay_path="records")
    aborts = [0]
    made: list[int] = []
    real_producer = engine.Producer

    def counting_producer(config: dict[str, Any]) -> Any:
        made.append(1)
        return real_producer(config)

    def hook(point: str, info: dict[str, Any]) -> None:
        if point == "produced" and info["partition"] == 0 and aborts[0] < 5:
            aborts[0] += 1
            raise TxnAbort("aborted by the test right after the transaction's first batch")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "Producer", counting_producer)
        report = execute(plan, store=src.store, hook=hook)
    assert aborts[0] == 5
    assert report.partitions[0]["retries"] == 5
    assert len(made) == len(src.expected[TOPIC])  # one producer per partition: none replaced
    assert report.status == "complete"
    assert_exactly_once(src, kafka_cluster, TOPIC, target)
