"""Fixtures of the archive tests: a freshly written three-broker cluster and a local store."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster_data import CLUSTER, Cluster, build_cluster
from kafka_archive.store import LocalStore


@pytest.fixture
def cluster(tmp_path: Path) -> Cluster:
    return build_cluster(tmp_path / "live")


@pytest.fixture
def local_store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store", fsync=False)


@pytest.fixture
def cluster_name() -> str:
    return CLUSTER
