"""The fetch archiver vs a bare consumer of the same topic, and vs the disk archiver (issue 22).

A real 3-broker Kafka KRaft cluster (``kafka_archive_dev.local_kafka``) holds one topic of
``--partitions`` partitions (RF 3, ``segment.bytes`` ``--segment-mb``), filled once with
``--records`` records of ``--value-bytes`` random bytes by a confluent-kafka producer (zstd, 1 MB
batches, ``acks=all``). Then, per repetition (order rotated), each from offset 0 to the end:

* ``consumer``: **the reference** - a bare confluent-kafka consumer (``read_uncommitted``,
  assigned every partition, librdkafka's default fetch sizes) reading every record to the high
  watermarks, doing nothing with them: the least work that moves the same bytes;
* ``fetch``: ``kafka-archive archive fetch --until-caught-up`` in-process
  (:meth:`~kafka_archive.services.archive.ArchiveService.archive_fetch`) into a fresh local
  store: Fetch, CRC checks, segment building (``.log``, ``.index``, ``.timeindex``,
  ``.txnindex``), upload with SHA-256 and CRC-32C, manifests;
* ``disk``: the disk archiver (``run_archive``) over the three brokers' log dirs, broker after
  broker, into a fresh local store: the rolled segments only (the active one is not), each
  offset range once (the other replicas are recognised as already archived).

Reported: seconds and MB/s of each, and the same-repetition ratios ``consumer / fetch``
(target >= 1.0: the archiver decodes nothing) and ``disk / fetch``. Not measured here (see
docs/performance.md): the archive lag of a continuous run, and 1 vs 2 processes (partitions are
not shared among processes yet).

    .venv/bin/python benchmarks/bench_fetch_archive.py
    .venv/bin/python benchmarks/bench_fetch_archive.py --records 600000 --reps 5
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _data
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka_archive.archive import run_archive
from kafka_archive.archive.fetch.runner import FetchOptions
from kafka_archive.services.archive import ArchiveService
from kafka_archive.settings import Settings
from kafka_archive.store import LocalStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster

TOPIC = "bench-fetch"


def produce(bootstrap: str, args: argparse.Namespace) -> int:
    """Fill the topic; its payload bytes."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "compression.type": "zstd",
            "queue.buffering.max.kbytes": 512 * 1024,
        }
    )
    # random bytes: what is stored and fetched is about the payload's size (a repeating
    # pattern would shrink to almost nothing under zstd, and the consumer would mostly measure
    # decompression)
    pool = random.Random(7).randbytes(1 << 20)
    payload = 0
    for i in range(args.records):
        start = (i * 7919) % (len(pool) - args.value_bytes)
        v = pool[start : start + args.value_bytes]
        k = b"key-%010d" % i
        while True:
            try:
                producer.produce(TOPIC, v, k, i % args.partitions)
                break
            except BufferError:
                producer.poll(0.05)
        payload += len(v) + len(k)
    assert producer.flush(120) == 0
    return payload


def consume_all(bootstrap: str, partitions: int) -> tuple[float, int]:
    """The reference: ``(seconds, records)``."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-fetch-ref", "enable.auto.commit": False}
    )
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), 30)[1]
        for p in range(partitions)
    }
    t0 = time.perf_counter()
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    seen = dict.fromkeys(range(partitions), -1)
    records = 0
    while any(seen[p] < ends[p] - 1 for p in seen):
        for msg in consumer.consume(10_000, 1.0):
            part, offset = msg.partition(), msg.offset()
            if msg.error() is None and part is not None and offset is not None:
                seen[part] = offset
                records += 1
    dt = time.perf_counter() - t0
    consumer.close()
    return dt, records


def fetch_archive(bootstrap: str, root: Path) -> tuple[float, int]:
    """``archive fetch --until-caught-up``: ``(seconds, records archived)``."""
    store = LocalStore(root, fsync=False)
    service = ArchiveService(Settings(store=store.uri))
    t0 = time.perf_counter()
    report = service.archive_fetch(
        cluster="bench", bootstrap=bootstrap, store=store,
        options=FetchOptions(topics=(TOPIC,), until_caught_up=True),
    )  # fmt: skip
    dt = time.perf_counter() - t0
    # offsets archived (this topic has no control batches and no gaps: one record each)
    records = sum(p.to_offset - p.from_offset for p in report.partitions if not p.error)
    return dt, records


def disk_archive(cluster: LocalKafkaCluster, root: Path) -> tuple[float, int]:
    """The disk archiver over every broker: ``(seconds, segments archived)``."""
    store = LocalStore(root, fsync=False)
    t0 = time.perf_counter()
    segments = 0
    for node, log_dir in sorted(cluster.log_dirs.items()):
        report = run_archive(
            cluster="bench", broker_id=node, log_dirs=[str(log_dir)], store=store,
            topics=[TOPIC],
        )  # fmt: skip
        segments += report.segments_archived
    return time.perf_counter() - t0, segments


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--value-bytes", type=int, default=512)
    ap.add_argument("--segment-mb", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(_data.RESULTS_DIR))
    args = ap.parse_args()
    tmp = _data.scratch_dir("bench-fetch-")
    cluster = LocalKafkaCluster(tmp / "kafka", brokers=3, heap="1g").start()
    try:
        bootstrap = cluster.bootstrap_servers
        cluster.create_topic(
            TOPIC,
            args.partitions,
            config={"segment.bytes": str(args.segment_mb << 20)},
            timeout_s=60,
        )
        payload = produce(bootstrap, args)
        print(f"{args.records} records, {payload / 1e6:.1f} MB payload in {TOPIC}", flush=True)
        kinds = ["consumer", "fetch", "disk"]
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for rep in range(-1, args.reps):  # -1: a warm-up of each, not recorded
            order = kinds[rep % 3 :] + kinds[: rep % 3]
            for kind in order:
                root = tmp / f"store-{kind}-{rep}"
                if kind == "consumer":
                    dt, n = consume_all(bootstrap, args.partitions)
                    assert n == args.records, (n, args.records)
                elif kind == "fetch":
                    dt, n = fetch_archive(bootstrap, root)
                    assert n == args.records, (n, args.records)  # up to the high watermark
                else:
                    dt, n = disk_archive(cluster, root)
                if rep >= 0:
                    times[kind].append(dt)
                    print(
                        f"rep {rep} {kind:8s} {dt:6.2f} s {payload / dt / 1e6:7.1f} MB/s",
                        flush=True,
                    )

        def ratio(ref: str, run: str) -> float:
            return statistics.median(times[ref][i] / times[run][i] for i in range(args.reps))

        result: dict[str, Any] = {
            "kind": "fetch-archive",
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": _data.machine(),
            "kafka": cluster.version,
            "params": vars(args),
            "payload_bytes": payload,
            "seconds": times,
            "ratio_fetch_vs_consumer": ratio("consumer", "fetch"),
            "ratio_fetch_vs_disk": ratio("disk", "fetch"),
        }
    finally:
        cluster.stop()
    _data.result_file("fetch-archive", Path(args.out)).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: round(v, 3) for k, v in result.items() if k.startswith("ratio")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
