"""The CLI killed with SIGKILL in the middle of a run, then run again: nothing lost, nothing
duplicated, nothing uploaded twice.

The process is frozen at a precise point by :mod:`killable_cli` (after the N-th object reached
the store, or as the N-th S3 part is about to be sent) and killed there, so the test knows what
state it interrupts: a segment whose files are partly uploaded but whose manifest is missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from archive_checks import check_archive, snapshot
from cluster_data import CLUSTER, Cluster
from kafka_archive.archive import iter_manifests
from kafka_archive.store import LocalStore, S3Store
from support.s3common import FAST_TEST_OPTIONS

if TYPE_CHECKING:
    from collections.abc import Callable

    from support.s3server import MotoS3

pytest_plugins = ["support.s3server"]

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
#: how long to wait for the frozen process before declaring the test hung (not a speed limit)
HANG_GUARD_S = 180


def _cli_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def run_killed(args: list[str], env: dict[str, str], marker: Path) -> None:
    """Start the CLI, wait until the hook froze it, SIGKILL it."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "killable_cli.py"), *args],
        env=_cli_env({**env, "KA_FREEZE_MARKER": str(marker)}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    deadline = time.monotonic() + HANG_GUARD_S
    try:
        while not marker.exists():
            if proc.poll() is not None:
                _out, err = proc.communicate()
                pytest.fail(f"CLI ended (rc={proc.returncode}) before freezing:\n{err.decode()}")
            if time.monotonic() > deadline:
                pytest.fail("the CLI never reached the freeze point")
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL


def run_cli(args: list[str], env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, str(HERE / "killable_cli.py"), *args, "--json"],
        env=_cli_env(env),
        capture_output=True,
        cwd=REPO,
        timeout=HANG_GUARD_S,
    )
    lines = [ln for ln in proc.stdout.decode().splitlines() if ln.startswith("{")]
    assert lines, proc.stderr.decode()
    return proc.returncode, json.loads(lines[-1])


def _args(cluster: Cluster, broker: int, store_uri: str, *extra: str) -> list[str]:
    args = ["archive", "--cluster", CLUSTER, "--broker-id", str(broker), "--store", store_uri]
    for d in cluster.dirs(broker):
        args += ["--log-dir", d]
    return [*args, *extra]


@pytest.mark.parametrize("after_uploads", [2, 9])
def test_killed_mid_run_then_rerun_local(
    cluster: Cluster, local_store: LocalStore, tmp_path: Path, after_uploads: int
) -> None:
    args = _args(cluster, 1, local_store.uri, "--concurrency", "1")
    run_killed(args, {"KA_FREEZE_AFTER_UPLOADS": str(after_uploads)}, tmp_path / "frozen")
    before = snapshot(local_store)
    manifests_before = [k for k in before if "/manifests/" in k]
    assert len(before) == after_uploads  # the process died right after that many objects
    # the kill left files of a segment whose manifest was never written: for readers that
    # segment is not archived (yet)
    referenced = {f.key for m in iter_manifests(local_store, CLUSTER) for f in m.files}
    orphans = [k for k in before if "/manifests/" not in k and k not in referenced]
    assert orphans
    rc, report = run_cli(args, {})
    assert rc == 0, report
    assert report["files_reused"] >= 1  # the interrupted segment's uploaded files were reused
    after = snapshot(local_store)
    assert all(after[k] == v for k, v in before.items())  # nothing rewritten
    check_archive(local_store, cluster, CLUSTER, brokers=[1])
    # and broker 1's share is complete: every segment it archived has exactly one manifest
    mine = [m for m in iter_manifests(local_store, CLUSTER) if m.source.broker_id == 1]
    assert len(mine) == report["segments_archived"] + len(manifests_before)


@pytest.fixture
def s3_env(moto_s3: MotoS3, aws_env: None) -> Iterator[dict[str, str]]:
    yield {"AWS_ENDPOINT_URL": moto_s3.endpoint_url}


def _s3_options() -> list[str]:
    out = []
    for name in ("multipart_threshold", "multipart_chunksize", "max_attempts", "op_attempts"):
        out += ["--store-option", f"{name}={FAST_TEST_OPTIONS[name]}"]
    return out


def test_killed_during_a_multipart_upload_then_rerun_s3(
    big_cluster: Cluster,
    make_s3_store: Callable[..., S3Store],
    moto_s3: MotoS3,
    s3_env: dict[str, str],
    tmp_path: Path,
) -> None:
    store = make_s3_store()
    args = _args(big_cluster, 1, store.uri, *_s3_options())
    run_killed(args, {**s3_env, "KA_FREEZE_ON_PART": "2"}, tmp_path / "frozen")
    client = moto_s3.client()
    uploads = client.list_multipart_uploads(Bucket=moto_s3.bucket, Prefix=store.prefix)
    assert uploads.get("Uploads"), "the kill should have left an unfinished multipart upload"
    # the half-uploaded segment is invisible: no object, no manifest
    assert not [k for k in snapshot(store) if k.endswith(".log") or "/manifests/" in k]
    rc, report = run_cli(args, s3_env)
    assert rc == 0, report
    assert report["segments_archived"] == 1
    [m] = list(iter_manifests(store, CLUSTER))
    src = Path(m.source.log_dir) / m.source.partition_dir / m.log_file.name
    raw = client.get_object(Bucket=moto_s3.bucket, Key=f"{store.prefix}/{m.log_file.key}")
    assert raw["Body"].read() == src.read_bytes()
    check_archive(store, big_cluster, CLUSTER)


def test_killed_mid_run_then_rerun_s3(
    cluster: Cluster,
    make_s3_store: Callable[..., S3Store],
    s3_env: dict[str, str],
    tmp_path: Path,
) -> None:
    store = make_s3_store(list_page_size=1000)
    args = _args(cluster, 1, store.uri, "--concurrency", "2", *_s3_options())
    run_killed(args, {**s3_env, "KA_FREEZE_AFTER_UPLOADS": "6"}, tmp_path / "frozen")
    before = snapshot(store)
    rc, report = run_cli(args, s3_env)
    assert rc == 0, report
    after = snapshot(store)
    assert all(after[k] == v for k, v in before.items())
    check_archive(store, cluster, CLUSTER, brokers=[1])
