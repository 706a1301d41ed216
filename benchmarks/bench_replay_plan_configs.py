"""What a faithful replay adds to planning: the target topic's settings (the replayed data's
time span and the metadata history's state of the topic at the start).

Setup: ``--partitions`` partitions of ``--segments`` rolled segments each (the broker-faithful
writer), archived into a local store and cataloged in-process into SQLite, with a metadata
history of the topic (one Admin-snapshot-like state). Then, ``--rounds`` times each, with a
fresh plan source per plan as :meth:`ReplayService.plan` uses one:

* ``plan``: :func:`~kafka_archive.replay.runner.plan_replay` alone (the reference);
* ``plan_with_settings``: the same plus
  :func:`~kafka_archive.replay.planning.topic_config.plan_topic_settings`.

The target is the ratio ``plan_with_settings / plan`` close to 1 (the settings reuse the
segments the plan read). Printed and written to ``benchmarks/results/replay-plan-configs-*.json``.

    .venv/bin/python benchmarks/bench_replay_plan_configs.py --partitions 16 --segments 20
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import machine, result_file, scratch_dir, write_rolled_partitions


def _best_ms(fn: Any, rounds: int) -> float:
    fn()  # warm up
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--segments", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()

    from kafka_archive.archive import run_archive
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
    from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, parse_position
    from kafka_archive.replay.planning.plan_topics import plan_topic_settings
    from kafka_archive.replay.runner import plan_replay
    from kafka_archive.services.metadata_history import MetadataHistoryService
    from kafka_archive.store import open_store

    work = scratch_dir("bench-replay-plan-configs")
    dirs = write_rolled_partitions(work / "logs", args.partitions, args.segments)
    store = open_store(str(work / "store"))
    run_archive(cluster="b", broker_id=1, log_dirs=dirs, store=store)
    catalog = open_catalog(str(work / "catalog.db"), create=True)
    build_catalog(catalog, store.uri, runner=InProcessRunner())
    history = MetadataHistoryService(catalog=catalog)
    spec = ReplaySpec.model_validate(
        {
            "cluster": "b",
            "topic": "bench",
            "from": parse_position("earliest"),
            "target": TargetSpec(bootstrap_servers="target:9092"),
            "create_topic": True,
        }
    )

    def plan() -> None:
        plan_replay(spec, CatalogPlanSource(catalog, store))

    def plan_with_settings() -> None:
        source = CatalogPlanSource(catalog, store)
        plan_topic_settings(plan_replay(spec, source), source, history)

    base = _best_ms(plan, args.rounds)
    full = _best_ms(plan_with_settings, args.rounds)
    catalog.close()
    store.close()
    shutil.rmtree(work, ignore_errors=True)
    out: dict[str, Any] = {
        "partitions": args.partitions,
        "segments_per_partition": args.segments,
        "plan_ms": round(base, 2),
        "plan_with_settings_ms": round(full, 2),
        "ratio": round(full / base, 3),
        "machine": machine(),
    }
    path = result_file("replay-plan-configs")
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "machine"}, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
