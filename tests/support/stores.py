"""Object stores for tests: a ``store`` fixture giving each backend in turn (local directory,
S3 through the moto server of :mod:`support.s3server`), and a wrapper counting ranged reads.

Use with ``pytest_plugins = ["support.s3server", "support.stores"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.store import LocalStore, ObjectStore, S3Store


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    """An empty store of each backend in turn."""
    if request.param == "local":
        return LocalStore(tmp_path / "store")
    make: Callable[..., S3Store] = request.getfixturevalue("make_s3_store")
    return make()


class RangeCountingStore:
    """Wraps a store and counts ranged reads; everything else is passed through (so, like the
    wrappers of real deployments, it overrides ``get_range`` only)."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.ranged_reads = 0

    def get_range(self, key: str, start: int, end_exclusive: int) -> bytes:
        self.ranged_reads += 1
        return self.inner.get_range(key, start, end_exclusive)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
