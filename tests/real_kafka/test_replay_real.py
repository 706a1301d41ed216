"""Replay into a REAL Apache Kafka cluster (3 KRaft nodes, RF 3, min.insync.replicas 2).

Source: writer-made partitions (commits, aborts, an open transaction, LogAppendTime, every codec,
headers with null values) archived by the archiver and cataloged by the catalog build, as in
tests/test_replay_mock.py; the expected records come from the write events
(tests/support/replay_data.py). Unlike librdkafka's mock cluster, a real broker fences producers,
aborts a fenced producer's open transaction and filters aborted records for read_committed
consumers - so every check here reads the target back with an ordinary read_committed consumer
and expects *exactly* the committed source records of the range.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from kafka_archive.archive.runner import run_archive
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.errors import ReplayFencedError
from kafka_archive.replay.execution.engine import PartitionReplay
from kafka_archive.replay.execution.progress import (
    KafkaCommittedReader,
    ProgressRecord,
    load_progress,
    progress_key,
)
from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
from kafka_archive.replay.planning.plan import (
    ReplayPlan,
    ReplaySpec,
    TargetSpec,
    build_plan,
    parse_position,
)
from kafka_archive.replay.runner import claim_run, execute
from kafka_archive.store import ObjectStore, open_store
from kafka_archive_dev.embedded_kafka import ConsumedRecord, read_to_end
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from kafka_archive_dev.writer.broker_writer import BrokerWriter
from kafka_archive_dev.writer.encode import WriteRecord
from kafka_archive_dev.writer.partition_writer import ManualClock
from support.cli_json import cli

from segment_lib.compression import Codec
from segment_lib.consumer_offsets import partition_for_group
from segment_lib.records import Header
from tests.support.real_kafka import broker_down, unique_name
from tests.support.replay_data import Expected, write_source_topic

CLUSTER = "east"
TOPIC = "orders"
BULK = "bulk"  # zstd and lz4 batches only, 4 partitions
BULK_PARTITIONS = 4
REPO = Path(__file__).resolve().parents[2]
GROUP_COMMITS = {0: 30, 1: 61, 2: 95}
#: the archived group; the same name on the (shared) target cluster is this session's own
GROUP = unique_name("billing")

pytestmark = pytest.mark.timeout(300)


@dataclass
class Source:
    expected: dict[str, dict[int, list[Expected]]]
    store: ObjectStore
    db_url: str
    catalog: Catalog


def _write_bulk(broker: BrokerWriter, start_ms: int) -> dict[int, list[Expected]]:
    """``BULK``: every partition alternates zstd and lz4 batches of up to 60 records."""
    rng = random.Random(7)
    out: dict[int, list[Expected]] = {}
    for p in range(BULK_PARTITIONS):
        clock = ManualClock(start_ms)
        pw = broker.partition(
            BULK, p, segment_bytes=32 * 1024, index_interval_bytes=1024, clock=clock
        )
        expected: list[Expected] = []
        for r in range(30):
            clock.advance(rng.randrange(1, 500))
            recs = [
                WriteRecord(
                    f"k{rng.randrange(100)}".encode(),
                    rng.randbytes(rng.randrange(10, 200)) * 3,  # compressible
                    (Header("n", str(i).encode()), Header("null", None)) if i % 3 == 0 else (),
                    clock() + i,
                )
                for i in range(rng.randrange(1, 60))
            ]
            res = pw.append(recs, codec=Codec.ZSTD if r % 2 else Codec.LZ4)
            expected += [
                Expected(
                    res.first_offset + i,
                    rec.timestamp or 0,
                    rec.key,
                    rec.value,
                    tuple((h.key, h.value) for h in rec.headers),
                )
                for i, rec in enumerate(recs)
            ]
        pw.roll()
        out[p] = expected
    return out


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    root = tmp_path_factory.mktemp("replay-real")
    broker = BrokerWriter(root / "b1", 1, cluster_id="src-cluster-id", offsets_partitions=5)
    # recent timestamps: the target deletes records older than its retention (7 days)
    start_ms = int(time.time() * 1000) - 3_600_000
    parts = write_source_topic(
        root, TOPIC, 3, seed=5, log_append_time_partition=2, broker=broker, start_ms=start_ms
    )
    bulk = _write_bulk(broker, start_ms)
    broker.commit_offsets(GROUP, {(TOPIC, p): off for p, off in GROUP_COMMITS.items()})
    broker.consumer_offsets(partition_for_group(GROUP, 5)).roll()
    broker.close()
    store = open_store(str(root / "store"))
    report = run_archive(
        cluster=CLUSTER, broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store
    )
    assert report.segments_archived > 0
    db_url = f"sqlite:///{root / 'catalog.db'}"
    catalog = open_catalog(db_url, create=True)
    build_catalog(catalog, store.uri, cluster=CLUSTER)
    expected = {TOPIC: {p: sp.expected for p, sp in parts.items()}, BULK: bulk}
    # the source really has what the checks below must tell apart
    assert sum(sp.aborted_records for sp in parts.values()) > 0
    # (every transaction resolved: one left open stops a replay at the last stable offset,
    # tests/test_open_txn_end.py and test_open_txn_end_real.py)
    yield Source(expected, store, db_url, catalog)
    catalog.close()


def view(e: Expected | ConsumedRecord) -> tuple[Any, ...]:
    return (e.timestamp, e.key, e.value, tuple(e.headers))


def assert_exactly_once(
    src: Source, cluster: LocalKafkaCluster, source_topic: str, target: str
) -> None:
    """A read_committed consumer on the target sees exactly the committed source records, in
    order, per partition: keys, values, headers, timestamps - no aborted or open transaction."""
    want = src.expected[source_topic]
    got = read_to_end(cluster.bootstrap_servers, target, sorted(want), timeout_s=60)
    for p, expected in want.items():
        assert len(got[p]) == len(expected), (p, watermarks(cluster, target, p))
        assert [view(s) for s in got[p]] == [view(e) for e in expected], f"partition {p}"


def watermarks(cluster: LocalKafkaCluster, topic: str, partition: int) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "wm"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 30)
        return int(low), int(high)
    finally:
        consumer.close()


def make_plan(
    src: Source, cluster: LocalKafkaCluster, source_topic: str, target: str, **kw: Any
) -> ReplayPlan:
    spec = ReplaySpec.model_validate(
        {
            "cluster": CLUSTER,
            "topic": source_topic,
            "from": parse_position("earliest"),
            "target": TargetSpec(bootstrap_servers=cluster.bootstrap_servers),
            "target_topic": target,
            **kw,
        }
    )
    return build_plan(spec, CatalogPlanSource(src.catalog, src.store))


def run_args(src: Source, cluster: LocalKafkaCluster, target: str, *extra: str) -> list[str]:
    return [
        "replay",
        "run",
        "--cluster",
        CLUSTER,
        "--topic",
        TOPIC,
        "--from",
        "earliest",
        "--target",
        cluster.bootstrap_servers,
        "--target-topic",
        target,
        "--store",
        src.store.uri,
        "--db",
        src.db_url,
        "--json",
        *extra,
    ]


def child(plan_file: Path, src: Source, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tests.support.replay_child",
        str(plan_file),
        src.store.uri,
        src.db_url,
        "--reader",
        "kafka",
        *extra,
    ]


# -- a first replay into a cluster: the topics are created for real -------------------------


def test_first_replay_creates_progress_and_target_topics(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    """Neither the progress topic nor the target topic exists: both are created and the replay
    reads the progress topic right away. Fault: it crashed with NOT_LEADER_FOR_PARTITION - the
    new partitions had no leader yet. Three fresh pairs, each replayed at once."""
    for _ in range(3):
        target = unique_name("replayed-new")
        plan = make_plan(
            src,
            kafka_cluster,
            TOPIC,
            target,
            create_topic=True,
            progress_topic=unique_name("progress"),
        )
        report = execute(plan, store=src.store, ledger=ReplayLedger(src.catalog.engine))
        assert report.status == "complete"
        assert report.records_sent == sum(len(v) for v in src.expected[TOPIC].values())
        assert_exactly_once(src, kafka_cluster, TOPIC, target)


def test_read_to_end_right_after_a_commit(kafka_cluster: LocalKafkaCluster) -> None:
    """The read-back every check here uses. Fault: right after commit_transaction returned it
    found nothing - its read_committed client's ListOffsets answered the last stable offset,
    which stays below the transaction until the broker has written its markers."""
    for _ in range(3):
        topic = kafka_cluster.create_topic(unique_name("readback"), 1)
        producer = Producer(
            {"bootstrap.servers": kafka_cluster.bootstrap_servers, "transactional.id": topic}
        )
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(20):
            producer.produce(topic, b"v%d" % i, partition=0)
        producer.commit_transaction(30)
        got = read_to_end(kafka_cluster.bootstrap_servers, topic, [0])
        assert [r.value for r in got[0]] == [b"v%d" % i for i in range(20)]


def _progress(replay_id: str, seq: int) -> bytes:
    return (
        ProgressRecord(
            replay_id=replay_id,
            source_cluster=CLUSTER,
            source_topic=TOPIC,
            source_partition=0,
            target_topic="t",
            next_offset=seq * 10,
            end_offset=100,
            txn_seq=seq,
            records_sent=seq,
        )
        .model_dump_json()
        .encode()
    )


def test_progress_behind_another_open_transaction(kafka_cluster: LocalKafkaCluster) -> None:
    """The progress partition holds replay A's progress 1, then an open transaction of another
    replay Z, then A's committed progress 2. A resume of A must find progress 2 (waiting for Z to
    end), not progress 1. Fault: the reader read up to the last stable offset - in front of Z's
    open transaction - and returned progress 1: a resume from there replays records twice."""
    topic = kafka_cluster.create_topic(unique_name("progress-lso"), 1)
    bs = kafka_cluster.bootstrap_servers
    key = progress_key("r-a", 0)

    def txn_producer(tid: str) -> Producer:
        producer = Producer({"bootstrap.servers": bs, "transactional.id": tid})
        producer.init_transactions(30)
        return producer

    a, z = txn_producer(unique_name("a")), txn_producer(unique_name("z"))
    a.begin_transaction()
    a.produce(topic, _progress("r-a", 1), key, 0)
    a.commit_transaction(30)
    z.begin_transaction()
    z.produce(topic, _progress("r-z", 1), progress_key("r-z", 0), 0)
    z.flush(30)  # Z's transaction is open on the partition from here
    a.begin_transaction()
    a.produce(topic, _progress("r-a", 2), key, 0)
    a.commit_transaction(30)
    ended = threading.Timer(1.5, lambda: z.abort_transaction(30))
    ended.start()
    try:
        record, offset = load_progress(
            KafkaCommittedReader({"bootstrap.servers": bs}), topic, 0, key
        )
    finally:
        ended.join()
    assert record is not None and (record.txn_seq, offset) == (2, 3)


def test_progress_read_right_after_its_leader_is_killed(
    kafka_cluster: LocalKafkaCluster,
) -> None:
    """The leader of the progress partition is killed (-9) just before a resume reads it: the
    read follows the partition to its new leader. Fault: ListOffsets went to the dead leader
    librdkafka had cached, timed out, and the replay failed (retries asked the same dead
    broker again, never who leads now)."""
    topic = kafka_cluster.create_topic(unique_name("progress-dead-leader"), 1)
    bs = kafka_cluster.bootstrap_servers
    key = progress_key("r-dead", 0)
    producer = Producer({"bootstrap.servers": bs, "transactional.id": topic})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, _progress("r-dead", 1), key, 0)
    producer.commit_transaction(30)
    victim = _leader_of(kafka_cluster, topic, 0)
    with broker_down(kafka_cluster, victim):
        record, offset = load_progress(
            KafkaCommittedReader({"bootstrap.servers": bs}), topic, 0, key
        )
        assert record is not None and (record.txn_seq, offset) == (1, 0)


def test_cli_replay_exactly_once_and_rerun_is_noop(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    target = unique_name("replayed-cli")
    code, out, text = cli(*run_args(src, kafka_cluster, target, "--create-topic"))
    assert code == 0, text
    report = out[-1]
    assert report["status"] == "complete"
    total = sum(len(v) for v in src.expected[TOPIC].values())
    assert report["records_sent"] == total == report["records_sent_this_run"]
    assert report["skipped_aborted_records"] > 0
    assert_exactly_once(src, kafka_cluster, TOPIC, target)
    code, out, text = cli(*run_args(src, kafka_cluster, target))
    assert code == 0, text
    assert out[-1]["status"] == "already-done" and out[-1]["records_sent_this_run"] == 0
    assert_exactly_once(src, kafka_cluster, TOPIC, target)


def test_zstd_and_lz4_partitions_on_several_threads(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    """Four zstd/lz4 partitions on two threads (waves, the next partition prepared ahead), then
    the same with provenance headers (the decoding path) into a murmur2-mapped topic."""
    target = kafka_cluster.create_topic(unique_name("replayed-bulk"), BULK_PARTITIONS)
    plan = make_plan(src, kafka_cluster, BULK, target, txn_max_records=300)
    report = execute(plan, store=src.store, parallelism=2)
    assert report.records_sent == sum(len(v) for v in src.expected[BULK].values())
    assert_exactly_once(src, kafka_cluster, BULK, target)


# -- faults ---------------------------------------------------------------------------------


def test_killed_at_random_times_then_resumed(
    src: Source, kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """``kill -9`` of the replay process at random moments (three times), then a resume: the
    killed runs' open transactions are aborted by the broker (fenced by the resume's
    init_transactions), so the target holds every committed record exactly once."""
    rng = random.Random(43)
    target = kafka_cluster.create_topic(unique_name("replayed-kill"), 3)
    # ~4 s of replay per run (60 records/s per partition), a transaction every 20 records
    plan = make_plan(
        src, kafka_cluster, TOPIC, target, txn_max_records=20, rate_limit_records=60.0,
        replay_path="batch",  # (the source's batches are small: auto would take records)
    )  # fmt: skip
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.to_json(redact=False))
    ledger = ReplayLedger(src.catalog.engine)
    partial = 0
    for _ in range(3):
        proc = subprocess.Popen(
            child(plan_file, src),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        # wait until this run has committed something, then kill it a random moment later
        before = sum(p.txn_seq for p in ledger.all_progress(plan.replay_id))
        deadline = time.monotonic() + 60
        while (
            sum(p.txn_seq for p in ledger.all_progress(plan.replay_id)) == before
            and time.monotonic() < deadline
            and proc.poll() is None
        ):
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.5))
        proc.kill()
        _out, err = proc.communicate(timeout=30)
        assert proc.returncode == -9, err[-2000:]
        progress = ledger.all_progress(plan.replay_id)
        partial += not (len(progress) == 3 and all(p.done for p in progress))
    assert partial == 3, "every kill must come mid-replay"
    done = subprocess.run(
        child(plan_file, src), cwd=REPO, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    total = sum(len(v) for v in src.expected[TOPIC].values())
    assert report["records_sent"] == total > report["records_sent_this_run"]
    # (the archived batches themselves, killed and resumed)
    assert report["replay_path"] == "batches", report["path_notes"]
    assert_exactly_once(src, kafka_cluster, TOPIC, target)
    assert sum(r.count for r in ledger.ranges(plan.replay_id)) == total


def _leader_of(cluster: LocalKafkaCluster, topic: str, partition: int) -> int:
    md = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(topic, 30)
    return int(md.topics[topic].partitions[partition].leader)


def test_target_broker_killed_mid_replay(src: Source, kafka_cluster: LocalKafkaCluster) -> None:
    """The leader of target partition 0 is killed (-9) after the first produced batch; with RF 3
    and min.insync.replicas 2 the replay carries on with the other two and every record lands
    exactly once."""
    target = kafka_cluster.create_topic(unique_name("replayed-broker"), 3)
    victim = _leader_of(kafka_cluster, target, 0)
    plan = make_plan(src, kafka_cluster, TOPIC, target, txn_max_records=40)
    fired = threading.Event()

    def hook(point: str, info: dict[str, Any]) -> None:
        if point == "produced" and not fired.is_set():
            fired.set()
            kafka_cluster.kill(victim)

    try:
        report = execute(plan, store=src.store, hook=hook, ledger=ReplayLedger(src.catalog.engine))
    finally:
        if fired.is_set():
            kafka_cluster.restart(victim)
    assert fired.is_set()
    assert report.status == "complete"
    assert report.records_sent == sum(len(v) for v in src.expected[TOPIC].values())
    assert_exactly_once(src, kafka_cluster, TOPIC, target)


def test_two_identical_replays_at_once(
    src: Source, kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """The same replay started twice at the same moment: the two runs share the transactional
    ids, so one fences the other. Exactly one writes and reports ``complete``; the other is fenced
    or refused (exit 1) - never both ``complete`` - and the target holds every record once."""
    target = kafka_cluster.create_topic(unique_name("replayed-twice"), 3)
    plan = make_plan(
        src, kafka_cluster, TOPIC, target, txn_max_records=40, rate_limit_records=1500.0
    )
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.to_json(redact=False))
    procs = [
        subprocess.Popen(
            child(plan_file, src),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=240) for p in procs]
    codes = [p.returncode for p in procs]
    reports = [
        json.loads(out.strip().splitlines()[-1]) if code == 0 else None
        for (out, _err), code in zip(outs, codes, strict=True)
    ]
    statuses = [r["status"] if r else "failed" for r in reports]
    assert statuses.count("complete") == 1, (statuses, [e[-1500:] for _o, e in outs])
    loser = statuses.index("complete") ^ 1
    assert codes[loser] == 1, outs[loser][1][-2000:]
    # refused by the catalog lease (both started at once), or fenced by the newer claim
    assert "ReplayBusyError" in outs[loser][1] or "ReplayFencedError" in outs[loser][1], outs[
        loser
    ][1][-2000:]
    winner = reports[statuses.index("complete")]
    assert winner is not None
    assert winner["records_sent"] == sum(len(v) for v in src.expected[TOPIC].values())
    assert_exactly_once(src, kafka_cluster, TOPIC, target)


def test_an_older_run_that_fences_the_newer_one_stops_and_the_newer_takes_back(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    """The interleaving that made two simultaneous runs *both* fail: run B claims the replay
    after run A, B initialises partition 0, then A initialises it too (fencing B). A must refuse
    (B's claim is newer) and B must take its transactional id back and finish."""
    target = kafka_cluster.create_topic(unique_name("replayed-takeback"), 3)
    plan = make_plan(src, kafka_cluster, TOPIC, target, partitions=[0], txn_max_records=50)
    claim_a = claim_run(plan)
    claim_b = claim_run(plan)
    assert claim_b.offset > claim_a.offset
    b = PartitionReplay(plan, 0, store=src.store, target_partitions=3)
    a = PartitionReplay(plan, 0, store=src.store, target_partitions=3)
    b.claim, a.claim = claim_b, claim_a
    b.prepare()
    with pytest.raises(ReplayFencedError, match=f"run {claim_b.run}"):
        a.prepare()  # its init_transactions fenced B's producer, then it saw B's claim
    result = b.run()
    assert result.status == "done" and result.records == len(src.expected[TOPIC][0])
    got = read_to_end(kafka_cluster.bootstrap_servers, target, [0])[0]
    assert [view(r) for r in got] == [view(e) for e in src.expected[TOPIC][0]]


# -- consumer groups ------------------------------------------------------------------------


def _committed(cluster: LocalKafkaCluster, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    result = fut.result(30)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.topic == topic}


def test_translate_group_apply_on_a_real_group(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    target = unique_name("replayed-group")
    code, out, text = cli(
        *run_args(src, kafka_cluster, target, "--create-topic", "--provenance-headers")
    )
    assert code == 0, text
    replay_id = out[-1]["replay_id"]
    got = read_to_end(kafka_cluster.bootstrap_servers, target, [0, 1, 2])
    base = [
        "replay",
        "translate-group",
        "--group",
        GROUP,
        "--cluster",
        CLUSTER,
        "--topic",
        TOPIC,
        "--replay",
        replay_id,
        "--store",
        src.store.uri,
        "--db",
        src.db_url,
        "--json",
    ]
    # a real consumer of the group is active: --apply is refused, nothing is committed
    member = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap_servers,
            "group.id": GROUP,
            "session.timeout.ms": 6000,
            "enable.auto.commit": False,
        }
    )
    member.subscribe([target])
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.2)
    try:
        assert member.assignment()
        code, out, text = cli(*base, "--apply")
        assert code == 1 and "active" in out[-1]["message"], text
        assert _committed(kafka_cluster, GROUP, target) == {}
    finally:
        member.close()
    code, out, text = cli(*base, "--apply")
    assert code == 0, text
    positions = {row["partition"]: row["offset"] for row in out}
    assert all(row["applied"] for row in out)
    for p, s in GROUP_COMMITS.items():
        first = next(r for r in got[p] if _source_offset(r) >= s)
        assert positions[p] == first.offset
    assert _committed(kafka_cluster, GROUP, target) == positions


def _source_offset(r: ConsumedRecord) -> int:
    return int((dict(r.headers)["kafka-archive.source"] or b"").decode().rsplit("/", 1)[1])
