"""Opening a catalog never creates one unless the caller owns its life (``create=True``).

A mistyped ``--db`` of a query command used to create an empty catalog (and its parent
directories) and then say "run build first"; now it is a typed error naming the location, and
nothing is created or changed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from kafka_archive.catalog.db import (
    CatalogNotFound,
    NotACatalog,
    open_catalog,
    upgrade,
)
from sqlalchemy import create_engine, inspect, text
from support.cli_json import cli


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_missing_file_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "typo" / "nested" / "catalog.db"
    with pytest.raises(CatalogNotFound, match=r"no catalog at .*typo/nested/catalog\.db") as err:
        open_catalog(db)
    assert "catalog build" in err.value.hint
    assert _tree(tmp_path) == []


def test_create_makes_the_file_and_its_parents(tmp_path: Path) -> None:
    db = tmp_path / "new" / "catalog.db"
    with open_catalog(db, create=True) as cat:
        assert "alembic_version" in inspect(cat.engine).get_table_names()
    with open_catalog(db) as cat:  # now it exists: a reader opens it
        assert "partitions" in inspect(cat.engine).get_table_names()


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "empty file"),
        (b"hello, I am a text file, not SQLite at all" * 10, "not a database file"),
    ],
    ids=["empty-file", "text-file"],
)
def test_a_file_that_is_no_database_is_refused_unchanged(
    tmp_path: Path, content: bytes, match: str
) -> None:
    db = tmp_path / "catalog.db"
    db.write_bytes(content)
    with pytest.raises(NotACatalog, match=match):
        open_catalog(db)
    assert db.read_bytes() == content
    assert _tree(tmp_path) == ["catalog.db"]


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(NotACatalog, match="without catalog tables"):
        open_catalog(db)
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert tables == ["invoices"]


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotACatalog, match="is a directory"):
        open_catalog(tmp_path)


def test_an_older_schema_is_upgraded(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    engine = create_engine(f"sqlite:///{db}")
    upgrade(engine, "0001_initial")
    engine.dispose()
    with open_catalog(db) as cat, cat.engine.connect() as conn:
        versions = set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
        assert versions and "0001_initial" not in versions


@pytest.mark.parametrize(
    "args",
    [
        ["catalog", "topics", "--cluster", "c"],
        ["catalog", "gaps", "--cluster", "c", "--topic", "t"],
        ["catalog", "offsets", "--cluster", "c", "--topic", "t", "--at", "0", "--store", "x"],
        ["catalog", "locate", "--cluster", "c", "--topic", "t", "-p", "0", "--offset", "1"],
        ["replay", "status"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_query_commands_do_not_create_a_catalog(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "mistyped" / "catlog.db"
    code, lines, out = cli(*args, "--db", str(db), "--json")
    assert code == 1, out
    assert lines and lines[-1]["kind"] == "error", out
    assert "no catalog at" in lines[-1]["message"] and "catlog.db" in lines[-1]["message"]
    assert "catalog build" in (lines[-1]["hint"] or "")
    assert "Traceback" not in out
    assert _tree(tmp_path) == []
