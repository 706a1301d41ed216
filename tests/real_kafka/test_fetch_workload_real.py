"""The fetch archiver proven against the broker on a real multi-broker cluster (issue 22, point 5).

The whole :class:`~support.live_workload.LiveWorkload` (every codec, LogAppendTime, committed
and aborted transactions, a compacted topic whose cleaner runs meanwhile, two committing
groups) writes to a 3-broker cluster while a continuous fetch archiver (topics ``prefix-*`` and
``__consumer_offsets``, Metadata every second) runs; then, the archiver still running, the
broker leading the most workload partitions is stopped (``kill -9``): the leaders move, their
epochs bump, more records are written under the new leaders, the broker comes back. A final
``archive fetch --until-caught-up`` (the CLI: a resumed run, which checks every leader's log
against the archive first) takes the rest. Then:

(a) every fetched batch below the high watermark is byte-identical to the batch at the same
    offset in the current leader's files, each once; for the compacted topic (the cleaner
    rewrites batches after they were fetched) every record the broker still holds is archived
    at its offset with its key and value;
(b) the leader epochs in the manifests equal the broker's ``leader-epoch-checkpoint`` (the
    leader change is in the archive), and the ``.txnindex`` aborted ranges equal the broker's;
(c) ``catalog offsets`` over the fetch-made archive equals ListOffsets at sampled timestamps;
(d) a replay from it equals what a ``read_committed`` consumer sees;
(e) group history: ``catalog group-offsets`` from the fetched ``__consumer_offsets`` equals the
    groups' committed offsets as the broker answers them;
(f) export (Spark, local) of the transactional topic holds exactly the committed records.

The same on Kafka 3.9 (a 3-broker 3.9 cluster of this module's own).
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka.admin import AdminClient
from kafka_archive.archive.fetch.report import FetchReport
from kafka_archive.archive.fetch.runner import FetchOptions, run_fetch_archive
from kafka_archive.archive.fetch.source import KafkaFetchSource
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.queries import offsets_for_time
from kafka_archive.cli import _register_groups, app
from kafka_archive.kafka_protocol.client import ProtocolClient
from kafka_archive.store import LocalStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.fetched_archive import (
    archived_batches,
    broker_batches,
    fetch_cli,
    partition_manifests,
)
from support.live_archiving import broker_offsets
from support.live_workload import LiveWorkload
from support.real_kafka import broker_down, running_cluster, unique_name
from typer.testing import CliRunner

from segment_lib.checkpoints import read_leader_epoch_checkpoint
from segment_lib.log_file import decode_batch, iter_batches
from segment_lib.txn_index import parse_txn_index, read_txn_index

pytestmark = pytest.mark.timeout(900)

CLUSTER = "fetched-wl"
PLAIN_ROLES = ("codec-none", "codec-gzip", "codec-snappy", "codec-lz4", "codec-zstd", "logappend")


@dataclass
class Fetched:
    cluster: LocalKafkaCluster
    wl: LiveWorkload
    store: LocalStore
    tmp: Path
    #: (topic, partition) -> high watermark the final run reached
    hw: dict[tuple[str, int], int]
    #: (topic, partition) -> leader now (the broker files compared)
    leaders: dict[tuple[str, int], int]
    #: the partitions whose leader was stopped mid-run
    moved: set[tuple[str, int]]
    continuous: FetchReport


def _leaders(bootstrap: str, topics: list[str]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> leader (asked again while a broker is down or moving)."""
    deadline = time.monotonic() + 60
    while True:
        client = ProtocolClient(
            {"bootstrap.servers": bootstrap}, client_id="fetch-wl-test", timeout_ms=5_000
        )
        try:
            return {(t, p): n for t in topics for p, n in client.leaders(t).items()}
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
        finally:
            client.close()


def _run_workload(cluster: LocalKafkaCluster, tmp: Path) -> Fetched:
    bootstrap = cluster.bootstrap_servers
    prefix = unique_name("fwl")
    wl = LiveWorkload(bootstrap, prefix=prefix, partitions=2, segment_ms=1500, seed=23)
    wl.create_topics()
    topics = list(wl.topics.values())
    store = LocalStore(tmp / "store")
    stop = threading.Event()
    result: dict[str, Any] = {}

    def archiver() -> None:
        source = KafkaFetchSource({"bootstrap.servers": bootstrap}, timeout_ms=10_000)
        try:
            result["report"] = run_fetch_archive(
                cluster=CLUSTER,
                source=source,
                store=store,
                options=FetchOptions(
                    topics=(f"{prefix}-*", "__consumer_offsets"),
                    max_wait_ms=200,
                    metadata_max_age_s=1.0,
                ),
                stop=stop,
            )
        except BaseException as exc:  # reported below
            result["error"] = exc
        finally:
            source.close()

    _leaders(bootstrap, topics)  # the new topics are in Metadata (the run selects from it)
    thread = threading.Thread(target=archiver, name="fetch-archiver", daemon=True)
    thread.start()
    wl.run_for(8.0)
    before = _leaders(bootstrap, topics)
    victim = max(set(before.values()), key=lambda n: list(before.values()).count(n))
    moved = {tp for tp, n in before.items() if n == victim}
    with broker_down(cluster, victim):
        deadline = time.monotonic() + 60
        while any(_leaders(bootstrap, topics)[tp] == victim for tp in moved):
            assert time.monotonic() < deadline, "the leaders did not move"
            time.sleep(0.5)
        # records under the new leaders (new epochs), every codec's topic
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        for i, (topic, part) in enumerate(itertools.product(topics, range(2))):
            for j in range(30):
                producer.produce(topic, b"after-%d-%d" % (i, j), b"k%d" % (j % 16), part)
        assert producer.flush(60) == 0
        time.sleep(3.0)  # the archiver fetches from the new leaders
    wl.seal()
    time.sleep(3.0)
    stop.set()
    thread.join(120)
    assert not thread.is_alive(), "the archiver did not stop"
    assert "error" not in result, result.get("error")
    continuous: FetchReport = result["report"]
    assert continuous.ok, [p.error for p in continuous.partitions if p.error]
    final = fetch_cli(CLUSTER, bootstrap, store.uri, f"{prefix}-*", "__consumer_offsets")
    assert final["ok"] and not final["holes"], final
    hw = {
        (r["topic"], r["partition"]): r["high_watermark"]
        for r in final["partitions"]
        if r["topic"].startswith(prefix)
    }
    return Fetched(cluster, wl, store, tmp, hw, _leaders(bootstrap, topics), moved, continuous)


@pytest.fixture(scope="module", params=["current", "3.9"])
def fetched(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fetched]:
    tmp = tmp_path_factory.mktemp(f"fetch-wl-{request.param}")
    if request.param == "current":
        yield _run_workload(request.getfixturevalue("kafka_cluster"), tmp)
        return
    with running_cluster("3.9.1", 3) as cluster:
        yield _run_workload(cluster, tmp)


def test_the_run_crossed_a_leader_change(fetched: Fetched) -> None:
    assert fetched.moved and fetched.wl.stats.transactions_aborted > 0
    for tp in fetched.moved:
        assert fetched.hw[tp] > 0
    # the continuous run fetched from the new leaders (its report names each partition once)
    assert {p.topic for p in fetched.continuous.partitions} >= set(fetched.wl.topics.values())


def test_every_batch_is_the_brokers_and_epochs_and_aborts_match(fetched: Fetched) -> None:
    """(a) and (b)."""
    store, hw, wl = fetched.store, fetched.hw, fetched.wl
    compacted = wl.topics["compacted"]
    compared = records = 0
    aborted_ours: set[tuple[int, int, int, int]] = set()
    aborted_broker: set[tuple[int, int, int, int]] = set()
    epochs_seen = 0
    for (topic, part), end in sorted(hw.items()):
        ms = partition_manifests(store, CLUSTER, topic, part)
        assert ms and all(m.origin == "fetch" for m in ms), (topic, part)
        assert ms[0].base_offset == 0 and ms[-1].end_offset == end, (topic, part)
        for a, b in itertools.pairwise(ms):
            assert a.end_offset == b.base_offset, (topic, part, a.end_offset, b.base_offset)
        pdir = fetched.cluster.log_dirs[fetched.leaders[(topic, part)]] / f"{topic}-{part}"
        ours = archived_batches(store, ms)
        broker = broker_batches(pdir)
        if topic == compacted:
            held = _records(broker.values(), end)
            archived = _records(ours.values(), end)
            assert held.items() <= archived.items(), (topic, part)
            records += len(held)
        else:
            assert set(ours) == {o for o in broker if o < end}, (topic, part)
            for base, data in ours.items():
                assert broker[base] == data, (topic, part, base)
                compared += 1
        # (b) the leader epochs: the broker's checkpoint entries below the end
        theirs = [
            (e.epoch, e.start_offset)
            for e in read_leader_epoch_checkpoint(pdir / "leader-epoch-checkpoint")
            if e.start_offset < end
        ]
        mine = sorted({(e.epoch, e.start_offset) for m in ms for e in m.leader_epochs})
        if topic != compacted:  # the cleaner may drop an epoch's first batches
            assert mine == theirs, (topic, part)
        if (topic, part) in fetched.moved:
            assert len(mine) >= 2, (topic, part, mine)
            epochs_seen += 1
        for m in ms:
            txn = m.file("txnindex")
            if txn is not None:
                aborted_ours |= {
                    (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
                    for a in parse_txn_index(store.get_bytes(txn.key), m.base_offset).entries
                }
        for path in sorted(pdir.glob("*.txnindex")):
            aborted_broker |= {
                (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
                for a in read_txn_index(path).entries
                if a.last_offset < end
            }
    assert compared > 200 and records > 0 and epochs_seen
    assert aborted_broker and aborted_ours == aborted_broker


def _records(batches: Any, end: int) -> dict[int, tuple[bytes | None, bytes | None]]:
    """offset -> (key, value) of the data records below ``end``."""
    out: dict[int, tuple[bytes | None, bytes | None]] = {}
    for data in batches:
        view = memoryview(data)
        for h in iter_batches(view):
            if h.is_control:
                continue
            for r in decode_batch(view, h):
                if r.offset < end:
                    out[r.offset] = (r.key, r.value)
    return out


def _catalog(fetched: Fetched) -> str:
    db = fetched.tmp / "catalog.db"
    if not db.exists():
        _register_groups()
        out = CliRunner().invoke(
            app,
            [
                "catalog", "build", "--engine", "in-process", "--json",
                "--store", fetched.store.uri, "--db", str(db),
            ],
        )  # fmt: skip
        assert out.exit_code == 0, out.output
    return str(db)


def test_catalog_offsets_equal_list_offsets(fetched: Fetched) -> None:
    """(c), every topic but the compacted one (its log is rewritten after the archive)."""
    db, wl = _catalog(fetched), fetched.wl
    rng = random.Random(3)
    queries: list[tuple[str, int, int]] = []
    for role in (*PLAIN_ROLES, "txn"):
        for part in range(2):
            topic = wl.topics[role]
            stamps = [r.timestamp for r in wl.records_of(topic, part)]
            queries += [(topic, part, ts + d) for ts in rng.sample(stamps, 6) for d in (-1, 0, 1)]
    answers = broker_offsets(fetched.cluster.bootstrap_servers, queries)
    cat = open_catalog(db)
    try:
        wrong = []
        for topic, part, ts in queries:
            (ans,) = offsets_for_time(cat, fetched.store, CLUSTER, topic, ts, [part])
            if ans.offset != answers[(topic, part, ts)]:
                wrong.append((topic, part, ts, ans.offset, answers[(topic, part, ts)]))
    finally:
        cat.close()
    assert wrong == []


def test_a_replay_equals_read_committed(fetched: Fetched) -> None:
    """(d) every topic but the compacted one, replayed into fresh topics."""
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
    from kafka_archive.replay.planning.plan import (
        ReplaySpec,
        TargetSpec,
        build_plan,
        parse_position,
    )
    from kafka_archive.replay.runner import execute
    from kafka_archive_dev.embedded_kafka import read_to_end

    db, wl, hw = _catalog(fetched), fetched.wl, fetched.hw
    bootstrap = fetched.cluster.bootstrap_servers
    cat = open_catalog(db)
    try:
        for role in (*PLAIN_ROLES, "txn"):
            topic = wl.topics[role]
            target = fetched.cluster.create_topic(unique_name("fwl-replayed"), 2)
            spec = ReplaySpec.model_validate(
                {
                    "cluster": CLUSTER,
                    "topic": topic,
                    "from": parse_position("earliest"),
                    "target": TargetSpec(bootstrap_servers=bootstrap),
                    "target_topic": target,
                }
            )
            report = execute(
                build_plan(spec, CatalogPlanSource(cat, fetched.store)), store=fetched.store
            )
            assert report.status == "complete", topic
            got = read_to_end(bootstrap, target, [0, 1], timeout_s=90)
            want = read_to_end(bootstrap, topic, [0, 1], timeout_s=90)
            for p in (0, 1):
                assert [(r.timestamp, r.key, r.value, r.headers) for r in got[p]] == [
                    (r.timestamp, r.key, r.value, r.headers)
                    for r in want[p]
                    if r.offset < hw[(topic, p)]
                ], (topic, p)
    finally:
        cat.close()


def test_group_offsets_from_the_fetched_consumer_offsets(fetched: Fetched) -> None:
    """(e) the groups' offsets now, from the catalog of the fetch-made archive (the fetched
    ``__consumer_offsets``), equal the broker's answer."""
    db, wl = _catalog(fetched), fetched.wl
    admin = AdminClient({"bootstrap.servers": fetched.cluster.bootstrap_servers})
    at = int(time.time() * 1000)
    _register_groups()
    checked = 0
    for group in (wl.group_plain, wl.group_txn):
        fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
        broker = {(tp.topic, tp.partition): tp.offset for tp in fut.result(30).topic_partitions}
        assert broker, group
        args = ["catalog", "group-offsets", "--cluster", CLUSTER, "--group", group]
        res = CliRunner().invoke(app, [*args, "--at", str(at), "--db", db, "--json"])
        assert res.exit_code == 0, res.output
        ours = {
            (o["topic"], o["partition"]): o["offset"] for o in map(json.loads, res.stdout.split())
        }
        assert ours == broker, group
        checked += len(ours)
    assert checked >= 2


def test_export_holds_the_committed_records(fetched: Fetched) -> None:
    """(f) ``export`` (Spark local) of the transactional topic from the fetch-made archive."""
    import pyarrow.dataset as ds

    db, wl, hw = _catalog(fetched), fetched.wl, fetched.hw
    topic = wl.topics["txn"]
    out = fetched.tmp / "export"
    # in a process of its own: Spark's JVM started in the test process would stay there for
    # the rest of the session, without the settings later Spark tests start theirs with (S3
    # credentials for its Python workers, Iceberg's jars)
    import subprocess
    import sys

    res = subprocess.run(
        [
            str(Path(sys.executable).parent / "kafka-archive"),
            "export", "--cluster", CLUSTER, "--store", fetched.store.uri, "--db", db,
            "--topic", topic, "--from", "earliest", "--output", str(out),
            "--spark-master", "local[1]", "--json",
        ],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    from kafka_archive_dev.embedded_kafka import read_to_end

    table = ds.dataset(str(out), format="parquet").to_table(
        columns=["partition", "offset", "key", "value"]
    )
    rows = sorted(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))
    seen = read_to_end(fetched.cluster.bootstrap_servers, topic, [0, 1], timeout_s=90)
    want = sorted(
        (p, r.offset, r.key, r.value)
        for p, rs in seen.items()
        for r in rs
        if r.offset < hw[(topic, p)]
    )
    assert rows == want and len(want) > len(wl.committed_records(topic)) // 2 > 0
