"""The end-to-end demo behind ``./dev demo`` / ``kafka-archive demo``.

Everything lives under one folder (default ``.work/demo``): a realistic multi-broker Kafka log
directory written by :func:`segment_lib.writer.write_demo_cluster`, and whatever the later
stages make of it. Each stage is a function returning a JSON-ready dict, so the CLI can print a
readable report or ``--json``, and tests can call the stages one by one.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from segment_lib.lookup import find_offset_for_timestamp
from segment_lib.partition import PartitionView
from segment_lib.writer import DemoCluster, write_demo_cluster

__all__ = ["DemoPaths", "answer_offsets_at", "write_cluster"]


@dataclass(frozen=True, slots=True)
class DemoPaths:
    """Where the demo keeps things, all under ``root``."""

    root: Path

    @property
    def cluster(self) -> Path:
        return self.root / "cluster"

    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def catalog_db(self) -> Path:
        return self.root / "catalog.sqlite"

    @property
    def airflow_home(self) -> Path:
        return self.root / "airflow"


def write_cluster(paths: DemoPaths, *, seed: int = 0, fresh: bool = True) -> DemoCluster:
    """Write the demo cluster's log dirs (removing an earlier demo's when ``fresh``)."""
    if fresh and paths.root.exists():
        shutil.rmtree(paths.root)
    paths.cluster.mkdir(parents=True, exist_ok=True)
    return write_demo_cluster(paths.cluster, seed=seed)


def answer_offsets_at(cluster: DemoCluster, topic: str, timestamp_ms: int) -> list[dict[str, Any]]:
    """ListOffsets for every partition of ``topic`` at ``timestamp_ms``, from the leaders'
    log dirs (what the broker would answer while it still holds the data)."""
    out = []
    for (name, partition), hosts in sorted(cluster.replicas.items()):
        if name != topic:
            continue
        for log_dir in cluster.broker_dirs[hosts[0]]:
            part_dir = log_dir / f"{topic}-{partition}"
            if part_dir.is_dir():
                answer = find_offset_for_timestamp(PartitionView.open(part_dir), timestamp_ms)
                out.append(
                    {"partition": partition, "offset": answer.offset, "timestamp": answer.timestamp}
                )
                break
    return out
