"""Each package migrates its own tables, and catalogs made before that upgrade cleanly.

The catalog's Alembic revisions live in ``catalog/migrations/versions`` (branch ``catalog``), the
replay's in ``replay/migrations/versions`` (branch ``replay``); one environment and one
``alembic_version`` table run both (``kafka_archive.catalog.db``). Until the split, the same
revisions formed one linear history (``0001_initial`` -> ``r0001_replay`` ->
``g0001_followed_commits`` -> ``0002_integrity`` -> ``r0002_replay_lease``) and a catalog's
version table named one revision of it: such a catalog, at any of those revisions, must upgrade
to the same schema as a new one, keep its rows, and then take the fast path (no Alembic) on the
next open.
"""

from __future__ import annotations

import re
from importlib import import_module
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from kafka_archive.catalog import db
from kafka_archive.catalog.db import (
    alembic_config,
    head_versions,
    open_catalog,
    version_locations,
)
from kafka_archive.catalog.models import Base
from sqlalchemy import Engine, create_engine, text

pytest_plugins = ["support.postgres"]

# the replay's tables register on the catalog's Base (the schema compared below includes them)
import_module("kafka_archive.replay.bookkeeping.models")
import_module("kafka_archive.metadata_history.models")

PACKAGES = Path(db.__file__).resolve().parent.parent

#: the single history before each package had its branch: revision -> down_revision
OLD_HISTORY: dict[str, str | None] = {
    "0001_initial": None,
    "r0001_replay": "0001_initial",
    "g0001_followed_commits": "r0001_replay",
    "0002_integrity": "g0001_followed_commits",
    "r0002_replay_lease": "0002_integrity",
}

_ENV = """\
from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
"""


def _old_history(root: Path) -> Path:
    """The packaged revisions as the old single history: the same upgrade code, the old
    ``down_revision`` chain, no branches or dependencies, all in one folder."""
    (root / "versions").mkdir(parents=True)
    (root / "env.py").write_text(_ENV)
    for folder in version_locations():
        for path in folder.glob("*.py"):
            source = path.read_text("utf-8")
            found = re.search(r'^revision = "([^"]+)"$', source, re.M)
            if found is None or found[1] not in OLD_HISTORY:
                continue  # not a revision, or one added after the split (not old history)
            for field, value in (
                ("down_revision", repr(OLD_HISTORY[found[1]])),
                ("branch_labels", "None"),
                ("depends_on", "None"),
            ):
                source = re.sub(rf"^{field} = .*$", f"{field} = {value}", source, flags=re.M)
            (root / "versions" / path.name).write_text(source)
    return root


def _versions(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return {r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))}


def test_each_package_keeps_its_revisions_on_its_branch() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert version_locations() == (
        PACKAGES / "catalog" / "migrations" / "versions",
        PACKAGES / "metadata_history" / "migrations" / "versions",
        PACKAGES / "replay" / "migrations" / "versions",
    )
    for branch in ("catalog", "replay", "metadata_history"):
        folder = PACKAGES / branch / "migrations" / "versions"
        own = {
            rev.revision
            for rev in script.walk_revisions()
            if branch in rev.branch_labels  # (labels are inherited along a branch)
        }
        assert own, branch
        for rev in own:
            assert Path(script.get_revision(rev).path).parent == folder, rev
    assert set(script.get_heads()) == {
        script.get_revision("catalog@head").revision,
        script.get_revision("replay@head").revision,
        script.get_revision("metadata_history@head").revision,
    }


def test_the_catalog_environment_imports_no_other_package() -> None:
    env = (PACKAGES / "catalog" / "migrations" / "env.py").read_text("utf-8")
    imported = re.findall(r"^\s*(?:from|import)\s+(kafka_archive\.\w+)", env, re.M)
    assert imported and set(imported) == {"kafka_archive.catalog"}


@pytest.mark.parametrize("old_revision", list(OLD_HISTORY))
def test_a_catalog_of_the_old_history_upgrades(old_revision: str, tmp_path: Path) -> None:
    old = create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    cfg = Config()
    cfg.set_main_option("script_location", str(_old_history(tmp_path / "old_history")))
    with old.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, old_revision)
        conn.execute(
            text("INSERT INTO partitions (cluster, topic, partition) VALUES ('c', 't', 0)")
        )
    assert _versions(old) == {old_revision}
    old.dispose()

    with open_catalog(tmp_path / "old.db") as cat:
        assert _versions(cat.engine) == head_versions()
        with cat.engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
            assert conn.execute(text("SELECT count(*) FROM partitions")).scalar_one() == 1
        # the next open takes the fast path: one SELECT, no Alembic
        assert db._at_head(cat.engine)


def test_an_old_catalog_at_the_last_old_revision_upgrades_on_postgres(
    pg_url: str, tmp_path: Path
) -> None:
    """PostgreSQL runs the real ALTERs (r0002 widens a column) and keeps version rows its way."""
    old = create_engine(pg_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(_old_history(tmp_path / "old_history")))
    with old.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002_integrity")
    old.dispose()
    with open_catalog(pg_url) as cat:
        assert _versions(cat.engine) == head_versions()
        with cat.engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
        assert db._at_head(cat.engine)


def test_a_catalog_made_before_coverage_gaps_gets_them_from_its_segments(
    tmp_path: Path,
) -> None:
    """0004_coverage fills ``coverage_gaps`` from the segment rows an older catalog holds, so
    ``gaps`` (which reads only that table) reports the same holes after the upgrade."""
    from kafka_archive.catalog.gaps import gaps
    from support.catalog_data import insert_segment

    url = f"sqlite:///{tmp_path / 'c.db'}"
    old = create_engine(url)
    db.upgrade(old, "0003_retention")
    with old.begin() as conn:
        conn.execute(
            text("INSERT INTO partitions (id, cluster, topic, partition) VALUES (1, 'c', 't', 0)")
        )
        for sid, lo, hi, status in (
            (1, 0, 99, "canonical"),
            (2, 100, -1, "corrupt"),
            (3, 200, 299, "canonical"),
        ):
            insert_segment(conn, sid, 1, lo, -1, lo if hi >= 0 else -1, hi, status=status)
    assert _versions(old) >= {"0003_retention"}
    old.dispose()
    with open_catalog(url) as cat:
        assert _versions(cat.engine) == head_versions()
        found = gaps(cat, "c", "t")
    assert [(g.kind, g.start_offset, g.end_offset) for g in found] == [
        ("corrupt", 100, 100),
        ("missing", 100, 199),
    ]
    assert found[1].detail == {"after_object": "k1", "before_object": "k3"}
