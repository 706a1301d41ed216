"""segment_lib.segment_builder against a running Kafka 4.x cluster, transactions included.

The real-broker fixtures hold no ``.txnindex`` and no ABORT marker, so here a real cluster
writes them: two transactional producers interleave on one partition (RF 3, dense
``index.interval.bytes``), one aborting while the other's transaction is open (an LSO below the
marker), and the partition rolls between markers (``log.roll.ms`` 3 s). Then each replica's
files are fed to a builder that rolls where that replica rolled: rolled segments must match
byte for byte (``.log``, ``.index``, ``.timeindex``, ``.txnindex``), the active segment's
``.log`` too and its preallocated indexes entry for entry (without the closing time index
entry, which Kafka writes only on roll).

Followers append fetch responses, several batches at a time: Kafka 4.x's ``LogSegment.append``
indexes batch by batch, so the builder's default ``PER_BATCH`` rule covers them too.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.real_kafka import unique_name

from segment_lib.control import ControlType, decode_control_record
from segment_lib.log_file import open_log
from segment_lib.offset_index import read_offset_index
from segment_lib.segment_builder import SegmentBuilder, SegmentConfig
from segment_lib.time_index import read_time_index
from segment_lib.txn_index import read_txn_index

pytestmark = pytest.mark.timeout(300)

INDEX_INTERVAL = 256


def _producer(cluster: LocalKafkaCluster, tid: str | None = None) -> Producer:
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0, "acks": "all"}
    if tid is not None:
        conf["transactional.id"] = tid
    p = Producer(conf)
    if tid is not None:
        p.init_transactions(60)
    return p


def _send(p: Producer, topic: str, n: int, tag: bytes) -> None:
    for i in range(n):
        p.produce(topic, key=tag + b"%d" % i, value=tag * 100, partition=0)
        p.flush(30)  # one batch per record: many batches, index entries every 256 bytes


def _markers(pdir: Path) -> list[ControlType]:
    out = []
    for log in sorted(pdir.glob("*.log")):
        with open_log(log) as lb:
            for h in lb.batches(allow_torn_tail=True):
                if h.is_control:
                    (rec,) = lb.records(h)
                    out.append(decode_control_record(rec.key, rec.value).type)
    return out


def test_builder_matches_every_replica_with_transactions(kafka_cluster: LocalKafkaCluster) -> None:
    topic = kafka_cluster.create_topic(
        unique_name("builder"), 1, config={"index.interval.bytes": str(INDEX_INTERVAL)}
    )
    t1, t2 = (
        _producer(kafka_cluster, unique_name("tx")),
        _producer(kafka_cluster, unique_name("tx")),
    )
    plain = _producer(kafka_cluster)
    t1.begin_transaction()
    _send(t1, topic, 3, b"a")
    t2.begin_transaction()
    _send(t2, topic, 2, b"b")
    _send(plain, topic, 2, b"p")
    t1.abort_transaction(60)  # t2 open: LSO = t2's first offset
    _send(t2, topic, 2, b"c")
    t2.commit_transaction(60)
    time.sleep(3.5)  # log.roll.ms: the next batch starts a segment
    t1.begin_transaction()
    _send(t1, topic, 4, b"d")
    t1.abort_transaction(60)  # nothing else open: LSO = marker + 1
    time.sleep(3.5)
    _send(plain, topic, 1, b"z")
    expected = [ControlType.ABORT, ControlType.COMMIT, ControlType.ABORT]
    replicas = {node: d / f"{topic}-0" for node, d in kafka_cluster.log_dirs.items()}
    deadline = time.monotonic() + 60
    # the coordinator writes markers after answering EndTxn; followers copy them later still
    while any(_markers(p) != expected for p in replicas.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
    compared = {"rolled": 0, "txnindex": 0}
    for node, pdir in replicas.items():
        assert _markers(pdir) == expected, node
        logs = sorted(pdir.glob("*.log"))
        assert len(logs) >= 3, (node, logs)
        builder = SegmentBuilder(config=SegmentConfig(index_interval_bytes=INDEX_INTERVAL))
        for log in logs:
            data = log.read_bytes()
            if not data:
                continue
            builder.roll(int(log.stem))
            builder.append(data)
        active = builder.active
        assert active is not None
        active_log = pdir / f"{active.base_offset:020d}"
        assert [
            (e.offset, e.position) for e in read_offset_index(active_log.with_suffix(".index"))
        ] == active.offset_index
        assert [
            (e.timestamp, e.offset) for e in read_time_index(active_log.with_suffix(".timeindex"))
        ] == active.time_index
        for seg in builder.close():
            assert seg.log == (pdir / seg.file_name(".log")).read_bytes(), (node, seg.base_offset)
            if seg.base_offset == active.base_offset:
                continue
            assert seg.index_bytes() == (pdir / seg.file_name(".index")).read_bytes()
            assert seg.time_index_bytes() == (pdir / seg.file_name(".timeindex")).read_bytes()
            txn = pdir / seg.file_name(".txnindex")
            if seg.aborted:
                assert seg.txn_index_bytes() == txn.read_bytes(), (node, seg.base_offset)
                compared["txnindex"] += 1
            else:
                assert not txn.exists() or not read_txn_index(txn).entries
            compared["rolled"] += 1
        aborted = [a for s in builder.segments for a in s.aborted]
        # first abort: LSO below its marker (t2 open); second: marker + 1
        assert len(aborted) == 2
        assert aborted[0].last_stable_offset < aborted[0].last_offset
        assert aborted[1].last_stable_offset == aborted[1].last_offset + 1
    assert compared["txnindex"] >= 2 * len(replicas)
