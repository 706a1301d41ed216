"""Alembic revisions of the metadata history's tables (:mod:`kafka_archive.metadata_history.
models`), kept in the catalog database on the branch ``metadata_history``; they run in the
catalog's Alembic environment, found by path (:func:`kafka_archive.catalog.db.version_locations`).
"""
