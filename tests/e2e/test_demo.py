"""The README's first command, end to end: ``kafka-archive-dev demo`` (what ``./dev demo`` runs).

On real Apache Kafka (the default where Java and Maven are, always in CI), and the Java-free
fallback (``--kafka mock``) that stays for machines without them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
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


@dataclass(frozen=True)
class RealDemo:
    """One run of the demo on real Kafka, as people run it (text, not --json): what it
    printed, and its report (``<root>/report.json``)."""

    root: Path
    printed: str
    report: dict[str, Any]


@pytest.fixture(scope="module")
def real_demo(tmp_path_factory: pytest.TempPathFactory, kafka_available: None) -> RealDemo:
    root = tmp_path_factory.mktemp("demo") / "demo"
    exe = Path(sys.executable).with_name("kafka-archive-dev")
    proc = subprocess.run(
        [str(exe), "demo", "--root", str(root), "--kafka", "real"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return RealDemo(root, proc.stdout, json.loads((root / "report.json").read_text()))


def test_demo_on_real_kafka(real_demo: RealDemo) -> None:
    """The demo starts its own source and target clusters."""
    report = real_demo.report
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
    assert (real_demo.root / "kafka-source").is_dir()
    assert (real_demo.root / "kafka-target").is_dir()
    # the metadata log was archived: the catalog has its history
    assert report["metadata"]["history"] is True and report["metadata"]["changed_at"] > 0


def _printed_commands(printed: str) -> list[tuple[str, str]]:
    """``(what it shows, command)`` for each command the demo printed at its end."""
    lines = printed.split("explore what it made", 1)[1].splitlines()[1:]
    out, said = [], ""
    for line in (x.strip() for x in lines):
        if line.startswith("# "):
            said = line
        elif line.startswith("kafka-archive "):
            out.append((said, line))
    return out


def test_the_printed_commands_work_as_printed(real_demo: RealDemo, tmp_path: Path) -> None:
    """Issue 23, point 5: after it runs, the demo prints commands for offsets, group offsets,
    topic history (the metadata log is archived), a replay dry run, a group move and an
    export; each runs exactly as printed (a shell, the checkout's environment) and answers
    with what it says."""
    from kafka_archive_dev.demo_live import RETENTION_MS

    commands = _printed_commands(real_demo.printed)
    subcommands = [" ".join(c.split()[1:3]) for _said, c in commands]
    for wanted in (
        "catalog offsets",
        "catalog group-offsets",
        "catalog topic-history",
        "catalog topic-config",
        "catalog acls",
        "replay run",
        "replay translate-group",
        "export --cluster",
    ):
        assert wanted in subcommands, (wanted, subcommands)
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_ARCHIVE_", "AIRFLOW"))}
    env |= {"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "COLUMNS": "200"}
    group = real_demo.report["group_position"]["group"]
    expect = {
        "catalog topics": ["records in the log"],
        "catalog offsets": ["orders"],
        "catalog group-offsets": [group],
        "catalog topic-config": ["retention.ms", RETENTION_MS[0]],
        "catalog topic-history": ["retention.ms", RETENTION_MS[1]],
        "catalog acls": [f"User:{group}", "READ"],
        "replay run": ["(dry run)", "records a replay will send", "retention.ms"],
        "replay translate-group": ["partition 0: offset", "add --apply"],
        "export --cluster": ["rows (committed records)", "aborted records"],
    }
    for said, command in commands:
        proc = subprocess.run(
            ["bash", "-c", command],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
            env=env,
            cwd=tmp_path,
        )
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, (command, out[-3000:])
        assert "error:" not in out and "internal error" not in out, (command, out[-3000:])
        words = " ".join(out.split())
        for word in expect.get(" ".join(command.split()[1:3]), []):
            assert word in words, (said, command, word, out[-3000:])
        assert said, command  # each says what it shows
    # the export wrote Parquet files where it said
    assert list((real_demo.root / "export").rglob("*.parquet"))


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


def test_demo_ui_from_a_fresh_checkout_starts_airflow(tmp_path: Path) -> None:
    """`./dev demo --ui` as the README says, from a checkout without `.work/`: the default root
    (relative, `.work/demo`) is resolved, the demo runs, Airflow starts over it and makes the
    login's password file (it exited 70 on the relative store URI before Airflow started)."""
    import os
    import signal
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).with_name("kafka-archive-dev")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    out = tmp_path / "demo-ui.log"
    root = tmp_path / ".work" / "demo"
    password = root / "airflow" / "simple_auth_manager_passwords.json.generated"
    with out.open("w") as log:
        proc = subprocess.Popen(
            [str(exe), "demo", "--ui", "--kafka", "mock", "--port", str(port)],
            cwd=tmp_path,  # the default root, relative to where ./dev runs
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 900
            while time.monotonic() < deadline and proc.poll() is None:
                if password.is_file() and password.stat().st_size > 0:
                    break
                time.sleep(2)
            text = out.read_text()
            assert proc.poll() is None, f"exited {proc.returncode}:\n{text[-3000:]}"
            assert password.is_file(), text[-3000:]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(120)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(30)
    text = out.read_text()
    assert "internal error" not in text, text[-3000:]
    assert f"http://localhost:{port}/kafka-archive/?cluster=demo" in text
    assert json.loads(password.read_text())  # {"oncall": "<generated>"}
    assert not (tmp_path / "state" / "kafka-archive").exists()  # no crash log
