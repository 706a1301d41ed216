"""Alembic revisions of the replay's tables (:mod:`kafka_archive.replay.bookkeeping.tables`), kept
in the catalog database on the branch ``replay``.

They run in the catalog's Alembic environment, found by path
(:func:`kafka_archive.catalog.db.version_locations`):
:func:`kafka_archive.catalog.db.open_catalog` brings every branch to its head. A new revision of
the replay tables goes into ``versions/`` with ``down_revision`` the ``replay`` branch's head.
"""
