"""Alembic migrations of the catalog, shipped inside the package.

:func:`kafka_archive.catalog.db.open_catalog` runs ``upgrade head`` on every open, so a catalog
is always at the newest schema. To run them by hand::

    alembic -x url=sqlite:////path/catalog.db -c /dev/null \
        --raiseerr upgrade head   # or use kafka_archive.catalog.db.upgrade(url)
"""
