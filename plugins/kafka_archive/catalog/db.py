"""Opening a catalog database: URL handling, engine settings, schema migrations.

:func:`open_catalog` accepts

* ``sqlite:///relative.db`` / ``sqlite:////abs/path.db`` or a plain file path (the embedded
  default: one file, nothing to run);
* ``postgresql://user:pass@host:port/db`` (driven by psycopg 3; ``postgresql+psycopg://`` is
  accepted as is).

and brings the schema to the newest Alembic revision before returning, so every caller sees the
same tables. SQLite connections use WAL journaling (readers never block the builder), a busy
timeout, and foreign keys on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

__all__ = ["DB_ENV", "Catalog", "normalize_url", "open_catalog", "upgrade"]

#: environment variable naming the catalog when ``--db`` is not given
DB_ENV = "KAFKA_ARCHIVE_DB"

_MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def normalize_url(url: str | os.PathLike[str]) -> str:
    """The SQLAlchemy URL for a catalog location (see the module docstring)."""
    text = os.fspath(url)
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    return text


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the packaged Alembic migrations up to ``revision`` on ``engine``."""
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


@dataclass(slots=True)
class Catalog:
    """An open catalog: the engine, a session factory, and its URL (password hidden)."""

    engine: Engine
    sessions: sessionmaker[Session]
    url: str

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def session(self) -> Session:
        return self.sessions()

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_catalog(url: str | os.PathLike[str] | None = None, *, migrate: bool = True) -> Catalog:
    """Open (and by default migrate) the catalog at ``url``, or ``$KAFKA_ARCHIVE_DB``."""
    if url is None:
        url = os.environ.get(DB_ENV)
        if not url:
            raise ValueError(f"no catalog given: pass a URL or set {DB_ENV}")
    full = normalize_url(url)
    engine = _engine(full)
    if migrate:
        upgrade(engine)
    shown = make_url(full).render_as_string(hide_password=True)
    return Catalog(engine, sessionmaker(engine, expire_on_commit=False), shown)
