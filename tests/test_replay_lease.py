"""One live run per replay id: the catalog lease (issue 10, "two identical `replay run` at once
both report done"). The end-to-end refusal of a second CLI run is in test_replay_gaps.py."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive.replay.bookkeeping.lease import ReplayBusyError, ReplayLease
from kafka_archive.replay.bookkeeping.models import ReplayLeaseRow
from sqlalchemy import insert, select


def _catalog(tmp_path: Path) -> Catalog:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    if "create" in inspect.signature(open_catalog).parameters:
        return open_catalog(url, create=True)
    return open_catalog(url)  # pragma: no cover


def test_second_lease_is_refused_until_released(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    first = ReplayLease(catalog.engine, "r-1")
    first.acquire()
    with pytest.raises(ReplayBusyError, match="r-1 is already running") as info:
        ReplayLease(catalog.engine, "r-1").acquire()
    assert info.value.details["holder_pid"] == first.pid
    with ReplayLease(catalog.engine, "r-2"):  # another replay: independent
        pass
    first.release()
    with ReplayLease(catalog.engine, "r-1"), pytest.raises(ReplayBusyError):
        ReplayLease(catalog.engine, "r-1").acquire()
    with catalog.engine.connect() as conn:
        assert conn.execute(select(ReplayLeaseRow)).all() == []  # released on exit


def test_lease_of_a_dead_local_process_is_taken_over(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True)  # fmt: skip
    lease = ReplayLease(catalog.engine, "r-1")
    with catalog.engine.begin() as conn:
        conn.execute(
            insert(ReplayLeaseRow).values(
                replay_id="r-1",
                owner="gone",
                host=lease.host,
                pid=int(dead.stdout),
                acquired_at_ms=1,
                heartbeat_ms=10**15,
            )
        )
    lease.acquire()  # a fresh heartbeat, but its process is gone: taken over
    with catalog.engine.connect() as conn:
        assert conn.execute(select(ReplayLeaseRow.owner)).scalar_one() == lease.owner
    lease.release()


def test_lease_not_renewed_for_its_ttl_is_taken_over(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    with catalog.engine.begin() as conn:
        conn.execute(
            insert(ReplayLeaseRow).values(
                replay_id="r-1",
                owner="elsewhere",
                host="another-host",
                pid=1,
                acquired_at_ms=1,
                heartbeat_ms=1,
            )
        )
    with ReplayLease(catalog.engine, "r-1") as lease, catalog.engine.connect() as conn:
        assert conn.execute(select(ReplayLeaseRow.owner)).scalar_one() == lease.owner
