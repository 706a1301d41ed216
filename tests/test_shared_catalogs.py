"""The catalogs a server keeps open across requests (services/shared_catalogs): one engine
per catalog, a request's close leaves it open, and a SQLite file replaced or removed under
the server is noticed on the next request."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kafka_archive.catalog.db import CatalogNotFound, open_catalog
from kafka_archive.services.catalog_queries import CatalogQueryService
from kafka_archive.services.shared_catalogs import SharedCatalogs
from kafka_archive.settings import load_settings
from sqlalchemy import text


def _catalog(path: Path, cluster: str) -> None:
    with open_catalog(path, create=True) as cat, cat.engine.begin() as conn:
        conn.execute(
            text("INSERT INTO partitions (cluster, topic, partition) VALUES (:c, 't', 0)"),
            {"c": cluster},
        )


def _clusters(shared: SharedCatalogs, path: Path) -> list[str]:
    settings = load_settings({"db": str(path)}, env={})
    with CatalogQueryService(settings, catalog=shared.get(str(path))) as svc:
        return [c.cluster for c in svc.clusters()]


def test_one_engine_kept_across_requests_and_a_replaced_file_reopened(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    _catalog(path, "first")
    shared = SharedCatalogs()
    try:
        assert _clusters(shared, path) == ["first"]
        engine = shared.get(str(path)).engine
        assert _clusters(shared, path) == ["first"]  # the request's close kept it open
        assert shared.get(str(path)).engine is engine
        with engine.connect() as conn:  # still usable after the requests closed theirs
            assert conn.execute(text("SELECT count(*) FROM partitions")).scalar_one() == 1

        _catalog(tmp_path / "new.db", "second")  # a new demo run writes a new file there
        os.replace(tmp_path / "new.db", path)
        assert _clusters(shared, path) == ["second"]
        assert shared.get(str(path)).engine is not engine

        path.unlink()
        with pytest.raises(CatalogNotFound, match="no catalog at"):
            shared.get(str(path))
    finally:
        shared.close()


def test_requests_on_many_threads_share_one_engine(tmp_path: Path) -> None:
    """The API answers sync routes on a thread pool: one kept engine serves them all."""
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "c.db"
    _catalog(path, "only")
    shared = SharedCatalogs()
    try:
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _i: _clusters(shared, path), range(64)))
        assert answers == [["only"]] * 64
        assert len({id(shared.get(str(path)).engine) for _ in range(3)}) == 1
    finally:
        shared.close()
