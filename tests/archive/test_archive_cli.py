"""``kafka-archive archive``: help, text and --json output, dry run, exit codes, progress."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from archive_checks import snapshot
from cluster_data import CLUSTER, Cluster, rolled_segments
from kafka_archive.archive.report import SegmentOutcome, SegmentStatus
from kafka_archive.cli import _register_groups, app
from kafka_archive.cli.archive import _Bar
from kafka_archive.store import LocalStore
from typer.testing import CliRunner

from segment_lib.log_file import iter_batches

runner = CliRunner()
if not any(c.name == "archive" for c in app.registered_commands):
    _register_groups()


def _args(cluster: Cluster, broker: int, store: LocalStore, *extra: str) -> list[str]:
    args = ["archive", "--cluster", CLUSTER, "--broker-id", str(broker), "--store", store.uri]
    for d in cluster.dirs(broker):
        args += ["--log-dir", d]
    return [*args, *extra]


def test_help_has_examples() -> None:
    result = runner.invoke(app, ["archive", "--help"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    assert "Examples:" in result.output and "--dry-run" in result.output
    assert "kafka-archive archive --cluster prod --broker-id 1" in result.output


def test_json_report_is_one_object(cluster: Cluster, local_store: LocalStore) -> None:
    result = runner.invoke(app, _args(cluster, 1, local_store, "--json"))
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert report["kind"] == "archive_report" and report["ok"] is True
    assert report["segments_archived"] > 0
    assert report["segments_archived"] == len(
        [k for k in snapshot(local_store) if "/manifests/" in k]
    )
    assert report["lag"][0]["broker_id"] == 1 and report["lag"][0]["basis"] == "log_mtime"
    again = json.loads(runner.invoke(app, _args(cluster, 1, local_store, "--json")).stdout)
    assert again["segments_archived"] == 0
    assert again["skipped"]["already_archived"] == report["segments_archived"]


def test_text_output_and_dry_run(cluster: Cluster, local_store: LocalStore) -> None:
    result = runner.invoke(app, _args(cluster, 2, local_store, "--dry-run"), env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "would archive" in result.output and "active" in result.output
    assert snapshot(local_store) == {}


def test_corrupt_segment_exits_1_with_next_steps(cluster: Cluster, local_store: LocalStore) -> None:
    log = rolled_segments(cluster.log_dirs[2][0] / "payments-0")[0][2]
    data = bytearray(log.read_bytes())
    first = next(iter_batches(bytes(data)))
    data[first.position + first.size - 1] ^= 1
    log.write_bytes(bytes(data))
    result = runner.invoke(app, _args(cluster, 2, local_store), env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "quarantined" in result.output
    assert "next:" in result.stderr and "segments dump" in result.stderr
    as_json = runner.invoke(app, _args(cluster, 2, local_store, "--json"))
    assert as_json.exit_code == 1
    report = json.loads(as_json.stdout.strip())
    assert report["ok"] is False and report["segments_quarantined"] == 1
    [failure] = report["failures"]
    assert failure["error"]["path"] == str(log) and failure["error"]["position"] == 0
    assert json.loads(as_json.stderr.strip().splitlines()[-1])["kind"] == "next_steps"


def test_bad_store_uri_is_a_usage_error(cluster: Cluster) -> None:
    result = runner.invoke(
        app,
        [
            "archive",
            "--cluster",
            CLUSTER,
            "--broker-id",
            "1",
            "--log-dir",
            cluster.dirs(1)[0],
            "--store",
            "ftp://x/y",
        ],
    )
    assert result.exit_code == 2
    assert "unsupported store URI scheme" in result.stderr


def test_bad_cluster_name_is_a_usage_error(cluster: Cluster, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "archive",
            "--cluster",
            "a/b",
            "--broker-id",
            "1",
            "--log-dir",
            cluster.dirs(1)[0],
            "--store",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2


def test_progress_bar_counts_every_outcome() -> None:
    with _Bar() as bar:
        bar.on_discover("/x/00000000000000000000.log")
        bar.on_planned(2, 1234)
        for base in (0, 10):
            bar.on_outcome(
                SegmentOutcome(
                    cluster="c",
                    broker_id=1,
                    log_dir="/d",
                    topic="t",
                    partition=0,
                    base_offset=base,
                    end_offset=base + 10,
                    status=SegmentStatus.ARCHIVED,
                )
            )
        assert bar.upload is not None
        task = bar.progress.tasks[bar.upload]
        assert (task.completed, task.total) == (2, 2)


def test_local_file_errors_are_clear_errors_not_tracebacks(
    cluster: Cluster, local_store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OSError or SegmentError escaping the run (none is expected: discovery and the upload
    report them per item) still ends in a one-line error naming the file, exit 1."""
    from kafka_archive.services.archive import ArchiveService

    from segment_lib.errors import CorruptBatchError

    for exc, named in (
        (PermissionError(13, "Permission denied", "/var/lib/kafka/x/orders-0"), "orders-0"),
        (CorruptBatchError("bad length", path="/d/orders-0/0.log", position=8), "at byte 8"),
    ):

        def boom(*_a: object, _exc: Exception = exc, **_k: object) -> None:
            raise _exc

        monkeypatch.setattr(ArchiveService, "archive_broker", boom)
        for extra in ((), ("--json",)):
            result = runner.invoke(app, _args(cluster, 1, local_store, *extra))
            assert result.exit_code == 1, result.output
            assert not isinstance(result.exception, type(exc))
            assert named in result.output and "Traceback" not in result.output


def test_symlink_loop_in_a_log_dir_is_a_skipped_item(
    cluster: Cluster, local_store: LocalStore
) -> None:
    import os

    d = Path(cluster.dirs(1)[0])
    os.symlink(d / "loop-b", d / "loop-a")
    os.symlink(d / "loop-a", d / "loop-b")
    result = runner.invoke(app, _args(cluster, 1, local_store, "--json"))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.splitlines()[0])
    loops = [s for s in report["skipped_items"] if s["reason"] == "symlink"]
    assert {Path(s["path"]).name for s in loops} == {"loop-a", "loop-b"}
    assert all("loop" in s["detail"] for s in loops)


def test_a_bad_cluster_name_leaves_nothing_behind(
    cluster: Cluster, local_store: LocalStore, tmp_path: Path
) -> None:
    """Found by the CLI fuzz: input is checked before the state dir's caches are opened."""
    state = tmp_path / "state"
    state.mkdir()
    args = ["archive", "--cluster", ":", "--broker-id", "1", "--log-dir", cluster.dirs(1)[0]]
    result = runner.invoke(app, [*args, "--store", local_store.uri, "--state-dir", str(state)])
    assert result.exit_code == 2, result.output
    assert "cluster name" in result.output
    assert list(state.iterdir()) == []
