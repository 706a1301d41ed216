"""The platform's service API: one service per capability, owning setup and lifecycle.

Every entry point (the ``kafka-archive`` CLI, the Airflow tasks of :mod:`kafka_archive.airflow`,
the Spark jobs in ``spark_jobs/``, the UI) is a thin adapter: it turns its own input (options,
DAG params, argv) into a call here and the result into its own output. What a service owns:
reading the settings (:mod:`kafka_archive.settings`), opening the store and the catalog and
closing them, choosing where work runs (in-process or on Spark), and the lifecycle of long
work (the replay ledger and lease, build runs).

* :mod:`.resources` - the store and the catalog named by the settings (:class:`Resources`);
* :mod:`.archive` - archive one broker's rolled segments (:class:`ArchiveService`);
* :mod:`.catalog_build` - catalog what was archived, in-process or on Spark
  (:class:`CatalogBuildService`);
* :mod:`.catalog_queries` - the catalog's answers (:class:`CatalogQueryService`);
* :mod:`.replay` - plan, check, run, resume and list replays (:class:`ReplayService`);
* :mod:`.group_translation` - consumer-group positions on a replay's target
  (:class:`GroupTranslationService`);
* :mod:`.offsets_follower` - every group commit of a live cluster's ``__consumer_offsets`` into
  the catalog (:class:`OffsetsFollowerService`);
* :mod:`.export` - export a range as Parquet files on Spark, committed by a manifest
  (:class:`ExportService`).

Services raise the platform's typed errors (``SettingsError``, ``CatalogError``,
``StoreError``, ``ReplayError``, ``CatalogQueryError``, ...), each with a message and a hint;
adapters present them. This package imports nothing at import time, so the CLI loads only the
service a command uses.
"""
