"""The catalog equals the broker (issue 15, point 3).

The live workload (``support.live_workload``: every codec, LogAppendTime, out-of-order
CreateTime, transactions with aborts, a compacted topic) writes through a real cluster while the
archiver runs over the brokers' log dirs; after ``catalog build --in-process``, ``catalog
offsets`` is asked for every partition of every topic at well over a thousand timestamps (random
ones, each sampled record's own timestamp and +-1 ms, before the first, after the last) and must
give the broker's own ListOffsets answer, asked at the same time while the data is still on the
brokers.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.queries import offsets_for_time
from kafka_archive.cli import _register_groups, app
from kafka_archive.store import ObjectStore
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.live_archiving import ARCHIVE_NAME, archive_live_workload, broker_offsets
from support.live_workload import LiveWorkload
from support.real_kafka import unique_name
from typer.testing import CliRunner

pytest_plugins = ["support.live_archiving"]

PRODUCE_S = 5.0


@dataclass
class Built:
    cluster: LocalKafkaCluster
    wl: LiveWorkload
    store: ObjectStore
    db: str
    seal_offsets: dict[tuple[str, int], int]


@pytest.fixture(scope="module")
def built(
    kafka_cluster: LocalKafkaCluster,
    tmp_path_factory: pytest.TempPathFactory,
    live_archive_store: tuple[ObjectStore, Path],
) -> Built:
    tmp = tmp_path_factory.mktemp("catalog-vs-broker")
    wl, archiver, seals = archive_live_workload(
        kafka_cluster, live_archive_store, tmp, prefix=unique_name("cvb"), seed=2,
        produce_s=PRODUCE_S,
    )  # fmt: skip
    store = archiver.store
    for r in archiver.reports:
        assert r.segments_failed == 0 and not r.log_dir_failures, r.failures
    db = str(tmp / "catalog.db")
    _register_groups()
    out = CliRunner().invoke(
        app, ["catalog", "build", "--in-process", "--json", "--store", store.uri, "--db", db]
    )
    assert out.exit_code == 0, out.output
    report = json.loads(next(ln for ln in out.output.splitlines() if ln.startswith("{")))
    assert report["failed"] == 0 and report["corrupt"] == 0, report
    return Built(kafka_cluster, wl, store, db, seals)


def _timestamps(rng: random.Random, stamps: list[int]) -> list[int]:
    """Random moments, sampled records' own timestamps and +-1 ms, before first, after last."""
    lo, hi = min(stamps), max(stamps)
    out = {lo - 1, lo - 60_000, lo, hi, hi + 1, hi + 60_000}
    for ts in rng.sample(stamps, min(30, len(stamps))):
        out |= {ts - 1, ts, ts + 1}
    out |= {rng.randint(lo - 500, hi + 500) for _ in range(30)}
    return sorted(out)


def test_catalog_offsets_equal_the_brokers_list_offsets(built: Built) -> None:
    wl = built.wl
    rng = random.Random(11)
    compacted = wl.topics["compacted"]
    last = {(t, p): max(r.timestamp for r in wl.records_of(t, p)) for t, p in wl.topic_partitions()}
    # what is left of the compacted topic on the broker (the cleaner keeps running)
    left = read_to_end(
        built.cluster.bootstrap_servers,
        compacted,
        list(range(wl.partitions)),
        isolation="read_uncommitted",
    )
    queries: list[tuple[str, int, int]] = []
    for topic, part in wl.topic_partitions():
        stamps = [r.timestamp for r in wl.records_of(topic, part)]
        assert stamps, (topic, part)
        queries += [(topic, part, ts) for ts in _timestamps(rng, stamps)]
    # and the surviving records' own moments, so the equality below is exercised however far
    # the cleaner got
    queries += sorted({(compacted, p, r.timestamp) for p, rs in left.items() for r in rs})
    assert len(queries) > 1000
    broker = broker_offsets(built.cluster.bootstrap_servers, queries)
    # the records surviving *after* the broker answered: the cleaner only removes records, so
    # each of them was there when it answered (read before, one cleaned in between was taken
    # for a survivor: CI saw the broker answer a later offset for 51 such moments)
    after = read_to_end(
        built.cluster.bootstrap_servers,
        compacted,
        list(range(wl.partitions)),
        isolation="read_uncommitted",
    )
    surviving = {p: {r.offset for r in rs} for p, rs in after.items()}
    data = {(r.topic, r.partition, r.offset): r for r in wl.records}
    cat = open_catalog(built.db, create=True)
    wrong: list[tuple[object, ...]] = []
    checked_compacted = 0
    try:
        for topic, part, ts in queries:
            (ans,) = offsets_for_time(cat, built.store, ARCHIVE_NAME, topic, ts, [part])
            b = broker[(topic, part, ts)]
            seal = built.seal_offsets[(topic, part)]
            rec = data.get((topic, part, ans.offset))
            if rec is not None and rec.timestamp != ans.timestamp:
                wrong.append(("timestamp", topic, part, ts, ans, rec.timestamp))
            if topic == compacted:
                # the catalog serves the earliest archived version (all records), the broker
                # the compacted one: equal whenever the catalog's record survived, never later
                if ans.offset in surviving[part]:
                    checked_compacted += 1
                    if b != ans.offset:
                        wrong.append((topic, part, ts, ans.offset, b))
                elif ans.offset != -1 and b != -1 and not ans.offset <= b:
                    wrong.append((topic, part, ts, ans.offset, b))
                continue
            # the seal record is the active segment's only record, never archived: where it is
            # the broker's answer (only later than every workload record), the catalog has none
            expected = -1 if b == seal else b
            assert b != seal or ts > last[(topic, part)], (topic, part, ts)
            if ans.offset != expected:
                wrong.append((topic, part, ts, ans.offset, b))
    finally:
        cat.close()
    assert wrong == [], wrong[:20]
    # how many moments land on a survivor depends on how far the cleaner got (4 to 40 seen)
    assert checked_compacted > 0


def test_the_command_and_kafkas_own_tool_agree(built: Built) -> None:
    """``catalog offsets`` (the CLI) and GetOffsetShell (Kafka's tool, same jars) at one moment
    per topic, all partitions; the batch oracle above is the same ListOffsets."""
    wl = built.wl
    rng = random.Random(3)
    _register_groups()
    cli = CliRunner()
    topics = [t for r, t in wl.topics.items() if r not in ("compacted", "logappend")]
    # a moment no later than every partition's last workload record: the answer is then a
    # workload record (archived), never the seal record in the active segment (not archived)
    limit = min(
        max(r.timestamp for r in records)
        for t in topics
        for p in range(wl.partitions)
        if (records := wl.records_of(t, p))
    )
    ts = rng.choice(
        [r.timestamp for r in wl.records_of(wl.topics["codec-zstd"]) if r.timestamp <= limit]
    )
    shell = built.cluster.run_tool(
        "org.apache.kafka.tools.GetOffsetShell",
        [
            "--bootstrap-server",
            built.cluster.bootstrap_servers,
            "--topic",
            f"{wl.prefix}-(codec-.*|txn)",
            "--time",
            str(ts),
        ],
    )
    tool: dict[tuple[str, int], int] = {}
    for line in shell.stdout.split():
        topic, part, off = line.rsplit(":", 2)
        tool[(topic, int(part))] = int(off)
    assert set(tool) == {(t, p) for t in topics for p in range(wl.partitions)}
    for topic in topics:
        out = cli.invoke(
            app,
            [
                "catalog",
                "offsets",
                "--cluster",
                ARCHIVE_NAME,
                "--topic",
                topic,
                "--at",
                str(ts),
                "--json",
                "--db",
                built.db,
                "--store",
                built.store.uri,
            ],
        )
        assert out.exit_code == 0, out.output
        lines = [json.loads(ln) for ln in out.output.splitlines() if ln.startswith("{")]
        got = {(topic, d["partition"]): d["offset"] for d in lines}
        assert got == {k: v for k, v in tool.items() if k[0] == topic}
        assert any(v >= 0 for v in got.values())


def test_every_partition_of_every_topic_was_cataloged(built: Built) -> None:
    _register_groups()
    out = CliRunner().invoke(
        app, ["catalog", "topics", "--cluster", ARCHIVE_NAME, "--json", "--db", built.db]
    )
    assert out.exit_code == 0, out.output
    text = out.output
    for topic in built.wl.topics.values():
        assert topic in text
