"""Replay on Spark: one task per source partition, each executor reading its objects and
producing itself; the driver collects the reports. The same job file runs with a local master
(in-process session) and on a real standalone cluster (``spark_jobs/replay.py --spark-master
spark://...``); the target is librdkafka's mock cluster living in this test process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.catalog.db import Catalog
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, build_plan, parse_position
from kafka_archive.spark.replay import run_on_spark
from kafka_archive.store import ObjectStore
from kafka_archive_dev.embedded_kafka import read_to_end

from tests.support.kafka_mock import MockCluster
from tests.support.replay_data import SourcePartition, archived_source_topic

pytest_plugins = ["support.spark"]
pytestmark = pytest.mark.timeout(600)

REPO = Path(__file__).resolve().parents[1]
CLUSTER = "east"


@pytest.fixture(scope="module")
def archived(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[int, SourcePartition], ObjectStore, str, Catalog]]:
    root = tmp_path_factory.mktemp("replay-spark")
    src = archived_source_topic(root, cluster=CLUSTER, seed=9, cluster_id="spark-src")
    parts, store, db_url, catalog = src.parts, src.store, src.db_url, src.catalog
    yield parts, store, db_url, catalog
    catalog.close()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    mc = MockCluster(3)
    mc.create_topic("__kafka_archive_replay_progress", 4)
    mc.create_topic("spark-local", 3)
    mc.create_topic("spark-cluster", 3)
    yield mc
    mc.close()


def _plan(catalog: Catalog, store: ObjectStore, mock: MockCluster, target_topic: str) -> Any:
    spec = ReplaySpec.model_validate(
        {"cluster": CLUSTER, "topic": "orders", "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers=mock.bootstrap_servers),
         "target_topic": target_topic, "txn_max_records": 50}
    )  # fmt: skip
    return build_plan(spec, CatalogPlanSource(catalog, store))


def _check(parts: dict[int, SourcePartition], mock: MockCluster, topic: str) -> None:
    got = read_to_end(mock.bootstrap_servers, topic, [0, 1, 2])
    for p, sp in parts.items():
        assert [(s.timestamp, s.key, s.value, s.headers) for s in got[p]] == [
            (e.timestamp, e.key, e.value, e.headers) for e in sp.expected
        ]


def test_replay_on_local_spark(archived: Any, mock: MockCluster, spark: Any) -> None:
    parts, store, db_url, catalog = archived
    plan = _plan(catalog, store, mock, "spark-local")
    report = run_on_spark(plan, store_uri=store.uri, db_url=db_url, spark=spark)
    assert report.records_sent == sum(len(sp.expected) for sp in parts.values())
    assert sorted(report.partitions) == [0, 1, 2]
    _check(parts, mock, "spark-local")
    ledger = ReplayLedger(catalog.engine)
    assert ledger.run(plan.replay_id).status == "complete"  # type: ignore[union-attr]
    assert all(p.done for p in ledger.all_progress(plan.replay_id))
    # a re-run (e.g. a retried Spark job) finds every partition done and sends nothing
    again = run_on_spark(plan, store_uri=store.uri, db_url=db_url, spark=spark)
    assert again.status == "already-done" and again.records_sent_this_run == 0


@pytest.mark.slow
def test_replay_job_on_a_standalone_cluster(
    archived: Any, mock: MockCluster, spark_cluster: str, tmp_path: Path
) -> None:
    parts, store, db_url, catalog = archived
    plan = _plan(catalog, store, mock, "spark-cluster")
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.to_json(redact=False))
    proc = subprocess.run(
        [sys.executable, str(REPO / "spark_jobs" / "replay.py"), "--plan", str(plan_file),
         "--store", store.uri, "--db", db_url, "--spark-master", spark_cluster],
        capture_output=True, text=True, timeout=500, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["records_sent"] == sum(len(sp.expected) for sp in parts.values())
    _check(parts, mock, "spark-cluster")
