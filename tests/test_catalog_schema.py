"""The Alembic migrations and the ORM models describe the same schema, on SQLite and PostgreSQL;
opening a catalog twice is harmless; URLs are normalised as documented."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from kafka_archive.catalog.db import normalize_url, open_catalog
from kafka_archive.catalog.models import Base
from sqlalchemy import inspect, text

pytest_plugins = ["support.postgres"]

# other packages register their catalog tables on the same Base (replay's mirror tables)
import_module("kafka_archive.replay.bookkeeping.models")
import_module("kafka_archive.metadata_history.models")


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_migrations_match_models(db_url: str) -> None:
    cat = open_catalog(db_url, create=True)
    try:
        with cat.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert diff == []
        names = set(inspect(cat.engine).get_table_names())
        assert set(Base.metadata.tables) <= names
    finally:
        cat.close()


def test_reopen_is_idempotent_and_keeps_data(db_url: str) -> None:
    with open_catalog(db_url, create=True) as cat, cat.engine.begin() as conn:
        conn.execute(
            text("INSERT INTO partitions (cluster, topic, partition) VALUES ('c', 't', 0)")
        )
    with open_catalog(db_url, create=True) as cat, cat.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM partitions")).scalar_one() == 1
        assert conn.execute(text("SELECT version_num FROM alembic_version")).first()


def test_normalize_url(tmp_path: Path) -> None:
    assert normalize_url(tmp_path / "x.db") == f"sqlite:///{tmp_path / 'x.db'}"
    assert normalize_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize_url("sqlite:///rel.db") == "sqlite:///rel.db"


def test_missing_url_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_ARCHIVE_DB", raising=False)
    with pytest.raises(ValueError, match="KAFKA_ARCHIVE_DB"):
        open_catalog()
