"""Alembic environment of the catalog database: runs on the connection handed in by
:func:`kafka_archive.catalog.db.upgrade` (``config.attributes["connection"]``), or on the URL given
as ``-x url=...`` / ``sqlalchemy.url`` when Alembic's own command line is used.

It runs the revisions of every package that keeps tables in the catalog database (the
``version_locations`` of :func:`kafka_archive.catalog.db.alembic_config`); it imports no
package's models but the catalog's. ``target_metadata`` matters only to ``--autogenerate``: to
autogenerate a revision for another package's tables, import its models first (they register on
the catalog's ``Base``).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection

from kafka_archive.catalog.models import Base

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place: batch mode rebuilds tables when needed
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    if not url:
        raise SystemExit("give the catalog URL: alembic -x url=sqlite:////path/catalog.db ...")
    engine = create_engine(url)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run them online")
run_migrations_online()
