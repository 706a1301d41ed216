"""Two fetch archivers of one cluster at once into one store (issue 22, point 3), for real.

Two ``kafka-archive archive fetch`` processes (``--duration``, the second started later and
stopping later, so the first stops in the middle of a segment the second is still building)
archive the same topic while a producer writes to it, into the same local store; then a third
run ``--until-caught-up``. One of the two must have met the other's segments (seen before an
upload, or a claim of a base offset lost: :mod:`kafka_archive.archive.fetch.claims`) and gone
on from the store's end; the store must hold one chain of segments per partition from 0 to the
high watermark, one claim per segment, every batch the leader's bytes, none twice.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka_archive.archive.fetch.claims import claim_prefix
from kafka_archive.kafka_protocol.client import ProtocolClient
from kafka_archive.store import LocalStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.fetched_archive import (
    archived_batches,
    broker_batches,
    fetch_cli,
    partition_manifests,
)
from support.real_kafka import unique_name

pytestmark = pytest.mark.timeout(300)

CLUSTER = "fetched-twice"


def _archiver(bootstrap: str, store_uri: str, topic: str, duration: str, log: Path) -> Any:
    code = "from kafka_archive.cli import main; main()"
    args = [
        "archive", "fetch", "--cluster", CLUSTER, "--bootstrap", bootstrap, "--store", store_uri,
        "--topics", topic, "-X", "segment.bytes=20000", "--duration", duration, "--json",
    ]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-c", code, *args], stdout=out, stderr=out)


def test_two_archivers_at_once_store_one_chain(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = kafka_cluster.create_topic(unique_name("fetch-twice"), 2)
    store = LocalStore(tmp_path / "store")
    done = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
        i = 0
        while not done.is_set():
            for p in (0, 1):
                producer.produce(topic, b"v%06d " % i + bytes(200), b"k%d" % i, p)
            i += 1
            if i % 50 == 0:
                producer.flush(30)
                time.sleep(0.05)
        assert producer.flush(30) == 0

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    time.sleep(2.0)
    first = _archiver(bootstrap, store.uri, topic, "10s", tmp_path / "a.log")
    time.sleep(3.0)
    second = _archiver(bootstrap, store.uri, topic, "18s", tmp_path / "b.log")
    try:
        codes = (first.wait(120), second.wait(120))
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.kill()
    done.set()
    writer.join(60)
    reports = []
    for name, code in zip(("a.log", "b.log"), codes, strict=True):
        text = (tmp_path / name).read_text()
        assert code == 0, text
        reports.append(json.loads(next(ln for ln in text.splitlines() if ln.startswith("{"))))
    assert all(r["ok"] for r in reports) and all(r["segments"] for r in reports), reports
    # the first stopped mid-segment while the second went on: one of them met the other's
    # segments (before an upload, or by a lost claim) and went on from the store's end
    met = [[p["yielded"] + p["fenced"] for p in r["partitions"]] for r in reports]
    assert sum(map(sum, met)) >= 1, met
    final = fetch_cli(CLUSTER, bootstrap, store.uri, topic)
    assert final["ok"] and not final["holes"]
    client = ProtocolClient({"bootstrap.servers": bootstrap}, client_id="fetch-twice-test")
    try:
        leaders = client.leaders(topic)
    finally:
        client.close()
    for part in (0, 1):
        ms = partition_manifests(store, CLUSTER, topic, part)
        hw = next(p["high_watermark"] for p in final["partitions"] if p["partition"] == part)
        assert ms[0].base_offset == 0 and ms[-1].end_offset == hw
        for a, b in itertools.pairwise(ms):  # one chain: no overlap, no gap
            assert a.end_offset == b.base_offset, (part, a.end_offset, b.base_offset)
        claims = store.list(claim_prefix(CLUSTER, topic, part, ms[0].topic_id))
        assert [int(o.key.rsplit("/", 1)[1].split(".")[0]) for o in claims] == [
            m.base_offset for m in ms
        ]  # each segment claimed once, by its writer; no claim left without its manifest
        ours = archived_batches(store, ms)
        broker = broker_batches(kafka_cluster.log_dirs[leaders[part]] / f"{topic}-{part}")
        assert set(ours) == {o for o in broker if o < hw}
        assert all(broker[o] == data for o, data in ours.items())
        assert sum(m.record_count for m in ms) == hw
