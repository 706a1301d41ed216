"""Archive lag against a real Kafka cluster: from a segment's roll to its archived manifest.

A 3-node Kafka KRaft cluster (``kafka_archive_dev.local_kafka``, the project's jars, checkpoints
written every second) takes a continuous produce load (``tests/support/live_workload.py``:
plain, zstd and LogAppendTime topics, ``segment.ms`` = ``--segment-ms``) while an archiver loop
runs ``kafka_archive.archive.run_archive`` over each broker's live log dir into a local store,
one round every ``--interval`` seconds (a round: broker 1, 2, 3), as a tight schedule would.

A watcher thread lists the watched partition directories of every broker every 20 ms and
notes when each new ``.log`` first appears: that is the moment the previous segment rolled. The
lag of an archived segment is the modification time of its manifest in the store (manifests
are written last, by an atomic rename) minus the roll of that segment on the broker it was
archived from. Reported: count, median, p90, max of the lag, and of the rounds' duration.
Usage::

    .venv/bin/python benchmarks/bench_archive_lag.py
    .venv/bin/python benchmarks/bench_archive_lag.py --duration 60 --interval 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import _data
from kafka_archive.archive import iter_manifests, run_archive
from kafka_archive.store import open_store
from kafka_archive_dev.local_kafka import LocalKafkaCluster

sys.path.insert(0, str(_data.REPO_ROOT / "tests"))
from support.live_workload import LiveWorkload

NAME = "lag"


class RollWatcher(threading.Thread):
    """First-seen time of every ``.log`` in the watched partition dirs of every broker."""

    def __init__(self, log_dirs: dict[int, Path], prefix: str, period_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.log_dirs = log_dirs
        self.prefix = prefix
        self.period_s = period_s
        #: (broker, partition dir, base offset) -> first seen (epoch s)
        self.seen: dict[tuple[int, str, int], float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            now = time.time()
            for node, root in self.log_dirs.items():
                try:
                    parts = [d for d in root.iterdir() if d.name.startswith(self.prefix)]
                except FileNotFoundError:
                    continue
                for part in parts:
                    try:
                        names = [n for n in part.iterdir() if n.name.endswith(".log")]
                    except FileNotFoundError:
                        continue
                    for n in names:
                        self.seen.setdefault((node, part.name, int(n.name[:20])), now)
            time.sleep(self.period_s)

    def rolled_at(self, node: int, part_dir: str, base: int) -> float | None:
        """When the segment ``base`` rolled: the first sighting of the next segment."""
        later = [
            t for (n, p, b), t in self.seen.items() if n == node and p == part_dir and b > base
        ]
        return min(later) if later else None


def _stats(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    xs = sorted(xs)
    return {
        "count": len(xs),
        "median_s": statistics.median(xs),
        "p90_s": xs[min(len(xs) - 1, int(0.9 * len(xs)))],
        "max_s": xs[-1],
        "min_s": xs[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=45.0, help="seconds of load")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between rounds")
    parser.add_argument("--segment-ms", type=int, default=2000)
    parser.add_argument("--out", help="result JSON (default benchmarks/results/archive-lag-*)")
    args = parser.parse_args()

    from support.real_kafka import TEST_BROKER_CONFIG

    work = _data.scratch_dir("bench-archive-lag-")
    cluster = LocalKafkaCluster(work / "kafka", broker_config=TEST_BROKER_CONFIG)
    cluster.start()
    rounds: list[dict[str, Any]] = []
    try:
        wl = LiveWorkload(
            cluster.bootstrap_servers,
            prefix="lag",
            segment_ms=args.segment_ms,
            roles=["codec-none", "codec-zstd", "logappend"],
        )
        wl.create_topics()
        store = open_store(str(work / "store"))
        watcher = RollWatcher(cluster.log_dirs, "lag-")
        watcher.start()
        wl.start()
        t_end = time.monotonic() + args.duration
        while time.monotonic() < t_end:
            t0 = time.time()
            for node, log_dir in sorted(cluster.log_dirs.items()):
                report = run_archive(
                    cluster=NAME,
                    broker_id=node,
                    log_dirs=[str(log_dir)],
                    store=store,
                    state_dir=str(work / "state" / str(node)),
                )
                if not report.ok:
                    raise SystemExit(f"archive failed: {report.failures}")
            t1 = time.time()
            rounds.append({"start": t0, "end": t1})
            wl.check()
            time.sleep(max(0.0, args.interval - (t1 - t0)))
        wl.stop()
        watcher.stop.set()
        watcher.join()
        lags: list[float] = []
        for topic in wl.topics.values():
            for m in iter_manifests(store, NAME, topic):
                rolled = watcher.rolled_at(
                    m.source.broker_id, m.source.partition_dir, m.base_offset
                )
                if rolled is None or rolled < rounds[0]["start"]:
                    continue  # rolled before the watcher saw it
                key = f"{NAME}/{topic}/{m.partition}/manifests/"
                path = next(
                    (work / "store" / key).glob(
                        f"{m.base_offset:020d}-{m.segment_sha256[:16]}.json"
                    )
                )
                done = path.stat().st_mtime
                lags.append(done - rolled)
        summary = {
            "lag": _stats(lags),
            "round_s": _stats([r["end"] - r["start"] for r in rounds]),
            "rounds": len(rounds),
            "records": len(wl.records),
        }
    finally:
        cluster.stop()
    print(json.dumps(summary, indent=2))
    out = Path(args.out) if args.out else _data.result_file("archive-lag")
    out.write_text(
        json.dumps(
            {
                "benchmark": "archive-lag",
                "machine": _data.machine(),
                "git_commit": _data.git_commit(),
                "params": vars(args) | {"kafka": cluster.version},
                "summary": summary,
            },
            indent=2,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
