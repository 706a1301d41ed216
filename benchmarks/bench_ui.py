"""The on-call page's first answer on the benchmark catalog, next to the CLI's ``catalog offsets``.

The catalog is the one of ``bench_offsets_latency.py`` (its builder is reused): one topic of
``--partitions`` partitions (100) and ``--rows`` time-index rows (10 million), SQLite, loaded
through the real schema. The on-call API (``kafka_archive.ui.api.build_app``, the app Airflow's
API server mounts) is served by uvicorn on a loopback port in this process, and an HTTP client
makes, for each of ``--reps`` random times T, the calls the page makes when it opens on a
topic (``frontend/src/main.jsx``: who, clusters, connections, then the topics and Show),
in its order, each over HTTP:

``/whoami``, ``/clusters``, ``/clusters/bench/topics``, ``/connections``,
``/clusters/bench/topics/topic/offsets?at=T``, ``.../holes``,
``.../stats?from=T-1h&to=T+1h&bucket_ms=60000``.

Reported per call and for the whole sequence ("first answer": from the first request to the
last response, what stands between opening the page and seeing offsets and the chart):
median, p90 and max in milliseconds. Side by side, on the same catalog and the same T:

* ``cli_offsets_process``: ``kafka-archive catalog offsets --json`` as a new process (what an
  on-call engineer waits for at a shell, start-up included);
* ``service_offsets``: :meth:`CatalogQueryService.offsets` in-process (the CLI's work without
  its start-up, and what the API's offsets call does inside).

There is no store behind the synthetic catalog, so both the page and the CLI answer from the
catalog alone (``exact: false``, one index interval per partition); with a store each adds one
ranged read per partition (see the "offsets" section of docs/performance.md).

Authentication is a fixed user here (Airflow's auth manager is not in the loop: its JWT check
is the same for every Airflow API call and not the page's work).

    .venv/bin/python benchmarks/bench_ui.py
    .venv/bin/python benchmarks/bench_ui.py --rows 1000000 --reps 10
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import _data
from bench_offsets_latency import STEP_MS, T0, load, percentile

REPO = Path(__file__).resolve().parents[1]
CLUSTER, TOPIC = "bench", "topic"
HOUR_MS = 3_600_000


class _FixedUser:
    """Access for the benchmark: every request is one user who may read and trigger."""

    async def authenticate(self, request: Any) -> Any:
        from kafka_archive.ui.access import Principal

        return Principal("bench", None)

    def can_read(self, who: Any) -> bool:
        return True

    def can_trigger(self, who: Any, dag_id: str) -> bool:
        return True


class _NoAirflow:
    """The launcher's read side the page's first answer touches (connection ids)."""

    def connection_ids(self) -> list[str]:
        return ["target_kafka"]

    def trigger(self, dag_id: str, conf: dict[str, Any], *, user_name: str) -> Any:
        raise RuntimeError("the benchmark launches nothing")

    def run(self, dag_id: str, run_id: str, *, result_task: str) -> Any:
        return None

    def connection(self, conn_id: str) -> Any:
        raise LookupError(conn_id)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(db_url: str) -> tuple[str, Any]:
    """The on-call app on a loopback port (uvicorn in a thread): (base URL, server)."""
    import uvicorn
    from fastapi import FastAPI
    from kafka_archive.settings import load_settings
    from kafka_archive.ui.api import URL_PREFIX, build_app

    app = build_app(
        settings=lambda: load_settings({"db": db_url}, env={}),
        access=_FixedUser(),
        launcher=_NoAirflow(),
    )
    root = FastAPI()
    root.mount(URL_PREFIX, app)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(root, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}{URL_PREFIX}/api/v1", server


def page_calls(at_ms: int) -> list[tuple[str, str]]:
    """(label, path) of the page's calls when it opens on the topic at T, in its order."""
    topic = f"/clusters/{CLUSTER}/topics/{TOPIC}"
    return [
        ("whoami", "/whoami"),
        ("clusters", "/clusters"),
        ("topics", f"/clusters/{CLUSTER}/topics"),
        ("connections", "/connections"),
        ("offsets", f"{topic}/offsets?at={at_ms}"),
        ("holes", f"{topic}/holes"),
        ("stats", f"{topic}/stats?from={at_ms - HOUR_MS}&to={at_ms + HOUR_MS}&bucket_ms=60000"),
    ]


def _summary(xs: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(xs), 2),
        "p90_ms": round(percentile(xs, 0.9), 2),
        "max_ms": round(max(xs), 2),
    }


def measure(db_url: str, partitions: int, rows: int, reps: int) -> dict[str, Any]:
    import httpx
    from kafka_archive.services.catalog_queries import CatalogQueryService
    from kafka_archive.settings import load_settings

    base, server = serve(db_url)
    rng = random.Random(11)
    span = rows // partitions * STEP_MS
    per_call: dict[str, list[float]] = {}
    first: list[float] = []
    cli: list[float] = []
    service: list[float] = []
    exe = Path(sys.executable).with_name("kafka-archive")
    try:
        with httpx.Client(timeout=60) as client:
            for rep in range(reps + 2):  # two warm-up rounds, not counted
                at = T0 + rng.randint(0, span)
                t_first = time.perf_counter()
                for label, path in page_calls(at):
                    t = time.perf_counter()
                    r = client.get(base + path)
                    dt = (time.perf_counter() - t) * 1000
                    r.raise_for_status()
                    if label == "offsets":
                        assert len(r.json()["items"]) == partitions, r.text[:300]
                    if rep >= 2:
                        per_call.setdefault(label, []).append(dt)
                total = (time.perf_counter() - t_first) * 1000

                t = time.perf_counter()  # the CLI in this environment: the same kafka_archive
                proc = subprocess.run(
                    [str(exe), "catalog", "offsets", "--cluster", CLUSTER, "--topic", TOPIC,
                     "--at", str(at), "--db", db_url, "--json"],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                cli_ms = (time.perf_counter() - t) * 1000
                assert len(proc.stdout.splitlines()) == partitions, proc.stdout[:300]

                t = time.perf_counter()
                with CatalogQueryService(load_settings({"db": db_url}, env={})) as svc:
                    answers = svc.offsets(CLUSTER, TOPIC, at, None)
                svc_ms = (time.perf_counter() - t) * 1000
                assert len(answers) == partitions
                if rep >= 2:
                    first.append(total)
                    cli.append(cli_ms)
                    service.append(svc_ms)
                print(f"rep {rep}: page {total:.0f} ms, cli {cli_ms:.0f} ms", flush=True)
    finally:
        server.should_exit = True
    return {
        "page_first_answer": _summary(first),
        "page_calls": {k: _summary(v) for k, v in per_call.items()},
        "cli_offsets_process": _summary(cli),
        "service_offsets": _summary(service),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args()

    from kafka_archive.catalog.db import open_catalog

    tmp = _data.scratch_dir("bench-ui-")
    db_url = f"sqlite:///{tmp / 'catalog.db'}"
    with open_catalog(db_url, create=True) as cat:
        secs = load(cat, args.partitions, args.rows)
    print(f"loaded {args.rows:,} time-index rows in {secs:.1f}s", flush=True)
    results = measure(db_url, args.partitions, args.rows, args.reps)
    print(json.dumps(results, indent=1))
    out = _data.result_file("ui", args.out)
    out.write_text(
        json.dumps(
            {
                "benchmark": "ui_first_answer",
                "rows": args.rows,
                "partitions": args.partitions,
                "reps": args.reps,
                "db": "sqlite",
                "load_seconds": round(secs, 1),
                "results": results,
                "machine": _data.machine(),
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
