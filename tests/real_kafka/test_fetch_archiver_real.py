"""The fetch archiver against a real Kafka cluster (issue 22): what it stores is the broker's.

A live workload (codecs none and lz4, LogAppendTime, transactions with aborts; 2 partitions,
RF 3, segments rolling every 800 ms) writes through the session's 3-broker cluster; then
``archive fetch --until-caught-up`` archives every topic of the workload into a local store, and:

(a) every fetched batch is byte-identical to the batch at the same offset in the leader's own
    ``.log`` files, every offset below the high watermark is archived, none twice;
(b) the ``.txnindex`` aborted ranges of the fetched segments equal the broker's; more: the
    fetched segments roll where the leader rolled (``segment.ms`` by batch timestamps), and every
    segment but the last (rolled at the run's end, not by the broker) has the leader's exact
    ``.log``, ``.index``, ``.timeindex`` and ``.txnindex``;
(c) ``catalog build --engine in-process`` on that store, then ``catalog offsets`` at sampled
    record timestamps equals the broker's ListOffsets;
(d) a second run adds nothing; after more produce, a third adds exactly the new offsets;
(e) a replay from the fetch-made archive (by whole batches) equals a read_committed consumer.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka_archive.archive.manifest import SegmentManifest
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.queries import offsets_for_time
from kafka_archive.cli import app
from kafka_archive.kafka_protocol.client import ProtocolClient
from kafka_archive.store import LocalStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.fetched_archive import broker_batches, fetch_cli, log_batches, partition_manifests
from support.live_archiving import broker_offsets
from support.live_workload import LiveWorkload
from support.real_kafka import unique_name
from typer.testing import CliRunner

from segment_lib.metadata_files import read_partition_metadata
from segment_lib.txn_index import parse_txn_index, read_txn_index

pytestmark = pytest.mark.timeout(240)

CLUSTER = "fetched"
ROLES = ("codec-none", "codec-lz4", "logappend", "txn")


def _fetch(bootstrap: str, store_uri: str, prefix: str) -> dict[str, object]:
    report = fetch_cli(CLUSTER, bootstrap, store_uri, f"{prefix}-*")
    assert report["ok"] and not report["holes"], report
    return report


def _manifests(store: LocalStore, topic: str, partition: int) -> list[SegmentManifest]:
    return partition_manifests(store, CLUSTER, topic, partition)


@dataclass
class Fetched:
    cluster: LocalKafkaCluster
    wl: LiveWorkload
    store: LocalStore
    tmp: Path
    #: the high watermark of each partition in the first run's report
    hw: dict[tuple[str, int], int]
    leaders: dict[str, dict[int, int]]


@pytest.fixture(scope="module")
def fetched(kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Fetched:
    bootstrap = kafka_cluster.bootstrap_servers
    tmp = tmp_path_factory.mktemp("fetch-archiver")
    prefix = unique_name("fetch")
    wl = LiveWorkload(bootstrap, prefix=prefix, partitions=2, roles=ROLES, seed=5)
    wl.create_topics()
    wl.run_for(4.0)
    store = LocalStore(tmp / "store")
    first = _fetch(bootstrap, store.uri, prefix)
    assert first["segments"], first
    hw = {(r["topic"], r["partition"]): r["high_watermark"] for r in first["partitions"]}  # type: ignore[attr-defined]
    client = ProtocolClient({"bootstrap.servers": bootstrap}, client_id="fetch-archiver-test")
    try:
        leaders = {t: client.leaders(t) for t in wl.topics.values()}
    finally:
        client.close()
    return Fetched(kafka_cluster, wl, store, tmp, hw, leaders)


def test_every_batch_is_the_leaders_and_aborts_match(fetched: Fetched) -> None:
    """(a) and (b)."""
    store, hw, wl = fetched.store, fetched.hw, fetched.wl
    aborted_ours: set[tuple[int, int, int, int]] = set()
    aborted_broker: set[tuple[int, int, int, int]] = set()
    compared = 0
    for topic, part in wl.topic_partitions():
        ms = _manifests(store, topic, part)
        assert ms and all(m.origin == "fetch" and m.fetch is not None for m in ms)
        # (a) the archive covers [0, HW) once, each batch the broker's bytes
        assert ms[0].base_offset == 0 and ms[-1].end_offset == hw[(topic, part)]
        for a, b in itertools.pairwise(ms):
            assert a.end_offset == b.base_offset, (topic, part, a.end_offset, b.base_offset)
        leader = fetched.leaders[topic][part]
        pdir = fetched.cluster.log_dirs[leader] / f"{topic}-{part}"
        topic_id = read_partition_metadata(pdir / "partition.metadata").topic_id
        assert {m.topic_id for m in ms} == {topic_id}
        broker = broker_batches(pdir)
        expected = {o for o in broker if o < hw[(topic, part)]}
        seen: set[int] = set()
        for m in ms:
            ours = log_batches(store.get_bytes(m.log_file.key))
            assert not (set(ours) & seen)
            seen |= set(ours)
            for base, data in ours.items():
                assert broker.get(base) == data, (topic, part, base)
                compared += 1
            txn = m.file("txnindex")
            if txn is not None:
                aborted_ours |= {
                    (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
                    for a in parse_txn_index(store.get_bytes(txn.key), m.base_offset).entries
                }
        assert seen == expected, (topic, part)
        # (b) the broker's aborted ranges below the archived end
        for path in sorted(pdir.glob("*.txnindex")):
            aborted_broker |= {
                (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
                for a in read_txn_index(path).entries
                if a.last_offset < hw[(topic, part)]
            }
    assert compared > 100
    rolled = 0
    for topic, part in wl.topic_partitions():
        pdir = fetched.cluster.log_dirs[fetched.leaders[topic][part]] / f"{topic}-{part}"
        ms = _manifests(store, topic, part)
        broker_bases = sorted(int(f.stem) for f in pdir.glob("*.log"))
        assert [m.base_offset for m in ms] == broker_bases[: len(ms)], (topic, part)
        for m in ms[:-1]:
            for f in m.files:
                assert (pdir / f.name).read_bytes() == store.get_bytes(f.key), (topic, f.name)
            names = {f.name for f in m.files}
            assert {p.name for p in pdir.glob(f"{m.base_offset:020d}.*index")} == names - {
                f"{m.base_offset:020d}.log"
            }
            rolled += 1
    assert rolled > 10
    assert aborted_broker, "the workload aborted no transaction"
    assert aborted_ours == aborted_broker


def test_catalog_offsets_equal_list_offsets(fetched: Fetched) -> None:
    """(c)."""
    store, wl = fetched.store, fetched.wl
    db = str(fetched.tmp / "catalog.db")
    out = CliRunner().invoke(
        app,
        ["catalog", "build", "--engine", "in-process", "--json", "--store", store.uri, "--db", db],
    )
    assert out.exit_code == 0, out.output
    rng = random.Random(7)
    queries: list[tuple[str, int, int]] = []
    for topic, part in wl.topic_partitions():
        stamps = [r.timestamp for r in wl.records_of(topic, part)]
        picked = rng.sample(stamps, min(8, len(stamps)))
        queries += [(topic, part, ts + d) for ts in picked for d in (-1, 0, 1)]
        queries.append((topic, part, max(stamps) + 60_000))
    answers = broker_offsets(fetched.cluster.bootstrap_servers, queries)
    cat = open_catalog(db)
    try:
        wrong = []
        for topic, part, ts in queries:
            (ans,) = offsets_for_time(cat, store, CLUSTER, topic, ts, [part])
            if ans.offset != answers[(topic, part, ts)]:
                wrong.append((topic, part, ts, ans.offset, answers[(topic, part, ts)]))
    finally:
        cat.close()
    assert wrong == []


def test_a_replay_from_the_fetched_archive_equals_read_committed(fetched: Fetched) -> None:
    """(e) A replay (batch-level: the fetched batches themselves, re-stamped) of every topic
    from the fetch-made archive into fresh topics: a read_committed consumer of each target sees
    exactly what a read_committed consumer of the source saw below the high watermark."""
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
    from kafka_archive.replay.planning.plan import (
        ReplaySpec,
        TargetSpec,
        build_plan,
        parse_position,
    )
    from kafka_archive.replay.runner import execute
    from kafka_archive_dev.embedded_kafka import read_to_end

    store, wl, hw = fetched.store, fetched.wl, fetched.hw
    bootstrap = fetched.cluster.bootstrap_servers
    db = str(fetched.tmp / "catalog.db")  # built by test_catalog_offsets_equal_list_offsets
    cat = open_catalog(db)
    try:
        for topic in wl.topics.values():
            parts = sorted(p for (t, p) in hw if t == topic)
            target = fetched.cluster.create_topic(unique_name("from-fetch"), len(parts))
            spec = ReplaySpec.model_validate(
                {
                    "cluster": CLUSTER,
                    "topic": topic,
                    "from": parse_position("earliest"),
                    "target": TargetSpec(bootstrap_servers=bootstrap),
                    "target_topic": target,
                    "replay_path": "batch",  # (whatever the workload's batch sizes)
                }
            )
            report = execute(build_plan(spec, CatalogPlanSource(cat, store)), store=store)
            assert report.status == "complete" and report.replay_path == "batches", topic
            got = read_to_end(bootstrap, target, parts, timeout_s=60)
            want = read_to_end(bootstrap, topic, parts, timeout_s=60)
            for p in parts:
                view = [(r.timestamp, r.key, r.value, r.headers) for r in got[p]]
                assert view == [
                    (r.timestamp, r.key, r.value, r.headers)
                    for r in want[p]
                    if r.offset < hw[(topic, p)]
                ], (topic, p)
    finally:
        cat.close()


def test_a_rerun_adds_nothing_then_only_new_data(fetched: Fetched) -> None:
    """(d); runs last (it produces more)."""
    store, hw, wl = fetched.store, fetched.hw, fetched.wl
    bootstrap = fetched.cluster.bootstrap_servers
    keys_before = {k.key for k in store.list(f"{CLUSTER}/")}
    again = _fetch(bootstrap, store.uri, wl.prefix)
    assert again["segments"] == 0
    assert {k.key for k in store.list(f"{CLUSTER}/")} == keys_before
    topic = wl.topics["codec-none"]
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(20):
        producer.produce(topic, value=b"more %d" % i, partition=0)
    assert producer.flush(30) == 0
    del producer  # no client left reconnecting after the session cluster stops
    third = _fetch(bootstrap, store.uri, wl.prefix)
    ms = _manifests(store, topic, 0)
    new = [m for m in ms if m.base_offset >= hw[(topic, 0)]]
    assert new and third["segments"] == len(new)
    assert sum(m.record_count for m in new) == 20
    assert new[0].base_offset == hw[(topic, 0)] and ms[-1].end_offset == hw[(topic, 0)] + 20


def test_fetch_answers_over_a_megabyte(
    kafka_cluster: LocalKafkaCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """1 MB zstd batches of random values (incompressible): Fetch answers of several MB, over
    kafka-python's default 1,000,000-byte frame limit (which made every Fetch of such a
    partition fail, found by benchmarks/bench_fetch_archive.py); every record is archived."""
    bootstrap = kafka_cluster.bootstrap_servers
    prefix = unique_name("fetch-big")
    topic = kafka_cluster.create_topic(f"{prefix}-t", 1)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50,
         "batch.size": 1_000_000, "compression.type": "zstd"}
    )  # fmt: skip
    pool = random.Random(3).randbytes(1 << 20)
    for i in range(12_000):
        start = (i * 7919) % (len(pool) - 512)
        producer.produce(topic, pool[start : start + 512], b"k%d" % i, 0)
    assert producer.flush(60) == 0
    del producer
    store = LocalStore(tmp_path_factory.mktemp("fetch-big") / "store")
    report = _fetch(bootstrap, store.uri, prefix)
    (part,) = report["partitions"]  # type: ignore[attr-defined]
    assert part["high_watermark"] == 12_000
    assert sum(m.record_count for m in _manifests(store, topic, 0)) == 12_000
    # several MB fetched, in answers of up to 4 MiB (partition_max_bytes): over the old limit
    assert sum(len(b) for b in _stored(store, topic)) > 4_000_000


def _stored(store: LocalStore, topic: str) -> list[bytes]:
    out: list[bytes] = []
    for m in _manifests(store, topic, 0):
        log = next(f for f in m.files if f.role == "log")
        out += list(log_batches(store.get_bytes(log.key)).values())
    return out
