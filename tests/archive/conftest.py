"""Fixtures of the archive tests: a freshly written three-broker cluster and a local store."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from cluster_data import CLUSTER, Cluster, build_cluster
from kafka_archive.store import LocalStore
from kafka_archive_dev.writer.broker_writer import BrokerWriter

MiB = 1024 * 1024


@pytest.fixture
def cluster(tmp_path: Path) -> Cluster:
    return build_cluster(tmp_path / "live")


@pytest.fixture
def local_store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store", fsync=False)


@pytest.fixture
def cluster_name() -> str:
    return CLUSTER


@pytest.fixture
def big_cluster(tmp_path: Path) -> Cluster:
    """One broker with one rolled segment of ~11 MiB: uploaded to S3 in 3 parts of 5 MiB."""
    b = BrokerWriter(tmp_path / "big", 1, log_dirs=("data",))
    pw = b.partition("big", 0, segment_bytes=16 * MiB)
    for i in range(44):
        pw.append([(f"k{i}".encode(), hashlib.sha512(str(i).encode()).digest() * 4096)])
    pw.roll()
    pw.append([(b"tail", b"t")])
    b.close(active=True, preallocate_indexes=False)
    return Cluster(tmp_path / "big", {1: list(b.log_dirs)})
