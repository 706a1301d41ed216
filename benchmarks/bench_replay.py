"""Replay throughput from the archive vs a bare confluent-kafka produce loop, and Spark scaling.

Source: ``--partitions`` partitions of ``--records`` records each (``--value-bytes`` values,
16-byte keys, one header, ``--batch`` records per batch, codec ``--codec``), written by
``segment_lib.writer`` and put in a local object store. Target: librdkafka's mock cluster
(3 brokers) in this process. Per repetition (order rotated, interleaved), each to a fresh topic:

* ``bare``: the baseline -- every record already decoded in memory (a list of
  ``(partition, key, value, timestamp, headers)``), produced by one confluent-kafka producer in
  one Python loop (same settings as the replay's producer: idempotent, acks=all, linger 20 ms,
  1 MB batches), then ``flush``; nothing else;
* ``bare-txn``: the same loop with a transactional producer committing every
  ``--txn-records`` records (what exactly-once costs by itself);
* ``replay``: ``kafka_archive.replay.runner.execute`` with one partition at a time
  (``parallelism=1``: one Python thread like the baseline) -- ranged reads of the archived
  objects, CRC check of every batch, decoding, transaction filtering, transactional produce
  with a progress record per transaction, catalog mirror (SQLite) after each commit;
* ``replay-par``: the same with one thread per partition.

The ratio reported is replay throughput / bare throughput (median over repetitions; target
>= 0.8). Then Spark: the same replay as Spark tasks (one per partition) on ``local[1]`` and
``local[2]`` sessions, timing the job (session start excluded).

    .venv/bin/python benchmarks/bench_replay.py
    .venv/bin/python benchmarks/bench_replay.py --records 200000 --reps 5 --no-spark
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from kafka_archive.catalog.db import open_catalog  # noqa: E402
from kafka_archive.replay import models as _models  # noqa: E402, F401
from kafka_archive.replay.ledger import ReplayLedger  # noqa: E402
from kafka_archive.replay.plan import (  # noqa: E402
    ReplaySpec,
    TargetSpec,
    build_plan,
    parse_position,
)
from kafka_archive.replay.runner import execute  # noqa: E402
from kafka_archive.replay.sources import SegmentsPlanSource  # noqa: E402
from kafka_archive.store import LocalStore  # noqa: E402

from segment_lib.compression import Codec  # noqa: E402
from segment_lib.log_file import decode_batch, iter_batches  # noqa: E402
from segment_lib.records import Header  # noqa: E402
from segment_lib.writer.encode import WriteRecord  # noqa: E402
from segment_lib.writer.partition_writer import ManualClock, PartitionWriter  # noqa: E402
from tests.support.kafka_mock import MockCluster  # noqa: E402

PRODUCER = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 512 * 1024,
}


def write_source(root: Path, args: argparse.Namespace) -> list[Path]:
    rng_bytes = bytes(range(256)) * (args.value_bytes // 256 + 1)
    dirs = []
    for p in range(args.partitions):
        clock = ManualClock(1_700_000_000_000)
        pw = PartitionWriter(
            root, "bench", p, segment_bytes=64 << 20, clock=clock, index_interval_bytes=1 << 20
        )
        for start in range(0, args.records, args.batch):
            n = min(args.batch, args.records - start)
            recs = [
                WriteRecord(
                    f"key-{p}-{start + i:010d}".encode(),
                    rng_bytes[(start + i) % 256 : (start + i) % 256 + args.value_bytes],
                    (Header("source", b"bench"),),
                    clock.advance(1),
                )
                for i in range(n)
            ]
            pw.append(recs, codec=Codec[args.codec.upper()])
        pw.close()
        dirs.append(pw.dir)
    return dirs


def decoded(store: LocalStore, source: SegmentsPlanSource, partitions: int) -> list[Any]:
    out = []
    for p in range(partitions):
        for seg in source.segments("bench-src", "bench", p):
            data = store.get_bytes(seg.key)
            for h in iter_batches(data):
                for r in decode_batch(data, h):
                    out.append((p, r.key, r.value, r.timestamp, [tuple(x) for x in r.headers]))
    return out


def bare(bootstrap: str, topic: str, messages: list[Any], txn_records: int | None) -> float:
    cfg: dict[str, Any] = {"bootstrap.servers": bootstrap, **PRODUCER}
    if txn_records:
        cfg["transactional.id"] = f"bench-bare-{topic}"
    producer = Producer(cfg)
    if txn_records:
        producer.init_transactions(30)
    produce, poll = producer.produce, producer.poll
    t0 = time.perf_counter()
    if txn_records:
        producer.begin_transaction()
    for i, (p, k, v, ts, h) in enumerate(messages):
        while True:
            try:
                produce(topic, v, k, p, None, None, ts, h)
                break
            except BufferError:
                poll(0.05)
        if txn_records and (i + 1) % txn_records == 0:
            producer.commit_transaction(60)
            producer.begin_transaction()
    if txn_records:
        producer.commit_transaction(60)
    producer.flush(60)
    return time.perf_counter() - t0


def replay(
    mock: MockCluster,
    topic: str,
    store: LocalStore,
    source: SegmentsPlanSource,
    ledger: ReplayLedger,
    args: argparse.Namespace,
    parallelism: int,
) -> tuple[float, int]:
    spec = ReplaySpec.model_validate(
        {
            "cluster": "bench-src",
            "topic": "bench",
            "from": parse_position("earliest"),
            "target": TargetSpec(bootstrap_servers=mock.bootstrap_servers),
            "target_topic": topic,
            "txn_max_records": args.txn_records,
            "txn_max_bytes": 1 << 30,
            "txn_max_ms": 60_000,
        }
    )
    plan = build_plan(spec, source)
    t0 = time.perf_counter()
    report = execute(plan, store=store, ledger=ledger, parallelism=parallelism)
    return time.perf_counter() - t0, report.records_sent


def _warm(x: int) -> int:
    # import what a replay task imports, in every Python worker, before the timing starts
    import kafka_archive.replay.engine
    import kafka_archive.replay.ledger
    import kafka_archive.replay.spark  # noqa: F401

    return x


def spark_run(
    mock: MockCluster,
    store: LocalStore,
    source: SegmentsPlanSource,
    db_url: str,
    cores: int,
    topic: str,
    args: argparse.Namespace,
) -> float:
    from kafka_archive.catalog.spark import make_spark_session
    from kafka_archive.replay.spark import run_on_spark

    session = make_spark_session(
        f"local[{cores}]",
        conf={"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"},
    )
    session.sparkContext.setLogLevel("ERROR")
    # warm the Python workers so that the timing is the replay, not the session start
    session.sparkContext.parallelize(range(cores), cores).map(_warm).collect()
    spec = ReplaySpec.model_validate(
        {
            "cluster": "bench-src", "topic": "bench", "from": parse_position("earliest"),
            "partitions": list(range(min(2, args.partitions))),
            "target": TargetSpec(bootstrap_servers=mock.bootstrap_servers),
            "target_topic": topic, "txn_max_records": args.txn_records,
            "txn_max_bytes": 1 << 30, "txn_max_ms": 60_000,
        }
    )  # fmt: skip
    plan = build_plan(spec, source)
    t0 = time.perf_counter()
    run_on_spark(plan, store_uri=store.uri, db_url=db_url, spark=session)
    dt = time.perf_counter() - t0
    session.stop()
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--records", type=int, default=100_000, help="per partition")
    ap.add_argument("--value-bytes", type=int, default=512)
    ap.add_argument("--batch", type=int, default=500, help="records per source batch")
    ap.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    ap.add_argument("--txn-records", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--spark-only", action="store_true", help="skip the bare/replay comparison")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-replay-"))
    t0 = time.perf_counter()
    dirs = write_source(tmp / "logs", args)
    store = LocalStore(tmp / "store", fsync=False)
    source = SegmentsPlanSource.upload_log_dirs(store, "bench-src", dirs)
    messages = decoded(store, source, args.partitions)
    total = len(messages)
    payload = sum(len(m[2]) + len(m[1]) for m in messages)
    print(f"source: {total} records, {payload / 1e6:.1f} MB payload "
          f"(written in {time.perf_counter() - t0:.1f} s)", flush=True)  # fmt: skip
    mock = MockCluster(3)
    mock.create_topic("__kafka_archive_replay_progress", 6)
    db_url = f"sqlite:///{tmp / 'catalog.db'}"
    ledger = ReplayLedger(open_catalog(db_url).engine)
    kinds = ["bare", "bare-txn", "replay", "replay-par"]
    times: dict[str, list[float]] = {k: [] for k in kinds}
    n = 0
    for rep in range(0 if args.spark_only else args.reps):
        order = kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]
        for kind in order:
            n += 1
            topic = f"t{n}"
            mock.create_topic(topic, args.partitions)
            if kind == "bare":
                dt = bare(mock.bootstrap_servers, topic, messages, None)
            elif kind == "bare-txn":
                dt = bare(mock.bootstrap_servers, topic, messages, args.txn_records)
            else:
                dt, sent = replay(
                    mock, topic, store, source, ledger, args,
                    1 if kind == "replay" else args.partitions,
                )  # fmt: skip
                assert sent == total, (sent, total)
            times[kind].append(dt)
            print(f"rep {rep} {kind:10s} {dt:7.2f} s  {total / dt:10,.0f} rec/s  "
                  f"{payload / dt / 1e6:7.1f} MB/s", flush=True)  # fmt: skip
    reps = 0 if args.spark_only else args.reps
    med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
    ratios = [times["bare"][i] / times["replay"][i] for i in range(reps)] or [float("nan")]
    result: dict[str, Any] = {
        "kind": "replay",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "machine": {
            "cpus": __import__("os").cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "params": vars(args),
        "records": total,
        "payload_bytes": payload,
        "seconds": times,
        "median_records_per_s": {k: total / v for k, v in med.items()},
        "ratio_replay_vs_bare": statistics.median(ratios),
        "ratio_replay_vs_bare_per_rep": ratios,
        "ratio_replay_par_vs_bare": med["bare"] / med["replay-par"],
        "ratio_bare_txn_vs_bare": med["bare"] / med["bare-txn"],
    }
    print(f"replay / bare (1 thread each): {result['ratio_replay_vs_bare']:.2f}x "
          f"(per rep {', '.join(f'{r:.2f}' for r in ratios)}); replay with one thread per "
          f"partition / bare: {result['ratio_replay_par_vs_bare']:.2f}x; bare transactional / "
          f"bare: {result['ratio_bare_txn_vs_bare']:.2f}x", flush=True)  # fmt: skip
    if not args.no_spark:
        spark: dict[str, list[float]] = {"local[1]": [], "local[2]": []}
        for rep in range(max(1, args.reps - 1)):
            for cores in (1, 2) if rep % 2 == 0 else (2, 1):
                n += 1
                topic = f"t{n}"
                mock.create_topic(topic, args.partitions)
                dt = spark_run(mock, store, source, db_url, cores, topic, args)
                spark[f"local[{cores}]"].append(dt)
                print(f"spark local[{cores}]: {dt:.2f} s", flush=True)
        s1, s2 = statistics.median(spark["local[1]"]), statistics.median(spark["local[2]"])
        result["spark_seconds"] = spark
        result["spark_speedup_2_vs_1_cores"] = s1 / s2
        print(f"Spark, 2 partitions: local[1] {s1:.2f} s, local[2] {s2:.2f} s: "
              f"{s1 / s2:.2f}x with 2 cores", flush=True)  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (out / f"replay-{stamp}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k.startswith(("ratio", "spark_speedup",
                      "median"))}))  # fmt: skip
    mock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
