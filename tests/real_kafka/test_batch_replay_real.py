"""Batch-level replay equals the record path, and the source, on real Apache Kafka (issue 27).

The live workload (``support.live_workload``: every codec, LogAppendTime, out-of-order
CreateTime, transactions committed and aborted, a compacted topic with the cleaner running)
writes through the real 3-broker cluster while the archiver copies the brokers' rolled segments;
the catalog is built; then every topic is replayed twice into fresh target topics: once by whole
batches (``replay_path: batch``: the workload's batches are small, which ``auto`` replays record
by record) and once record by record (``records``). A
read_committed consumer must see, per partition, exactly the same records (timestamp, key,
value, headers, in order) in both targets - and, for every topic the cleaner does not rewrite,
exactly what a read_committed consumer of the source saw below the seal. The batch path must
really have been taken: the report says ``batches``, and only batches that had to be re-encoded
(LogAppendTime, compacted with offset gaps) are counted as such.

The same checks run on Kafka 3.9 (``kafka_cluster_39``: one broker).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, build_plan, parse_position
from kafka_archive.replay.runner import execute
from kafka_archive.store import ObjectStore, open_store
from kafka_archive_dev.embedded_kafka import ConsumedRecord, read_to_end
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.live_archiving import ARCHIVE_NAME, archive_live_workload
from support.real_kafka import unique_name

from tests.real_kafka import test_replay_real

pytestmark = pytest.mark.timeout(600)

PRODUCE_S = 4.0


def _view(r: ConsumedRecord) -> tuple[Any, ...]:
    return (r.timestamp, r.key, r.value, r.headers)


def _replay(
    cluster: LocalKafkaCluster, store: ObjectStore, db: str, topic: str, path: str
) -> tuple[str, Any]:
    target = unique_name(f"{topic}-{path}")
    spec = ReplaySpec.model_validate(
        {
            "cluster": ARCHIVE_NAME,
            "topic": topic,
            "from": parse_position("earliest"),
            "target": TargetSpec(bootstrap_servers=cluster.bootstrap_servers),
            "target_topic": target,
            "create_topic": True,
            "replay_path": path,
            "txn_max_records": 500,
        }
    )
    catalog = open_catalog(db)
    try:
        plan = build_plan(spec, CatalogPlanSource(catalog, store))
        report = execute(plan, store=store)
    finally:
        catalog.engine.dispose()
    return target, report


def _check(
    cluster: LocalKafkaCluster,
    tmp: Path,
    live_store: tuple[ObjectStore, Path],
    replication: int = 3,
) -> None:
    wl, archiver, seals = archive_live_workload(
        cluster, live_store, tmp, prefix=unique_name("bre"), seed=27, produce_s=PRODUCE_S,
        replication=replication,
    )  # fmt: skip
    db = str(tmp / "catalog.db")
    catalog = open_catalog(db, create=True)
    try:
        built = build_catalog(catalog, archiver.store.uri, cluster=ARCHIVE_NAME)
    finally:
        catalog.engine.dispose()
    assert not built.failed and built.corrupt == 0
    sent_as_stored = 0
    for role, topic in wl.topics.items():
        parts = sorted({p for (t, p) in seals if t == topic})
        by_batches, rb = _replay(cluster, archiver.store, db, topic, "batch")
        by_records, rr = _replay(cluster, archiver.store, db, topic, "records")
        assert rb.status == rr.status == "complete", (rb.status, rr.status)
        assert rb.replay_path == "batches", (role, rb.replay_path, rb.path_notes)
        assert rr.replay_path == "records"
        assert rb.records_sent == rr.records_sent > 0, role
        got_b = read_to_end(cluster.bootstrap_servers, by_batches, parts, timeout_s=60)
        got_r = read_to_end(cluster.bootstrap_servers, by_records, parts, timeout_s=60)
        for p in parts:
            assert [_view(r) for r in got_b[p]] == [_view(r) for r in got_r[p]], (role, p)
        notes = " ".join(rb.path_notes)
        if role == "logappend":
            assert "re-encoded" in notes, notes  # every LogAppendTime batch is re-encoded
        if role.startswith("codec-") or role == "txn":
            # CreateTime, no gaps: every batch as stored, except those cut by the range
            sent_as_stored += sum(
                1 for d in rb.partitions.values() if "re-encoded" not in d["path_note"]
            )
        if role == "compacted":
            continue  # the cleaner rewrites it while it is read: compared between paths only
        source = read_to_end(cluster.bootstrap_servers, topic, parts, timeout_s=60)
        for p in parts:
            want = [_view(r) for r in source[p] if r.offset < seals[(topic, p)]]
            assert [_view(r) for r in got_b[p]] == want, (role, p)
    assert sent_as_stored > 0
    print(json.dumps({"topics": len(wl.topics), "partitions_as_stored": sent_as_stored}))


pytest_plugins = ["support.live_archiving"]


def test_batch_level_replay_equals_the_record_path_and_the_source(
    kafka_cluster: LocalKafkaCluster,
    tmp_path: Path,
    live_archive_store: tuple[ObjectStore, Path],
) -> None:
    _check(kafka_cluster, tmp_path, live_archive_store)


def test_batch_level_replay_on_kafka_39(
    kafka_cluster_39: LocalKafkaCluster, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("bre-39-store")
    _check(kafka_cluster_39, tmp_path, (open_store(str(root / "store")), root / "state"), 1)


# test_replay_real's writer-made source (its zstd/lz4 ``bulk`` topic), built again here
src = test_replay_real.src


def test_a_batch_the_target_refuses_as_too_large_falls_back_to_the_record_path(
    src: test_replay_real.Source, kafka_cluster: LocalKafkaCluster
) -> None:
    """The target topic's ``max.message.bytes`` (4,000) is below some archived zstd/lz4
    batches of the source (up to ~12 KB): the batch path sends what fits, the broker refuses a
    larger batch (MESSAGE_TOO_LARGE), and the partition goes on record by record from what the
    batch path committed (librdkafka batching below the limit) - every committed record exactly
    once, and the report says so."""
    from tests.real_kafka.test_replay_real import BULK, assert_exactly_once, make_plan

    target = kafka_cluster.create_topic(
        unique_name("replayed-small-max"), 4, config={"max.message.bytes": "4000"}
    )
    plan = make_plan(src, kafka_cluster, BULK, target, txn_max_records=100, replay_path="batch")
    report = execute(plan, store=src.store, producer_config={"batch.size": 3000})
    assert report.status == "complete"
    assert report.replay_path in ("records", "mixed"), report.replay_path
    notes = " ".join(report.path_notes)
    assert "fell back to the record path" in notes and "MESSAGE_SIZE_TOO_LARGE (10)" in notes, notes
    fell_back = [p for p, d in report.partitions.items() if d["path"] == "records"]
    # the first transactions went as whole batches before the refusal: both paths wrote
    assert any(d["records_this_run"] > 0 for d in report.partitions.values())
    assert fell_back
    assert_exactly_once(src, kafka_cluster, BULK, target)
