"""A whole-cluster restore on Spark (issue 24: "Spark executors on a cluster"):
``RestoreService.run(execution="spark")`` runs each topic's replay as a Spark job, one task
per source partition (:func:`kafka_archive.spark.replay.run_on_spark`), the topics made
ahead by the driver. Here with a local Spark (``local[2]``; the same job takes a cluster
master URL; a second test runs it from the CLI on a real standalone cluster) into a real
1-broker Apache Kafka cluster: every partition read back
``read_committed`` by confluent-kafka (not ours) holds exactly the archived records before T,
in source order, once; run again, the restore answers its stored report and sends nothing.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.writer.broker_writer import BrokerWriter
from kafka_archive_dev.writer.encode import WriteRecord
from support.real_kafka import running_cluster

from segment_lib.compression import Codec

pytest_plugins = ["support.spark"]
pytestmark = pytest.mark.timeout(900)

CLUSTER = "spark-src"
TOPICS = {"orders": 3, "payments": 2}
RECORDS = 400
BATCH = 50
START_MS = int(time.time() * 1000) - 3_600_000


def _archived(root: Path) -> tuple[str, str, dict[tuple[str, int], list[bytes]]]:
    """The source as one broker's log dir, archived and cataloged: ``(store, db, keys per
    partition in order)``."""
    from kafka_archive.archive.runner import run_archive
    from kafka_archive.catalog.build import build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.store import open_store

    broker = BrokerWriter(root / "b1", 1, cluster_id="spark-src-id")
    keys: dict[tuple[str, int], list[bytes]] = {}
    ts = START_MS
    for topic, partitions in TOPICS.items():
        for p in range(partitions):
            pw = broker.partition(topic, p)
            for start in range(0, RECORDS, BATCH):
                ts += 1
                batch = [
                    WriteRecord(f"{topic}-{p}-{i:05d}".encode(), b"v" * 40, (), ts)
                    for i in range(start, start + BATCH)
                ]
                pw.append(batch, codec=Codec.LZ4 if p % 2 else Codec.NONE)
                keys.setdefault((topic, p), []).extend(r.key or b"" for r in batch)
            pw.roll()  # rolled: the archiver never takes the active segment
    broker.close()
    store = open_store(str(root / "store"))
    run_archive(
        cluster=CLUSTER, broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store
    )
    db = f"sqlite:///{root / 'catalog.db'}"
    with open_catalog(db, create=True) as cat:
        build_catalog(cat, store.uri, cluster=CLUSTER)
    return store.uri, db, keys


def test_a_restore_on_local_spark_into_a_real_cluster(tmp_path: Path, spark: Any) -> None:
    from kafka_archive.replay.planning.plan import TargetSpec
    from kafka_archive.restore.request import RenameMap, RestoreRequest
    from kafka_archive.services.restore import RestoreService
    from kafka_archive.settings import load_settings

    store, db, keys = _archived(tmp_path / "src")
    with running_cluster(brokers=1) as target:
        request = RestoreRequest.model_validate(
            {
                "cluster": CLUSTER,
                "all_topics": True,
                "at_ms": int(time.time() * 1000),
                "rename": RenameMap(prefix="dr."),
                "groups": [],
                "target": TargetSpec(bootstrap_servers=target.bootstrap_servers),
                "replication_factor": 1,
                "parallelism": 2,
            }
        )
        tracker = spark.sparkContext.statusTracker()
        jobs_before = set(tracker.getJobIdsForGroup())
        with RestoreService(load_settings({"store": store, "db": db})) as svc:
            report = svc.run(request, execution="spark", spark_master="local[2]")
            assert report.status == "complete", report.model_dump_json()
            # one Spark job per topic ran the partitions (the session is the one of the test)
            assert len(set(tracker.getJobIdsForGroup()) - jobs_before) == len(TOPICS)
            assert report.records_this_run == sum(len(k) for k in keys.values())
            again = svc.run(request, execution="spark", spark_master="local[2]")
            assert again.records_this_run == report.records_this_run  # the stored report
            assert any("already complete" in n for n in again.notes)
        for topic, partitions in TOPICS.items():
            got = read_to_end(
                target.bootstrap_servers, f"dr.{topic}", list(range(partitions)), timeout_s=120
            )
            for p in range(partitions):
                assert [r.key for r in got[p]] == keys[(topic, p)], (topic, p)


def test_a_restore_on_a_standalone_spark_cluster_from_the_cli(
    tmp_path: Path, spark_cluster: str
) -> None:
    """The same restore as an operator starts it: ``kafka-archive restore run --spark-master
    spark://...`` in a process of its own, its replays' tasks on a real standalone cluster's
    executors (a master and a worker: ``support.spark.spark_cluster``)."""
    import json
    import subprocess
    import sys

    store, db, keys = _archived(tmp_path / "src")
    cli = str(Path(sys.executable).with_name("kafka-archive"))
    with running_cluster(brokers=1) as target:
        args = [
            cli, "restore", "run", "--cluster", CLUSTER, "--all-topics",
            "--at", str(int(time.time() * 1000)), "--target", target.bootstrap_servers,
            "--prefix", "dr.", "--no-groups", "--replication-factor", "1",
            "--spark-master", spark_cluster, "--store", store, "--db", db, "--json",
        ]  # fmt: skip
        done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["status"] == "complete", report
        assert report["records_this_run"] == sum(len(k) for k in keys.values())
        for topic, partitions in TOPICS.items():
            got = read_to_end(
                target.bootstrap_servers, f"dr.{topic}", list(range(partitions)), timeout_s=120
            )
            for p in range(partitions):
                assert [r.key for r in got[p]] == keys[(topic, p)], (topic, p)
