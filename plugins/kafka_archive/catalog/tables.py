"""The catalog's tables as SQLAlchemy Core :class:`~sqlalchemy.Table` objects: the one
declaration of the schema in Python.

The schema itself is created by the Alembic migrations in
:mod:`kafka_archive.catalog.migrations`; these tables must match them (tests/test_catalog_schema.py
and tests/test_catalog_migrations.py compare the two). The ORM classes of
:mod:`kafka_archive.catalog.models` are mapped onto these tables (``__table__``) for the write
side; the read side's hot queries (``catalog offsets``) use the tables directly, because
importing ``sqlalchemy.orm`` and building the mapped classes costs more than a whole query
(docs/performance.md, CLI start-up; tests/test_cli_imports.py pins that they are not imported).
What each table and column means is documented on its ORM class.

All timestamps are epoch milliseconds (BIGINT); -1 means "none", as in Kafka.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "build_runs",
    "chain_pieces",
    "coverage_gaps",
    "followed_commits",
    "histogram",
    "integrity_problems",
    "metadata",
    "object_leases",
    "offset_commits",
    "offsets_follower_positions",
    "partition_stability",
    "partition_totals",
    "partitions",
    "pruned_ranges",
    "segments",
    "time_index",
    "txn_markers",
]

#: every table of the catalog database (the replay's tables join it through the ORM ``Base``)
metadata = MetaData()


def _commit_columns() -> list[Column[Any]]:
    """The columns of one offset commit, shared by ``offset_commits`` (from archived segments)
    and ``followed_commits`` (read live): new objects per call, a column belongs to one table."""
    return [
        Column("id", Integer, primary_key=True),
        Column("cluster", String(255), nullable=False),
        Column("group_id", String(1024), nullable=False),
        Column("topic", String(255), nullable=False),
        Column("partition", Integer, nullable=False),
        Column("kind", String(16), nullable=False),
        Column("committed_offset", BigInteger, nullable=False),
        Column("leader_epoch", Integer, nullable=False),
        Column("metadata_text", Text, nullable=False),
        Column("commit_timestamp", BigInteger, nullable=False),
        Column("expire_timestamp", BigInteger, nullable=False),
    ]


partitions = Table(
    "partitions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("cluster", String(255), nullable=False),
    Column("topic", String(255), nullable=False),
    Column("partition", Integer, nullable=False),
    UniqueConstraint("cluster", "topic", "partition", name="uq_partitions"),
)


segments = Table(
    "segments",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("partition_id", Integer, ForeignKey("partitions.id"), nullable=False),
    Column("manifest_key", String(1024), nullable=False),
    Column("object_key", String(1024), nullable=False),
    Column("sha256", String(64)),
    Column("broker_id", Integer),
    Column("log_dir", String(1024)),
    Column("archived_at_ms", BigInteger, nullable=False),
    Column("base_offset", BigInteger, nullable=False),
    Column("end_offset", BigInteger, nullable=False),
    Column("first_offset", BigInteger, nullable=False),
    Column("last_offset", BigInteger, nullable=False),
    Column("first_timestamp", BigInteger, nullable=False),
    Column("max_timestamp", BigInteger, nullable=False),
    Column("offset_of_max_timestamp", BigInteger, nullable=False),
    Column("record_count", BigInteger, nullable=False),
    Column("batch_count", BigInteger, nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("codecs", String(255), nullable=False),
    Column("magics", String(32), nullable=False),
    Column("transactional_batches", BigInteger, nullable=False),
    Column("control_batches", BigInteger, nullable=False),
    Column("epoch_runs", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("error", Text),
    Column("cataloged_at_ms", BigInteger, nullable=False),
    # the topic id from the segment's partition.metadata (NULL: unknown); revision 0004_coverage
    Column("topic_id", String(32)),
    # JSON [[offset, producer_id, kind], ...]: the segment's transaction events
    # (segment_lib.txn_state; NULL: none, or not read yet); revision 0005_stable_offsets
    Column("txn_events", Text),
    UniqueConstraint("partition_id", "manifest_key", name="uq_segments_manifest"),
    Index("ix_segments_partition_base", "partition_id", "base_offset"),
)


chain_pieces = Table(
    "chain_pieces",
    metadata,
    Column("partition_id", Integer, ForeignKey("partitions.id"), primary_key=True),
    Column("lo", BigInteger, primary_key=True, autoincrement=False),
    Column("hi", BigInteger, nullable=False),
    Column("segment_id", Integer, ForeignKey("segments.id"), nullable=False, index=True),
    sqlite_with_rowid=False,
)


coverage_gaps = Table(
    "coverage_gaps",
    metadata,
    Column("partition_id", Integer, ForeignKey("partitions.id"), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("kind", String(32), nullable=False),
    Column("start_offset", BigInteger, nullable=False),
    Column("end_offset", BigInteger, nullable=False),
    Column("detail", Text, nullable=False),
    sqlite_with_rowid=False,
)


partition_totals = Table(
    "partition_totals",
    metadata,
    Column(
        "partition_id", Integer, ForeignKey("partitions.id"), primary_key=True, autoincrement=False
    ),
    Column("segments", Integer, nullable=False),
    Column("first_offset", BigInteger, nullable=False),
    Column("last_offset", BigInteger, nullable=False),
    Column("first_timestamp", BigInteger, nullable=False),
    Column("max_timestamp", BigInteger, nullable=False),
    Column("records", BigInteger, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("topic_ids", Text, nullable=False),
)


partition_stability = Table(
    "partition_stability",
    metadata,
    Column(
        "partition_id", Integer, ForeignKey("partitions.id"), primary_key=True, autoincrement=False
    ),
    Column("stable_offset", BigInteger, nullable=False),
    Column("end_offset", BigInteger, nullable=False),
    Column("open_txns", Text, nullable=False),
    Column("computed_at_ms", BigInteger, nullable=False),
)


time_index = Table(
    "time_index",
    metadata,
    Column("partition_id", Integer, ForeignKey("partitions.id"), primary_key=True),
    Column("start_offset", BigInteger, primary_key=True, autoincrement=False),
    Column("end_offset", BigInteger, nullable=False),
    Column("segment_id", Integer, ForeignKey("segments.id"), nullable=False),
    Column("byte_start", BigInteger, nullable=False),
    Column("byte_end", BigInteger, nullable=False),
    Column("max_ts", BigInteger, nullable=False),
    Column("record_max_ts", BigInteger, nullable=False),
    Column("running_max_ts", BigInteger, nullable=False),
    Column("record_count", BigInteger, nullable=False),
    Index("ix_time_index_running", "partition_id", "running_max_ts", "start_offset"),
    sqlite_with_rowid=False,
)


histogram = Table(
    "histogram",
    metadata,
    Column("partition_id", Integer, ForeignKey("partitions.id"), primary_key=True),
    Column("bucket_ms", BigInteger, primary_key=True, autoincrement=False),
    Column("segment_id", Integer, ForeignKey("segments.id"), primary_key=True, autoincrement=False),
    Column("records", BigInteger, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    sqlite_with_rowid=False,
)


offset_commits = Table(
    "offset_commits",
    metadata,
    *_commit_columns(),
    Column("source_partition_id", Integer, ForeignKey("partitions.id"), nullable=False),
    Column("segment_id", Integer, ForeignKey("segments.id"), nullable=False, index=True),
    Column("log_offset", BigInteger, nullable=False),
    Column("record_timestamp", BigInteger, nullable=False),
    Column("producer_id", BigInteger, nullable=False),
    Column("txn_state", String(16), nullable=False),
    Column("effective_offset", BigInteger),
    Column("visible_ts", BigInteger),
    UniqueConstraint("source_partition_id", "log_offset", name="uq_offset_commits_log"),
    Index("ix_offset_commits_group", "cluster", "group_id", "visible_ts"),
)


txn_markers = Table(
    "txn_markers",
    metadata,
    Column("source_partition_id", Integer, ForeignKey("partitions.id"), primary_key=True),
    Column("log_offset", BigInteger, primary_key=True, autoincrement=False),
    Column("producer_id", BigInteger, nullable=False),
    Column("committed", Integer, nullable=False),
    Column("timestamp", BigInteger, nullable=False),
    Column("segment_id", Integer, ForeignKey("segments.id"), nullable=False, index=True),
    sqlite_with_rowid=False,
)


build_runs = Table(
    "build_runs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("cluster", String(255)),
    Column("store_uri", String(1024), nullable=False),
    Column("started_at_ms", BigInteger, nullable=False),
    Column("finished_at_ms", BigInteger),
    Column("status", String(16), nullable=False),
    Column("summary", Text, nullable=False),
    Column("owner_host", String(255)),
    Column("owner_pid", Integer),
    Column("heartbeat_ms", BigInteger),
)


integrity_problems = Table(
    "integrity_problems",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("subject_key", String(1024), nullable=False),
    Column("manifest_key", String(1024)),
    Column("object_key", String(1024)),
    Column("cluster", String(255)),
    Column("topic", String(255)),
    Column("partition", Integer),
    Column("start_offset", BigInteger),
    Column("end_offset", BigInteger),
    Column("position", BigInteger),
    Column("reason", Text, nullable=False),
    Column("detected_by", String(16), nullable=False),
    Column("first_seen_ms", BigInteger, nullable=False),
    Column("last_seen_ms", BigInteger, nullable=False),
    UniqueConstraint("subject_key", "kind", name="uq_integrity_problems_subject"),
    Index("ix_integrity_problems_where", "cluster", "topic", "partition"),
)


followed_commits = Table(
    "followed_commits",
    metadata,
    *_commit_columns(),
    Column("source_partition", Integer, nullable=False),
    Column("log_offset", BigInteger, nullable=False),
    Column("record_timestamp", BigInteger, nullable=False),
    Column("followed_at_ms", BigInteger, nullable=False),
    # a transactional commit's COMMIT marker (offset, timestamp), else the record's own; NULL
    # in rows stored before revision 0006_followed_commit_markers (read as the record's own)
    Column("effective_offset", BigInteger),
    Column("visible_ts", BigInteger),
    UniqueConstraint("cluster", "source_partition", "log_offset", name="uq_followed_commits_log"),
    Index("ix_followed_commits_group", "cluster", "group_id", "record_timestamp"),
)


offsets_follower_positions = Table(
    "offsets_follower_positions",
    metadata,
    Column("cluster", String(255), primary_key=True),
    Column("source_partition", Integer, primary_key=True, autoincrement=False),
    Column("next_offset", BigInteger, nullable=False),
    Column("records_read", BigInteger, nullable=False),
    Column("commits_recorded", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
    sqlite_with_rowid=False,
)


pruned_ranges = Table(
    "pruned_ranges",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("cluster", String(255), nullable=False),
    Column("topic", String(255), nullable=False),
    Column("partition", Integer, nullable=False),
    Column("first_offset", BigInteger, nullable=False),
    Column("last_offset", BigInteger, nullable=False),
    Column("first_timestamp", BigInteger, nullable=False),
    Column("max_timestamp", BigInteger, nullable=False),
    Column("policy", String(255), nullable=False),
    Column("reason", Text, nullable=False),
    Column("segments", Integer, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("objects", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("planned_at_ms", BigInteger, nullable=False),
    Column("pruned_at_ms", BigInteger),
    Index("ix_pruned_ranges_where", "cluster", "topic", "partition", "first_offset"),
)


object_leases = Table(
    "object_leases",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("holder", String(255), nullable=False),
    Column("cluster", String(255), nullable=False),
    Column("topic", String(255), nullable=False),
    Column("partition", Integer, nullable=False),
    Column("first_offset", BigInteger, nullable=False),
    Column("last_offset", BigInteger, nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("acquired_at_ms", BigInteger, nullable=False),
    Column("heartbeat_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Index("ix_object_leases_holder", "holder"),
    Index("ix_object_leases_where", "cluster", "topic", "partition"),
)
