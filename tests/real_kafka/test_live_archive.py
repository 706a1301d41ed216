"""Live archiving against a real Kafka cluster (issue 15, point 2).

Producers of every kind (``support.live_workload``) write through the real brokers while the
archiver runs round after round over each broker's live log dir. Then: every rolled segment is
archived exactly once and byte-identical to what the broker held, the active segment and
transient files are never archived, the same works into S3, and after retention deletes the
old segments on the brokers the catalog still answers ListOffsets for them as the broker did.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from kafka_archive.archive import iter_manifests, run_archive
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.queries import offsets_for_time
from kafka_archive.cli import _register_groups, app
from kafka_archive.store import ObjectStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.live_archiving import (
    ARCHIVE_NAME,
    TRANSIENT_SUFFIXES,
    LiveArchiver,
    archive_live_workload,
    broker_offsets,
    manifests_by_partition,
)
from support.live_workload import LiveWorkload
from support.real_kafka import unique_name
from typer.testing import CliRunner

from segment_lib.log_file import decode_batch, iter_batches

pytest_plugins = ["support.s3server", "support.live_archiving"]

#: how long the producers run while the archiver goes round
PRODUCE_S = 6.0
DATA_FILE = re.compile(r"^\d{20}\.(log|index|timeindex|txnindex|snapshot)$")
OBJECT_KEY = re.compile(r"^\d{20}-[0-9a-f]{16}\.(log|index|timeindex|txnindex|snapshot)$")
#: KRaft's metadata log keeps two more kinds beside its segments (archive/metadata_snapshots.py):
#: verified snapshots, content-addressed, and each node's latest quorum-state
METADATA_KEY = re.compile(
    r"/__cluster_metadata/0/(snapshots/\d{20}-\d{10}-[0-9a-f]{16}\.checkpoint"
    r"|quorum-state/node-\d+\.json)$"
)


@dataclass
class Live:
    cluster: LocalKafkaCluster
    wl: LiveWorkload
    archiver: LiveArchiver
    store: ObjectStore
    tmp: Path
    #: partition -> offset of its seal record (the active segment's only record)
    seal_offsets: dict[tuple[str, int], int]

    def non_compacted(self) -> list[str]:
        return [t for r, t in self.wl.topics.items() if r != "compacted"]


@pytest.fixture(scope="module")
def live(
    kafka_cluster: LocalKafkaCluster,
    tmp_path_factory: pytest.TempPathFactory,
    live_archive_store: tuple[ObjectStore, Path],
) -> Live:
    tmp = tmp_path_factory.mktemp("live-archive")
    wl, archiver, seals = archive_live_workload(
        kafka_cluster, live_archive_store, tmp, prefix=unique_name("live"), seed=1,
        produce_s=PRODUCE_S, skip_roles=["compacted"],
    )  # fmt: skip
    return Live(kafka_cluster, wl, archiver, archiver.store, tmp, seals)


def test_workload_really_ran(live: Live) -> None:
    wl = live.wl
    producers = {r.producer for r in wl.records}
    assert producers >= {f"codec-{c}" for c in ("none", "gzip", "snappy", "lz4", "zstd")}
    assert {"logappend", "txn", "compacted"} <= producers
    assert wl.stats.transactions_committed > 0 and wl.stats.transactions_aborted > 0
    assert any(not r.committed for r in wl.records) and any(r.log_append_time for r in wl.records)
    assert wl.commits_of(wl.group_plain) and wl.commits_of(wl.group_txn)
    assert live.archiver.rounds >= 3


def test_every_rolled_segment_archived_once_and_byte_identical(live: Live) -> None:
    failures = [
        (r.failures, r.log_dir_failures)
        for r in live.archiver.reports
        if r.segments_failed or r.segments_quarantined or r.log_dir_failures
    ]
    assert failures == []
    by_tp = manifests_by_partition(live.archiver.manifests())
    watched = set(live.wl.topics.values())
    compared = unseen_versions = 0
    for (topic, part), ms in by_tp.items():
        if topic not in watched:
            continue
        # exactly once: no bytes archived twice
        shas = [m.segment_sha256 for m in ms]
        assert len(shas) == len(set(shas)), (topic, part)
        for m in ms:
            # byte-identical to what the broker held, every file of the segment
            for f in m.files:
                stored = live.store.get_bytes(f.key)
                held = live.archiver.broker_bytes(m, f.name)
                if stored in held:
                    compared += 1
                    continue
                # only a compaction version that lived inside one round can escape the
                # evidence: then its records must be ones the producer wrote, at their offsets
                assert topic == live.wl.topics["compacted"], (topic, part, f.name, held != [])
                if f.role == "log":
                    assert _records_were_produced(live.wl, topic, part, stored), (topic, part)
                    unseen_versions += 1
        if topic == live.wl.topics["compacted"]:
            continue
        # each offset once: consecutive ranges, any intersection recorded as an overlap
        seal = live.seal_offsets[(topic, part)]
        assert ms[0].base_offset == 0 and max(m.end_offset for m in ms) == seal
        for a, b in itertools.pairwise(ms):
            assert b.base_offset <= a.end_offset, (topic, part, a.end_offset, b.base_offset)
            if b.base_offset < a.end_offset:
                recorded = {o.manifest_key for o in b.overlaps} | {
                    o.manifest_key for o in a.overlaps
                }
                assert recorded, (topic, part, a.base_offset, b.base_offset)
        for m in ms:
            # never the active segment: its successor exists on the broker it came from
            succ = live.cluster.log_dirs[m.source.broker_id] / m.source.partition_dir
            assert (succ / f"{m.end_offset:020d}.log").exists(), (topic, part, m.end_offset)
        # every record the producers got acknowledged lies in an archived segment
        recs = live.wl.records_of(topic, part)
        assert recs and max(r.offset for r in recs) < seal
    assert compared > 100 and unseen_versions <= 3, (compared, unseen_versions)


def _records_were_produced(wl: LiveWorkload, topic: str, part: int, data: bytes) -> bool:
    produced = {r.offset: (r.key, r.value) for r in wl.records_of(topic, part)}
    n = 0
    for b in iter_batches(data, 0, verify_crc=True):
        if b.is_control:
            continue
        for r in decode_batch(data, b):
            if produced.get(r.offset) != (r.key, r.value):
                return False
            n += 1
    return n > 0


def test_transient_files_and_the_active_segment_never_archived(live: Live) -> None:
    # the cleaner and retention left transient files while the archiver ran
    assert live.archiver.transient_seen[".deleted"] > 0, live.archiver.transient_seen
    for m in live.archiver.manifests():
        for f in m.files:
            assert DATA_FILE.match(f.name), f.name
            assert not f.name.endswith(TRANSIENT_SUFFIXES)
        # the seal record is the active segment's only record: never archived
        seal = live.seal_offsets.get((m.topic, m.partition))
        if seal is not None:
            assert m.end_offset <= seal
    for obj in live.store.list(f"{ARCHIVE_NAME}/"):
        name = obj.key.rsplit("/", 1)[-1]
        assert (
            OBJECT_KEY.match(name)
            or ("/manifests/" in obj.key and name.endswith(".json"))
            or METADATA_KEY.search(obj.key)
        ), obj.key
    skipped: dict[str, int] = {}
    for r in live.archiver.reports:
        for k, v in r.skipped.items():
            skipped[k] = skipped.get(k, 0) + v
    assert skipped.get("active", 0) > 0, skipped


def test_the_same_into_s3(live: Live, make_s3_store: Callable[..., Any]) -> None:
    s3 = make_s3_store()
    report = run_archive(
        cluster=ARCHIVE_NAME,
        broker_id=1,
        log_dirs=[str(live.cluster.log_dirs[1])],
        store=s3,
        concurrency=4,
    )
    assert report.ok, report.failures
    topic = live.wl.topics["codec-zstd"]
    local = {m.segment_sha256: m for m in iter_manifests(live.store, ARCHIVE_NAME, topic)}
    got = list(iter_manifests(s3, ARCHIVE_NAME, topic))
    assert got
    for m in got:
        log = next(f for f in m.files if f.role == "log")
        data = s3.get_bytes(log.key)
        held = (live.cluster.log_dirs[1] / m.source.partition_dir / log.name).read_bytes()
        assert data == held
        if m.segment_sha256 in local:  # same bytes, same key, in both stores
            assert local[m.segment_sha256].log_file.key == log.key


def _alter_retention(cluster: LocalKafkaCluster, topics: list[str], ms: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    res = [
        ConfigResource(
            ConfigResource.Type.TOPIC,
            t,
            incremental_configs=[
                ConfigEntry("retention.ms", ms, incremental_operation=AlterConfigOpType.SET)
            ],
        )
        for t in topics
    ]
    for fut in admin.incremental_alter_configs(res).values():
        fut.result(30)


def _low_watermarks(bootstrap: str, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("wm")})
    try:
        return {(t, p): c.get_watermark_offsets(TopicPartition(t, p), 10)[0] for t, p in tps}
    finally:
        c.close()


def test_catalog_answers_after_retention_deleted_the_segments(live: Live, tmp_path: Path) -> None:
    wl = live.wl
    topics = live.non_compacted()
    rng = random.Random(5)
    queries: list[tuple[str, int, int]] = []
    for t in topics:
        for p in range(wl.partitions):
            recs = wl.records_of(t, p)
            first = min(r.timestamp for r in recs)
            for r in rng.sample(recs, min(12, len(recs))):
                queries += [(t, p, r.timestamp), (t, p, r.timestamp + 1)]
            queries.append((t, p, first - 1000))
    before = broker_offsets(live.cluster.bootstrap_servers, queries)
    # the seal record (a last record's timestamp + 1 may find it) is in the active segment,
    # never archived: there the catalog has no record
    expected = {
        (t, p, ts): -1 if b == live.seal_offsets[(t, p)] else b for (t, p, ts), b in before.items()
    }
    assert sum(v >= 0 for v in expected.values()) > len(queries) * 0.8

    _alter_retention(live.cluster, topics, "1000")
    tps = [(t, p) for t in topics for p in range(wl.partitions)]
    deadline = time.monotonic() + 90
    while True:
        low = _low_watermarks(live.cluster.bootstrap_servers, tps)
        gone = [
            not (d / f"{t}-{p}" / f"{0:020d}.log").exists()
            for d in live.cluster.log_dirs.values()
            for t, p in tps
        ]
        if all(low[tp] > 0 for tp in tps) and all(gone):
            break
        assert time.monotonic() < deadline, f"retention did not delete in 90 s: {low}"
        time.sleep(1)
    # the brokers no longer have the data: their answers moved
    after = broker_offsets(live.cluster.bootstrap_servers, queries)
    moved = [q for q in queries if after[q] != before[q]]
    assert len(moved) >= len(queries) // 2

    # the archiver goes on without complaint (vanished segments are not failures)
    for r in live.archiver.run_round():
        assert r.segments_failed == 0 and not r.log_dir_failures, r.failures

    db = str(tmp_path / "catalog.db")
    _register_groups()
    cli = CliRunner()
    store_uri = live.store.uri
    built = cli.invoke(
        app,
        ["catalog", "build", "--in-process", "--json", "--store", store_uri, "--db", db],
    )
    assert built.exit_code == 0, built.output
    report = json.loads(next(ln for ln in built.output.splitlines() if ln.startswith("{")))
    assert report["failed"] == 0 and report["corrupt"] == 0 and report["segments_added"] > 0

    cat = open_catalog(db, create=True)
    try:
        wrong = []
        for t, p, ts in queries:
            (ans,) = offsets_for_time(cat, live.store, ARCHIVE_NAME, t, ts, [p])
            if ans.offset != expected[(t, p, ts)]:
                wrong.append((t, p, ts, ans.offset, before[(t, p, ts)]))
        assert wrong == []
    finally:
        cat.close()
    # and through the command itself, for a few
    for t, p, ts in rng.sample(queries, 6):
        out = cli.invoke(
            app,
            [
                "catalog",
                "offsets",
                "--cluster",
                ARCHIVE_NAME,
                "--topic",
                t,
                "--partition",
                str(p),
                "--at",
                str(ts),
                "--json",
                "--db",
                db,
                "--store",
                store_uri,
            ],
        )
        assert out.exit_code == 0, out.output
        (line,) = [json.loads(ln) for ln in out.output.splitlines() if ln.startswith("{")]
        assert line["offset"] == expected[(t, p, ts)], (t, p, ts, line)
