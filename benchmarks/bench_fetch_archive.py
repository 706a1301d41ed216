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

* ``group1`` and ``group2``: ``kafka-archive archive fetch --until-caught-up --group G`` as
  one process, and as two processes of one (new) group sharing the partitions, each into a
  fresh local store; the time is from the first process's run start to the last one's run end
  (the runs' own report times: interpreter start-up left out, joining the group and the
  rebalance when the second member joins counted).

Reported: seconds and MB/s of each, and the same-repetition ratios ``consumer / fetch``
(target >= 1.0: the archiver decodes nothing), ``disk / fetch`` and ``group1 / group2`` (the
speed-up of a second process).

Then the **archive lag** of a continuous run: a second topic (``segment.ms`` ``--lag-segment-ms``)
takes a steady produce load for ``--lag-seconds`` while one ``archive fetch`` process (no stop
flag) archives it. For every segment it uploads while running, the lag is its manifest's
modification time in the store minus the moment the broker acknowledged the segment's last
offset (``acks=all``: the high watermark passed it), and of its first offset (the record that
waited longest). Target: one segment roll (``segment.ms``) plus one fetch for the first record;
reported: median, p90 and max of both lags, and of the first record's lag minus ``segment.ms``.

    .venv/bin/python benchmarks/bench_fetch_archive.py
    .venv/bin/python benchmarks/bench_fetch_archive.py --records 600000 --reps 5
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _data
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka_archive.archive import run_archive
from kafka_archive.archive.fetch.runner import FetchOptions
from kafka_archive.archive.manifest import iter_manifest_keys, parse_manifest
from kafka_archive.services.archive import ArchiveService
from kafka_archive.settings import Settings
from kafka_archive.store import LocalStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster

TOPIC = "bench-fetch"
LAG_TOPIC = "bench-fetch-lag"
CLI = str(Path(sys.executable).with_name("kafka-archive"))


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


def _fetch_process(bootstrap: str, root: Path, topic: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [CLI, "archive", "fetch", "--cluster", "bench", "--bootstrap", bootstrap,
         "--store", root.as_uri(), "--topics", topic, "--json", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _report(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"archive fetch failed ({proc.returncode}): {err[-2000:]}")
    report: dict[str, Any] = json.loads(next(ln for ln in out.splitlines() if ln[:1] == "{"))
    return report


def group_archive(bootstrap: str, root: Path, processes: int, group: str) -> tuple[float, int]:
    """``processes`` members of ``group`` until caught up: ``(seconds from the first run's
    start to the last one's end, records archived)``."""
    root.mkdir(parents=True)
    procs = [
        _fetch_process(bootstrap, root, TOPIC, "--until-caught-up", "--group", group)
        for _ in range(processes)
    ]
    reports = [_report(p) for p in procs]
    start = min(datetime.fromisoformat(r["started_at"]) for r in reports)
    end = max(datetime.fromisoformat(r["finished_at"]) for r in reports)
    records = sum(
        p["to_offset"] - p["from_offset"]
        for r in reports
        for p in r["partitions"]
        if not p["error"]
    )
    return (end - start).total_seconds(), records


def archive_lag(cluster: LocalKafkaCluster, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The continuous run's lag (module docstring)."""
    bootstrap = cluster.bootstrap_servers
    cluster.create_topic(
        LAG_TOPIC, args.partitions, config={"segment.ms": str(args.lag_segment_ms)}, timeout_s=60
    )
    acked: dict[tuple[int, int], float] = {}

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked[(msg.partition(), msg.offset())] = time.time()

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    root = tmp / "store-lag"
    root.mkdir()
    proc = _fetch_process(bootstrap, root, LAG_TOPIC)
    stop = threading.Event()
    value = random.Random(3).randbytes(args.value_bytes)

    def produce_steadily() -> None:
        n = 0
        t0 = time.monotonic()
        while not stop.is_set():
            producer.produce(LAG_TOPIC, value, b"k%d" % n, on_delivery=on_delivery)
            n += 1
            ahead = n / args.lag_rate - (time.monotonic() - t0)
            if ahead > 0:
                producer.poll(ahead)
        producer.flush(60)

    time.sleep(3)  # the archiver has started and asked for its partitions
    th = threading.Thread(target=produce_steadily, daemon=True)
    th.start()
    time.sleep(args.lag_seconds)
    stop.set()
    th.join(120)
    stopped_at = time.time()
    proc.send_signal(signal.SIGTERM)  # the open segments are uploaded at the stop: left out
    _report(proc)
    worst: list[float] = []  # the segment's first record: it waited the longest
    best: list[float] = []  # its last record
    for key in iter_manifest_keys(LocalStore(root), "bench", LAG_TOPIC):
        path = root / key  # the local store keeps an object at its key's path
        m = parse_manifest(path.read_bytes())
        done = path.stat().st_mtime
        first = acked.get((m.partition, m.base_offset))
        last = acked.get((m.partition, m.end_offset - 1))
        if first is not None and last is not None and done < stopped_at:
            worst.append(done - first)
            best.append(done - last)
    roll = args.lag_segment_ms / 1000

    def stats(xs: list[float]) -> dict[str, float]:
        xs = sorted(xs)
        if not xs:
            return {}
        return {"count": len(xs), "median_s": statistics.median(xs),
                "p90_s": xs[int(0.9 * (len(xs) - 1))], "max_s": xs[-1]}  # fmt: skip

    return {
        "segment_ms": args.lag_segment_ms,
        "rate_per_s": args.lag_rate,
        "records": len(acked),
        "lag_first_record": stats(worst),
        "lag_first_record_minus_segment_ms": stats([x - roll for x in worst]),
        "lag_last_record": stats(best),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--value-bytes", type=int, default=512)
    ap.add_argument("--segment-mb", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lag-seconds", type=float, default=40.0)
    ap.add_argument("--lag-segment-ms", type=int, default=2000)
    ap.add_argument("--lag-rate", type=int, default=2000, help="records per second")
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
        kinds = ["consumer", "fetch", "disk", "group1", "group2"]
        times: dict[str, list[float]] = {k: [] for k in kinds}
        for rep in range(-1, args.reps):  # -1: a warm-up of each, not recorded
            order = kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]
            for kind in order:
                root = tmp / f"store-{kind}-{rep}"
                if kind == "consumer":
                    dt, n = consume_all(bootstrap, args.partitions)
                    assert n == args.records, (n, args.records)
                elif kind == "fetch":
                    dt, n = fetch_archive(bootstrap, root)
                    assert n == args.records, (n, args.records)  # up to the high watermark
                elif kind.startswith("group"):
                    procs = int(kind[-1])
                    dt, n = group_archive(bootstrap, root, procs, f"bench-{kind}-{rep}")
                    assert n == args.records, (kind, n, args.records)
                else:
                    dt, n = disk_archive(cluster, root)
                shutil.rmtree(root, ignore_errors=True)  # measured: its disk back
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
            "ratio_2_vs_1_process": ratio("group1", "group2"),
        }
        result["archive_lag"] = archive_lag(cluster, tmp, args)
        print(json.dumps(result["archive_lag"], indent=2), flush=True)
    finally:
        cluster.stop()
    _data.result_file("fetch-archive", Path(args.out)).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: round(v, 3) for k, v in result.items() if k.startswith("ratio")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
