"""Every error of the replay's transactional calls, typed and answered by its class.

librdkafka's contract (see kafka_archive.replay.execution.kafka_errors): retriable -> the same call
again; abortable -> abort and redo from the committed position; fenced -> stop; fatal (e.g.
INVALID_TXN_STATE from EndTxn, librdkafka#4849, seen in CI on Kafka 4.x) -> a new producer
resumes from the progress committed in the target. The first tests drive
``kafka_archive.replay.execution.txn_calls`` with a bare fake; the rest replay a real archive into
librdkafka's mock cluster through a real producer whose calls fail on cue, and check the target
holds exactly the src's committed records, once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from kafka_archive.replay.errors import ReplayFencedError, ReplayTargetError
from kafka_archive.replay.execution import engine, txn_calls
from kafka_archive.replay.execution.kafka_errors import ProducerFailed, TxnAbort, raise_kafka
from kafka_archive.replay.runner import execute
from support.cli_json import cli

from tests import test_replay_mock
from tests.support.kafka_mock import MarkerAwareReader, MockCluster, committed_records
from tests.test_replay_mock import (
    Source,
    _plan,
    fresh_topic,
    run_args,
    view,
)

# test_replay_mock's module fixtures (one archived src, one mock target cluster per module)
src = test_replay_mock.src
mock = test_replay_mock.mock

pytestmark = pytest.mark.timeout(300)

TIMED_OUT = KafkaError(KafkaError._TIMED_OUT, "Transactional operation timed out", retriable=True)
ABORTABLE = KafkaError(KafkaError._STATE, "Delivery failed", txn_requires_abort=True)
INVALID_TXN_STATE = KafkaError(
    KafkaError.INVALID_TXN_STATE,
    "Failed to end transaction: Broker: Producer attempted a transactional operation in an "
    "invalid state",
    fatal=True,
)
FENCED = KafkaError(KafkaError.PRODUCER_FENCED, "Producer fenced", fatal=True)


@pytest.fixture(autouse=True)
def _instant_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(txn_calls, "backoff", lambda seconds: None)


# -- the classes, with a bare fake -------------------------------------------------------------


class Scripted:
    """A stand-in producer: each named call pops its next outcome (``None``: succeed; a
    KafkaError: raise it) and is logged."""

    def __init__(self, **script: list[KafkaError | None]) -> None:
        self.script = script
        self.log: list[str] = []

    def _call(self, name: str) -> None:
        self.log.append(name)
        steps = self.script.get(name)
        err = steps.pop(0) if steps else None
        if err is not None:
            raise KafkaException(err)

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit")

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort")

    def init_transactions(self, timeout: float) -> None:
        self._call("init")

    def flush(self, timeout: float) -> int:
        self._call("flush")
        return 0


def _producer(fake: Scripted) -> Producer:
    return fake  # type: ignore[return-value]


def test_retriable_errors_repeat_the_same_call() -> None:
    fake = Scripted(commit=[TIMED_OUT, TIMED_OUT], init=[TIMED_OUT])
    txn_calls.commit_transaction(_producer(fake), 0)
    txn_calls.init_transactions(_producer(fake), "tid")
    assert fake.log == ["commit"] * 3 + ["init"] * 2


def test_an_abort_that_times_out_replaces_the_producer_at_once() -> None:
    """Not retried: a producer stuck bumping its epoch would time out every attempt (CI, on
    librdkafka's mock cluster: 5 x 60 s), and a new producer's init_transactions aborts the
    transaction anyway."""
    fake = Scripted(abort=[TIMED_OUT])
    with pytest.raises(ProducerFailed, match="partition 0: aborting a transaction failed"):
        txn_calls.abort_transaction(_producer(fake), 0)
    assert fake.log == ["flush", "abort"]


def test_a_commit_requiring_an_abort_is_txn_abort() -> None:
    fake = Scripted(commit=[ABORTABLE])
    with pytest.raises(TxnAbort):
        txn_calls.commit_transaction(_producer(fake), 3)
    assert fake.log == ["commit"]  # not retried: nothing was committed, redo it


def test_a_commit_of_unknown_outcome_replaces_the_producer() -> None:
    """Fatal, or retriable until the retries run out: the coordinator may still commit, so the
    transaction must not be redone from memory (ProducerFailed: resume from the target)."""
    with pytest.raises(ProducerFailed, match="invalid state"):
        txn_calls.commit_transaction(_producer(Scripted(commit=[INVALID_TXN_STATE])), 1)
    fake = Scripted(commit=[TIMED_OUT] * txn_calls.MAX_CALL_RETRIES)
    with pytest.raises(ProducerFailed, match="partition 1: committing a transaction failed"):
        txn_calls.commit_transaction(_producer(fake), 1)
    assert fake.log == ["commit"] * txn_calls.MAX_CALL_RETRIES


def test_an_abort_flushes_first_and_a_failed_abort_replaces_the_producer() -> None:
    fake = Scripted(abort=[INVALID_TXN_STATE])
    with pytest.raises(ProducerFailed, match="aborting a transaction failed"):
        txn_calls.abort_transaction(_producer(fake), 2)
    assert fake.log == ["flush", "abort"]  # librdkafka#4849: delivered before EndTxn(abort)


def test_fenced_is_fenced_everywhere() -> None:
    for call in (txn_calls.commit_transaction, txn_calls.abort_transaction):
        with pytest.raises(ReplayFencedError):
            call(_producer(Scripted(commit=[FENCED], abort=[FENCED])), 0)
    with pytest.raises(ReplayFencedError):
        raise_kafka(KafkaException(FENCED), 0)
    with pytest.raises(ProducerFailed):
        raise_kafka(KafkaException(INVALID_TXN_STATE), 0)
    with pytest.raises(TxnAbort):
        raise_kafka(KafkaException(ABORTABLE), 0)


def test_init_transactions_that_keeps_failing_is_typed_and_says_rerun() -> None:
    fake = Scripted(init=[INVALID_TXN_STATE])
    with pytest.raises(ReplayTargetError, match="re-run the same command to resume"):
        txn_calls.init_transactions(_producer(fake), "kafka-archive-replay.r.0")


# -- on a replay into the mock cluster -----------------------------------------------------------

#: a step of a call's script: ``None`` pass through; ``("before", err)`` raise instead of
#: calling; ``("after", err)`` make the real call, then raise (the call happened, the client
#: says it failed)
Step = tuple[str, KafkaError] | None


class FaultyProducer:
    """A real confluent-kafka producer whose transactional calls fail on cue. ``script`` is
    shared by every producer a replay makes (the steps continue on the new one)."""

    def __init__(self, config: dict[str, Any], script: dict[str, list[Step]], log: list[str]):
        self._real = Producer(config)
        self._script = script
        self._log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _call(self, name: str, *args: Any) -> Any:
        self._log.append(name)
        steps = self._script.get(name)
        step = steps.pop(0) if steps else None
        if step is None:
            return getattr(self._real, name)(*args)
        when, err = step
        if when == "after":
            getattr(self._real, name)(*args)
        raise KafkaException(err)

    def begin_transaction(self) -> None:
        self._call("begin_transaction")

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit_transaction", timeout)

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort_transaction", timeout)

    def init_transactions(self, timeout: float) -> None:
        self._call("init_transactions", timeout)


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., list[str]]]:
    """``faults(name=[steps...])`` makes every producer of the replay engine a
    :class:`FaultyProducer` running that script; returns the shared call log."""

    def install(**script: list[Step]) -> list[str]:
        log: list[str] = []
        monkeypatch.setattr(engine, "Producer", lambda config: FaultyProducer(config, script, log))
        return log

    yield install


def _replay_partition_0(src: Source, mock: MockCluster, target: str) -> Any:
    plan = _plan(src, mock, target, partitions=[0])
    return execute(
        plan,
        store=src.store,
        committed_reader=MarkerAwareReader(mock.bootstrap_servers),
    )


def _assert_partition_0_exactly_once(src: Source, mock: MockCluster, target: str) -> None:
    committed = committed_records(mock.bootstrap_servers, target, 0)
    assert [view(s) for s in committed] == [view(e) for e in src.parts[0].expected]


@pytest.mark.parametrize(
    ("script", "producers", "why"),
    [
        ({"commit_transaction": [None, ("before", TIMED_OUT)]}, 1, "retriable: commit again"),
        ({"commit_transaction": [None, ("before", ABORTABLE)]}, 1, "abortable: abort, redo"),
        (
            {"commit_transaction": [None, ("before", INVALID_TXN_STATE)]},
            2,
            "fatal before the commit: new producer, nothing of the open transaction kept",
        ),
        (
            {"commit_transaction": [None, ("after", INVALID_TXN_STATE)]},
            2,
            "fatal after the commit happened: new producer, resumes after it (not twice)",
        ),
        (
            {"commit_transaction": [None, ("after", TIMED_OUT)]},
            2,
            "retriable after it had committed: the repeat finds no transaction: new producer",
        ),
        (
            {
                "commit_transaction": [None, ("after", TIMED_OUT)]
                + [("before", TIMED_OUT)] * (txn_calls.MAX_CALL_RETRIES - 1)
            },
            2,
            "committed, then retries ran out (outcome unknown): new producer, resumes after it",
        ),
        (
            {
                "commit_transaction": [None, ("before", ABORTABLE)],
                "abort_transaction": [("before", INVALID_TXN_STATE)],
            },
            2,
            "the CI failure: the abort's EndTxn refused fatally",
        ),
        (
            {
                "commit_transaction": [None, ("before", ABORTABLE)],
                "abort_transaction": [("before", TIMED_OUT)],
            },
            2,
            "the abort timed out (a producer stuck bumping its epoch): new producer at once",
        ),
        ({"begin_transaction": [None, ("before", INVALID_TXN_STATE)]}, 2, "fatal at begin"),
    ],
)
def test_each_error_class_ends_exactly_once(
    src: Source,
    mock: MockCluster,
    faults: Callable[..., list[str]],
    script: dict[str, list[Step]],
    producers: int,
    why: str,
) -> None:
    log = faults(**script)
    target = fresh_topic(mock)
    report = _replay_partition_0(src, mock, target)
    assert all(not steps for steps in script.values()), f"{why}: a fault never fired"
    _assert_partition_0_exactly_once(src, mock, target)
    assert log.count("init_transactions") == producers, why
    if "ABORT" in why.upper() and producers == 1:
        assert "abort_transaction" in log, why
    assert report.records_sent == len(src.parts[0].expected), why
    # this run sent all of it, the commits its replaced producer did not see succeed included
    assert report.records_sent_this_run == len(src.parts[0].expected), why


def test_a_producer_failing_every_time_is_a_typed_error_and_the_rerun_completes(
    src: Source, mock: MockCluster, faults: Callable[..., list[str]]
) -> None:
    """Fatal at every commit after the first: three new producers, then a typed error saying
    to re-run; the re-run (same plan) resumes after the one committed transaction and
    completes, exactly once."""
    script: dict[str, list[Step]] = {
        "commit_transaction": [None] + [("before", INVALID_TXN_STATE)] * 4,
    }
    log = faults(**script)
    target = fresh_topic(mock)
    plan = _plan(src, mock, target, partitions=[0])
    reader = MarkerAwareReader(mock.bootstrap_servers)
    with pytest.raises(ReplayTargetError, match="re-run the same command to resume"):
        execute(plan, store=src.store, committed_reader=reader)
    assert log.count("init_transactions") == 4  # the first producer and three new ones
    first = committed_records(mock.bootstrap_servers, target, 0)  # the one transaction
    assert 0 < len(first) < len(src.parts[0].expected)
    assert [view(r) for r in first] == [view(e) for e in src.parts[0].expected[: len(first)]]
    report = execute(plan, store=src.store, committed_reader=reader)
    assert report.records_sent == len(src.parts[0].expected)
    assert report.records_sent_this_run == len(src.parts[0].expected) - len(first)
    _assert_partition_0_exactly_once(src, mock, target)


def test_cli_reports_a_failing_target_as_a_typed_error(
    src: Source, mock: MockCluster, faults: Callable[..., list[str]]
) -> None:
    """The replay CLI's typed error (exit 1, a message saying to re-run), never the crash
    handler's internal error (exit 70)."""
    faults(init_transactions=[("before", INVALID_TXN_STATE)] * 10)
    code, out, text = cli(*run_args(src, mock, fresh_topic(mock), "--partitions", "0"))
    assert code == 1, text
    assert out and out[-1]["error"] != "internal", text
    assert "re-run the same command to resume" in out[-1]["message"], text
