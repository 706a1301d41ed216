"""Two fetch archivers sharing a real cluster's partitions through a Kafka consumer group, one
killed (-9) mid-run (issue 22, point 6).

Two ``kafka-archive archive fetch --group G`` processes start on one topic of 6 partitions (RF 3,
segments rolling every second) while a producer writes to it. The group coordinator gives each
a share (seen with DescribeConsumerGroups); both store segments. One is killed with SIGKILL (no
clean-up of any kind: its open segments are lost, maybe a segment between claim and manifest);
once its session has timed out the coordinator gives its share to the survivor, which resumes
those partitions from the store. The producer stops; the survivor ends (``--duration``) by
uploading its open segments. Then, per partition: the fetched segments chain from the log start
to the high watermark with no gap and no overlap, every batch is the one at the same offset in
the leader's own ``.log`` files, and none is stored twice.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kafka_archive.archive.manifest import SegmentManifest, iter_manifests
from kafka_archive.kafka_protocol.client import ProtocolClient
from kafka_archive.kafka_protocol.fetch import list_offsets
from kafka_archive.store import LocalStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.fetched_archive import broker_batches, log_batches
from support.real_kafka import unique_name

pytestmark = pytest.mark.timeout(420)

CLUSTER = "shared"
PARTITIONS = 6


def _archiver(bootstrap: str, store: LocalStore, topic: str, group: str, *extra: str) -> Any:
    cmd = [
        str(Path(sys.executable).with_name("kafka-archive")), "archive", "fetch",
        "--cluster", CLUSTER, "--bootstrap", bootstrap, "--store", store.uri,
        "--topics", topic, "--group", group,
        "--session-timeout", "6s", "--json", *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )


def _shares(admin: AdminClient, group: str) -> list[set[int]]:
    """Each member's partitions, as the coordinator assigned them."""
    try:
        desc = admin.describe_consumer_groups([group])[group].result(30)
    except Exception:  # the group does not exist yet
        return []
    return [{tp.partition for tp in m.assignment.topic_partitions} for m in desc.members]


def _wait(what: str, cond: Any, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(0.5)


def _manifests(store: LocalStore, topic: str, partition: int) -> list[SegmentManifest]:
    return sorted(iter_manifests(store, CLUSTER, topic, partition), key=lambda m: m.base_offset)


def test_a_killed_members_partitions_go_to_the_other_archive_complete_nothing_doubled(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic, group = unique_name("fetch-group"), unique_name("archivers")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    cfg = {"segment.ms": "1000", "min.insync.replicas": "2"}
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config=cfg)])[topic].result(60)
    stop_producing = threading.Event()
    produced = [0]

    def produce() -> None:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all",
                      "compression.type": "lz4", "enable.idempotence": True})  # fmt: skip
        while not stop_producing.is_set():
            for i in range(50):
                p.produce(topic, key=str(i).encode(), value=os.urandom(200))
            produced[0] += 50
            p.poll(0)
            time.sleep(0.05)
        assert p.flush(60) == 0

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    store = LocalStore(tmp_path / "store")
    victim = _archiver(bootstrap, store, topic, group)
    survivor = _archiver(bootstrap, store, topic, group, "--duration", "100s")
    try:
        _wait(
            "both members with a share", lambda: sorted(map(len, _shares(admin, group))) == [3, 3]
        )
        _wait(
            "segments of every partition stored",
            lambda: all(_manifests(store, topic, p) for p in range(PARTITIONS)),
        )
        time.sleep(3)  # both mid-segment
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(30) == -signal.SIGKILL
        _wait("the survivor owns every partition",
              lambda: _shares(admin, group) == [set(range(PARTITIONS))])  # fmt: skip
        time.sleep(5)  # the survivor archives the victim's partitions while data still comes
    finally:
        stop_producing.set()
        producer.join(90)
        if victim.poll() is None:
            victim.kill()
    assert produced[0] > 1000
    client = ProtocolClient({"bootstrap.servers": bootstrap}, client_id="fetch-group-test")
    try:
        leaders = client.leaders(topic)
        ends = {p: list_offsets(client, leaders[p], topic, [p], -1)[p] for p in range(PARTITIONS)}
    finally:
        client.close()
    out, err = survivor.communicate(timeout=240)
    assert survivor.returncode == 0, err[-3000:]
    report = json.loads(next(ln for ln in out.splitlines() if ln.startswith("{")))
    assert report["ok"] and report["stopped_by"] == "duration", report
    taken = {p["partition"] for p in report["partitions"]}
    assert taken == set(range(PARTITIONS))  # its own share and the victim's
    assert "Traceback" not in err
    _check_archive(kafka_cluster, store, topic, leaders, ends)


def _check_archive(
    cluster: LocalKafkaCluster,
    store: LocalStore,
    topic: str,
    leaders: dict[int, int],
    ends: dict[int, int],
) -> None:
    """One chain per partition from 0 to its end, each batch the leader's, none twice."""
    compared = 0
    for part in range(PARTITIONS):
        ms = _manifests(store, topic, part)
        assert ms[0].base_offset == 0 and ms[-1].end_offset == ends[part], (part, ends[part])
        for a, b in itertools.pairwise(ms):  # one chain: no gap, no overlap
            assert a.end_offset == b.base_offset, (part, a.end_offset, b.base_offset)
        pdir = cluster.log_dirs[leaders[part]] / f"{topic}-{part}"
        broker = broker_batches(pdir)
        seen: set[int] = set()
        for m in ms:
            ours = log_batches(store.get_bytes(m.log_file.key))
            assert not (set(ours) & seen), (part, m.base_offset)  # nothing stored twice
            seen |= set(ours)
            for base, data in ours.items():
                assert broker.get(base) == data, (part, base)
                compared += 1
        assert seen == {o for o in broker if o < ends[part]}, part
    assert compared > 100
