"""Running an interrupted replay again, as the runbook says (issue 20, point 3).

A replay of ``--from earliest`` with no ``--to`` (the runbook's form) is killed (SIGKILL) after
two committed transactions (source offsets 0..19), with a third open on the target (20..29).
New segments are archived (offsets 120..143), and the *same command* is run again. Before, it
planned a new replay (its end moved): offsets 0..19 were sent twice, the killed producer's open
transaction was not fenced (read_committed consumers of the target waited for
``transaction.timeout.ms``), a prune meanwhile removed offsets the killed replay still needed
(its lease died with its process) and the re-run skipped them silently, reporting ``complete``,
while the killed replay stayed ``running`` forever.

Source: one partition written by segment_lib's broker writer (value ``v<offset>``), archived and
cataloged twice (120 records, then 144). Target: librdkafka's mock cluster; its consumers show
uncommitted data, so the committed view is rebuilt from the raw log (tests/support/kafka_mock).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_archive.catalog.models import ObjectLease
from kafka_archive.catalog.prune import prune
from kafka_archive.catalog.retention import RetentionPolicy
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, parse_position
from kafka_archive.services.replay import ReplayService
from kafka_archive.settings import load_settings
from sqlalchemy import select
from support.cli_json import cli

from tests.support.kafka_mock import MockCluster, committed_records, open_transaction_records
from tests.support.rerun_source import (
    CLUSTER,
    LATER,
    T0,
    TOPIC,
    Source,
    command,
    growing_source,
    killed_replay,
    want,
)

PROGRESS = "__kafka_archive_replay_progress"

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def src(tmp_path: Path) -> Iterator[Source]:
    source = growing_source(tmp_path)
    yield source
    source.close()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    mc = MockCluster(1)
    mc.create_topic(PROGRESS, 3)
    yield mc
    mc.close()


_topics = [0]


def _target(mock: MockCluster) -> str:
    _topics[0] += 1
    name = f"rerun-{_topics[0]}"
    mock.create_topic(name, 1)
    return name


def _command(src: Source, mock: MockCluster, target: str, *extra: str) -> list[str]:
    return command(src, mock.bootstrap_servers, target, *extra)


def _killed_run(src: Source, mock: MockCluster, target: str) -> None:
    """:func:`killed_replay`: offsets 0..19 committed on the target, 20..29 open."""
    killed = killed_replay(src, mock.bootstrap_servers, target)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert [r.value for r in committed_records(mock.bootstrap_servers, target, 0)] == [
        f"v{i}".encode() for i in range(20)
    ]
    assert open_transaction_records(mock.bootstrap_servers, target, 0) == 10


def _values(mock: MockCluster, target: str) -> list[bytes | None]:
    return [r.value for r in committed_records(mock.bootstrap_servers, target, 0)]


def _service(src: Source) -> ReplayService:
    return ReplayService(load_settings(env={}), catalog=src.catalog, store=src.store)


def _only_replay(src: Source) -> dict[str, object]:
    (row,) = _service(src).status()
    return row


def test_the_same_command_resumes_the_killed_replay_fences_it_and_never_resends(
    src: Source, mock: MockCluster
) -> None:
    target = _target(mock)
    _killed_run(src, mock, target)
    killed = _only_replay(src)
    # the killed replay is shown as interrupted (resumable), not running forever
    assert killed["status"] == "interrupted" and killed["resumable"] is True
    assert killed["resume"] == f"kafka-archive replay resume {killed['replay_id']}"
    src.archive(144)  # new segments: the command's end moves
    code, out, text = cli(*_command(src, mock, target))
    assert code == 0, text
    report = out[-1]
    # the same replay, resumed where it stopped, with its original range (0..119)
    assert report["replay_id"] == killed["replay_id"]
    assert report["status"] == "complete"
    assert report["records_sent_this_run"] == 100 and report["records_sent"] == 120
    assert any("resuming the unfinished replay" in n for n in report["notes"])
    # (that its producer fenced the killed one at once - the broker aborting the open
    # transaction - is checked against a real broker: librdkafka's mock writes no markers
    # when it fences; tests/real_kafka/test_replay_rerun_real.py)
    assert _values(mock, target) == want(120)
    # the same command once more: what was archived since, after the end (nothing twice)
    code, out, text = cli(*_command(src, mock, target))
    assert code == 0, text
    follow = out[-1]
    assert follow["replay_id"] != killed["replay_id"] and follow["records_sent_this_run"] == 24
    assert _values(mock, target) == want(144)
    # and again: nothing new, nothing sent
    code, out, text = cli(*_command(src, mock, target))
    assert code == 0, text
    assert out[-1]["status"] == "already-done" and out[-1]["records_sent_this_run"] == 0
    assert _values(mock, target) == want(144)
    assert {r["status"] for r in _service(src).status()} == {"complete"}


def test_prune_keeps_what_a_killed_replay_still_needs(src: Source, mock: MockCluster) -> None:
    target = _target(mock)
    _killed_run(src, mock, target)
    src.archive(144)
    policy = RetentionPolicy(name="age", topic=TOPIC, max_age="1s")
    now = T0 + LATER + 500  # offsets 0..119 are older than a second, 120..143 are not
    held = prune(src.catalog, src.store, [policy], now_ms=now)
    assert held.ranges == [] and [h["partition"] for h in held.held] == [0]
    assert "replay abandon" in held.held[0]["reason"]
    code, out, text = cli(*_command(src, mock, target))
    assert code == 0, text
    assert out[-1]["status"] == "complete" and out[-1]["records_sent"] == 120
    assert _values(mock, target) == want(120)  # 20..119 delivered, nothing skipped
    code, out, text = cli(*_command(src, mock, target))
    assert code == 0, text
    assert _values(mock, target) == want(144)
    # complete: the leases are released, prune may take the old data now
    with src.catalog.session() as s:
        assert s.execute(select(ObjectLease)).scalars().all() == []
    assert [(r.first_offset, r.last_offset) for r in prune(
        src.catalog, src.store, [policy], now_ms=now).ranges] == [(0, 119)]  # fmt: skip


def test_force_beside_an_unfinished_replay_is_refused_with_the_commands(
    src: Source, mock: MockCluster
) -> None:
    target = _target(mock)
    _killed_run(src, mock, target)
    rid = _only_replay(src)["replay_id"]
    code, out, text = cli(*_command(src, mock, target, "--force"))
    assert code == 1, text
    err = out[-1]
    assert err["error"] == "ReplayIntentConflictError" and "Traceback" not in text
    assert f"kafka-archive replay resume {rid}" in err["hint"]
    assert f"kafka-archive replay abandon {rid}" in err["hint"]
    assert _values(mock, target) == want(20)  # nothing sent


def test_abandon_fences_releases_and_lets_the_request_start_anew(
    src: Source, mock: MockCluster
) -> None:
    from kafka_archive.replay.execution.engine import transactional_id

    target = _target(mock)
    _killed_run(src, mock, target)
    rid = str(_only_replay(src)["replay_id"])
    with src.catalog.session() as s:  # the killed replay's data is kept from prune
        assert {x.holder for x in s.execute(select(ObjectLease)).scalars()} == {f"replay:{rid}"}
    code, out, text = cli("replay", "abandon", rid, "--db", src.db_url, "--json")
    assert code == 0, text
    plan = _service(src).ledger.plan(rid)
    assert plan is not None and plan.intent_id is not None
    assert out[-1]["fenced"] == [transactional_id(plan.intent_id, 0)]
    assert _values(mock, target) == want(20)
    with src.catalog.session() as s:
        assert s.execute(select(ObjectLease)).scalars().all() == []
    assert _only_replay(src)["status"] == "abandoned"
    code, out, text = cli("replay", "abandon", rid, "--db", src.db_url, "--json")
    assert code == 0 and out[-1]["changed"] is False  # idempotent
    # the request runs again as a new replay (the operator chose to start over)
    code, out, text = cli(*_command(src, mock, target))
    assert code == 0, text
    assert out[-1]["replay_id"] != rid and out[-1]["records_sent_this_run"] == 120
    code, out, text = cli("replay", "abandon", out[-1]["replay_id"], "--db", src.db_url, "--json")
    assert code == 1 and "nothing to abandon" in out[-1]["message"]


def test_the_intent_is_the_request_as_given_and_names_the_transactional_ids(
    src: Source, mock: MockCluster
) -> None:
    """Planned before and after new segments were archived: other replay ids (the resolved
    ranges differ), one intent, and the producers' transactional ids come from it."""
    from kafka_archive.replay.planning.plan import intent_id

    spec = ReplaySpec.model_validate(
        {"cluster": CLUSTER, "topic": TOPIC, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers=mock.bootstrap_servers, config={"a": "1"})}
    )  # fmt: skip
    before = _service(src).plan(spec)
    src.archive(144)
    after = _service(src).plan(spec)
    assert before.replay_id != after.replay_id
    assert before.intent_id == after.intent_id == intent_id(spec)
    assert after.txn_base == after.intent_id
    # credentials and throughput settings are not part of it; what is written is
    same = spec.model_copy(update={"rate_limit_mb": 5.0, "target": spec.target.with_config({})})
    assert intent_id(same) == intent_id(spec)
    for other in ({"target_topic": "x"}, {"partitions": [0]}, {"key_filter": "exact:k"},
                  {"to": parse_position("offset:50")}, {"provenance_headers": True}):  # fmt: skip
        assert intent_id(spec.model_copy(update=other)) != intent_id(spec), other
