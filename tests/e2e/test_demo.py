"""The README's first command, end to end: ``kafka-archive-dev demo`` (what ``./dev demo`` runs).

On real Apache Kafka (the default where Java and Maven are, always in CI), and the Java-free
fallback (``--kafka mock``) that stays for machines without them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def _demo(root: Path, *args: str) -> dict[str, Any]:
    exe = Path(sys.executable).with_name("kafka-archive-dev")
    proc = subprocess.run(
        [str(exe), "demo", "--root", str(root), "--json", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.usefixtures("kafka_available")
def test_demo_on_real_kafka(tmp_path: Path) -> None:
    """The demo starts its own source and target clusters."""
    report = _demo(tmp_path / "demo", "--kafka", "real")
    assert report["kafka"].startswith("Apache Kafka ")
    # the catalog equals the real broker's ListOffsets at T, on every partition
    assert report["catalog_matches_broker"] is True
    offsets = report["offsets_at"]["partitions"]
    assert [r["partition"] for r in offsets] == [0, 1, 2]
    assert all(r["offset"] == r["broker_lookup_offset"] > 0 for r in offsets)
    # the group's position at T is what its consumer committed by then (the follower saw it)
    group = report["group_position"]
    assert group["matches"] is True and group["expected"]
    assert {str(o["partition"]): o["offset"] for o in group["offsets"]} == group["expected"]
    replay = report["replay"]
    assert replay["exact"] and replay["records_in_target"] == replay["records_expected"] > 50
    assert (tmp_path / "demo" / "kafka-source").is_dir()
    assert (tmp_path / "demo" / "kafka-target").is_dir()


def test_demo_without_java_runs_on_the_mock(tmp_path: Path) -> None:
    report = _demo(tmp_path / "demo", "--kafka", "mock")
    assert report["kafka"].startswith("mock Kafka")
    assert report["catalog_matches_broker"] is True
    offsets = report["offsets_at"]["partitions"]
    assert [r["partition"] for r in offsets] == [0, 1, 2]
    assert all(
        r["offset"] >= 0 and r["timestamp"] >= report["offsets_at"]["timestamp"] for r in offsets
    )
    assert report["group_position"]["offsets"]
    assert all(
        o["commit_timestamp"] <= report["offsets_at"]["timestamp"]
        for o in report["group_position"]["offsets"]
    )
    replay = report["replay"]
    assert replay["exact"] and replay["records_in_target"] == replay["records_expected"] > 50
    # everything lives under the one folder
    assert (tmp_path / "demo" / "store").is_dir() and (tmp_path / "demo" / "airflow").is_dir()
