"""Batches a real log cleaner stamped with a delete horizon (issue 20, point 5).

A compacted topic with tombstones is cleaned by the broker: every cleaned batch that keeps a
tombstone gets attribute bit 6 and the horizon (cleaning time + ``delete.retention.ms``) in its
``firstTimestamp`` field (KIP-534). Those segments are archived and cataloged; the catalog's
first time of the partition must be its first record's (the broker's own), never after its
last, and ``catalog offsets --at`` must give the broker's ListOffsets answer at every surviving
record's moment without calling it "before the archive's first record".
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Producer
from kafka_archive.archive import run_archive
from kafka_archive.catalog.build import InProcessRunner, build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.holdings import topics
from kafka_archive.catalog.time_answers import offsets_at
from kafka_archive.store import open_store
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.live_archiving import broker_offsets
from support.real_kafka import unique_name

from segment_lib.log_file import iter_batches, open_log
from segment_lib.partition import PartitionView
from segment_lib.record_batch import has_delete_horizon

C = "horizon-cluster"
#: long enough that the tombstones (and their batches' horizon) outlive the test
RETENTION_MS = 600_000


def _flagged_first_batches(cluster: LocalKafkaCluster, topic: str) -> int:
    """Rolled segments of ``topic``-0 on the brokers whose first batch carries a horizon."""
    n = 0
    for log_dir in cluster.log_dirs.values():
        pdir = log_dir / f"{topic}-0"
        if not pdir.is_dir():
            continue
        for seg in PartitionView.open(pdir).rolled:
            try:
                with open_log(seg.log) as lb:
                    first = next(iter(lb.batches()), None)
            except (OSError, ValueError):  # being swapped by the cleaner right now
                continue
            n += first is not None and has_delete_horizon(first)
    return n


def _produce_rounds(bootstrap: str, topic: str, rounds: int) -> None:
    """Rounds more than ``segment.ms`` apart, so each starts a segment: a tombstone of a key
    never written again first (kept by the cleaner, so the cleaned segment starts with a
    batch carrying the horizon), then values of a few keys overwritten over and over."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(rounds):
        producer.produce(topic, key=b"gone-%d" % i, value=None, partition=0)
        producer.flush(30)
        for j in range(20):
            producer.produce(topic, key=b"key-%d" % (j % 4), value=b"v%d-%d" % (i, j), partition=0)
            producer.flush(30)
        time.sleep(1.5)
    producer.produce(topic, key=b"seal", value=b"s", partition=0)  # rolls the last round's
    producer.flush(30)


def test_catalog_times_of_cleaned_batches_equal_the_broker(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    topic = unique_name("horizon")
    kafka_cluster.create_topic(
        topic,
        1,
        replication=1,
        config={
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0",
            "delete.retention.ms": str(RETENTION_MS),
            "segment.ms": "1000",
        },
    )
    bootstrap = kafka_cluster.bootstrap_servers
    _produce_rounds(bootstrap, topic, 6)
    deadline = time.monotonic() + 120
    while _flagged_first_batches(kafka_cluster, topic) == 0:
        assert time.monotonic() < deadline, "the broker's cleaner set no delete horizon"
        time.sleep(1)
    store = open_store(str(tmp_path / "store"))
    # archive rounds until a segment starting with a horizon batch is archived - the case this
    # test is about: the archiver takes a (cleaned) segment once the broker's checkpoints cover
    # it, which on a busy machine comes a moment after the cleaner's pass
    deadline = time.monotonic() + 60
    archived_flagged = 0
    while archived_flagged == 0 and time.monotonic() < deadline:
        for node_id, log_dir in sorted(kafka_cluster.log_dirs.items()):
            report = run_archive(
                cluster=C,
                broker_id=node_id,
                log_dirs=[str(log_dir)],
                store=store,
                state_dir=str(tmp_path / "state" / str(node_id)),
            )
            assert report.segments_failed == 0, report.failures
        for obj in store.list(f"{C}/{topic}/"):
            if obj.key.endswith(".log"):
                first = next(iter_batches(store.get_bytes(obj.key)), None)
                archived_flagged += first is not None and has_delete_horizon(first)
        if not archived_flagged:
            time.sleep(1)
    assert archived_flagged > 0
    with open_catalog(str(tmp_path / "catalog.db"), create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
        (held,) = [h for h in topics(cat, C) if h.topic == topic]
        assert 0 <= held.first_timestamp <= held.max_timestamp, held
        # what the broker holds now, and its ListOffsets answers at each record's moment
        (left,) = read_to_end(bootstrap, topic, [0], isolation="read_uncommitted").values()
        by_offset = {r.offset: r for r in left}
        assert held.first_offset in by_offset  # the cleaner never removes the first tombstone
        assert held.first_timestamp == by_offset[held.first_offset].timestamp
        moments = sorted({r.timestamp for r in left} | {held.first_timestamp - 1})
        broker = broker_offsets(bootstrap, [(topic, 0, ts) for ts in moments])
        (after,) = read_to_end(bootstrap, topic, [0], isolation="read_uncommitted").values()
        surviving = {r.offset for r in after}
        checked = 0
        for ts in moments:
            (ans,) = offsets_at(cat, store, C, topic, ts, [0])
            if ts >= held.first_timestamp and ts <= held.max_timestamp:
                assert ans.note is None, (ts, ans.note)
            # equal wherever the catalog's record is still on the broker (the catalog serves
            # the archived version; a later cleaning may have removed its record since)
            if ans.offset in surviving:
                checked += 1
                assert ans.offset == broker[(topic, 0, ts)], (ts, ans)
        (before,) = offsets_at(cat, store, C, topic, held.first_timestamp - 1, [0])
        assert before.offset == held.first_offset == broker[(topic, 0, held.first_timestamp - 1)]
        assert before.note is not None and "before the archive's first record" in before.note
        assert checked > 0
