"""docs/user-guide.md's on-call runbook, run as written.

An archive and catalog are made from a generated 3-broker cluster with the CLI (the "point it
at a real cluster" steps), two embedded Kafka clusters stand in for the live and the failover
cluster, and every ```bash block of the runbook section is run with bash, in order, with
``CLUSTER``/``TARGET``/``DR_TARGET`` and the store/catalog variables set (the "setup: adapt to
your site" block is the one not run). Each scenario's effect is then checked on the targets.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka_archive_dev.demo import PROGRESS_TOPIC, DemoPaths, read_target, write_cluster
from kafka_archive_dev.embedded_kafka import EmbeddedKafka

pytestmark = pytest.mark.slow

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "user-guide.md"
BIN = Path(sys.executable).parent


def runbook_blocks() -> list[str]:
    text = GUIDE.read_text()
    section = text[text.index("## On-call runbook") :]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return [b for b in blocks if not b.startswith("# setup")]


def _run(cmd: list[str] | str, env: dict[str, str]) -> str:
    shell = isinstance(cmd, str)
    args = ["bash", "-euo", "pipefail", "-c", cmd] if shell else cmd
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, (
        f"{cmd}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}"
    )
    return proc.stdout


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=20)
        return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}
    finally:
        consumer.close()


def test_the_runbook_runs_as_written(tmp_path: Path) -> None:
    blocks = runbook_blocks()
    assert len(blocks) == 4, "scenarios 1-3 and the 'useful at any time' block"
    paths = DemoPaths(tmp_path / "site")
    cluster = write_cluster(paths)
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "KAFKA_ARCHIVE_STORE": paths.store_uri,
        "KAFKA_ARCHIVE_DB": paths.db_url,
        "CLUSTER": "demo",
        "COLUMNS": "200",
    }
    for broker, dirs in sorted(cluster.broker_dirs.items()):
        args = [
            str(BIN / "kafka-archive"),
            "archive",
            "--cluster",
            "demo",
            "--broker-id",
            str(broker),
            "--store",
            paths.store_uri,
        ]
        for d in dirs:
            args += ["--log-dir", str(d)]
        _run(args, env)
    _run([str(BIN / "kafka-archive"), "catalog", "build", "--spark-master", "local[2]"], env)

    with EmbeddedKafka(3) as live, EmbeddedKafka(3) as dr:
        # ops created the target topics (the mock clusters cannot serve CreateTopics)
        for kafka, topics in (
            (live, {"orders-replay": 3, "orders-last10m": 3}),
            (dr, {"orders": 3}),
        ):
            for name, n in {**topics, PROGRESS_TOPIC: 4}.items():
                kafka.create_topic(name, n)
        env.update(TARGET=live.bootstrap_servers, DR_TARGET=dr.bootstrap_servers)

        out = _run(blocks[0], env)  # 1. consumer bug: replay two hours, start the fixed group
        assert "orders-replay" in out
        replayed = read_target(live.bootstrap_servers, [0, 1, 2], topic="orders-replay")
        assert sum(len(v) for v in replayed.values()) > 100
        assert _committed(live.bootstrap_servers, "orders-fixed", "orders-replay", 3) == {
            0: 0,
            1: 0,
            2: 0,
        }

        _run(blocks[1], env)  # 2. failover: last 30 minutes on the DR cluster, group moved
        failover = read_target(dr.bootstrap_servers, [0, 1, 2], topic="orders")
        assert sum(len(v) for v in failover.values()) > 0
        moved = _committed(dr.bootstrap_servers, "billing", "orders", 3)
        assert moved and all(0 <= o <= len(failover[p]) for p, o in moved.items())

        _run(blocks[2], env)  # 3. new group: the last 10 minutes of orders
        window = read_target(live.bootstrap_servers, [0, 1, 2], topic="orders-last10m")
        assert 0 < sum(len(v) for v in window.values()) < sum(len(v) for v in replayed.values())
        started = _committed(live.bootstrap_servers, "new-analytics", "orders-last10m", 3)
        assert started and set(started.values()) == {0}

        out = _run(blocks[3], env)  # inspection commands
        assert "orders" in out
