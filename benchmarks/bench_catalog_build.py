"""Catalog build throughput vs a raw read of the same archived bytes from the same store, and
Spark scaling from 1 to 2 cores.

Setup: ``--partitions`` partitions of about ``--mib`` MiB in total are written by the
broker-faithful writer (uncompressed batches of ``--batch-kib`` KiB, out-of-order CreateTime,
segments of up to ``--segment-mib`` MiB), rolled, and archived with the real archiver
(``run_archive``) into the store: a local directory (``file://``, default) or, with
``--store s3``, a moto S3 server on 127.0.0.1 (the tests' own, in a child process).

Measured side by side, interleaved (order rotated each repetition), ``--reps`` times (median):

* ``raw1`` / ``raw2``: every archived ``.log`` object read with the store's ``get_range`` in the
  same 8 MiB chunks the build uses, by 1 and by 2 threads (objects spread over the threads);
  nothing is done with the bytes. The floor of any reader of this store that copies.
* ``raw_view1``: the same chunks through ``get_range_view`` (what the build reads with: the
  local store maps the file, S3 views ``get_range``'s bytes), every byte touched by the
  cheapest full pass found (numpy's ``bitwise_or.reduce`` over 64-bit words, else the
  ``crc32c`` package; the result file names it): the floor of a zero-copy reader, which on
  the page cache is below ``raw1`` (no copy).
* ``inproc``: ``build_catalog`` into a fresh SQLite catalog in this process, one thread, no
  Spark, with the default check (``verify=crc32c``: the whole object's CRC-32C against the
  manifest and every batch's CRC). Everything a build does is timed (``report.seconds``):
  list the manifests, read the new ones, ranged reads of every object, checks, extraction,
  SQLite writes.
* ``inproc_crc_only`` / ``inproc_sha256``: the same with ``verify=crc32c-only`` (the
  whole-object CRC-32C alone) and ``verify=sha256`` (SHA-256 and every batch CRC: the
  previous behaviour).
* ``spark1`` / ``spark2``: the default build with ``SparkRunner`` on ``local[1]`` /
  ``local[2]`` (session started and Python workers warmed up before timing).
* ``inproc4``: ``inproc`` with the threads of the ``in-process`` engine
  (``IN_PROCESS_THREADS`` of :mod:`kafka_archive.services.catalog_build`).
* ``cli_inproc`` / ``cli_spark``: what a person waits for: ``kafka-archive catalog build
  --engine in-process`` / ``--engine spark`` (``local[*]``) in a fresh process into a fresh
  catalog, wall time of the whole command (Python start-up, imports, for Spark its JVM and
  Python workers). Their difference is Spark's fixed cost, which sets the ``auto`` engine's
  threshold (docs/performance.md). Local store only.

Ratios: ``inproc / raw1`` (target >= 0.5x), ``inproc / raw_view1``, ``spark1 / raw1``,
``spark2 / raw2``, ``spark2 / spark1`` (scaling). ``--what`` picks a subset.

``--breakdown`` adds, on the same archive, where a build's time goes (median of ``--reps``
x 3, each in ms and as a multiple of the raw read): copying reads alone and with each
checksum, reads while the previous chunk is still alive, view reads (``get_range_view``) with
the touch pass and with each CRC-32C implementation, extraction with each check (through
views, as the build reads) and with the compiled header scan booked in Python instead of the
compiled summary (the path before it), the build's phases (manifests, extraction, chain plan,
SQLite writes), and empty Spark jobs of 1, 2, 4 and 16 tasks on ``local[2]`` (the fixed cost
of a job and of a task), and the CRC-32C implementations on an 8 MiB buffer in memory.

Because the machine may be shared, every measurement also records the load average before
it, the CPU seconds (user + system) used by this process and its descendants (the Spark JVM
and Python workers; the moto server counted apart as ``store_cpu``) and by the whole machine
(``/proc/stat``) during it: with 2 cores, ``machine_busy`` close to 2 x wall means there was
no idle core to scale onto.

    .venv/bin/python benchmarks/bench_catalog_build.py --mib 1024
    .venv/bin/python benchmarks/bench_catalog_build.py --mib 1024 --store s3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import _data

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

CHUNK = 8 << 20
_TICK = os.sysconf("SC_CLK_TCK")
ALL = (
    "raw1",
    "raw_view1",
    "raw2",
    "inproc",
    "inproc_crc_only",
    "inproc_sha256",
    "spark1",
    "spark2",
    "inproc4",
    "cli_inproc",
    "cli_spark",
)


def write_archive(
    root: Path, store: Any, mib: int, partitions: int, batch_kib: int, segment_mib: int = 16
) -> None:
    from kafka_archive.archive import run_archive
    from kafka_archive_dev.writer import BrokerWriter, ManualClock, WriteRecord

    rng = random.Random(1)
    clock = ManualClock(1_700_000_000_000)
    broker = BrokerWriter(root / "broker", 1, clock=clock)
    per_part = mib * (1 << 20) // partitions
    record = 1024
    per_batch = max(1, batch_kib * 1024 // (record + 20))
    payload = rng.randbytes(record)
    for p in range(partitions):
        pw = broker.partition("bench", p, segment_bytes=segment_mib << 20)
        written = 0
        while written < per_part:
            now = clock.advance(rng.randint(1, 5))
            recs = [
                WriteRecord(b"k%d" % i, payload, (), now - rng.randint(0, 2000))
                for i in range(per_batch)
            ]
            written += pw.append(recs).size
        pw.roll()
    broker.close()
    run_archive(
        cluster="bench", broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store
    )


def log_objects(store: Any) -> list[tuple[str, int]]:
    from kafka_archive.catalog._manifests import list_manifests, read_refs

    return [(r.object_key, r.size) for r in read_refs(store, list_manifests(store, "bench"))]


def raw_read(store: Any, objects: list[tuple[str, int]], threads: int) -> float:
    def one(obj: tuple[str, int]) -> int:
        key, size = obj
        n = 0
        for pos in range(0, size, CHUNK):
            n += len(store.get_range(key, pos, min(size, pos + CHUNK)))
        return n

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        total = sum(pool.map(one, objects))
    dt = time.perf_counter() - t0
    assert total == sum(s for _, s in objects)
    return dt


def _touch_pass() -> tuple[Callable[[memoryview], object], str]:
    """The cheapest pass found that reads every byte of a view (see the module docstring)."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy comes with pyspark's pandas here
        import crc32c

        return crc32c.crc32c, "crc32c package"

    def touch(view: memoryview) -> object:
        whole = len(view) // 8 * 8
        tail = view[whole:].tobytes()
        return int(np.bitwise_or.reduce(np.frombuffer(view[:whole], dtype=np.uint64))), tail

    return touch, f"numpy {np.__version__} bitwise_or.reduce over uint64"


TOUCH, TOUCH_NAME = _touch_pass()


def raw_view_read(store: Any, objects: list[tuple[str, int]]) -> float:
    from kafka_archive.store.base import read_view

    t0 = time.perf_counter()
    n = 0
    for key, size in objects:
        for pos in range(0, size, CHUNK):
            view = read_view(store, key, pos, min(size, pos + CHUNK))
            TOUCH(view)
            n += len(view)
            del view
    dt = time.perf_counter() - t0
    assert n == sum(s for _, s in objects)
    return dt


def cli_build(store_uri: str, tmp: Path, engine: str) -> float:
    """Wall seconds of ``kafka-archive catalog build --engine ENGINE`` into a fresh catalog."""
    db = tmp / f"cli-{time.monotonic_ns()}.db"
    env: dict[str, str] = _data.cli_environment(tmp)  # bytecode cached, as a wheel has it
    cli = str(Path(sys.executable).with_name("kafka-archive"))
    t0 = time.perf_counter()
    proc = subprocess.run(
        [cli, "catalog", "build", "--engine", engine, "--json", "--store", store_uri,
         "--db", str(db)],
        capture_output=True, text=True, env=env, check=False, timeout=600,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    db.unlink(missing_ok=True)
    report = json.loads(proc.stdout.splitlines()[-1]) if proc.stdout else {}
    assert proc.returncode == 0 and report.get("engine") == engine, proc.stdout + proc.stderr
    return seconds


def build(
    store_uri: str, options: dict[str, Any], runner: Any, tmp: Path, verify: str
) -> tuple[float, Any]:
    from kafka_archive.catalog.build import build_catalog
    from kafka_archive.catalog.db import open_catalog

    db = tmp / f"bench-{time.monotonic_ns()}.db"
    with open_catalog(db, create=True) as cat:
        report = build_catalog(cat, store_uri, runner=runner, store_options=options, verify=verify)
    db.unlink()
    assert report.failed == [] and report.segments_added > 0, report.failed[:1]
    return report.seconds, report


# -- CPU accounting ----------------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, user+system CPU seconds) of every live process."""
    out: dict[int, tuple[int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        out[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK)
    return out


def _tree_cpu(table: dict[int, tuple[int, float]], root: int, skip: int | None) -> float:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _cpu) in table.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid == skip:
            continue
        total += table.get(pid, (0, 0.0))[1]
        todo.extend(children.get(pid, ()))
    return total


def _machine_busy() -> float:
    with open("/proc/stat") as f:
        vals = [int(v) for v in f.readline().split()[1:]]
    idle = vals[3] + vals[4]  # idle + iowait
    return (sum(vals[:8]) - idle) / _TICK


# a benchmark protocol read top to bottom; benchmarks change only for typing in issue 11
def breakdown(store: Any, store_uri: str, tmp: Path, reps: int, spark: Any) -> dict[str, Any]:  # noqa: C901, PLR0915
    """Where the time goes (see the module docstring); medians in ms."""
    import hashlib

    from kafka_archive.catalog._manifests import list_manifests, read_refs
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.build import driver as driver_mod
    from kafka_archive.catalog.build import tasks as tasks_mod
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.catalog.extract import SegmentExtractor, extract_object, speedups
    from kafka_archive.catalog.integrity import crc32c_update
    from kafka_archive.store.base import read_view

    from segment_lib import _summary

    refs = read_refs(store, list_manifests(store, "bench"))

    def reads(
        per_chunk: Callable[[Any], object] | None = None, hold: bool = False, view: bool = False
    ) -> None:
        held = None
        get = read_view if view else (lambda st, *a: st.get_range(*a))
        for r in refs:
            for pos in range(0, r.size, CHUNK):
                chunk = get(store, r.object_key, pos, min(r.size, pos + CHUNK))
                if per_chunk is not None:
                    per_chunk(chunk)
                if hold:
                    held = chunk
                del chunk
        del held

    def extract(verify: str) -> None:
        for r in refs:
            extract_object(store, r.object_key, topic=r.topic, size=r.size, crc32c=r.crc32c,
                           sha256=r.sha256, verify=verify)  # fmt: skip

    def extract_unchecked() -> None:
        for r in refs:
            ex = SegmentExtractor(topic=r.topic, size=r.size, batch_crc=False)
            reads_one(r, ex.feed)
            ex.finish()

    def reads_one(r: Any, fn: Callable[[memoryview], object]) -> None:
        for pos in range(0, r.size, CHUNK):
            fn(read_view(store, r.object_key, pos, min(r.size, pos + CHUNK)))

    def header_path(verify: str) -> None:
        saved = speedups.summarize
        speedups.summarize = None
        try:
            extract(verify)
        finally:
            speedups.summarize = saved

    items: dict[str, Callable[[], object]] = {
        "read": reads,
        "read_holding_previous_chunk": lambda: reads(hold=True),
        "read_crc32c": lambda: reads(lambda c: crc32c_update(c, 0)),
        "read_sha256": lambda: reads(lambda c: hashlib.sha256(c).digest()),
        "read_view_touch": lambda: reads(TOUCH, view=True),
        "read_view_crc32c_package": lambda: reads(lambda c: crc32c_update(c, 0), view=True),
        "read_view_crc32c_summary": lambda: reads(_summary.crc32c, view=True),
        "extract_no_checks": extract_unchecked,
        "extract_crc32c_only": lambda: extract("crc32c-only"),
        "extract_crc32c": lambda: extract("crc32c"),
        "extract_crc32c_only_header_path": lambda: header_path("crc32c-only"),
        "extract_crc32c_header_path": lambda: header_path("crc32c"),
    }
    times: dict[str, list[float]] = {k: [] for k in items}
    for rep in range(reps * 3):
        order = list(items)
        order = order[rep % len(order) :] + order[: rep % len(order)]
        for k in order:
            t0 = time.perf_counter()
            items[k]()
            times[k].append(time.perf_counter() - t0)
    ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    # the build's phases (default and crc32c-only), timed by wrapping its steps
    from kafka_archive.catalog import _manifests as manifests_mod

    targets = {
        "read_refs": manifests_mod,
        "run_extract_task": tasks_mod,
        "plan_partitions": driver_mod,
        "write_partition": driver_mod,
    }
    phases: dict[str, dict[str, float]] = {}
    for verify in ("crc32c", "crc32c-only"):
        acc: dict[str, list[float]] = {n: [] for n in (*targets, "total")}
        for _ in range(reps * 3):
            spent = dict.fromkeys(targets, 0.0)
            originals = {n: getattr(mod, n) for n, mod in targets.items()}
            for n, mod in targets.items():

                def timed(*a: Any, _f: Any = originals[n], _n: str = n,
                          _spent: dict[str, float] = spent, **k: Any) -> Any:  # fmt: skip
                    t0 = time.perf_counter()
                    try:
                        return _f(*a, **k)
                    finally:
                        _spent[_n] += time.perf_counter() - t0

                setattr(mod, n, timed)
            try:
                db = tmp / f"phases-{time.monotonic_ns()}.db"
                with open_catalog(db, create=True) as cat:
                    report = build_catalog(cat, store_uri, runner=InProcessRunner(1), verify=verify)
                db.unlink()
            finally:
                for n, mod in targets.items():
                    setattr(mod, n, originals[n])
            for n in targets:
                acc[n].append(spent[n])
            acc["total"].append(report.seconds)
        phases[verify] = {n: 1e3 * statistics.median(v) for n, v in acc.items()}
    out: dict[str, Any] = {"ms": ms, "build_phases_ms": phases}
    if spark is not None:
        sc = spark.sparkContext
        jobs: dict[str, float] = {}
        for ntasks in (1, 2, 4, 16):
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                sc.parallelize(range(ntasks), ntasks).mapPartitions(lambda it: [sum(it)]).collect()
                ts.append(time.perf_counter() - t0)
            jobs[f"empty_job_{ntasks}_tasks"] = 1e3 * statistics.median(ts)
        out["spark_local2_ms"] = jobs
    out["relative_to_read"] = {k: v / ms["read"] for k, v in ms.items()}
    # the CRC-32C implementations on one 8 MiB buffer in memory (GB/s, median of 41 calls)
    import crc32c as crc32c_pkg

    buf = os.urandom(CHUNK)
    impls: dict[str, Callable[[bytes, int], int]] = {
        "crc32c_package": crc32c_pkg.crc32c,
        "segment_lib_summary": _summary.crc32c,
    }
    try:
        from segment_lib._speedups import crc32c as speedups_crc

        impls["segment_lib_speedups"] = speedups_crc
    except ImportError:  # pragma: no cover - depends on the build
        pass
    gbs: dict[str, float] = {}
    for name, fn in impls.items():
        ts = []
        for _ in range(41):
            t0 = time.perf_counter()
            fn(buf, 0)
            ts.append(time.perf_counter() - t0)
        gbs[name] = len(buf) / statistics.median(ts) / 1e9
    out["crc32c_gb_per_s_in_memory"] = gbs
    return out


class CpuMeter:
    """CPU used by this process tree (minus the store server's), the store server and the
    machine while ``run`` runs."""

    def __init__(self, store_pid: int | None) -> None:
        self.store_pid = store_pid

    def measure(self, fn: Callable[[], float]) -> dict[str, float]:
        load = os.getloadavg()[0]
        t0 = _proc_table()
        m0 = _machine_busy()
        w0 = time.perf_counter()
        seconds = fn()
        wall = time.perf_counter() - w0
        m1 = _machine_busy()
        t1 = _proc_table()
        me = os.getpid()
        own = _tree_cpu(t1, me, self.store_pid) - _tree_cpu(t0, me, self.store_pid)
        out = {
            "seconds": seconds,
            "wall": wall,
            "load1": load,
            "own_cpu": own,
            "machine_busy": m1 - m0,
        }
        if self.store_pid is not None:
            out["store_cpu"] = _tree_cpu(t1, self.store_pid, None) - _tree_cpu(
                t0, self.store_pid, None
            )
        return out


# a benchmark driver read top to bottom; benchmarks change only for typing in issue 11
def main() -> None:  # noqa: PLR0915
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--batch-kib", type=int, default=16)
    ap.add_argument("--segment-mib", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--store", choices=["local", "s3"], default="local")
    ap.add_argument(
        "--what", default=",".join(ALL), help="comma-separated subset of " + ",".join(ALL)
    )
    ap.add_argument("--breakdown", action="store_true", help="also time the parts (see above)")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args()
    what = [w for w in args.what.split(",") if w]
    assert set(what) <= set(ALL), what
    assert args.store == "local" or not any(w.startswith("cli_") for w in what), "local only"

    from kafka_archive.catalog.build import InProcessRunner
    from kafka_archive.catalog.integrity import CRC32C_SOURCE
    from kafka_archive.services.catalog_build import IN_PROCESS_THREADS
    from kafka_archive.spark.session import SparkRunner, make_spark_session
    from kafka_archive.store import open_store

    tmp = _data.scratch_dir("bench-catalog-")
    moto = None
    try:
        options: dict[str, Any] = {}
        if args.store == "s3":
            from support.s3common import BUCKET, FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION

            os.environ.update(
                AWS_ACCESS_KEY_ID=FAKE_ACCESS_KEY,
                AWS_SECRET_ACCESS_KEY=FAKE_SECRET_KEY,
                AWS_DEFAULT_REGION=REGION,
            )
            moto = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r});"
                    " from support.s3server import _serve; _serve()",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            assert moto.stdout is not None
            port = int(moto.stdout.readline().split()[1])
            import boto3

            boto3.client(
                "s3", endpoint_url=f"http://127.0.0.1:{port}", region_name=REGION
            ).create_bucket(Bucket=BUCKET)
            options = {"endpoint_url": f"http://127.0.0.1:{port}", "region": REGION}
            store_uri = f"s3://{BUCKET}/bench"
        else:
            store_uri = (tmp / "store").as_uri()
        store = open_store(store_uri, **options)
        t0 = time.perf_counter()
        write_archive(tmp, store, args.mib, args.partitions, args.batch_kib, args.segment_mib)
        objects = log_objects(store)
        total = sum(s for _, s in objects)
        print(
            f"archive: {len(objects)} segments, {total / 1e6:.1f} MB "
            f"({time.perf_counter() - t0:.1f}s to write)",
            flush=True,
        )
        shutil.rmtree(tmp / "broker")

        meter = CpuMeter(moto.pid if moto is not None else None)
        sessions: dict[int, Any] = {}

        def spark(cores: int) -> Any:
            for c, s in list(sessions.items()):
                if c != cores:
                    s.stop()
                    del sessions[c]
            if cores not in sessions:
                sessions[cores] = make_spark_session(f"local[{cores}]")
                sessions[cores].sparkContext.setLogLevel("ERROR")
                # start and warm the Python workers (imports) before timing
                sessions[cores].sparkContext.parallelize(range(cores * 4), cores * 4).map(
                    lambda _: __import__("kafka_archive.catalog.build").__name__
                ).collect()
            return sessions[cores]

        runs: dict[str, Callable[[], float]] = {
            "raw1": lambda: raw_read(store, objects, 1),
            "raw_view1": lambda: raw_view_read(store, objects),
            "raw2": lambda: raw_read(store, objects, 2),
            "inproc": lambda: build(store_uri, options, InProcessRunner(1), tmp, "crc32c")[0],
            "inproc_crc_only": lambda: build(
                store_uri, options, InProcessRunner(1), tmp, "crc32c-only"
            )[0],
            "inproc_sha256": lambda: build(store_uri, options, InProcessRunner(1), tmp, "sha256")[
                0
            ],
            "spark1": lambda: build(store_uri, options, SparkRunner(spark(1)), tmp, "crc32c")[0],
            "spark2": lambda: build(store_uri, options, SparkRunner(spark(2)), tmp, "crc32c")[0],
            "inproc4": lambda: build(
                store_uri, options, InProcessRunner(IN_PROCESS_THREADS), tmp, "crc32c"
            )[0],
            "cli_inproc": lambda: cli_build(store_uri, tmp, "in-process"),
            "cli_spark": lambda: cli_build(store_uri, tmp, "spark"),
        }
        results: dict[str, list[dict[str, float]]] = {k: [] for k in what}
        # one untimed build first: SQLAlchemy compiles, imports and caches are warm for all
        build(store_uri, options, InProcessRunner(1), tmp, "crc32c")
        for rep in range(args.reps):
            order = what[rep % len(what) :] + what[: rep % len(what)]
            for w in order:
                if w.startswith("spark"):
                    spark(int(w[-1]))  # session start is not timed
                m = meter.measure(runs[w])
                results[w].append(m)
                print(
                    f"rep {rep} {w:15s} {m['seconds']:7.3f}s {total / m['seconds'] / 1e6:8.1f} MB/s"
                    f"  load {m['load1']:.2f}  cpu {m['own_cpu']:.2f}s"
                    f"  machine busy {m['machine_busy']:.2f}s of {2 * m['wall']:.2f}s",
                    flush=True,
                )
        parts = None
        if args.breakdown:
            parts = breakdown(
                store, store_uri, tmp, args.reps, spark(2) if args.store == "local" else None
            )
            print(json.dumps(parts, indent=1), flush=True)
        for s in sessions.values():
            s.stop()
        med = {k: statistics.median(x["seconds"] for x in v) for k, v in results.items()}
        mbs = {k: total / v / 1e6 for k, v in med.items()}
        pairs = {
            "inproc/raw1": ("raw1", "inproc"),
            "inproc/raw_view1": ("raw_view1", "inproc"),
            "inproc_crc_only/raw_view1": ("raw_view1", "inproc_crc_only"),
            "raw_view1/raw1": ("raw1", "raw_view1"),
            "inproc_crc_only/raw1": ("raw1", "inproc_crc_only"),
            "inproc_sha256/raw1": ("raw1", "inproc_sha256"),
            "spark1/raw1": ("raw1", "spark1"),
            "spark2/raw2": ("raw2", "spark2"),
            "spark2/raw1": ("raw1", "spark2"),
            "spark2/spark1": ("spark1", "spark2"),
            "raw2/raw1": ("raw1", "raw2"),
            "inproc4/inproc": ("inproc", "inproc4"),
            "cli_spark/cli_inproc": ("cli_inproc", "cli_spark"),
        }
        summary = {k: med[a] / med[b] for k, (a, b) in pairs.items() if a in med and b in med}
        cpu = {
            k: {
                f: statistics.median(x[f] for x in v)
                for f in v[0]
                if f in ("own_cpu", "machine_busy", "store_cpu", "load1", "wall")
            }
            for k, v in results.items()
        }
        print(
            json.dumps(
                {
                    "MB/s": {k: round(v, 1) for k, v in mbs.items()},
                    "ratios": {k: round(v, 2) for k, v in summary.items()},
                    "cpu (medians)": {
                        k: {f: round(x, 2) for f, x in v.items()} for k, v in cpu.items()
                    },
                },
                indent=1,
            )
        )
        out = _data.result_file(f"catalog-build-{args.store}", args.out)
        out.write_text(
            json.dumps(
                {
                    "benchmark": "catalog_build",
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "segments": len(objects),
                    "bytes": total,
                    "runs": results,
                    "median_seconds": med,
                    "mb_per_s": mbs,
                    "ratios": summary,
                    "cpu_medians": cpu,
                    "breakdown": parts,
                    "crc32c": CRC32C_SOURCE,
                    "raw_view1_pass": TOUCH_NAME,
                    "machine": _data.machine(),
                },
                indent=1,
            )
        )
        print(f"wrote {out}")
    finally:
        if moto is not None and moto.stdin is not None:
            moto.stdin.close()
            moto.wait(timeout=10)


if __name__ == "__main__":
    main()
