"""The README's first command, end to end: ``kafka-archive demo`` (what ``./dev demo`` runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_demo_runs_end_to_end_and_verifies_itself(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("kafka-archive")
    proc = subprocess.run(
        [str(exe), "demo", "--root", str(tmp_path / "demo"), "--json"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
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
