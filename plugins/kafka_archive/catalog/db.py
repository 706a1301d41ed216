"""Opening a catalog database: URL handling, engine settings, schema migrations.

:func:`open_catalog` accepts

* ``sqlite:///relative.db`` / ``sqlite:////abs/path.db`` or a plain file path (the embedded
  default: one file, nothing to run);
* ``postgresql://user:pass@host:port/db`` (driven by psycopg 3; ``postgresql+psycopg://`` is
  accepted as is).

and brings the schema to the newest Alembic revisions before returning, so every caller sees the
same tables. SQLite connections use WAL journaling (readers never block the builder), a busy
timeout, and foreign keys on.

Only a writer that owns the catalog's life creates one: :func:`open_catalog` creates nothing
(no file, no directory, no table) unless asked with ``create=True`` (``catalog build``, the
offsets follower, the demo). Without it, a location that holds no catalog is a typed
:class:`CatalogError` naming the location (password hidden) with a hint, so a mistyped
``--db`` of a query command is reported instead of silently answering from an empty catalog.
A catalog of an older schema is upgraded (that is a migration, not a creation).

Each package owns its tables and their migrations: the catalog's Alembic revisions are in
``catalog/migrations/versions`` (branch ``catalog``), and a package that keeps tables in the
catalog database keeps its revisions in ``kafka_archive/<package>/migrations/versions`` on a
branch labelled with its name (``replay``). They share one Alembic environment (the catalog's)
and one ``alembic_version`` table (a row per branch head, except a head another row implies:
:func:`head_versions`); :func:`version_locations` finds them by path, so the catalog imports
nothing of those packages. The old single history (``0001_initial`` -> ``r0001_replay`` ->
``g0001_followed_commits`` -> ``0002_integrity`` -> ``r0002_replay_lease``) survives as
``depends_on`` links, so the one version row of a catalog made before still names what it holds.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url

from kafka_archive.errors import InternalSignal, KafkaArchiveError
from kafka_archive.redact import redact_text, redact_url
from kafka_archive.settings import env_var, load_settings

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

__all__ = [
    "DB_ENV",
    "Catalog",
    "CatalogConfigError",
    "CatalogError",
    "CatalogNotFound",
    "CatalogUnavailable",
    "NotACatalog",
    "alembic_config",
    "head_versions",
    "normalize_url",
    "open_catalog",
    "packaged_heads",
    "upgrade",
    "version_locations",
]

#: environment variable naming the catalog when ``--db`` is not given
DB_ENV = env_var("db")

_MIGRATIONS = Path(__file__).resolve().parent / "migrations"
#: the ``kafka_archive`` package directory
_PACKAGES = Path(__file__).resolve().parent.parent


def normalize_url(url: str | os.PathLike[str]) -> str:
    """The SQLAlchemy URL for a catalog location (see the module docstring)."""
    text = os.fspath(url)
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    return text


_BUILD_HINT = "check --db / $KAFKA_ARCHIVE_DB; `kafka-archive catalog build` creates a catalog"


class CatalogError(KafkaArchiveError):
    """A catalog cannot be opened. ``str()`` is the message (secrets hidden: it is built from
    the redacted URL and a redacted driver message); ``hint`` says what to do next."""

    default_hint = ""
    http_status = 503
    api_error = "catalog_unavailable"

    def __init__(self, message: str, *, url: str | None = None, hint: str | None = None) -> None:
        super().__init__(redact_text(message), hint=hint)
        #: the catalog location, password hidden
        self.url = url

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


@cache
def version_locations() -> tuple[Path, ...]:
    """The folders of Alembic revisions of the catalog database: the catalog's own, then every
    other package's ``migrations/versions`` (see the module docstring), found by path."""
    own = _MIGRATIONS / "versions"
    others = sorted(p for p in _PACKAGES.glob("*/migrations/versions") if p.is_dir() and p != own)
    return (own, *others)


def alembic_config() -> Any:
    """An Alembic ``Config`` for the catalog database: the catalog's environment, every
    package's revisions (:func:`version_locations`)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("version_locations", os.pathsep.join(map(str, version_locations())))
    return cfg


def upgrade(engine: Engine, revision: str = "heads") -> None:
    """Run the packaged Alembic migrations up to ``revision`` on ``engine`` (default: every
    branch to its head; ``"<branch>@head"`` or a revision id for less)."""
    # Alembic (and Mako, which it pulls in) costs more to import than a whole catalog query:
    # only a catalog that really needs a migration pays for it (see :func:`_at_head`).
    from alembic import command

    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


_REVISION_LINE = re.compile(
    r"^(down_revision|revision|depends_on)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.M
)
_QUOTED = re.compile(r"""^["']([^"']+)["']$""")


class _NotSimple(InternalSignal):
    """A version file whose revision fields are not plain strings or ``None``."""


def _name(value: str | None) -> str | None:
    """The revision named by a field's source text (``"x"`` or ``None``)."""
    if value is None:
        raise _NotSimple
    if value == "None":
        return None
    quoted = _QUOTED.match(value)
    if quoted is None:
        raise _NotSimple
    return quoted.group(1)


@cache
def _packaged_graph() -> dict[str, tuple[str | None, str | None]] | None:
    """``revision -> (down_revision, depends_on)`` of every packaged version file, read as text
    (``revision = "..."`` / ``down_revision = "..."`` / ``depends_on = "..."``) in every
    :func:`version_locations` folder, without importing Alembic; ``None`` when a file does not
    have that simple shape (a merge revision's tuple, a computed value, ...)."""
    graph: dict[str, tuple[str | None, str | None]] = {}
    for path in sorted(p for folder in version_locations() for p in folder.glob("*.py")):
        fields = {m[1]: m[2] for m in _REVISION_LINE.finditer(path.read_text("utf-8"))}
        if not fields:
            continue  # __init__.py and helpers
        try:
            rev = _name(fields.get("revision"))
            down = _name(fields.get("down_revision"))
            dep = _name(fields.get("depends_on", "None"))
        except _NotSimple:
            return None
        if rev is None:
            return None
        graph[rev] = (down, dep)
    return graph or None


@cache
def packaged_heads() -> frozenset[str] | None:
    """The head revisions of the packaged migrations (one per branch: ``depends_on`` does not
    make a revision a parent), from :func:`_packaged_graph`.

    ``None`` when a version file is not that simple: callers then let Alembic decide.
    tests/test_cli_imports.py checks the answer equals Alembic's own ``heads``."""
    graph = _packaged_graph()
    if graph is None:
        return None
    heads = frozenset(set(graph) - {down for down, _dep in graph.values() if down is not None})
    return heads or None


@cache
def head_versions() -> frozenset[str] | None:
    """What Alembic's version table holds when every branch is at its head: the
    :func:`packaged_heads` less those another head descends from through ``down_revision`` or
    ``depends_on`` (Alembic keeps no row for a revision that a newer row implies).
    tests/test_catalog_migrations.py checks it against catalogs Alembic upgraded."""
    graph, heads = _packaged_graph(), packaged_heads()
    if graph is None or heads is None:
        return None

    def ancestors(rev: str) -> set[str]:
        seen: set[str] = set()
        todo = [p for p in graph.get(rev, (None, None)) if p is not None]
        while todo:
            cur = todo.pop()
            if cur not in seen:
                seen.add(cur)
                todo.extend(p for p in graph.get(cur, (None, None)) if p is not None)
        return seen

    implied = set().union(*(ancestors(h) for h in heads))
    return frozenset(heads - implied)


def _at_head(engine: Engine) -> bool:
    """Is the schema already at the packaged heads? One ``SELECT`` on Alembic's version table
    (the common case for every query command); any doubt answers ``False`` so that Alembic
    runs and decides, as it always did."""
    heads = head_versions()
    if heads is None:
        return False
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    except Exception:  # no version table yet, or the driver objects: Alembic handles it
        return False
    return {str(row[0]) for row in rows} == heads


class Catalog:
    """An open catalog: the engine, its URL (password hidden) and, made on first use, an ORM
    session factory.

    The read side's hot queries run on :attr:`engine` connections with Core tables
    (:mod:`kafka_archive.catalog.tables`); only a caller of :meth:`session`/:attr:`sessions`
    imports ``sqlalchemy.orm`` (~0.15 s of a CLI query's start-up otherwise)."""

    __slots__ = ("_sessions", "engine", "url")

    def __init__(self, engine: Engine, url: str) -> None:
        self.engine = engine
        self.url = url
        self._sessions: sessionmaker[Session] | None = None

    @property
    def sessions(self) -> sessionmaker[Session]:
        """The session factory (``expire_on_commit=False``), made on first use."""
        if self._sessions is None:
            from sqlalchemy.orm import sessionmaker

            self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        return self._sessions

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
    """Open the catalog at ``url`` (or the ``db`` setting) and bring its schema to the
    newest revisions of every branch (unless ``migrate=False``).

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
        url = load_settings().db
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
    return Catalog(engine, redact_url(full))
