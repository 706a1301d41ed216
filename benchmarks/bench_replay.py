"""Replay throughput from the archive vs bare confluent-kafka produce loops, and Spark scaling.

Source: ``--partitions`` partitions of ``--records`` records each (``--value-bytes`` values,
16-byte keys, one header - ``source: bench`` on every record, or with ``--unique-headers`` a
``trace`` header whose value differs on every record - ``--batch`` records per batch, codec
``--codec``), written by ``kafka_archive_dev.writer`` and put in a local object store. Target:
librdkafka's mock cluster (3 brokers) in this process, a fresh one for every run (the mock keeps
every message in memory). After one unrecorded warm-up run of each kind (``--no-warmup`` skips
it), per repetition (order rotated, interleaved), each to a topic with the same partition count:

* ``bare-txn``: **the reference** -- every record already decoded in memory (a list of
  ``(partition, key, value, timestamp, headers)``: same keys, values, timestamps and header lists
  as the replay sends), produced in one Python loop by one producer with *the replay's producer
  configuration* (``kafka_archive.replay.execution.engine.PRODUCER_DEFAULTS``: transactional,
  idempotent, acks=all, same linger and batch sizes) and the replay's commit cadence:
  ``begin_transaction``, at most ``--txn-records`` records of one partition, ``commit_transaction``,
  repeat; then ``flush``. Timed from the first ``begin_transaction`` (the producer's creation and
  ``init_transactions`` are timed separately as ``bare_txn_startup_s``);
* ``bare-idem``: the same loop with an idempotent, non-transactional producer (same settings
  otherwise) and one final ``flush``: a second reference, *not the same work* (no transaction
  round trips; on the mock cluster it is 2-3x slower than the transactional loop, which is why
  it is not the reference);
* ``replay``: ``kafka_archive.replay.runner.execute`` on the record path (``replay_path:
  records``) with one partition at a time (``parallelism=1``: one Python thread producing, like
  the reference): target checks, then per partition a transactional producer
  (``init_transactions``, committed progress read), ranged reads of the archived objects, CRC
  check of every batch, decoding, transaction filtering, produce, a progress record per
  transaction (the last one also marking the partition done), catalog mirror (SQLite) after
  each commit;
* ``replay-par``: the same with one thread per partition;
* ``replay-batch`` (``--target real`` only): ``replay-par`` with ``replay_path: batch`` (the
  archived batches re-stamped and sent whole, :mod:`kafka_archive.replay.execution.
  batch_engine`, whatever their size); ``ratio_batch_vs_record_replay`` (replay-par seconds /
  replay-batch seconds, target >= 3) and ``ratio_batch_replay_vs_bare_idem`` (bare-idem
  seconds / replay-batch seconds: the bare *non-transactional* loop, target >= 1.0) are issue
  27's figures (kafka-python's protocol client cannot talk to the mock cluster).
* ``replay-auto`` (``--target real`` only): ``replay-par`` with ``replay_path: auto``, the
  default, which replays record by record the partitions whose batches are small
  (``batch_engine.small_batches``): ``ratio_auto_vs_record_replay``;
* ``replay-batch-before`` (``--target real`` only): ``replay-batch`` with every batch sent at
  once with ``acks=all``, as before only a partition's last batch of a transaction asked it:
  ``ratio_batch_vs_before`` is what that gives, ``ratio_batch_before_vs_record_replay`` the
  batch path as it was before.

Every run records wall seconds and the process CPU seconds it used (all threads: Python,
librdkafka, the mock brokers). Two ratios, each the median over repetitions of the same
repetition's bare-txn seconds / replay seconds (target >= 0.8):

* ``ratio_replay_vs_bare_txn_with_startup``: both programs whole - the reference's producer
  creation and ``init_transactions`` counted, as the replay's start-up is (target checks, its
  producers, ``init_transactions``, committed-progress reads);
* ``ratio_replay_vs_bare_txn``: stricter, the reference's start-up left out (~14 ms) while the
  replay's stays in.

The default size (3 x 300,000 records, ~1 s per run) is a replay, not a start-up, benchmark:
at 3 x 100,000 (``--records 100000``, ~0.3 s) the replay's fixed ~25 ms of start-up weighs ~7%.
``--reps`` >= 5 is what the docs quote. Then Spark: the same replay as Spark tasks (one per
partition) on ``local[1]`` and ``local[2]`` sessions, timing the job (session start excluded).

    .venv/bin/python benchmarks/bench_replay.py --reps 5 --no-spark
    .venv/bin/python benchmarks/bench_replay.py --reps 7 --records 100000 --no-spark --breakdown
    .venv/bin/python benchmarks/bench_replay.py --spark-only --partitions 2 --records 400000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import _data  # noqa: E402
import confluent_kafka  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from kafka_archive.catalog.db import open_catalog  # noqa: E402
from kafka_archive.replay.bookkeeping import models as _models  # noqa: E402, F401
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger  # noqa: E402
from kafka_archive.replay.execution.engine import PRODUCER_DEFAULTS  # noqa: E402
from kafka_archive.replay.planning.plan import (  # noqa: E402
    ReplaySpec,
    TargetSpec,
    build_plan,
    parse_position,
)
from kafka_archive.replay.planning.sources import SegmentsPlanSource  # noqa: E402
from kafka_archive.replay.runner import execute  # noqa: E402
from kafka_archive.store import LocalStore  # noqa: E402
from kafka_archive_dev.writer.encode import WriteRecord  # noqa: E402
from kafka_archive_dev.writer.partition_writer import ManualClock, PartitionWriter  # noqa: E402

from segment_lib.compression import Codec  # noqa: E402
from segment_lib.log_file import decode_batch, iter_batches  # noqa: E402
from segment_lib.records import Header  # noqa: E402
from tests.support.kafka_mock import MockCluster  # noqa: E402

#: the replay's own producer settings, minus what only a transactional producer may have
PRODUCER: dict[str, Any] = dict(PRODUCER_DEFAULTS)
IDEMPOTENT: dict[str, Any] = {k: v for k, v in PRODUCER.items() if k != "transaction.timeout.ms"}


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
                    (Header("trace", b"%016x" % (p << 40 | start + i)),)
                    if args.unique_headers
                    else (Header("source", b"bench"),),
                    clock.advance(1),
                )
                for i in range(n)
            ]
            pw.append(recs, codec=Codec[args.codec.upper()])
        pw.close()
        dirs.append(pw.dir)
    return dirs


_serial = [0]


def json_safe(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` fit for the result file: the client-log hooks PRODUCER_DEFAULTS carries (a
    ``logging.Logger``, an ``error_cb`` function) named by their type instead of failing
    ``json.dumps`` after the whole measurement (issue 20.7)."""
    return {
        k: v if v is None or isinstance(v, str | int | float | bool) else f"<{type(v).__name__}>"
        for k, v in config.items()
    }


class RealTarget:
    """A topic space on the run's one real Kafka cluster (``--target real``), shaped like the
    mock: the cluster outlives every run (its brokers keep the data on disk, not in memory), so
    :meth:`close` deletes the run's topic instead of a cluster."""

    def __init__(self, cluster: Any, topic: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

        self.bootstrap_servers: str = cluster.bootstrap_servers
        self.topic = cluster.create_topic(topic, partitions, timeout_s=60)
        self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        # leaders elected and serving before the clock starts, as the mock's are
        Producer({"bootstrap.servers": self.bootstrap_servers}).list_topics(topic, timeout=60)

    def close(self) -> None:
        self._admin.delete_topics([self.topic])[self.topic].result(60)


_real_cluster: list[Any] = []


def fresh_target(partitions: int) -> tuple[Any, str]:
    """A new target and a topic of ``partitions`` on it. With ``--target mock`` (default) a new
    mock cluster (with the progress topic) for every run: the mock keeps every message in
    memory, and a cluster reused across runs grows by ~0.5 GB per million records, which slowed
    later runs unevenly. With ``--target real`` a fresh topic on the one real cluster (RF 3,
    min.insync.replicas 2: acks=all waits for two brokers' copies)."""
    _serial[0] += 1
    if _real_cluster:
        topic = f"t{_serial[0]}"
        return RealTarget(_real_cluster[0], topic, partitions), topic
    mock = MockCluster(3)
    mock.create_topic("__kafka_archive_replay_progress", 6)
    topic = f"t{_serial[0]}"
    mock.create_topic(topic, partitions)
    return mock, topic


def decoded(store: LocalStore, source: SegmentsPlanSource, partitions: int) -> list[Any]:
    out = []
    for p in range(partitions):
        for seg in source.segments("bench-src", "bench", p):
            data = store.get_bytes(seg.key)
            for h in iter_batches(data):
                for r in decode_batch(data, h):
                    out.append((p, r.key, r.value, r.timestamp, [tuple(x) for x in r.headers]))
    return out


def bare_txn(
    bootstrap: str, topic: str, messages: list[Any], txn_records: int
) -> tuple[float, float, float]:
    """The reference loop; returns ``(seconds, process CPU seconds, start-up seconds)``."""
    t_start = time.perf_counter()
    producer = Producer(
        {"bootstrap.servers": bootstrap, **PRODUCER, "transactional.id": f"bench-bare-{topic}"}
    )
    producer.init_transactions(30)
    startup = time.perf_counter() - t_start
    produce, poll = producer.produce, producer.poll
    begin, commit = producer.begin_transaction, producer.commit_transaction
    c0, t0 = time.process_time(), time.perf_counter()
    begin()
    in_txn, current = 0, messages[0][0] if messages else 0
    for p, k, v, ts, h in messages:
        # the replay's cadence: a transaction holds at most txn_records records of one partition
        if in_txn == txn_records or p != current:
            commit(60)
            begin()
            in_txn, current = 0, p
        while True:
            try:
                produce(topic, v, k, p, None, None, ts, h)
                break
            except BufferError:
                poll(0.05)
        in_txn += 1
    commit(60)
    producer.flush(60)
    return time.perf_counter() - t0, time.process_time() - c0, startup


def bare_idempotent(bootstrap: str, topic: str, messages: list[Any]) -> tuple[float, float]:
    """The second reference (not the same work); returns ``(seconds, process CPU seconds)``."""
    producer = Producer({"bootstrap.servers": bootstrap, **IDEMPOTENT})
    producer.list_topics(topic, timeout=30)  # connected before the clock starts, like bare-txn
    produce, poll = producer.produce, producer.poll
    c0, t0 = time.process_time(), time.perf_counter()
    for p, k, v, ts, h in messages:
        while True:
            try:
                produce(topic, v, k, p, None, None, ts, h)
                break
            except BufferError:
                poll(0.05)
    producer.flush(60)
    return time.perf_counter() - t0, time.process_time() - c0


def replay(
    mock: MockCluster,
    topic: str,
    store: LocalStore,
    source: SegmentsPlanSource,
    ledger: ReplayLedger,
    args: argparse.Namespace,
    parallelism: int,
    path: str = "records",
) -> tuple[float, float, int]:
    """One replay through ``execute``; returns ``(seconds, process CPU seconds, records)``."""
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
            "replay_path": path,
        }
    )
    plan = build_plan(spec, source)
    c0, t0 = time.process_time(), time.perf_counter()
    report = execute(plan, store=store, ledger=ledger, parallelism=parallelism)
    return time.perf_counter() - t0, time.process_time() - c0, report.records_sent


@contextmanager
def acks_all_each() -> Iterator[None]:
    """Batch-level replay's producer as it was before only a partition's last batch of a
    transaction asked ``acks=all`` (``replay-batch-before``: every batch sent at once with
    ``acks=all``), for the same-run A/B ratio."""
    from kafka_archive.kafka_protocol import transactions as tx

    def append(self: Any, topic: str, partition: int, batch: Any, on_offset: Any = None) -> None:
        if (topic, partition) not in self._added:
            raise tx.TxnFatal(f"{topic}-{partition} was not added to the transaction")
        self._send(tx._Request(self._leader(topic, partition), topic, partition, batch, on_offset))

    saved = tx.TxnBatchProducer.append
    tx.TxnBatchProducer.append = append  # type: ignore[method-assign]
    try:
        yield
    finally:
        tx.TxnBatchProducer.append = saved  # type: ignore[method-assign]


# a benchmark protocol read top to bottom; benchmarks change only for typing in issue 11
def breakdown(  # noqa: C901, PLR0915
    store: LocalStore,
    source: SegmentsPlanSource,
    ledger: ReplayLedger,
    messages: list[Any],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Where the replay's time goes, next to the reference (``--breakdown``): ``--reps``
    interleaved pairs of bare-txn and replay (one thread), the replay instrumented by wrapping
    its parts (a few hundred calls each: the wrappers cost nothing measurable). Medians per
    run, seconds; ``*_cpu`` are CPU seconds of the calling thread(s)."""
    import gc

    from kafka_archive.replay import runner
    from kafka_archive.replay.execution import engine, reader

    acc: dict[str, float] = {}

    def add(key: str, value: float) -> None:
        acc[key] = acc.get(key, 0.0) + value

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*a: Any, **kw: Any) -> Any:
            t, c = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                add(f"{name}_wall", time.perf_counter() - t)
                add(f"{name}_cpu", time.thread_time() - c)

        return wrapper

    def timed_iter(fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
        def wrapper(*a: Any, **kw: Any) -> Iterator[Any]:
            it = fn(*a, **kw)
            while True:
                c = time.thread_time()
                try:
                    item = next(it)
                except StopIteration:
                    return
                finally:
                    add("scan_cpu", time.thread_time() - c)
                yield item

        return wrapper

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            add(f"gc_gen{info['generation']}_collections", 1)

    # (owner, attribute) -> wrapper; setattr/getattr because these are deliberate monkeypatches
    targets: list[tuple[Any, str]] = [
        (engine.PartitionReplay, "run"),
        (engine.PartitionReplay, "prepare"),
        (engine.PartitionReplay, "_commit"),
        (runner, "check_target"),
        (reader, "decode_batch"),
        (reader, "iter_batches"),
        (LocalStore, "get_range_view"),
        (engine.PartitionReplay, "_commit_txn"),
        (ReplayLedger, "mirror"),
    ]
    saved = {key: getattr(*key) for key in targets}
    original_prepare = saved[(engine.PartitionReplay, "prepare")]

    def prepare(self: Any) -> None:
        # prepare() runs inside run() for the first partition and ahead, in a thread of its
        # own, for the others: count the latter here (the former is in partition_run)
        t, c = time.perf_counter(), time.thread_time()
        try:
            original_prepare(self)
        finally:
            if threading.current_thread().name.startswith("replay-prepare"):
                add("prepare_ahead_wall", time.perf_counter() - t)
                add("prepare_ahead_cpu", time.thread_time() - c)

    wrappers = [
        timed("partition_run", saved[targets[0]]),
        prepare,
        timed("commit", saved[targets[2]]),
        timed("check_target", saved[targets[3]]),
        timed("decode", saved[targets[4]]),
        timed_iter(saved[targets[5]]),
        timed("read", saved[targets[6]]),
        timed("commit_txn", saved[targets[7]]),
        timed("catalog_mirror", saved[targets[8]]),
    ]
    for key, wrapper in zip(targets, wrappers, strict=True):
        setattr(*key, wrapper)
    gc.callbacks.append(on_gc)
    rows: dict[str, list[float]] = {}
    try:
        for rep in range(args.reps):
            for kind in ("bare-txn", "replay") if rep % 2 == 0 else ("replay", "bare-txn"):
                acc.clear()
                mock, topic = fresh_target(args.partitions)
                c0, m0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
                if kind == "bare-txn":
                    dt, _cpu, _up = bare_txn(
                        mock.bootstrap_servers, topic, messages, args.txn_records
                    )
                    row = {"bare_wall": dt, "bare_process_cpu": time.process_time() - c0,
                           "bare_thread_cpu": time.thread_time() - m0}  # fmt: skip
                else:
                    replay(mock, topic, store, source, ledger, args, 1)
                    row = {f"replay_{k}": v for k, v in acc.items()}
                    row["replay_wall"] = time.perf_counter() - t0
                    row["replay_process_cpu"] = time.process_time() - c0
                    # the replay's Python threads: the caller's, the partitions', the preparer's
                    row["replay_python_cpu"] = (
                        time.thread_time() - m0 + acc.get("partition_run_cpu", 0.0)
                        + acc.get("prepare_ahead_cpu", 0.0)
                    )  # fmt: skip
                mock.close()
                for k, v in row.items():
                    rows.setdefault(k, []).append(v)
    finally:
        for key, original in saved.items():
            setattr(*key, original)
        gc.callbacks.remove(on_gc)
    return {k: statistics.median(v) for k, v in sorted(rows.items())}


def _warm(x: int) -> int:
    # import what a replay task imports, in every Python worker, before the timing starts
    import kafka_archive.replay.bookkeeping.ledger
    import kafka_archive.replay.execution.engine
    import kafka_archive.spark.replay  # noqa: F401

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
    from kafka_archive.spark.replay import run_on_spark
    from kafka_archive.spark.session import make_spark_session

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


# a benchmark driver read top to bottom; benchmarks change only for typing in issue 11
def main() -> int:  # noqa: C901, PLR0912, PLR0915
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--records", type=int, default=300_000, help="per partition")
    ap.add_argument("--value-bytes", type=int, default=512)
    ap.add_argument(
        "--unique-headers", action="store_true",
        help="a header value that differs on every record (default: the same header on all)",
    )  # fmt: skip
    ap.add_argument("--batch", type=int, default=500, help="records per source batch")
    ap.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    ap.add_argument("--txn-records", type=int, default=20_000)
    ap.add_argument(
        "--no-warmup", dest="warmup", action="store_false",
        help="skip the unrecorded warm-up run of every kind before the repetitions",
    )  # fmt: skip
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--spark-only", action="store_true", help="skip the bare/replay comparison")
    ap.add_argument(
        "--breakdown", action="store_true",
        help="then --reps more bare-txn/replay pairs with the replay's parts timed",
    )  # fmt: skip
    ap.add_argument(
        "--target", default="mock", choices=["mock", "real"],
        help="mock: librdkafka's mock cluster per run; real: a 3-broker Apache Kafka cluster "
        "(kafka_archive_dev.local_kafka, needs Java 17 and Maven), one fresh topic per run",
    )  # fmt: skip
    ap.add_argument(
        "--kinds", default="",
        help="comma-separated kinds to run (default: all); the ratios of kinds not run are "
        "left out, e.g. bare-idem,replay-par,replay-batch for issue 27's batch-level figures",
    )  # fmt: skip
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()

    tmp = _data.scratch_dir("bench-replay-")
    if args.target == "real":
        from kafka_archive_dev.local_kafka import LocalKafkaCluster

        cluster = LocalKafkaCluster(tmp / "kafka", brokers=3, heap="1g").start()
        _real_cluster.append(cluster)
        print(f"target: Apache Kafka {cluster.version}, 3 brokers at "
              f"{cluster.bootstrap_servers}", flush=True)  # fmt: skip
    t0 = time.perf_counter()
    dirs = write_source(tmp / "logs", args)
    store = LocalStore(tmp / "store", fsync=False)
    source = SegmentsPlanSource.upload_log_dirs(store, "bench-src", dirs)
    messages = decoded(store, source, args.partitions)
    total = len(messages)
    payload = sum(len(m[2]) + len(m[1]) for m in messages)
    print(f"source: {total} records, {payload / 1e6:.1f} MB payload "
          f"(written in {time.perf_counter() - t0:.1f} s)", flush=True)  # fmt: skip
    db_url = f"sqlite:///{tmp / 'catalog.db'}"
    ledger = ReplayLedger(open_catalog(db_url, create=True).engine)
    kinds = ["bare-txn", "bare-idem", "replay", "replay-par"]
    if _real_cluster:
        kinds += ["replay-batch", "replay-batch-before", "replay-auto"]
    if args.kinds:
        asked = args.kinds.split(",")
        if unknown := set(asked) - set(kinds):
            ap.error(f"--kinds: unknown or unavailable here: {', '.join(sorted(unknown))}")
        kinds = [k for k in kinds if k in asked]
    times: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    startup: list[float] = []
    # repetition -1 is a warm-up of every kind, not recorded (first-use costs: imports, compiled
    # SQL statements, the archive's first mapping)
    for rep in range(-1 if args.warmup else 0, 0 if args.spark_only else args.reps):
        order = kinds[rep % len(kinds) :] + kinds[: rep % len(kinds)]
        for kind in order:
            mock, topic = fresh_target(args.partitions)
            if kind == "bare-txn":
                dt, dc, up = bare_txn(mock.bootstrap_servers, topic, messages, args.txn_records)
                startup.append(up)
            elif kind == "bare-idem":
                dt, dc = bare_idempotent(mock.bootstrap_servers, topic, messages)
            else:
                with acks_all_each() if kind == "replay-batch-before" else nullcontext():
                    dt, dc, sent = replay(
                        mock, topic, store, source, ledger, args,
                        1 if kind == "replay" else args.partitions,
                        {"replay-batch": "batch", "replay-batch-before": "batch",
                         "replay-auto": "auto"}.get(kind, "records"),
                    )  # fmt: skip
                assert sent == total, (sent, total)
            mock.close()
            if rep < 0:
                startup[len(times.get("bare-txn", [])) :] = []
                continue
            times[kind].append(dt)
            cpu[kind].append(dc)
            print(f"rep {rep} {kind:10s} {dt:7.2f} s  {total / dt:10,.0f} rec/s  "
                  f"{payload / dt / 1e6:7.1f} MB/s  cpu {dc:6.2f} s", flush=True)  # fmt: skip
    reps = 0 if args.spark_only else args.reps

    def per_rep(ref: str, run: str, table: dict[str, list[float]]) -> list[float]:
        # same-repetition ratios ref seconds / run seconds: run's throughput relative to ref's
        # (nan when --kinds left either out)
        if not table.get(ref) or not table.get(run):
            return [float("nan")]
        return [table[ref][i] / table[run][i] for i in range(reps)] or [float("nan")]

    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    vs_txn = per_rep("bare-txn", "replay", times)
    vs_idem = per_rep("bare-idem", "replay", times)
    par_vs_txn = per_rep("bare-txn", "replay-par", times)
    cpu_vs_txn = per_rep("bare-txn", "replay", cpu)
    # the reference with its start-up counted, as the replay's is (producer, init_transactions)
    with_startup = [
        (times["bare-txn"][i] + startup[i]) / times["replay"][i]
        for i in range(reps if times.get("bare-txn") and times.get("replay") else 0)
    ] or [float("nan")]
    result: dict[str, Any] = {
        "kind": "replay",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            **_data.machine(),
            "confluent_kafka": confluent_kafka.version(),
            "librdkafka": confluent_kafka.libversion()[0],
            "loadavg_at_end": list(os.getloadavg()),
        },
        "params": vars(args),
        "producer_config": json_safe(PRODUCER),
        "records": total,
        "payload_bytes": payload,
    }
    if reps:
        result |= {
            "seconds": times,
            "process_cpu_seconds": cpu,
            "bare_txn_startup_s": startup,
            "median_records_per_s": {k: total / med(v) for k, v in times.items() if v},
            "ratio_replay_vs_bare_txn": med(vs_txn),
            "ratio_replay_vs_bare_txn_per_rep": vs_txn,
            "ratio_replay_vs_bare_txn_with_startup": med(with_startup),
            "ratio_replay_vs_bare_txn_cpu": med(cpu_vs_txn),
            "ratio_replay_par_vs_bare_txn": med(par_vs_txn),
            "ratio_replay_vs_bare_idem": med(vs_idem),
            "ratio_bare_txn_vs_bare_idem": med(per_rep("bare-idem", "bare-txn", times)),
        }
        if "replay-batch" in times:
            result["ratio_batch_vs_record_replay"] = med(
                per_rep("replay-par", "replay-batch", times)
            )
            result["ratio_batch_replay_vs_bare_idem"] = med(
                per_rep("bare-idem", "replay-batch", times)
            )
            result["ratio_batch_vs_before"] = med(
                per_rep("replay-batch-before", "replay-batch", times)
            )
            result["ratio_batch_before_vs_record_replay"] = med(
                per_rep("replay-par", "replay-batch-before", times)
            )
        if "replay-auto" in times:
            result["ratio_auto_vs_record_replay"] = med(per_rep("replay-par", "replay-auto", times))
            print(f"replay_path auto / record-level replay: "
                  f"{result['ratio_auto_vs_record_replay']:.2f}x", flush=True)  # fmt: skip
        if "replay-batch" in times:
            vs_loop = result["ratio_batch_replay_vs_bare_idem"]
            print(f"batch-level replay / record-level replay (real cluster): "
                  f"{result['ratio_batch_vs_record_replay']:.2f}x; / bare non-transactional "
                  f"loop: {vs_loop:.2f}x; / the batch path with acks=all on every batch: "
                  f"{result['ratio_batch_vs_before']:.2f}x", flush=True)  # fmt: skip
        print(f"replay / bare-txn (the reference, 1 thread each), both with their start-up: "
              f"{result['ratio_replay_vs_bare_txn_with_startup']:.2f}x (per rep "
              f"{', '.join(f'{r:.2f}' for r in with_startup)}); the reference's start-up left "
              f"out: {result['ratio_replay_vs_bare_txn']:.2f}x (per rep "
              f"{', '.join(f'{r:.2f}' for r in vs_txn)}); process CPU: "
              f"{result['ratio_replay_vs_bare_txn_cpu']:.2f}x; replay-par / bare-txn: "
              f"{result['ratio_replay_par_vs_bare_txn']:.2f}x; replay / bare-idem (not the "
              f"same work): {result['ratio_replay_vs_bare_idem']:.2f}x", flush=True)  # fmt: skip
    if args.breakdown and not args.spark_only:
        result["breakdown"] = breakdown(store, source, ledger, messages, args)
        print(json.dumps(result["breakdown"], indent=1), flush=True)
    if not args.no_spark:
        spark: dict[str, list[float]] = {"local[1]": [], "local[2]": []}
        for rep in range(max(1, args.reps - 1)):
            for cores in (1, 2) if rep % 2 == 0 else (2, 1):
                mock, topic = fresh_target(args.partitions)
                dt = spark_run(mock, store, source, db_url, cores, topic, args)
                mock.close()
                spark[f"local[{cores}]"].append(dt)
                print(f"spark local[{cores}]: {dt:.2f} s", flush=True)
        s1, s2 = statistics.median(spark["local[1]"]), statistics.median(spark["local[2]"])
        result["spark_seconds"] = spark
        result["spark_speedup_2_vs_1_cores"] = s1 / s2
        print(f"Spark, 2 partitions: local[1] {s1:.2f} s, local[2] {s2:.2f} s: "
              f"{s1 / s2:.2f}x with 2 cores", flush=True)  # fmt: skip
    if _real_cluster:
        _real_cluster[0].stop()
        result["kafka"] = _real_cluster[0].version
    _data.result_file("replay-real" if _real_cluster else "replay", Path(args.out)).write_text(
        json.dumps(result, indent=2)
    )
    print(json.dumps({k: v for k, v in result.items() if k.startswith(("ratio", "spark_speedup",
                      "median"))}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
