"""The SQL catalog of the archive: exact time -> offset answers for all of archived history.

* :mod:`~kafka_archive.catalog.db`: :func:`open_catalog` (SQLite file or PostgreSQL, migrated);
* :mod:`~kafka_archive.catalog.models`: the tables;
* :mod:`~kafka_archive.catalog.extract`: pure per-segment extraction (what Spark executors run);
* :mod:`~kafka_archive.catalog.chain`: the canonical chain of each partition
  (:mod:`~kafka_archive.catalog.versions`: a cataloged row's view of it);
* :mod:`~kafka_archive.catalog.build`: the build (write side): driver, executor tasks, chain
  planning, SQL writes; independent of Spark (:mod:`~kafka_archive.spark.session` runs its tasks
  on executors);
* :mod:`~kafka_archive.catalog.refs`: :class:`SegmentRef`, one archived segment version, listed
  from the manifests by :mod:`~kafka_archive.catalog._manifests`;
* :mod:`~kafka_archive.catalog.queries` (read side): offsets, locate, stats, gaps, group offsets,
  topics; it never imports the build or extraction (an import-linter contract);
  :mod:`~kafka_archive.catalog.constants` holds the settings both sides agree on and
  :mod:`~kafka_archive.catalog.query_errors` the error every query raises.

See ``docs/catalog.md``.
"""
