"""Opening a catalog database: URL handling, engine settings, schema migrations.

:func:`open_catalog` accepts

* ``sqlite:///relative.db`` / ``sqlite:////abs/path.db`` or a plain file path (the embedded
  default: one file, nothing to run);
* ``postgresql://user:pass@host:port/db`` (driven by psycopg 3; ``postgresql+psycopg://`` is
  accepted as is).

and brings the schema to the newest Alembic revision before returning, so every caller sees the
same tables. SQLite connections use WAL journaling (readers never block the builder), a busy
timeout, and foreign keys on.

Only a writer that owns the catalog's life creates one: :func:`open_catalog` creates nothing
(no file, no directory, no table) unless asked with ``create=True`` (``catalog build``, the
offsets follower, the demo). Without it, a location that holds no catalog is a typed
:class:`CatalogError` naming the location (password hidden) with a hint, so a mistyped
``--db`` of a query command is reported instead of silently answering from an empty catalog.
A catalog of an older schema is upgraded (that is a migration, not a creation).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from kafka_archive.redact import redact_text, redact_url

__all__ = [
    "DB_ENV",
    "Catalog",
    "CatalogConfigError",
    "CatalogError",
    "CatalogNotFound",
    "CatalogUnavailable",
    "NotACatalog",
    "normalize_url",
    "open_catalog",
    "upgrade",
]

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


_BUILD_HINT = "check --db / $KAFKA_ARCHIVE_DB; `kafka-archive catalog build` creates a catalog"


class CatalogError(Exception):
    """A catalog cannot be opened. ``str()`` is the message (secrets hidden: it is built from
    the redacted URL and a redacted driver message); ``hint`` says what to do next."""

    default_hint = ""

    def __init__(self, message: str, *, url: str | None = None, hint: str | None = None) -> None:
        self.message = redact_text(message)
        #: the catalog location, password hidden
        self.url = url
        self.hint = self.default_hint if hint is None else hint
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class CatalogConfigError(CatalogError, ValueError):
    """No catalog location was given, or it is not a usable URL."""


class CatalogNotFound(CatalogError):
    """The SQLite file does not exist (and ``create`` was not asked)."""

    default_hint = _BUILD_HINT


class NotACatalog(CatalogError):
    """The database exists but holds no kafka-archive catalog (empty, or other tables)."""

    default_hint = _BUILD_HINT


class CatalogUnavailable(CatalogError):
    """The database could not be reached or refused us (server down, wrong password, ...)."""

    default_hint = "check the URL, that the database server runs, and your credentials"


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
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Run the packaged Alembic migrations up to ``revision`` on ``engine``."""
    # Alembic (and Mako, which it pulls in) costs more to import than a whole catalog query:
    # only a catalog that really needs a migration pays for it (see :func:`_at_head`).
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


_REVISION_LINE = re.compile(r"^(down_revision|revision)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.M)
_QUOTED = re.compile(r"""^["']([^"']+)["']$""")


@cache
def packaged_heads() -> frozenset[str] | None:
    """The head revision(s) of the packaged migrations, read from the version files' text
    (``revision = "..."`` / ``down_revision = "..."``) without importing Alembic.

    ``None`` when a file does not have that simple shape (a merge revision's tuple, a computed
    value, ...): callers then let Alembic decide. tests/test_cli_imports.py checks the answer
    equals Alembic's own ``heads``."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in sorted((_MIGRATIONS / "versions").glob("*.py")):
        fields = {m[1]: m[2] for m in _REVISION_LINE.finditer(path.read_text("utf-8"))}
        if not fields:
            continue  # __init__.py and helpers
        rev = _QUOTED.match(fields.get("revision", ""))
        down = fields.get("down_revision")
        if rev is None or down is None:
            return None
        revisions.add(rev.group(1))
        if down != "None":
            parent = _QUOTED.match(down)
            if parent is None:
                return None
            parents.add(parent.group(1))
    heads = frozenset(revisions - parents)
    return heads or None


def _at_head(engine: Engine) -> bool:
    """Is the schema already at the packaged head? One ``SELECT`` on Alembic's version table
    (the common case for every query command); any doubt answers ``False`` so that Alembic
    runs and decides, as it always did."""
    heads = packaged_heads()
    if heads is None:
        return False
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    except Exception:  # no version table yet, or the driver objects: Alembic handles it
        return False
    return {str(row[0]) for row in rows} == heads


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


def _sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        return None
    if parsed.database == ":memory:" or parsed.database.startswith("file:"):
        return None
    return Path(parsed.database)


def _check_sqlite_file(path: Path, shown: str, create: bool) -> None:
    """Refuse (before SQLite creates or changes anything) a file that cannot be a catalog."""
    if path.is_dir():
        raise NotACatalog(f"{shown} is a directory, not a catalog file", url=shown)
    if not path.exists():
        if not create:
            raise CatalogNotFound(f"no catalog at {path}", url=shown)
        path.parent.mkdir(parents=True, exist_ok=True)
    elif path.stat().st_size == 0 and not create:
        raise NotACatalog(f"{shown} is an empty file, not a kafka-archive catalog", url=shown)


def _check_schema(engine: Engine, shown: str, create: bool) -> None:
    """Connect and look at the tables: a catalog has Alembic's version table (any revision:
    an older one is upgraded); without ``create`` anything else is not a catalog."""
    try:
        names = set(inspect(engine).get_table_names())
    except Exception as exc:  # the driver's errors vary by backend: all mean "cannot open"
        text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        reason = text[0] if text else type(exc).__name__
        if "file is not a database" in reason:
            raise NotACatalog(f"{shown} is not a database file", url=shown) from None
        raise CatalogUnavailable(f"cannot open the catalog {shown}: {reason}", url=shown) from None
    if create or "alembic_version" in names:
        return
    what = "an empty database" if not names else "a database without catalog tables"
    raise NotACatalog(f"{shown} is {what}, not a kafka-archive catalog", url=shown)


def open_catalog(
    url: str | os.PathLike[str] | None = None, *, migrate: bool = True, create: bool = False
) -> Catalog:
    """Open the catalog at ``url`` (or ``$KAFKA_ARCHIVE_DB``) and bring its schema to the
    newest revision (unless ``migrate=False``).

    ``create``: make the catalog (its SQLite file and parent directories, its tables) when it
    does not exist yet. Only writers that own the catalog pass it (``catalog build``, the
    offsets follower); readers never create anything.

    Raises:
        CatalogConfigError: no location given (also a ``ValueError``).
        CatalogNotFound: the SQLite file does not exist and ``create`` is false.
        NotACatalog: the location exists but is not a kafka-archive catalog.
        CatalogUnavailable: the database server cannot be reached or refuses the login.

    Every message shows the URL with its password hidden.
    """
    if url is None:
        url = os.environ.get(DB_ENV)
        if not url:
            raise CatalogConfigError(
                f"no catalog given: pass a URL or set {DB_ENV}",
                hint=f"pass --db PATH_OR_URL or set {DB_ENV}",
            )
    shown = redact_url(url)
    try:
        full = normalize_url(url)
        path = _sqlite_file(full)
    except Exception as exc:  # make_url's ArgumentError and friends
        raise CatalogConfigError(
            f"not a catalog URL: {shown} ({redact_text(exc)})",
            url=shown,
            hint="use a file path, sqlite:////abs/path.db or postgresql://user@host/db",
        ) from None
    if path is not None:
        _check_sqlite_file(path, shown, create)
    engine = _engine(full)
    try:
        _check_schema(engine, shown, create)
        if migrate and not _at_head(engine):
            upgrade(engine)
    except BaseException:
        engine.dispose()
        raise
    return Catalog(engine, sessionmaker(engine, expire_on_commit=False), redact_url(full))
