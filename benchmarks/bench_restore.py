"""Whole-cluster restore throughput vs the same records replayed topic by topic, and vs a bare
transactional produce loop, on one real Kafka cluster (issue 24, point 7).

Source: ``--topics`` topics x ``--partitions`` partitions x ``--records`` records each
(``--value-bytes`` values, 16-byte keys, ``--batch`` records per batch, codec ``--codec``),
written by ``kafka_archive_dev.writer`` as one broker's log dir, archived into a local store and
cataloged (the restore plans from the catalog as in production). Target: one real Apache Kafka
cluster (``--brokers``, default 1), started here. Per repetition, interleaved (order rotated),
each into fresh topics:

* ``restore``: :meth:`RestoreService.run <kafka_archive.services.restore.RestoreService.run>`
  of every topic (preflight, topic creation with configs, ``--parallelism`` topics at once, each
  replay's partitions in parallel on the batch path, report) - timed whole;
* ``sequential``: the same topics replayed one after another, each as ``replay run
  --create-topic`` does (:class:`ReplayService`: plan, create, replay) - what an on-call engineer
  scripting N replays gets;
* ``bare-txn``: **the reference** - every record already decoded in memory, produced by one
  transactional producer in one Python loop with the replay's producer settings and commit
  cadence (at most ``--txn-records`` records of one partition per transaction) into topics
  created before the clock starts.

``--warmup`` rounds of the three (default 1) run first and are not recorded: the first restore
or sequential run of the process would otherwise pay its imports and first connections alone.
Ratios, medians over repetitions of the same repetition's seconds: ``ratio_restore_vs_bare``
(bare-txn / restore; target >= 0.8: the restore keeps the target as busy as the bare loop) and
``ratio_restore_vs_sequential`` (sequential / restore; target > 1). Results go to
``benchmarks/results/restore-<time>.json``.

    flock /work/wt/.heavy.lock .venv/bin/python benchmarks/bench_restore.py --reps 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from kafka_archive.replay.execution.engine import PRODUCER_DEFAULTS  # noqa: E402
from kafka_archive_dev.local_kafka import LocalKafkaCluster  # noqa: E402
from kafka_archive_dev.writer.broker_writer import BrokerWriter  # noqa: E402
from kafka_archive_dev.writer.encode import WriteRecord  # noqa: E402

from segment_lib.compression import Codec  # noqa: E402
from segment_lib.log_file import decode_batch, iter_batches  # noqa: E402
from segment_lib.records import Header  # noqa: E402

CLUSTER = "bench-src"
START_MS = int(time.time() * 1000) - 3_600_000  # recent: the target keeps what it receives


def topics_of(args: argparse.Namespace) -> list[str]:
    return [f"bench-{i:02d}" for i in range(args.topics)]


def write_and_catalog(root: Path, args: argparse.Namespace) -> tuple[str, str]:
    """The source as one broker's log dir, archived and cataloged: ``(store URI, db URL)``."""
    from kafka_archive.archive.runner import run_archive
    from kafka_archive.catalog.build import build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.store import open_store

    broker = BrokerWriter(root / "b1", 1, cluster_id="bench-src-id")
    value = bytes(range(256)) * (args.value_bytes // 256 + 1)
    ts = START_MS
    for topic in topics_of(args):
        for p in range(args.partitions):
            pw = broker.partition(topic, p, segment_bytes=8 << 20)
            for start in range(0, args.records, args.batch):
                n = min(args.batch, args.records - start)
                ts += 1
                recs = [
                    WriteRecord(
                        f"k-{p}-{start + i:010d}".encode(),
                        value[(start + i) % 256 : (start + i) % 256 + args.value_bytes],
                        (Header("source", b"bench"),),
                        ts,
                    )
                    for i in range(n)
                ]
                pw.append(recs, codec=Codec[args.codec.upper()])
            pw.roll()  # everything in rolled segments: the archiver never takes the active one
    broker.close()
    store = open_store(str(root / "store"))
    run_archive(
        cluster=CLUSTER, broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store
    )
    shutil.rmtree(root / "b1")  # archived: the restore reads the store (disk kept small)
    db = f"sqlite:///{root / 'catalog.db'}"
    with open_catalog(db, create=True) as cat:
        build_catalog(cat, store.uri, cluster=CLUSTER)
    return store.uri, db


def decoded(store_uri: str, db: str, args: argparse.Namespace) -> list[tuple[Any, ...]]:
    """Every record in memory, per topic and partition in order (the bare loop's input)."""
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
    from kafka_archive.store import open_store

    store = open_store(store_uri)
    out = []
    with open_catalog(db) as cat:
        source = CatalogPlanSource(cat, store)
        for topic in topics_of(args):
            for p in range(args.partitions):
                for seg in source.segments(CLUSTER, topic, p):
                    data = store.get_bytes(seg.key)
                    for h in iter_batches(data):
                        for r in decode_batch(data, h):
                            out.append(
                                (
                                    topic,
                                    p,
                                    r.key,
                                    r.value,
                                    r.timestamp,
                                    [tuple(x) for x in r.headers],
                                )
                            )
    return out


def bare_txn(bootstrap: str, prefix: str, messages: list[Any], txn_records: int) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            **PRODUCER_DEFAULTS,
            "transactional.id": f"bench-bare-{prefix}",
        }
    )
    producer.init_transactions(30)
    produce, poll = producer.produce, producer.poll
    t0 = time.perf_counter()
    producer.begin_transaction()
    in_txn, current = 0, (messages[0][0], messages[0][1])
    for topic, p, k, v, ts, h in messages:
        if in_txn == txn_records or (topic, p) != current:
            producer.commit_transaction(60)
            producer.begin_transaction()
            in_txn, current = 0, (topic, p)
        while True:
            try:
                produce(prefix + topic, v, k, p, None, None, ts, h)
                break
            except BufferError:
                poll(0.05)
        in_txn += 1
    producer.commit_transaction(60)
    producer.flush(60)
    return time.perf_counter() - t0


def _request(args: argparse.Namespace, bootstrap: str, prefix: str) -> Any:
    from kafka_archive.replay.planning.plan import TargetSpec
    from kafka_archive.restore.request import RenameMap, RestoreRequest

    return RestoreRequest.model_validate(
        {
            "cluster": CLUSTER,
            "all_topics": True,
            "at_ms": int(time.time() * 1000),
            "rename": RenameMap(prefix=prefix),
            "groups": [],
            "target": TargetSpec(bootstrap_servers=bootstrap),
            "replication_factor": args.brokers,
            "parallelism": args.parallelism,
        }
    )


def restore(args: argparse.Namespace, store: str, db: str, bootstrap: str, prefix: str) -> float:
    from kafka_archive.services.restore import RestoreService
    from kafka_archive.settings import load_settings

    t0 = time.perf_counter()
    with RestoreService(load_settings({"store": store, "db": db})) as svc:
        report = svc.run(_request(args, bootstrap, prefix))
    took = time.perf_counter() - t0
    assert report.status == "complete", report.model_dump_json()
    assert report.records_this_run == args.topics * args.partitions * args.records
    return took


def sequential(args: argparse.Namespace, store: str, db: str, bootstrap: str, prefix: str) -> float:
    from kafka_archive.services.replay import ReplayService
    from kafka_archive.services.restore_preflight import replay_spec
    from kafka_archive.settings import load_settings

    request = _request(args, bootstrap, prefix)
    t0 = time.perf_counter()
    sent = 0
    for topic in topics_of(args):
        with ReplayService(load_settings({"store": store, "db": db})) as svc:
            spec = replay_spec(request, topic, prefix + topic, args.brokers, {})
            report = svc.run(svc.plan(spec, config_at_ms=request.at_ms))
            assert report.status == "complete", report.status
            sent += report.records_sent_this_run
    took = time.perf_counter() - t0
    assert sent == args.topics * args.partitions * args.records
    return took


def drop_topics(bootstrap: str, prefix: str, timeout_s: float = 120) -> None:
    """Delete the topics of one measurement (and wait until the metadata has none), so the
    broker's disk holds one measurement's data at a time; not timed."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [t for t in admin.list_topics(timeout=30).topics if t.startswith(prefix)]
    if names:
        for fut in admin.delete_topics(names, operation_timeout=60).values():
            fut.result(90)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(t.startswith(prefix) for t in admin.list_topics(timeout=30).topics):
            return
        time.sleep(0.2)
    raise TimeoutError(f"topics {prefix}* still listed after {timeout_s} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=8)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--records", type=int, default=30_000)
    ap.add_argument("--value-bytes", type=int, default=200)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--codec", default="lz4")
    ap.add_argument("--txn-records", type=int, default=20_000)
    ap.add_argument("--parallelism", type=int, default=4)
    ap.add_argument("--brokers", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="rounds run first, not recorded")
    args = ap.parse_args()
    runs: dict[str, list[float]] = {"restore": [], "sequential": [], "bare-txn": []}
    with tempfile.TemporaryDirectory(prefix="bench-restore-") as tmp:
        root = Path(tmp)
        store, db = write_and_catalog(root / "src", args)
        messages = decoded(store, db, args)
        # deleted topics' files go at once (default: a minute later): one measurement's data
        # on the disk at a time
        cluster = LocalKafkaCluster(
            root / "kafka",
            brokers=args.brokers,
            broker_config={"log.segment.delete.delay.ms": "0"},
        ).start()
        try:
            boot = cluster.bootstrap_servers
            order = ["restore", "sequential", "bare-txn"]
            # warm-up rounds (not recorded): the first of restore or sequential would
            # otherwise pay this process's imports and first connections alone
            for rep in range(-args.warmup, args.reps):
                for kind in order[rep % 3 :] + order[: rep % 3]:
                    prefix = f"{kind[0]}{rep}.".replace("-", "w")
                    if kind == "restore":
                        took = restore(args, store, db, boot, prefix)
                    elif kind == "sequential":
                        took = sequential(args, store, db, boot, prefix)
                    else:
                        for topic in topics_of(args):
                            cluster.create_topic(prefix + topic, args.partitions, timeout_s=60)
                        took = bare_txn(boot, prefix, messages, args.txn_records)
                    if rep >= 0:
                        runs[kind].append(took)
                    print(f"rep {rep} {kind}: {took:.2f} s", file=sys.stderr)
                    drop_topics(boot, prefix)
        finally:
            cluster.stop()
    med = {k: statistics.median(v) for k, v in runs.items()}
    ratio_bare = statistics.median(
        b / r for b, r in zip(runs["bare-txn"], runs["restore"], strict=True)
    )
    ratio_seq = statistics.median(
        s / r for s, r in zip(runs["sequential"], runs["restore"], strict=True)
    )
    result = {
        "benchmark": "restore",
        "at": datetime.now(UTC).isoformat(),
        "args": vars(args),
        "records": args.topics * args.partitions * args.records,
        "seconds": runs,
        "median_s": med,
        "ratio_restore_vs_bare": round(ratio_bare, 3),
        "ratio_restore_vs_sequential": round(ratio_seq, 3),
        "targets": {"ratio_restore_vs_bare": ">= 0.8", "ratio_restore_vs_sequential": "> 1"},
    }
    out = ROOT / "benchmarks" / "results" / f"restore-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
