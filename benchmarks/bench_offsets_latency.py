"""Latency of the SQL part of ``catalog offsets`` on a big catalog, SQLite and PostgreSQL.

A catalog with ``--partitions`` partitions of one topic and ``--rows`` time-index rows in total
(10 million by default: 100,000 intervals per partition, i.e. 100 GB of archive per partition
at the default 1 MiB interval) is bulk-loaded with synthetic rows whose timestamps go up with
jitter and occasional jumps back (so the running maximum is not trivially the max), through the
real schema (Alembic migrations, the same indexes). Then, after a warm-up, ``--queries`` random
times T are asked:

* ``topic``: :func:`kafka_archive.catalog.queries.offset_intervals` for all partitions of the
  topic at once - everything ``kafka-archive catalog offsets`` does except the ranged reads;
* ``one``: the same for a single partition.

Reported: p50 / p99 / max in milliseconds, and the ranged reads the answers need: at most one per
partition by construction (``offset_intervals`` returns at most one interval per partition),
counted. The PostgreSQL server is started by this script (``tests/support/postgres.py``).

    .venv/bin/python benchmarks/bench_offsets_latency.py
    .venv/bin/python benchmarks/bench_offsets_latency.py --rows 2000000 --db sqlite
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _data

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

T0 = 1_700_000_000_000
STEP_MS = 1_000  # one interval per second of history per partition


def synthetic_rows(pid: int, n: int, seed: int) -> Iterator[tuple[int, ...]]:
    """(partition_id, start_offset, end_offset, segment_id, byte_start, byte_end, max_ts,
    record_max_ts, running_max_ts, record_count) for one partition, in offset order."""
    rng = random.Random(seed)
    running = -1
    per_segment = 1024
    for i in range(n):
        ts = T0 + i * STEP_MS + rng.randint(-3_000, 500)
        if rng.random() < 0.001:
            ts -= 3_600_000  # a producer an hour behind
        running = max(running, ts)
        seg = pid * 1_000_000 + i // per_segment
        pos = (i % per_segment) << 20
        yield (pid, i * 500, i * 500 + 499, seg, pos, pos + (1 << 20), ts, ts, running, 500)


def load(cat: Any, partitions: int, rows: int) -> float:
    """Bulk-load partitions, segments and time-index rows; return seconds."""
    from sqlalchemy import text

    per = rows // partitions
    t0 = time.perf_counter()
    seg_rows = [
        (
            pid * 1_000_000 + s,
            pid,
            f"m/{pid}/{s}",
            f"bench/t/{pid}/{s:020d}-x.log",
            s * 512_000,
            s * 512_000 + 511_999,
        )
        for pid in range(1, partitions + 1)
        for s in range((per + 1023) // 1024)
    ]
    if cat.dialect == "sqlite":
        raw = cat.engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.execute("PRAGMA synchronous=OFF")
            cur.executemany(
                "INSERT INTO partitions (id, cluster, topic, partition) "
                "VALUES (?, 'bench', 'topic', ?)",
                [(p, p - 1) for p in range(1, partitions + 1)],
            )
            cur.executemany(
                "INSERT INTO segments (id, partition_id, manifest_key, object_key, archived_at_ms,"
                " base_offset, end_offset, first_offset, last_offset, first_timestamp, "
                "max_timestamp, offset_of_max_timestamp, record_count, batch_count, size_bytes, "
                "codecs, magics, transactional_batches, control_batches, epoch_runs, status, "
                "cataloged_at_ms) VALUES (?, ?, ?, ?, 0, ?, -1, ?, ?, 0, 0, 0, 0, 0, 0, '', '2', "
                "0, 0, '[]', 'canonical', 0)",
                [(i, p, m, k, lo, lo, hi) for i, p, m, k, lo, hi in seg_rows],
            )
            for pid in range(1, partitions + 1):
                cur.executemany(
                    "INSERT INTO time_index (partition_id, start_offset, end_offset, segment_id, "
                    "byte_start, byte_end, max_ts, record_max_ts, running_max_ts, record_count) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    synthetic_rows(pid, per, pid),
                )
            raw.commit()
            cur.execute("ANALYZE")
            raw.commit()
        finally:
            raw.close()
    else:
        raw = cat.engine.raw_connection()
        try:
            dbapi = raw.driver_connection
            with dbapi.cursor() as cur:
                with cur.copy("COPY partitions (id, cluster, topic, partition) FROM STDIN") as cp:
                    for p in range(1, partitions + 1):
                        cp.write_row((p, "bench", "topic", p - 1))
                with cur.copy(
                    "COPY segments (id, partition_id, manifest_key, object_key, archived_at_ms, "
                    "base_offset, end_offset, first_offset, last_offset, first_timestamp, "
                    "max_timestamp, offset_of_max_timestamp, record_count, batch_count, "
                    "size_bytes, codecs, magics, transactional_batches, control_batches, "
                    "epoch_runs, status, cataloged_at_ms) FROM STDIN"
                ) as cp:
                    for i, p, m, k, lo, hi in seg_rows:
                        cp.write_row(
                            (
                                i,
                                p,
                                m,
                                k,
                                0,
                                lo,
                                -1,
                                lo,
                                hi,
                                0,
                                0,
                                0,
                                0,
                                0,
                                0,
                                "",
                                "2",
                                0,
                                0,
                                "[]",
                                "canonical",
                                0,
                            )
                        )
                for pid in range(1, partitions + 1):
                    buf = io.StringIO()
                    for r in synthetic_rows(pid, per, pid):
                        buf.write("\t".join(map(str, r)) + "\n")
                    buf.seek(0)
                    with cur.copy(
                        "COPY time_index (partition_id, start_offset, end_offset, segment_id, "
                        "byte_start, byte_end, max_ts, record_max_ts, running_max_ts, "
                        "record_count) FROM STDIN"
                    ) as cp:
                        while data := buf.read(1 << 20):
                            cp.write(data)
            dbapi.commit()
            dbapi.autocommit = True
            with dbapi.cursor() as cur:
                cur.execute("VACUUM ANALYZE")
        finally:
            raw.close()
    from kafka_archive.catalog.coverage import refresh_all

    with cat.engine.begin() as conn:
        refresh_all(conn)  # the coverage rows a build leaves (none: the segments are contiguous)
        n = conn.execute(text("SELECT count(*) FROM time_index")).scalar_one()
    assert n == per * partitions, n
    return time.perf_counter() - t0


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def measure(cat: Any, partitions: int, rows: int, queries: int) -> dict[str, Any]:
    from kafka_archive.catalog.queries import offset_intervals

    per = rows // partitions
    rng = random.Random(7)
    span = per * STEP_MS
    out: dict[str, Any] = {}
    for label, parts in (("topic", None), ("one", "one")):
        times: list[float] = []
        reads: list[int] = []
        for q in range(queries + 20):
            ts = T0 + rng.randint(-60_000, span + 60_000)
            sel = [rng.randrange(partitions)] if parts == "one" else None
            t = time.perf_counter()
            answer = offset_intervals(cat, "bench", "topic", ts, sel)
            dt = (time.perf_counter() - t) * 1000
            if q >= 20:  # warm-up excluded
                times.append(dt)
                reads.append(sum(1 for _, iv in answer if iv is not None))
                assert len(answer) == (1 if sel else partitions)
        out[label] = {
            "p50_ms": round(statistics.median(times), 3),
            "p99_ms": round(percentile(times, 0.99), 3),
            "max_ms": round(max(times), 3),
            "ranged_reads_per_query_max": max(reads),
            "partitions_per_query": 1 if parts else partitions,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args()

    from kafka_archive.catalog.db import open_catalog

    results: dict[str, Any] = {}
    tmp = _data.scratch_dir("bench-offsets-")
    server = None
    try:
        for kind in ["sqlite", "postgresql"] if args.db == "both" else [args.db]:
            if kind == "sqlite":
                url = f"sqlite:///{tmp / 'catalog.db'}"
            else:
                from support.postgres import start_server

                server = start_server()
                url = server.create_database("bench")
            with open_catalog(url, create=True) as cat:
                secs = load(cat, args.partitions, args.rows)
                print(f"{kind}: loaded {args.rows:,} rows in {secs:.1f}s", flush=True)
                res = measure(cat, args.partitions, args.rows, args.queries)
                res["load_seconds"] = round(secs, 1)
                if kind == "sqlite":
                    res["db_bytes"] = (tmp / "catalog.db").stat().st_size
                results[kind] = res
                print(kind, json.dumps(res), flush=True)
    finally:
        if server is not None:
            server.stop()
    out = _data.result_file("catalog-offsets", args.out)
    out.write_text(
        json.dumps(
            {
                "benchmark": "catalog_offsets_latency",
                "rows": args.rows,
                "partitions": args.partitions,
                "queries": args.queries,
                "results": results,
                "machine": _data.machine(),
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
