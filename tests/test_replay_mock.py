"""Replay end to end against librdkafka's mock cluster as the target.

Source: writer-made partitions (commits, aborts, an open transaction, LogAppendTime, every codec,
headers) archived by the archiver and cataloged by the catalog build. Expected records come from
the write events (tests/support/replay_data.py). The target is read back with a confluent-kafka
consumer; where transactions were aborted or left open on the target (faults), the mock's
consumers also show that data (see tests/support/kafka_mock.py), so those tests check the
committed view rebuilt from the raw log with the broker's rule.
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
from kafka_archive.archive.runner import run_archive
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.cli import app
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.errors import PartitionMappingError, SameTopicError
from kafka_archive.replay.execution.progress import load_progress, progress_key, progress_partition
from kafka_archive.replay.execution.reader import RawBatch
from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, build_plan, parse_position
from kafka_archive.replay.runner import check_target, execute
from kafka_archive.store import ObjectStore, open_store
from kafka_archive_dev.embedded_kafka import ConsumedRecord, read_to_end
from kafka_archive_dev.writer.broker_writer import BrokerWriter
from support.cli_json import cli
from typer.testing import CliRunner

from segment_lib.consumer_offsets import partition_for_group
from segment_lib.log_file import decode_batch, iter_batches
from tests.support.kafka_mock import (
    MarkerAwareReader,
    MockCluster,
    committed_records,
    raw_log,
)
from tests.support.replay_data import Expected, SourcePartition, write_source_topic

CLUSTER = "east"
TOPIC = "orders"
PROGRESS = "__kafka_archive_replay_progress"
REPO = Path(__file__).resolve().parent.parent
GROUP_COMMITS = {0: 30, 1: 61, 2: 95}

pytestmark = pytest.mark.timeout(300)


@dataclass
class Source:
    parts: dict[int, SourcePartition]
    store: ObjectStore
    store_uri: str
    db_url: str
    catalog: Catalog
    partition_dirs: dict[int, Path]


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    root = tmp_path_factory.mktemp("replay-mock")
    broker = BrokerWriter(root / "b1", 1, cluster_id="src-cluster-id", offsets_partitions=5)
    parts = write_source_topic(root, TOPIC, 3, seed=5, log_append_time_partition=2, broker=broker)
    broker.commit_offsets("billing", {(TOPIC, p): off for p, off in GROUP_COMMITS.items()})
    # roll __consumer_offsets so the commit is in an archivable (rolled) segment
    broker.consumer_offsets(partition_for_group("billing", 5)).roll()
    broker.close()
    store = open_store(str(root / "store"))
    report = run_archive(
        cluster=CLUSTER, broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store
    )
    assert report.segments_archived > 0
    db_url = f"sqlite:///{root / 'catalog.db'}"
    catalog = open_catalog(db_url, create=True)
    build_catalog(catalog, store.uri, cluster=CLUSTER)
    yield Source(parts, store, store.uri, db_url, catalog, {p: sp.dir for p, sp in parts.items()})
    catalog.close()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    mc = MockCluster(3)
    mc.create_topic(PROGRESS, 6)
    yield mc
    mc.close()


_counter = [0]


def fresh_topic(mock: MockCluster, partitions: int = 3) -> str:
    _counter[0] += 1
    name = f"replayed-{_counter[0]}"
    mock.create_topic(name, partitions)
    return name


def run_args(src: Source, mock: MockCluster, target_topic: str, *extra: str) -> list[str]:
    return [
        "replay", "run", "--cluster", CLUSTER, "--topic", TOPIC, "--from", "earliest",
        "--target", mock.bootstrap_servers, "--target-topic", target_topic,
        "--store", src.store_uri, "--db", src.db_url, "--json", *extra,
    ]  # fmt: skip


def view(e: Expected | ConsumedRecord) -> tuple[Any, ...]:
    return (e.timestamp, e.key, e.value, tuple(e.headers))


def strip_provenance(s: ConsumedRecord) -> tuple[Any, ...]:
    return (
        s.timestamp,
        s.key,
        s.value,
        tuple(h for h in s.headers if h[0] != "kafka-archive.source"),
    )


# -- the mock's limits, which shape these tests ---------------------------------------------


def test_mock_cluster_limits(mock: MockCluster) -> None:
    """The assumptions behind the committed-view checks: the mock's read_committed consumers
    see aborted transactional data, and the raw log's markers tell the truth."""
    topic = fresh_topic(mock, 1)
    p = Producer({"bootstrap.servers": mock.bootstrap_servers, "transactional.id": f"lim-{topic}"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"kept", partition=0)
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"aborted", partition=0)
    p.flush(30)
    p.abort_transaction(30)
    seen = [s.value for s in read_to_end(mock.bootstrap_servers, topic, [0])[0]]
    assert seen == [b"kept", b"aborted"]  # read_committed on the mock: aborted data visible
    assert [s.value for s in committed_records(mock.bootstrap_servers, topic, 0)] == [b"kept"]


# -- happy paths ----------------------------------------------------------------------------


def test_replay_same_partition_exact(src: Source, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    code, out, text = cli(*run_args(src, mock, target))
    assert code == 0, text
    report = out[-1]
    total = sum(len(sp.expected) for sp in src.parts.values())
    assert report["records_sent"] == total == report["records_sent_this_run"]
    assert report["skipped_aborted_records"] == sum(sp.aborted_records for sp in src.parts.values())
    assert report["open_txn_records"] == sum(sp.open_records for sp in src.parts.values())
    assert report["skipped_control_batches"] > 0
    got = read_to_end(mock.bootstrap_servers, target, [0, 1, 2])
    for p, sp in src.parts.items():
        row = report["partitions"][str(p)]
        assert row["records"] == len(sp.expected)
        assert row["first_offset"] == sp.expected[0].offset
        assert row["last_offset"] == sp.expected[-1].offset
        # keys, values, headers, timestamps (LogAppendTime kept as CreateTime), order
        assert [view(s) for s in got[p]] == [view(e) for e in sp.expected]
        # no aborted data on the target: the consumer's view is the committed one
        assert [view(s) for s in committed_records(mock.bootstrap_servers, target, p)] == [
            view(e) for e in sp.expected
        ]
    # offset map: compact (not one row per message) and complete
    ledger = ReplayLedger(src.catalog.engine)
    ranges = ledger.ranges(report["replay_id"])
    assert sum(r.count for r in ranges) == total
    assert len(ranges) < total / 3
    for r in ranges:
        assert r.target_partition == r.source_partition
        if r.source_last - r.source_first == r.count - 1:
            assert r.target_last - r.target_first == r.count - 1


def test_rerun_is_noop_and_force_replays(src: Source, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    args = run_args(src, mock, target, "--to", "offset:60", "--partitions", "0,1")
    code, out, text = cli(*args)
    assert code == 0, text
    first = out[-1]
    code, out, text = cli(*args)
    assert code == 0, text
    again = out[-1]
    assert again["replay_id"] == first["replay_id"]
    assert again["status"] == "already-done" and again["records_sent_this_run"] == 0
    assert (
        sum(len(v) for v in read_to_end(mock.bootstrap_servers, target, [0, 1]).values())
        == (first["records_sent"])
    )
    code, out, text = cli(*args, "--force")
    assert code == 0, text
    forced = out[-1]
    assert forced["replay_id"] != first["replay_id"]
    assert forced["records_sent_this_run"] == first["records_sent"]
    got = read_to_end(mock.bootstrap_servers, target, [0, 1])
    assert sum(len(v) for v in got.values()) == 2 * first["records_sent"]


@pytest.mark.parametrize("mapping", ["murmur2", "round-robin"])
def test_hashed_mappings(src: Source, mock: MockCluster, mapping: str) -> None:
    from kafka.partitioner.default import murmur2 as kp_murmur2  # independent reference

    n = 5
    target = fresh_topic(mock, n)
    code, out, text = cli(
        *run_args(src, mock, target, "--partition-mapping", mapping, "--provenance-headers")
    )
    assert code == 0, text
    got = read_to_end(mock.bootstrap_servers, target, list(range(n)))
    placed: dict[tuple[int, int], int] = {}
    for q, records in got.items():
        prev: dict[int, int] = {}
        for s in records:
            prov = dict(s.headers)["kafka-archive.source"].decode()
            cluster, topic, sp, so = prov.rsplit("/", 3)
            assert (cluster, topic) == (CLUSTER, TOPIC)
            sp_i, so_i = int(sp), int(so)
            placed[(sp_i, so_i)] = q
            # per (source partition -> target partition) order is the source order
            assert so_i > prev.get(sp_i, -1)
            prev[sp_i] = so_i
    expected_total = 0
    for p, sp in src.parts.items():
        for e in sp.expected:
            expected_total += 1
            if mapping == "murmur2":
                want = (kp_murmur2(e.key) & 0x7FFFFFFF) % n if e.key is not None else p % n
            else:
                want = (e.offset + p) % n
            assert placed[(p, e.offset)] == want
    assert len(placed) == expected_total == out[-1]["records_sent"]


def test_time_range_key_filter_provenance(src: Source, mock: MockCluster) -> None:
    sp = src.parts[1]
    t_from = sp.expected[20].timestamp
    t_to = sp.expected[150].timestamp
    target = fresh_topic(mock)
    code, out, text = cli(
        "replay", "run", "--cluster", CLUSTER, "--topic", TOPIC, "--partitions", "1",
        "--from", str(t_from), "--to", str(t_to), "--key-filter", "prefix:p1r1",
        "--provenance-headers", "--target", mock.bootstrap_servers, "--target-topic", target,
        "--store", src.store_uri, "--db", src.db_url, "--json",
    )  # fmt: skip
    assert code == 0, text
    # ListOffsets semantics over every data record of the source partition (brute force)
    all_records = _source_records(src.partition_dirs[1])
    start = min(o for o, ts in all_records if ts >= t_from)
    end = min(o for o, ts in all_records if ts >= t_to)
    want = [
        e for e in sp.expected if start <= e.offset < end and e.key and e.key.startswith(b"p1r1")
    ]
    assert want
    got = read_to_end(mock.bootstrap_servers, target, [1])[1]
    assert [strip_provenance(s) for s in got] == [view(e) for e in want]
    assert [dict(s.headers)["kafka-archive.source"] for s in got] == [
        f"{CLUSTER}/{TOPIC}/1/{e.offset}".encode() for e in want
    ]
    assert out[-1]["filtered_records"] > 0


def _source_records(partition_dir: Path) -> list[tuple[int, int]]:
    out = []
    for log in sorted(partition_dir.glob("*.log")):
        data = log.read_bytes()
        for h in iter_batches(data):
            if not h.is_control:
                out += [(r.offset, r.timestamp) for r in decode_batch(data, h)]
    return out


def test_dry_run_prints_plan_and_sends_nothing(src: Source, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    code, out, text = cli(*run_args(src, mock, target, "--dry-run", "--from", "offset:10"))
    assert code == 0, text
    plan = out[-1]
    assert plan["dry_run"] is True and plan["records_sent"] == 0
    for p, sp in src.parts.items():
        row = plan["partitions"][str(p)]
        assert row["start_offset"] == 10 and row["end_offset"] == sp.log_end_offset
        assert row["objects"] and row["bytes"] > 0
        assert all(o["key"].startswith(f"{CLUSTER}/{TOPIC}/{p}/") for o in row["objects"])
    assert all(not v for v in read_to_end(mock.bootstrap_servers, target, [0, 1, 2]).values())


def table_rows(text: str) -> list[list[str]]:
    """The cells of every row of the rich tables in ``text``."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines() if "│" in line]


def test_tables_for_people(src: Source, mock: MockCluster) -> None:
    """Without ``--json``: the dry run's table and object lines carry the plan's numbers, and
    the run's report table carries each partition's offsets and counts."""
    target = fresh_topic(mock)
    human = [a for a in run_args(src, mock, target) if a != "--json"]
    wide = {"COLUMNS": "250"}
    _, out, _ = cli(*run_args(src, mock, target, "--dry-run"))
    plan = out[-1]["partitions"]
    shown = CliRunner().invoke(app, [*human, "--dry-run"], env=wide)
    assert shown.exit_code == 0, shown.stdout
    assert "end offset (excl.)" in shown.stdout and "(dry run)" in shown.stdout
    for p, row in plan.items():
        cells = [p, row["start_offset"], row["end_offset"], row["records"], row["bytes"]]
        assert [*map(str, cells), str(len(row["objects"]))] in table_rows(shown.stdout), p
        for obj in row["objects"]:
            assert f"  p{p}: {obj['key']} bytes [{obj['start']}, {obj['end']})" in shown.stdout
    done = CliRunner().invoke(app, human, env=wide)
    assert done.exit_code == 0, done.stdout
    _, out, _ = cli(*run_args(src, mock, target))  # the finished replay's report, once more
    for p, row in out[-1]["partitions"].items():
        cells = [p, row["first_offset"], row["last_offset"], row["records"], row["records"]]
        assert [*map(str, cells)] in [r[:5] for r in table_rows(done.stdout)], (p, done.stdout)
    assert "records sent this run" in done.stdout


# -- guard rails ----------------------------------------------------------------------------


def test_guard_rails(src: Source, mock: MockCluster) -> None:
    code, out, _ = cli(*run_args(src, mock, "does-not-exist"))
    assert code == 1 and out[-1]["error"] == "TargetTopicMissingError"
    code, out, _ = cli(*run_args(src, mock, "does-not-exist-2", "--create-topic"))
    # the mock implements no CreateTopics: the failure is reported, not hidden
    assert code == 1 and "creating does-not-exist-2 with 3 partitions" in out[-1]["message"]
    small = fresh_topic(mock, 2)
    code, out, _ = cli(*run_args(src, mock, small))
    assert code == 1 and out[-1]["error"] == "PartitionMappingError"
    code, out, _ = cli(*run_args(src, mock, small, "--partition-mapping", "murmur2", "--dry-run"))
    assert code == 0
    code, out, _ = cli(*[a if a != TOPIC else "nope" for a in run_args(src, mock, small)])
    assert code == 1 and out[-1]["error"] == "UnknownTopicError"
    code, out, _ = cli(*run_args(src, mock, small, "--from", "latest"))
    assert code == 1 and out[-1]["error"] == "EmptyRangeError"
    code, out, _ = cli(*run_args(src, mock, small, "--from", "offset:50", "--to", "offset:10"))
    assert code == 1 and "inverted" in out[-1]["message"]
    # same cluster + topic
    source = CatalogPlanSource(src.catalog, src.store)
    spec = ReplaySpec.model_validate(
        {"cluster": CLUSTER, "topic": TOPIC, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers=mock.bootstrap_servers)}
    )  # fmt: skip
    mock.create_topic(TOPIC, 3)
    plan = build_plan(spec, source)
    assert plan.source_cluster_id == "src-cluster-id"
    check_target(plan)  # another cluster (the mock's id differs): allowed
    mock_id = (
        Consumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": "x"})
        .list_topics(timeout=10)
        .cluster_id
    )
    same = plan.model_copy(update={"source_cluster_id": mock_id})
    with pytest.raises(SameTopicError):
        check_target(same)
    with pytest.raises(SameTopicError, match="does not record"):
        check_target(plan.model_copy(update={"source_cluster_id": None}))
    allowed = same.with_target(same.spec.target).model_copy(
        update={"spec": same.spec.model_copy(update={"allow_same_topic": True})}
    )
    check_target(allowed)
    with pytest.raises(PartitionMappingError):
        check_target(
            plan.model_copy(update={"spec": plan.spec.model_copy(update={"target_topic": small})})
        )


def test_same_topic_guard_with_blank_or_unknown_cluster_ids(src: Source, mock: MockCluster) -> None:
    """An empty ``cluster.id=`` in the archived meta.properties is an *unknown* identity: the
    same-topic guard refuses instead of comparing "" with the target's cluster id."""
    if (
        TOPIC
        not in Consumer({"bootstrap.servers": mock.bootstrap_servers, "group.id": "x"})
        .list_topics(timeout=10)
        .topics
    ):
        mock.create_topic(TOPIC, 3)
    spec = ReplaySpec.model_validate(
        {"cluster": CLUSTER, "topic": TOPIC, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers=mock.bootstrap_servers)}
    )  # fmt: skip
    plan = build_plan(spec, CatalogPlanSource(src.catalog, src.store))
    for blank in ("", "  "):
        with pytest.raises(SameTopicError, match="does not record"):
            check_target(plan.model_copy(update={"source_cluster_id": blank}))


def test_unknown_target_config_key_is_a_clear_error(src: Source, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    code, out, text = cli(*run_args(src, mock, target, "--target-config", "bogus.key=1"))
    assert code == 1, text
    assert out[-1]["error"] == "ReplayConfigError"
    assert "bogus.key" in out[-1]["message"] and "Traceback" not in text
    # a bad value of a known setting: the same clear error
    code, out, text = cli(*run_args(src, mock, target, "--target-config", "security.protocol=NOPE"))
    assert code == 1 and out[-1]["error"] == "ReplayConfigError", text
    assert "security.protocol" in out[-1]["message"]


def test_dead_target_one_clear_error_with_librdkafka_summary(
    src: Source, capfd: pytest.CaptureFixture[str]
) -> None:
    """librdkafka's own lines ("Connect to ipv4#127.0.0.1:1 failed") are captured and
    summarised in the one error, not printed to the terminal (stderr) as they happen."""
    code, out, text = cli(
        "replay", "run", "--cluster", CLUSTER, "--topic", TOPIC, "--from", "earliest",
        "--target", "127.0.0.1:1", "--target-topic", "t",
        "--store", src.store_uri, "--db", src.db_url, "--json",
    )  # fmt: skip
    assert code == 1, text
    err = out[-1]
    assert err["error"] == "ReplayTargetError"
    assert "cannot reach the target cluster" in err["message"]
    assert "librdkafka reported" in err["message"] and "127.0.0.1:1" in err["message"]
    streamed = capfd.readouterr()
    assert "Connect to ipv4#127.0.0.1:1" not in streamed.err + streamed.out


# -- consumer groups ------------------------------------------------------------------------


def _position_by_provenance(records: list[ConsumedRecord], source_offset: int) -> int:
    for s in records:
        so = int(dict(s.headers)["kafka-archive.source"].decode().rsplit("/", 1)[1])
        if so >= source_offset:
            return s.offset
    return records[-1].offset + 1


def test_translate_group_from_archived_commits_and_at_time(src: Source, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    code, out, text = cli(*run_args(src, mock, target, "--provenance-headers"))
    assert code == 0, text
    replay_id = out[-1]["replay_id"]
    got = read_to_end(mock.bootstrap_servers, target, [0, 1, 2])
    base = ["--cluster", CLUSTER, "--topic", TOPIC, "--replay", replay_id,
            "--store", src.store_uri, "--db", src.db_url, "--json"]  # fmt: skip
    code, out, text = cli("replay", "translate-group", "--group", "billing", "--apply", *base)
    assert code == 0, text
    positions = {row["partition"]: row["offset"] for row in out}
    for p, s in GROUP_COMMITS.items():
        assert positions[p] == _position_by_provenance(got[p], s)
    consumer = Consumer(
        {
            "bootstrap.servers": mock.bootstrap_servers,
            "group.id": "billing",
            "enable.auto.commit": False,
        }
    )
    committed = consumer.committed([TopicPartition(target, p) for p in range(3)], timeout=10)
    consumer.close()
    assert {tp.partition: tp.offset for tp in committed} == positions
    # --at TIME: a new group gets everything from that moment on
    t = src.parts[0].expected[100].timestamp
    code, out, text = cli("replay", "translate-group", "--group", "fresh", "--at", str(t), *base)
    assert code == 0, text
    for row in out:
        p = row["partition"]
        records = _source_records(src.partition_dirs[p])
        cands = [o for o, ts in records if ts >= t]
        s = min(cands) if cands else src.parts[p].log_end_offset
        assert row["offset"] == _position_by_provenance(got[p], s)
        assert row["applied"] is False


def test_translate_group_refuses_an_active_group(src: Source, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    code, out, _ = cli(*run_args(src, mock, target, "--partitions", "0", "--to", "offset:40"))
    assert code == 0
    replay_id = out[-1]["replay_id"]
    member = Consumer(
        {
            "bootstrap.servers": mock.bootstrap_servers,
            "group.id": "busy",
            "session.timeout.ms": 6000,
        }
    )
    member.subscribe([target])
    deadline = time.monotonic() + 20
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.2)
    try:
        assert member.assignment()
        code, out, _ = cli(
            "replay", "translate-group", "--group", "busy", "--at", "earliest-is-not-a-time",
            "--cluster", CLUSTER, "--topic", TOPIC, "--replay", replay_id,
            "--store", src.store_uri, "--db", src.db_url, "--json",
        )  # fmt: skip
        assert code == 2  # a bad time is a usage error
        code, out, _ = cli(
            "replay", "translate-group", "--group", "busy", "--at", "0", "--apply",
            "--cluster", CLUSTER, "--topic", TOPIC, "--replay", replay_id,
            "--store", src.store_uri, "--db", src.db_url, "--json",
        )  # fmt: skip
        assert code == 1 and "active" in out[-1]["message"]
    finally:
        member.close()


# -- faults ---------------------------------------------------------------------------------


def _plan(src: Source, mock: MockCluster, target: str, **kw: Any) -> Any:
    spec = ReplaySpec.model_validate(
        {"cluster": CLUSTER, "topic": TOPIC, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers=mock.bootstrap_servers), "target_topic": target,
         "txn_max_records": 40, **kw}
    )  # fmt: skip
    return build_plan(spec, CatalogPlanSource(src.catalog, src.store))


def _assert_exactly_once(src: Source, mock: MockCluster, target: str) -> None:
    for p, sp in src.parts.items():
        committed = committed_records(mock.bootstrap_servers, target, p)
        assert [view(s) for s in committed] == [view(e) for e in sp.expected], f"partition {p}"


def test_full_producer_queue_mid_batch(
    src: Source, mock: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A producer queue of 5 messages: produce() raises BufferError inside nearly every source
    batch, on the streaming path (whole batches emitted from the bytes) and on the decoded one
    (provenance headers); each resumes at the record that was refused - nothing lost, nothing
    twice, order kept."""
    resumed: list[int] = []
    emit = RawBatch.emit

    def counting_emit(self: RawBatch, *a: Any, **kw: Any) -> Any:
        if kw.get("start"):
            resumed.append(kw["start"])
        return emit(self, *a, **kw)

    monkeypatch.setattr(RawBatch, "emit", counting_emit)
    for kw in ({}, {"provenance_headers": True}):
        target = fresh_topic(mock)
        plan = _plan(src, mock, target, txn_max_records=10_000, **kw)
        report = execute(
            plan,
            store=src.store,
            committed_reader=MarkerAwareReader(mock.bootstrap_servers),
            producer_config={"queue.buffering.max.messages": 5},
        )
        assert report.records_sent == sum(len(sp.expected) for sp in src.parts.values())
        for p, sp in src.parts.items():
            committed = committed_records(mock.bootstrap_servers, target, p)
            assert [strip_provenance(s) for s in committed] == [view(e) for e in sp.expected]
        # the streaming path was taken, and resumed mid-batch (only without provenance)
        assert bool(resumed) == (not kw)
        resumed.clear()


def test_target_brokers_down_mid_replay(src: Source, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    plan = _plan(src, mock, target)
    fired = threading.Event()
    timers: list[threading.Timer] = []

    def hook(point: str, info: dict[str, Any]) -> None:
        if point == "produced" and not fired.is_set():
            fired.set()
            for b in mock.broker_ids:
                mock.broker_down(b)

            def up() -> None:
                for b in mock.broker_ids:
                    mock.broker_up(b)

            timer = threading.Timer(2.5, up)
            timers.append(timer)
            timer.start()

    ledger = ReplayLedger(src.catalog.engine)
    report = execute(
        plan,
        store=src.store,
        ledger=ledger,
        committed_reader=MarkerAwareReader(mock.bootstrap_servers),
        hook=hook,
    )
    assert fired.is_set()
    for timer in timers:
        timer.join()
    assert report.records_sent == sum(len(sp.expected) for sp in src.parts.values())
    _assert_exactly_once(src, mock, target)


def _child(plan_file: Path, src: Source, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.support.replay_child", str(plan_file), src.store_uri,
         src.db_url, *extra],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("point", "nth"),
    [
        ("produced", 3),  # data in flight, transaction open
        ("before_progress", 2),  # data flushed, no progress record yet
        ("before_commit", 2),  # data and progress produced, not committed
        ("after_commit", 2),  # committed on the target, catalog not updated
        ("after_catalog", 3),  # committed and mirrored
    ],
)
def test_killed_mid_replay_then_resumed(
    src: Source, mock: MockCluster, tmp_path: Path, point: str, nth: int
) -> None:
    target = fresh_topic(mock)
    plan = _plan(src, mock, target)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.to_json(redact=False))
    killed = _child(plan_file, src, "--kill-at", point, "--nth", str(nth), "--parallelism", "1")
    assert killed.returncode == -9, killed.stderr[-2000:]
    ledger = ReplayLedger(src.catalog.engine)
    before = {p.source_partition: p.txn_seq for p in ledger.all_progress(plan.replay_id)}
    kafka_seq = {}
    for p in range(3):
        key = progress_key(plan.replay_id, p)
        record, _off = load_progress(
            MarkerAwareReader(mock.bootstrap_servers), PROGRESS, progress_partition(key, 6), key
        )
        kafka_seq[p] = record.txn_seq if record else 0
    if point == "after_commit":
        # Kafka (authoritative) is one transaction ahead of the catalog for the killed partition
        assert any(kafka_seq[p] == before.get(p, 0) + 1 for p in range(3)), (kafka_seq, before)
    else:
        assert all(kafka_seq[p] == before.get(p, 0) for p in range(3)), (kafka_seq, before)
    resumed = _child(plan_file, src)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    report = json.loads(resumed.stdout.strip().splitlines()[-1])
    total = sum(len(sp.expected) for sp in src.parts.values())
    assert report["records_sent"] == total
    assert report["records_sent_this_run"] < total or point == "produced"
    _assert_exactly_once(src, mock, target)
    # the catalog mirror is complete again: progress done, ranges cover every record once
    progress = ledger.all_progress(plan.replay_id)
    assert all(p.done for p in progress) and len(progress) == 3
    assert sum(r.count for r in ledger.ranges(plan.replay_id)) == total


def test_killed_at_random_times(src: Source, mock: MockCluster, tmp_path: Path) -> None:
    rng = random.Random(41)
    target = fresh_topic(mock)
    plan = _plan(src, mock, target, rate_limit_records=1500.0)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.to_json(redact=False))
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.replay_child", str(plan_file),
             src.store_uri, src.db_url],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(rng.uniform(1.0, 2.5))
        proc.kill()
        proc.wait(30)
    done = _child(plan_file, src)
    assert done.returncode == 0, done.stderr[-3000:]
    _assert_exactly_once(src, mock, target)
    # the mock shows the killed runs' uncommitted data to consumers; the raw log agrees with it
    total_raw = 0
    for p in range(3):
        data = raw_log(mock.bootstrap_servers, target, p)
        total_raw += sum(
            h.record_count for h in iter_batches(data, verify_crc=False) if not h.is_control
        )
    seen = read_to_end(mock.bootstrap_servers, target, [0, 1, 2])
    assert sum(len(v) for v in seen.values()) == total_raw
