"""A real Prometheus server scraping the platform's exporters (issue 25, point 5).

A real Kafka cluster, the archiver run round by round over its log dirs, the catalog built
in-process; ``kafka-archive metrics serve --cluster`` and ``kafka-archive catalog
follow-offsets --metrics-port`` run as processes, and Debian's Prometheus (a throw-away server on
a free port) scrapes both every second. Through Prometheus's HTTP API: the series exist, the
archive lag rises while archiving is stopped and producers write, and falls after an archive
run and a catalog build; the follower's counters and position move when a group commits.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka_archive.catalog.build import InProcessRunner, build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.store import open_store
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.live_archiving import LiveArchiver, covered_to
from support.prometheus import PrometheusServer, free_port, prometheus_server
from support.real_kafka import unique_name

NAME = "prom"
#: the cluster's log.roll.ms (support.real_kafka's cluster): the next append after it rolls
ROLL_S = 3.5


def _produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, key=str(i).encode(), value=b"x" * 100, partition=0)
    assert p.flush(30) == 0


def _roll(bootstrap: str, topic: str) -> None:
    """Make the records written so far a rolled segment: wait past log.roll.ms, then append
    one record (which starts the new active segment)."""
    time.sleep(ROLL_S)
    _produce(bootstrap, topic, 1)


def _exporter(args: list[str], port: int, log: Path) -> subprocess.Popen[bytes]:
    exe = Path(sys.executable).parent / "kafka-archive"
    return subprocess.Popen([str(exe), *args], stdout=log.open("wb"), stderr=subprocess.STDOUT)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _value(result: list[dict[str, Any]]) -> float:
    assert len(result) == 1, result
    return float(result[0]["value"][1])


def test_prometheus_sees_lag_rise_while_archiving_is_stopped_and_fall_after(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = kafka_cluster.create_topic(unique_name("prom-lag"), 1, replication=1)
    store = open_store(str(tmp_path / "store"))
    db = str(tmp_path / "catalog.db")
    archiver = LiveArchiver(
        kafka_cluster, store, name=NAME, prefix=topic, workdir=tmp_path / "arch"
    )

    def archive_and_build(through: int) -> None:
        """Archive rounds until offsets 0..through-1 are archived (the broker's recovery
        point follows the roll within its checkpoint interval), then build the catalog."""
        deadline = time.monotonic() + 120
        archiver.run_round()
        while covered_to(archiver.manifests(topic)) < through:
            assert time.monotonic() < deadline, covered_to(archiver.manifests(topic))
            time.sleep(1.0)
            archiver.run_round()
        with open_catalog(db, create=True) as cat:
            build_catalog(cat, store.uri, runner=InProcessRunner())

    _produce(bs, topic, 200)
    _roll(bs, topic)
    archive_and_build(200)

    metrics_port, follower_port = free_port(), free_port()
    processes.append(
        _exporter(
            ["metrics", "serve", "--db", db, "--port", str(metrics_port), "--addr", "127.0.0.1",
             "--cluster", f"{NAME}={bs}"],
            metrics_port,
            tmp_path / "exporter.log",
        )
    )  # fmt: skip
    processes.append(
        _exporter(
            ["catalog", "follow-offsets", "--cluster", NAME, "--bootstrap", bs, "--db", db,
             "--metrics-port", str(follower_port), "--duration", "10m"],
            follower_port,
            tmp_path / "follower.log",
        )
    )  # fmt: skip
    targets = {"exporter": f"127.0.0.1:{metrics_port}", "follower": f"127.0.0.1:{follower_port}"}
    with prometheus_server(tmp_path / "prom", targets) as prom:
        _check(prom, bs, topic, archive_and_build)


def _check(prom: PrometheusServer, bs: str, topic: str, archive_and_build: Any) -> None:
    lag = f'kafka_archive_partition_lag_offsets{{job="exporter",cluster="{NAME}",topic="{topic}"}}'
    prom.wait_for('up{job="exporter"}', lambda r: r and r[0]["value"][1] == "1")
    prom.wait_for('up{job="follower"}', lambda r: r and r[0]["value"][1] == "1")
    start = _value(prom.wait_for(lag, lambda r: len(r) == 1))
    assert start < 200  # the archive holds the rolled segment; only the active one is left
    archived_at = _value(
        prom.wait_for(
            # the newest of the brokers' last archives (every broker holding data of the shared
            # cluster is archived, each its own series)
            f'max(kafka_archive_archive_last_success_timestamp_seconds{{job="exporter",cluster="{NAME}"}})',
            lambda r: len(r) == 1,
        )
    )

    # archiving stopped: producers go on, the lag rises by what they wrote
    _produce(bs, topic, 500)
    peak = _value(
        prom.wait_for(lag, lambda r: len(r) == 1 and float(r[0]["value"][1]) >= start + 500)
    )
    seconds = f'kafka_archive_partition_lag_seconds{{job="exporter",topic="{topic}"}}'
    prom.wait_for(seconds, lambda r: len(r) == 1 and float(r[0]["value"][1]) > 0)
    # the history of the rise is in Prometheus too
    assert _value(prom.query(f"max_over_time({lag}[5m])")) >= start + 500

    # an archive run and a catalog build: the lag falls, the broker's last archive moves
    _roll(bs, topic)
    archive_and_build(701)  # 200 + the first roll's record + 500
    prom.wait_for(lag, lambda r: len(r) == 1 and float(r[0]["value"][1]) < peak)
    prom.wait_for(
        # the newest of the brokers' last archives (every broker holding data of the shared
        # cluster is archived, each its own series)
        f'max(kafka_archive_archive_last_success_timestamp_seconds{{job="exporter",cluster="{NAME}"}})',
        lambda r: len(r) == 1 and float(r[0]["value"][1]) > archived_at,
    )

    # the follower: a group commits, its counters and position move
    position = f'kafka_archive_follower_position_offsets{{job="follower",cluster="{NAME}"}}'
    before = prom.query(position)
    c = Consumer(
        {"bootstrap.servers": bs, "group.id": unique_name("prom-g"), "enable.auto.commit": False}
    )
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
    finally:
        c.close()
    floor = _value(before) if before else 0.0
    prom.wait_for(position, lambda r: len(r) == 1 and float(r[0]["value"][1]) > floor)
    prom.wait_for(
        f'kafka_archive_follower_commits_recorded_total{{job="follower",cluster="{NAME}"}}',
        lambda r: len(r) == 1 and float(r[0]["value"][1]) >= 1,
    )
    # the follower's endpoint also carries the catalog's view with the cluster's ends
    prom.wait_for(
        f'kafka_archive_follower_lag_offsets{{job="follower",cluster="{NAME}"}}',
        lambda r: len(r) == 1,
    )
