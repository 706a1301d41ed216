"""The ``kafka_archive_fetch`` DAG's task body against the session's real Kafka cluster: one run
of :func:`kafka_archive.airflow.fetch_tasks.run_fetch`, configured as the Airflow Variable would
configure it, archives a small topic up to its high watermarks (every produced offset in a
manifest, none twice) and returns the small per-cluster report; a second run adds nothing."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka_archive.airflow.fetch_tasks import load_fetch_config, run_fetch
from kafka_archive.archive.manifest import iter_manifests
from kafka_archive.store import LocalStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.real_kafka import unique_name

pytestmark = pytest.mark.timeout(240)

CLUSTER = "fetch-task"


def test_the_fetch_task_archives_a_topic_until_caught_up(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    bootstrap = kafka_cluster.bootstrap_servers
    topic = unique_name("fetch-task")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        fut.result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(60):  # one batch each (~170 B): segment.bytes 2000 rolls several segments
        producer.produce(topic, key=str(i).encode(), value=bytes(100), partition=i % 2)
        assert producer.flush(30) == 0
    store = LocalStore(tmp_path / "store")
    variable = json.dumps(
        {
            "store": store.uri,
            "clusters": [
                {
                    "cluster": CLUSTER,
                    "bootstrap": bootstrap,
                    "topics": topic,
                    # a client setting and a segment override, as the Variable may carry them
                    "client_config": {"client.id": "fetch-task-test", "segment.bytes": "2000"},
                }
            ],
            "max_seconds": 120,
        }
    )
    config = load_fetch_config(variable, env={})
    lines: list[str] = []
    [report] = run_fetch(config, lines.append, env={})
    assert report["ok"] and report["stopped_by"] == "caught_up", report
    assert (report["cluster"], report["partitions"], report["holes"]) == (CLUSTER, 2, [])
    assert report["segments"] >= 4  # the Variable's segment.bytes override was applied
    json.dumps(report)
    assert any("stopped: caught_up" in line for line in lines), lines
    covered: list[tuple[int, int]] = []
    for p in (0, 1):
        ranges = sorted(
            (m.base_offset, m.end_offset) for m in iter_manifests(store, CLUSTER, topic, p)
        )
        # contiguous from 0 up to the high watermark (30 per partition): nothing lost or doubled
        assert ranges[0][0] == 0 and ranges[-1][1] == 30, ranges
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges)), ranges
        covered += ranges
    [again] = run_fetch(config, env={})
    assert again["ok"] and again["segments"] == 0, again
    assert sum(1 for p in (0, 1) for _ in iter_manifests(store, CLUSTER, topic, p)) == len(covered)
