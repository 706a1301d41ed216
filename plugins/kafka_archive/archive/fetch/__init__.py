"""The fetch archiver: segments built from batches fetched over the Kafka protocol.

For clusters whose disks the archiver cannot read (managed services, Kubernetes volumes, tiered
storage): every selected partition is fetched ``read_uncommitted`` up to its high watermark, and
the record batches, byte for byte as the broker stores them, are laid out in segment files as a
broker writes them (:class:`~segment_lib.segment_builder.SegmentBuilder`: ``.log``, sparse
``.index``/``.timeindex``, ``.txnindex``, leader epochs), uploaded with the disk archiver's
layout, checks and manifest (``origin`` ``fetch``), so the catalog, replay, export and prune
read them unchanged.

Modules: :mod:`~kafka_archive.archive.fetch.batches` (what of a Fetch answer may be stored),
:mod:`~kafka_archive.archive.fetch.store_side` (resume point; one segment's upload),
:mod:`~kafka_archive.archive.fetch.partition` (one partition's builder and uploads),
:mod:`~kafka_archive.archive.fetch.source` (the cluster's side), :mod:`~kafka_archive.archive.
fetch.runner` (a run), :mod:`~kafka_archive.archive.fetch.report`.
"""
