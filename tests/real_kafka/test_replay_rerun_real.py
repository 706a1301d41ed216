"""The runbook's re-run of a killed replay against a REAL Kafka cluster (issue 20, point 3).

A replay (``--from earliest``, no ``--to``) is killed (-9) with a transaction open on the target:
a real broker holds read_committed consumers at its first offset (the last stable offset) until
the transaction ends. Before, the same command run again after new segments were archived was a
new replay with other transactional ids: it did not fence the killed producer, so consumers of
the target waited for ``transaction.timeout.ms``, and it sent offsets 0..19 a second time. Now
the transactional ids come from the request's intent: the re-run (or ``replay abandon``) fences
the killed producer in ``init_transactions``, and the broker aborts its transaction at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.cli_json import cli

from tests.support.real_kafka import unique_name
from tests.support.rerun_source import Source, command, growing_source, killed_replay, want

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def src(tmp_path: Path) -> Iterator[Source]:
    source = growing_source(tmp_path)
    yield source
    source.close()


def _stable_and_high(cluster: LocalKafkaCluster, topic: str) -> tuple[int, int]:
    """Partition 0's last stable offset (what read_committed consumers can read up to) and its
    high watermark, as the broker answers ListOffsets."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    tp = TopicPartition(topic, 0)
    out = []
    for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
        found = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level)
        out.append(int(found[tp].result(timeout=30).offset))
    return out[0], out[1]


def _values(cluster: LocalKafkaCluster, topic: str) -> list[bytes | None]:
    return [r.value for r in read_to_end(cluster.bootstrap_servers, topic, [0])[0]]


def _killed(src: Source, cluster: LocalKafkaCluster, prefix: str) -> str:
    # the source's timestamps are from 2023: a target with the default retention would delete
    # the replayed records at once
    target = cluster.create_topic(unique_name(prefix), 1, config={"retention.ms": "-1"})
    killed = killed_replay(src, cluster.bootstrap_servers, target)
    assert killed.returncode == -9, killed.stderr[-3000:]
    stable, high = _stable_and_high(cluster, target)
    # the killed run's open transaction holds read_committed consumers below the high watermark
    # (target offsets 0..21: two committed transactions of 10 records and their markers)
    assert stable == 22 and high > stable
    return target


def test_the_same_command_fences_the_killed_replay_at_once_and_sends_nothing_twice(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    target = _killed(src, kafka_cluster, "rerun-real")
    src.archive(144)
    code, out, text = cli(*command(src, kafka_cluster.bootstrap_servers, target))
    assert code == 0, text
    # right after the re-run, the killed transaction (from offset 22) holds nobody: it was
    # aborted when the re-run's init_transactions fenced its producer (the coordinator
    # answers init_transactions once the abort markers are written), not after
    # transaction.timeout.ms. (The re-run's own last COMMIT marker may still be on its way:
    # the stable offset is compared with the killed transaction's start, not the end.)
    stable, _high = _stable_and_high(kafka_cluster, target)
    assert stable > 22
    assert out[-1]["records_sent_this_run"] == 100 and out[-1]["records_sent"] == 120
    assert _values(kafka_cluster, target) == want(120)
    code, out, text = cli(*command(src, kafka_cluster.bootstrap_servers, target))
    assert code == 0, text
    assert out[-1]["records_sent_this_run"] == 24
    assert _values(kafka_cluster, target) == want(144)


def test_abandon_fences_the_killed_replay_at_once(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    target = _killed(src, kafka_cluster, "abandon-real")
    (status,) = [r for r in cli("replay", "status", "--db", src.db_url, "--json")[1]]
    assert status["status"] == "interrupted"
    code, _out, text = cli("replay", "abandon", status["replay_id"], "--db", src.db_url, "--json")
    assert code == 0, text
    stable, high = _stable_and_high(kafka_cluster, target)
    assert stable == high
    assert _values(kafka_cluster, target) == want(20)
