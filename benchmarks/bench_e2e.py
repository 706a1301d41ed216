"""End to end (archive + catalog build + replay) vs the replay alone, on a real Kafka cluster.

Issue 27, "no fixed costs on small jobs": a small job (``--records`` records, 60,000 by default,
of a transactional topic) should cost, end to end, about what its replay costs (target: within
2x), and a replay should produce its first record soon after it starts (target: 0.5 s on a
warm machine).

Setup: a 3-node Apache Kafka KRaft cluster (:class:`kafka_archive_dev.local_kafka.
LocalKafkaCluster`, as ``bench_replay.py --target real`` starts it: RF 3, segments rolling
every 3 s). The source topic (``--partitions`` partitions) is written by a transactional
confluent-kafka producer, ``--txn-records`` records per transaction (keys ``k-<n>``, values of
``--value-bytes``, one header), then its segments are rolled (one plain record per partition
after the roll time) so the archiver sees them closed. Not timed.

Measured, interleaved, ``--reps`` times (median), each into a fresh target topic created
beforehand (so neither side pays for topic creation):

* ``e2e``: into a fresh store and catalog, ``run_archive`` over each broker's log dir (every
  replica, as the per-broker archivers do; ``topics=[source topic]``: the replays' target
  topics are not read, ``__consumer_offsets`` and the metadata log are), then
  :class:`~kafka_archive.services.catalog_build.CatalogBuildService` ``.build()`` with the
  default engine (``auto``: the report says which ran and why), then
  :class:`~kafka_archive.services.replay.ReplayService` ``.plan()`` + ``.run()`` of the whole
  topic (what ``kafka-archive replay run`` does, minus the process start). Each part timed:
  ``archive_s``, ``catalog_s``, ``replay_s``.
* ``replay``: the same replay alone, from a store and catalog built once before the
  repetitions.

``--catalog-engine spark`` makes the e2e build start Spark (``local[*]``) whatever the size, as
every ``catalog build`` did before the engine followed the increment: the fixed cost that
change removes.

Ratio: ``e2e / replay`` (medians). Then ``--first-reps`` times, the time from starting a replay
to its first record at the target: a read_uncommitted consumer assigned to the target topic
(before the clock starts) notes when the first record arrives, for ``kafka-archive replay run``
as a fresh process (``first_record_cli_s``: interpreter start, imports, planning, target checks,
``init_transactions``, the first transaction's records; with a bytecode cache, as an installed
wheel has: ``_data.cli_environment``) and for ``plan()`` + ``run()`` in this warm process
(``first_record_inproc_s``); with ``--reference-src DIR`` (another checkout's sources, e.g.
the commit before a change), that checkout's command too, interleaved with this one's
(``first_record_cli_ref_s``, ``first_record_cli_over_ref``, and the median of the pairs'
ratios ``first_record_cli_over_ref_paired``: the load of a shared machine moves both; and each
command's CPU time, user + system, whole run: ``cpu_cli_s``, ``cpu_cli_ref_s``).
``--profile`` adds where the start-up goes: for three replays in this process, the wall clock at
which each step begins and ends (planning, target check, ``execute``, the claim, the path
probe, ``init_transactions`` on either path, the claim check, the first record), and for the
CLI the largest top-level imports (``-X importtime``) and the functions with the most
cumulative time (cProfile).

    .venv/bin/python benchmarks/bench_e2e.py
    .venv/bin/python benchmarks/bench_e2e.py --reps 5 --first-reps 5 --profile
    .venv/bin/python benchmarks/bench_e2e.py --reps 3 --first-reps 0 --catalog-engine spark
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import _data
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka_archive.archive import run_archive
from kafka_archive.replay.planning.completeness import FINISHED_STATUSES
from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, parse_position
from kafka_archive.services.catalog_build import CatalogBuildService
from kafka_archive.services.replay import ReplayService
from kafka_archive.settings import Settings
from kafka_archive.store import open_store
from kafka_archive_dev.local_kafka import LocalKafkaCluster

CLUSTER = "e2e"
TOPIC = "e2e-src"


def produce_source(bootstrap: str, args: argparse.Namespace) -> None:
    """``--records`` records in transactions of ``--txn-records``, round robin over the
    partitions; then, past the roll time, one plain record per partition rolls the segments."""
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "bench-e2e-src", "linger.ms": 5}
    )
    producer.init_transactions(60)
    value = b"v" * args.value_bytes
    for start in range(0, args.records, args.txn_records):
        producer.begin_transaction()
        for n in range(start, min(args.records, start + args.txn_records)):
            while True:
                try:
                    producer.produce(
                        TOPIC, value, b"k-%d" % n, n % args.partitions, headers=[("h", b"1")]
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.commit_transaction(60)
    producer.flush(60)
    time.sleep(3.5)  # log.roll.ms is 3 s: the next append rolls each partition's segment
    plain = Producer({"bootstrap.servers": bootstrap})
    for p in range(args.partitions):
        plain.produce(TOPIC, b"roll", b"roll", p)
    plain.flush(60)
    time.sleep(2.0)  # followers append (and roll) too; checkpoints are written every second


def archive(cluster: LocalKafkaCluster, store_uri: str, state: Path) -> int:
    """Archive every broker's log dir, the source topic only (``--topics``: the cluster also
    holds the replays' target topics, which a production archiver would archive too, but which
    are not part of this job; ``__consumer_offsets`` and the metadata log are archived as
    always); returns the segments archived."""
    store = open_store(store_uri)
    n = 0
    for node, log_dir in sorted(cluster.log_dirs.items()):
        report = run_archive(
            cluster=CLUSTER,
            broker_id=node,
            log_dirs=[str(log_dir)],
            store=store,
            state_dir=str(state / str(node)),
            topics=[TOPIC],
        )
        if not report.ok:
            raise SystemExit(f"archive failed: {report.failures}")
        n += report.segments_archived
    store.close()
    return n


def spec(bootstrap: str, target: str) -> ReplaySpec:
    return ReplaySpec.model_validate(
        {
            "cluster": CLUSTER,
            "topic": TOPIC,
            "from": parse_position("earliest"),
            "target": TargetSpec(bootstrap_servers=bootstrap),
            "target_topic": target,
        }
    )


def replay(settings: Settings, bootstrap: str, target: str) -> int:
    """``kafka-archive replay run`` without the process: plan, then run; records sent."""
    with ReplayService(settings) as service:
        report = service.run(service.plan(spec(bootstrap, target)))
    if report.status not in FINISHED_STATUSES:
        raise SystemExit(f"replay ended {report.status}: {report.model_dump_json()[:500]}")
    return int(report.records_sent)


class FirstRecord(threading.Thread):
    """Notes when the first record reaches ``topic`` (read_uncommitted: the replay's first
    transaction need not have committed)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-e2e-{topic}",
                "isolation.level": "read_uncommitted",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 10,
            }
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.consumer.poll(0.5)  # connected and fetching before the clock starts
        self.at: float | None = None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set() and self.at is None:
            msg = self.consumer.poll(0.005)
            if msg is not None and msg.error() is None:
                self.at = time.perf_counter()
        self.consumer.close()


def first_record(
    bootstrap: str, target: str, partitions: int, start: Callable[[], object]
) -> tuple[float, float]:
    """(seconds to the first record at ``target``, seconds to the end of ``start``)."""
    watch = FirstRecord(bootstrap, target, partitions)
    watch.start()
    t0 = time.perf_counter()
    start()
    total = time.perf_counter() - t0
    watch.done.set()
    watch.join(30)
    if watch.at is None:
        raise SystemExit(f"no record reached {target}")
    return watch.at - t0, total


def cli_replay(settings: Settings, bootstrap: str, target: str, source: Path | None = None) -> None:
    """``kafka-archive replay run`` as a fresh process; ``source``: another checkout's sources
    (``--reference-src``) imported instead of this one's."""
    env: dict[str, str] = _data.cli_environment(Path(str(settings.db)).parent)
    if source is not None:
        # found before this checkout's editable install (a finder appended to sys.meta_path)
        env["PYTHONPATH"] = os.pathsep.join([str(source / "plugins"), str(source)])
    cmd = [
        str(Path(sys.executable).with_name("kafka-archive")),
        *replay_args(settings, bootstrap, target),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"replay run failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")


@contextmanager
def step_clock(t0: list[float], steps: dict[str, float]) -> Iterator[None]:
    """Wall clock, from ``t0[0]``, at which each start-up step of a replay begins and ends
    (wrapping the functions the service calls; nothing under replay/execution is changed)."""
    import kafka_archive.replay.execution.batch_engine as batch_engine
    import kafka_archive.replay.execution.engine as engine
    import kafka_archive.replay.execution.txn_calls as txn_calls
    import kafka_archive.replay.runner as runner
    from kafka_archive.kafka_protocol.transactions import TxnBatchProducer

    patched: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        def timed(*a: Any, **kw: Any) -> Any:
            steps.setdefault(f"{label}_start", time.perf_counter() - t0[0])
            try:
                return original(*a, **kw)
            finally:
                steps.setdefault(f"{label}_end", time.perf_counter() - t0[0])

        setattr(owner, name, timed)
        patched.append((owner, name, original))

    wrap(ReplayService, "plan", "plan")
    wrap(runner, "check_target", "check_target")
    wrap(runner, "execute", "execute")
    wrap(txn_calls, "init_transactions", "init_transactions")
    wrap(runner, "claim_run", "claim")  # (in the background since issue 27's second pass)
    wrap(batch_engine, "replay_path_refusal", "path_probe")
    wrap(TxnBatchProducer, "init", "batch_init_transactions")  # the batch path's first
    wrap(engine.PartitionReplay, "_check_claim", "check_claim")
    try:
        yield
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)


def inproc_steps(
    settings: Settings, bootstrap: str, target: str, partitions: int
) -> dict[str, float]:
    """One in-process replay into ``target`` under :func:`step_clock`, with its first record."""
    steps: dict[str, float] = {}
    clock = [0.0]
    with step_clock(clock, steps):
        watch = FirstRecord(bootstrap, target, partitions)
        watch.start()
        clock[0] = time.perf_counter()
        replay(settings, bootstrap, target)
        watch.done.set()
        watch.join(30)
    if watch.at is not None:
        steps["first_record"] = watch.at - clock[0]
    ordered = dict(sorted(steps.items(), key=lambda kv: kv[1]))
    print(json.dumps({k: round(v, 3) for k, v in ordered.items()}), flush=True)
    return ordered


def replay_args(settings: Settings, bootstrap: str, target: str) -> list[str]:
    return [
        "replay", "run", "--cluster", CLUSTER, "--topic", TOPIC, "--from", "earliest",
        "--target", bootstrap, "--target-topic", target, "--store", str(settings.store),
        "--db", str(settings.db), "--json",
    ]  # fmt: skip


def cli_profile(settings: Settings, bootstrap: str, targets: Iterator[str]) -> dict[str, Any]:
    """Where ``kafka-archive replay run`` spends its time: the largest top-level imports
    (``-X importtime``, ms) and the functions with the most cumulative time (cProfile, s),
    each from a run into a fresh target."""
    import pstats
    import tempfile

    env: dict[str, str] = _data.cli_environment(Path(str(settings.db)).parent)
    cli = str(Path(sys.executable).with_name("kafka-archive"))
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", cli, *replay_args(settings, bootstrap, next(targets))],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    imports = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cum, raw = line[len("import time:") :].split("|")
        if len(raw) - len(raw.lstrip()) <= 1:  # top level: imported by the command itself
            imports.append((raw.strip(), int(cum) / 1000))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "replay.prof"
        subprocess.run(
            [sys.executable, "-m", "cProfile", "-o", str(out), cli,
             *replay_args(settings, bootstrap, next(targets))],
            capture_output=True, timeout=300, check=True, env=env,
        )  # fmt: skip
        stats = pstats.Stats(str(out))
        rows = [
            (f"{Path(file).name}:{line}({fn})", ct)
            for (file, line, fn), (_cc, _nc, _tt, ct, _callers) in stats.stats.items()  # type: ignore[attr-defined]
        ]
    return {
        "imports_ms": sorted(imports, key=lambda r: -r[1])[:12],
        "cumulative_s": sorted(rows, key=lambda r: -r[1])[:40],
    }


def main() -> None:  # noqa: PLR0915
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=60_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--value-bytes", type=int, default=200)
    ap.add_argument("--txn-records", type=int, default=1000)
    ap.add_argument(
        "--catalog-engine", default="auto", choices=["auto", "in-process", "spark"],
        help="the e2e catalog build's engine (spark: as every build ran before issue 27)",
    )  # fmt: skip
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--first-reps", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="where the start-up time goes")
    ap.add_argument(
        "--reference-src", type=Path, default=None,
        help="another checkout's sources (git archive COMMIT | tar -x -C DIR; copy in "
        "segment_lib's compiled modules): its `replay run` is timed to the first record "
        "too, interleaved with this one's (first_record_cli_over_ref)",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, default=_data.RESULTS_DIR)
    args = ap.parse_args()

    work = _data.scratch_dir("bench-e2e-")
    cluster = LocalKafkaCluster(work / "kafka", brokers=3, heap="1g").start()
    serial = iter(range(1, 10_000))

    def fresh_target() -> str:
        return cluster.create_topic(f"e2e-t{next(serial)}", args.partitions, timeout_s=60)

    def fresh_settings(tag: str) -> Settings:
        (work / tag).mkdir()
        return Settings(store=(work / tag / "store").as_uri(), db=str(work / tag / "c.db"))

    bootstrap = cluster.bootstrap_servers
    runs: dict[str, list[dict[str, Any]]] = {"e2e": [], "replay": []}
    firsts: dict[str, list[dict[str, float]]] = {"cli": [], "inproc": []}
    result: dict[str, Any] = {}
    try:
        cluster.create_topic(TOPIC, args.partitions, timeout_s=60)
        t = time.perf_counter()
        produce_source(bootstrap, args)
        print(f"source: {args.records} records in {time.perf_counter() - t:.1f}s", flush=True)

        def e2e(tag: str) -> dict[str, Any]:
            settings = fresh_settings(tag)
            target = fresh_target()
            t0 = time.perf_counter()
            segments = archive(cluster, str(settings.store), work / tag / "state")
            t1 = time.perf_counter()
            with CatalogBuildService(settings) as service:
                built = service.build(engine=args.catalog_engine)
            t2 = time.perf_counter()
            sent = replay(settings, bootstrap, target)
            t3 = time.perf_counter()
            assert sent == args.records, (sent, args.records)
            return {
                "seconds": t3 - t0,
                "archive_s": t1 - t0,
                "catalog_s": t2 - t1,
                "replay_s": t3 - t2,
                "segments_archived": segments,
                "engine": built.engine,
                "engine_reason": built.engine_reason,
                "catalog_report_s": built.seconds,
            }

        warm = e2e("warm")  # imports, SQLAlchemy compiles, the brokers' page cache
        base = fresh_settings("base")
        archive(cluster, str(base.store), work / "base" / "state")
        with CatalogBuildService(base) as service:
            service.build()
        print(f"warm-up e2e: {json.dumps(warm)}", flush=True)
        for rep in range(args.reps):
            order = ["e2e", "replay"] if rep % 2 == 0 else ["replay", "e2e"]
            for kind in order:
                if kind == "e2e":
                    m = e2e(f"rep{rep}")
                else:
                    target = fresh_target()
                    t0 = time.perf_counter()
                    sent = replay(base, bootstrap, target)
                    m = {"seconds": time.perf_counter() - t0}
                    assert sent == args.records, (sent, args.records)
                runs[kind].append(m)
                print(f"rep {rep} {kind:7s} {json.dumps(m)}", flush=True)

        cli_replay(base, bootstrap, fresh_target())  # warm: the CLI's files in the page cache
        if args.reference_src is not None:
            cli_replay(base, bootstrap, fresh_target(), args.reference_src)
        for rep in range(args.first_reps):
            kinds = [("cli", None)]
            if args.reference_src is not None:
                kinds.insert(rep % 2, ("cli_ref", args.reference_src))
            for kind, source in kinds:
                target = fresh_target()
                cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                first, total = first_record(
                    bootstrap,
                    target,
                    args.partitions,
                    partial(cli_replay, base, bootstrap, target, source),
                )
                cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
                firsts.setdefault(kind, []).append(
                    {"first_record_s": first, "total_s": total, "cpu_s": cpu}
                )
            target = fresh_target()
            first, total = first_record(
                bootstrap, target, args.partitions, partial(replay, base, bootstrap, target)
            )
            firsts["inproc"].append({"first_record_s": first, "total_s": total})
            ref = f" cli_ref {firsts['cli_ref'][-1]}" if "cli_ref" in firsts else ""
            print(f"rep {rep} first record: cli {firsts['cli'][-1]}{ref} inproc {first:.3f}s")

        if args.profile:
            result["startup_steps_s"] = [
                inproc_steps(base, bootstrap, fresh_target(), args.partitions)
                for _ in range(3)  # in-process start-ups vary by hundreds of ms under load
            ]
            result["cli_profile"] = cli_profile(base, bootstrap, iter(fresh_target, None))
            print(json.dumps(result, indent=1), flush=True)
    finally:
        cluster.stop()

    def med(kind: str, key: str = "seconds") -> float:
        return float(statistics.median(m[key] for m in runs[kind]))

    summary: dict[str, Any] = {
        "e2e_s": med("e2e"),
        "replay_s": med("replay"),
        "ratio_e2e_over_replay": med("e2e") / med("replay"),
        "e2e_parts_s": {k: med("e2e", k) for k in ("archive_s", "catalog_s", "replay_s")},
        "catalog_engine": sorted({m["engine"] for m in runs["e2e"]}),
        "catalog_engine_reason": runs["e2e"][-1]["engine_reason"] if runs["e2e"] else None,
        "first_record_cli_s": statistics.median(f["first_record_s"] for f in firsts["cli"])
        if firsts["cli"]
        else None,
        "first_record_inproc_s": statistics.median(f["first_record_s"] for f in firsts["inproc"])
        if firsts["inproc"]
        else None,
    }
    if firsts.get("cli_ref"):
        ref_s = statistics.median(f["first_record_s"] for f in firsts["cli_ref"])
        cli_s = statistics.median(f["first_record_s"] for f in firsts["cli"])
        summary["first_record_cli_ref_s"] = ref_s
        summary["first_record_cli_over_ref"] = cli_s / ref_s
        # each pair ran back to back, so the load moved both: the median of the pairs' ratios
        summary["first_record_cli_over_ref_paired"] = statistics.median(
            a["first_record_s"] / b["first_record_s"]
            for a, b in zip(firsts["cli"], firsts["cli_ref"], strict=True)
        )
        summary["cpu_cli_s"], summary["cpu_cli_ref_s"] = (
            statistics.median(f["cpu_s"] for f in firsts[k]) for k in ("cli", "cli_ref")
        )
    print(json.dumps(summary, indent=1))
    out = _data.result_file("e2e", args.out)
    out.write_text(
        json.dumps(
            {
                "benchmark": "e2e",
                "args": {k: str(v) for k, v in vars(args).items()},
                "summary": summary,
                "runs": runs,
                "warm_up": warm,
                "first_record": firsts,
                **result,
                "kafka": cluster.version,
                "load_average": list(os.getloadavg()),
                "machine": _data.machine(),
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
