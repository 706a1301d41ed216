"""Exporting archived records to open formats (Parquet), as replay would deliver them.

* :mod:`.schema` - the Parquet schema (one row per record) and the ``date``/``hour``
  partitioning;
* :mod:`.partition` - one source partition's export: the replay reader's committed records
  written as Parquet files to a staging prefix of the output store;
* :mod:`.manifest` - the export id, the manifest of files, and the commit that publishes the
  staged files and writes the manifest last.

Spark runs :func:`.partition.export_partition` once per source partition
(:mod:`kafka_archive.spark.export`); :mod:`kafka_archive.services.export` plans, runs and
commits. See docs/export.md.
"""
