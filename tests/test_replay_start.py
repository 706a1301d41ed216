"""A replay's start (issue 27: no fixed costs before the first record). The run's claim is
announced while the partitions start (its ``acks=all`` round trip was on every replay's way to
its first record), and is still acknowledged before any partition checks it or produces
anything (see ``runner._execute`` and ``PartitionReplay._check_claim``); the replay path's probe
of the target runs ahead, during the service's target checks, and only once.

On librdkafka's mock cluster (the record path); the two-runs-at-once and fencing guarantees are
tested on a real cluster in ``tests/real_kafka/test_replay_real.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kafka_archive.replay import runner
from kafka_archive.replay.errors import ReplayTargetError
from kafka_archive.replay.execution import batch_engine, engine, txn_calls
from kafka_archive.replay.execution.progress import RunClaim
from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, parse_position
from kafka_archive.replay.runner import execute
from kafka_archive.services.replay import ReplayService
from kafka_archive.settings import load_settings

from tests.support.kafka_mock import MarkerAwareReader, MockCluster, committed_records
from tests.test_replay_mock import CLUSTER, TOPIC, Source, _plan, fresh_topic, mock, src, view

__all__ = ["mock", "src"]  # the fixtures, shared with test_replay_mock

pytestmark = pytest.mark.timeout(300)


def test_partitions_initialise_while_the_claim_is_announced_and_check_after_it(
    src: Source, mock: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim is held back until every partition has called ``init_transactions`` (so the
    run would hang, and this fail, if the partitions still waited for the claim to start); no
    partition checks the claim or begins a transaction before the claim is acknowledged; the
    replay is exactly once."""
    target = fresh_topic(mock)
    plan = _plan(src, mock, target)
    events: list[str] = []
    lock = threading.Lock()
    initialised = threading.Semaphore(0)
    real_claim, real_init = runner.claim_run, txn_calls.init_transactions
    real_newer = engine.newer_claim

    def note(what: str) -> None:
        with lock:
            events.append(what)

    def init_transactions(producer: Any, txn_id: str) -> None:
        real_init(producer, txn_id)
        note("init")
        initialised.release()

    def claim_run(p: Any) -> RunClaim:
        for _ in plan.partitions:  # every partition initialised while the claim is pending
            assert initialised.acquire(timeout=60), "the partitions waited for the claim"
        claim = real_claim(p)
        note("claimed")
        return claim

    def newer_claim(*a: Any) -> Any:
        note("check")
        return real_newer(*a)

    def hook(point: str, info: dict[str, Any]) -> None:
        if point == "txn_begin":
            note("begin")

    monkeypatch.setattr(txn_calls, "init_transactions", init_transactions)
    monkeypatch.setattr(runner, "claim_run", claim_run)
    monkeypatch.setattr(engine, "newer_claim", newer_claim)
    report = execute(
        plan, store=src.store, committed_reader=MarkerAwareReader(mock.bootstrap_servers), hook=hook
    )
    assert report.status == "complete"
    claimed = events.index("claimed")
    assert events[:claimed] == ["init"] * len(plan.partitions)
    after = events[claimed + 1 :]
    assert after.count("check") >= len(plan.partitions) and "begin" in after
    for p, sp in src.parts.items():
        committed = committed_records(mock.bootstrap_servers, target, p)
        assert [view(s) for s in committed] == [view(e) for e in sp.expected], f"partition {p}"


def test_a_failed_claim_fails_the_run_and_sends_nothing(
    src: Source, mock: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = fresh_topic(mock)
    plan = _plan(src, mock, target)

    def claim_run(_plan: Any) -> RunClaim:
        raise ReplayTargetError("announcing the run in the progress topic failed: test")

    points: list[str] = []
    monkeypatch.setattr(runner, "claim_run", claim_run)
    with pytest.raises(ReplayTargetError, match="announcing the run"):
        execute(
            plan,
            store=src.store,
            committed_reader=MarkerAwareReader(mock.bootstrap_servers),
            hook=lambda point, _info: points.append(point),
        )
    assert points == []  # no transaction begun, nothing produced
    for p in src.parts:
        assert committed_records(mock.bootstrap_servers, target, p) == []


def test_the_path_probe_runs_ahead_of_the_run_and_once(
    src: Source, mock: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ReplayService.run`` asks which path the partitions take in a thread of its own, during
    the target checks; the runner takes that answer (cached), not a second
    probe. (On the mock cluster the answer is the record path: kafka-python cannot talk to it.)"""
    asked: list[str] = []
    real = batch_engine._probe

    def probe(config: dict[str, Any]) -> str | None:
        asked.append(threading.current_thread().name)
        return real(config)

    monkeypatch.setattr(batch_engine, "_probed", {})
    monkeypatch.setattr(batch_engine, "_probe", probe)
    target = fresh_topic(mock)
    spec = ReplaySpec.model_validate(
        {"cluster": CLUSTER, "topic": TOPIC, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers=mock.bootstrap_servers), "target_topic": target}
    )  # fmt: skip
    service = ReplayService(load_settings(env={}), catalog=src.catalog, store=src.store)
    report = service.run(service.plan(spec))
    assert report.status == "complete", report
    assert asked == ["replay-path-probe"]
    assert report.replay_path == "records" and "mock cluster" in " ".join(report.path_notes)


def test_a_data_slot_is_taken_once_the_partitions_are_prepared_and_held_until_they_end(
    src: Source, mock: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``execute(data_slot=...)`` (a restore's bound on the topics sending at once): every
    partition has initialised its producer and read its resume point before the slot is
    taken, no transaction begins before it, and the slot is let go only after the last
    commit; the replay is exactly once."""
    target = fresh_topic(mock)
    plan = _plan(src, mock, target)
    events: list[str] = []
    lock = threading.Lock()
    real_init, real_progress = txn_calls.init_transactions, engine.committed_progress

    def note(what: str) -> None:
        with lock:
            events.append(what)

    def init_transactions(producer: Any, txn_id: str) -> None:
        real_init(producer, txn_id)
        note("init")

    def committed_progress(*a: Any, **k: Any) -> Any:
        found = real_progress(*a, **k)
        note("resume")
        return found

    def hook(point: str, info: dict[str, Any]) -> None:
        if point in ("txn_begin", "after_commit"):
            note(point)

    @contextmanager
    def slot() -> Iterator[None]:
        note("slot")
        yield
        note("slot-end")

    monkeypatch.setattr(txn_calls, "init_transactions", init_transactions)
    monkeypatch.setattr(engine, "committed_progress", committed_progress)
    report = execute(
        plan,
        store=src.store,
        committed_reader=MarkerAwareReader(mock.bootstrap_servers),
        hook=hook,
        data_slot=slot(),
    )
    assert report.status == "complete"
    taken = events.index("slot")
    n = len(plan.partitions)
    assert sorted(events[:taken]) == sorted(["init"] * n + ["resume"] * n)
    assert events[-1] == "slot-end" and events.count("slot-end") == 1
    assert "txn_begin" in events[taken:] and "after_commit" in events[taken:-1]
    for p, sp in src.parts.items():
        committed = committed_records(mock.bootstrap_servers, target, p)
        assert [view(s) for s in committed] == [view(e) for e in sp.expected], f"partition {p}"
