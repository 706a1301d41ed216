"""Alembic migrations of the catalog database, shipped inside the package.

``versions/`` holds the catalog's own revisions (branch ``catalog``); other packages keep the
revisions of their tables in their own ``migrations/versions`` (the replay's: branch
``replay``), run by this environment (see :func:`kafka_archive.catalog.db.version_locations`).
:func:`kafka_archive.catalog.db.open_catalog` runs ``upgrade heads`` when the catalog is not at
the packaged heads, so a catalog is always at the newest schema. To run them by hand, use
``kafka_archive.catalog.db.upgrade(engine)`` or Alembic's API with
:func:`kafka_archive.catalog.db.alembic_config` (``upgrade heads``: there is one head per
branch).
"""
