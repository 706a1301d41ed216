"""The SQL catalog of the archive: exact time -> offset answers for all of archived history.

* :mod:`~kafka_archive.catalog.db`: :func:`open_catalog` (SQLite file or PostgreSQL, migrated);
* :mod:`~kafka_archive.catalog.models`: the tables;
* :mod:`~kafka_archive.catalog.extract`: pure per-segment extraction (what Spark executors run);
* :mod:`~kafka_archive.catalog.chain`: the canonical chain of each partition;
* :mod:`~kafka_archive.catalog.build`: the build driver (which manifests are new, idempotent
  writes), independent of Spark;
* :mod:`~kafka_archive.catalog.queries`: offsets, locate, stats, gaps, group offsets, topics.

See ``docs/catalog.md``.
"""
