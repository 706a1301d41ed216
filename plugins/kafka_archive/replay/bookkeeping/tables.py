"""The replay's tables of the catalog as SQLAlchemy Core :class:`~sqlalchemy.Table` objects:
the one declaration of their columns in Python, on the catalog's
:data:`kafka_archive.catalog.tables.metadata`.

The schema is created by the replay's own Alembic revisions (``replay/migrations/versions``);
these tables must match them (tests/test_catalog_schema.py compares the two). The ORM classes of
:mod:`kafka_archive.replay.bookkeeping.models` are mapped onto these tables (``__table__``) and
say what each column means. What a replay does before its first record (the ledger, the lease,
the plan's catalog reads) uses the tables directly: importing ``sqlalchemy.orm`` and configuring
the mapped classes was ~0.1 s of CPU of every ``replay run`` (issue 27; tests/test_cli_imports.py
pins that they are not imported).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, String, Table, Text

from kafka_archive.catalog.tables import metadata

__all__ = [
    "replay_leases",
    "replay_offset_ranges",
    "replay_progress",
    "replay_runs",
    "restore_runs",
]

replay_runs = Table(
    "replay_runs",
    metadata,
    Column("replay_id", String(64), primary_key=True),
    Column("cluster", String(255), nullable=False),
    Column("topic", String(255), nullable=False),
    Column("target", String(1024), nullable=False),
    Column("target_topic", String(255), nullable=False),
    Column("partition_mapping", String(16), nullable=False),
    Column("status", String(32), nullable=False),
    Column("plan_json", Text, nullable=False),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
    Column("finished_at_ms", BigInteger),
    Column("error", Text),
    Index("ix_replay_runs_source", "cluster", "topic"),
)

replay_progress = Table(
    "replay_progress",
    metadata,
    Column("replay_id", String(64), primary_key=True),
    Column("source_partition", Integer, primary_key=True, autoincrement=False),
    Column("next_offset", BigInteger, nullable=False),
    Column("end_offset", BigInteger, nullable=False),
    Column("txn_seq", BigInteger, nullable=False),
    Column("records_sent", BigInteger, nullable=False),
    Column("first_offset", BigInteger, nullable=False),
    Column("last_offset", BigInteger, nullable=False),
    Column("aborted_records", BigInteger, nullable=False),
    Column("control_batches", BigInteger, nullable=False),
    Column("filtered_records", BigInteger, nullable=False),
    Column("open_txn_records", BigInteger, nullable=False),
    Column("done", Boolean, nullable=False),
    Column("progress_partition", Integer, nullable=False),
    Column("progress_offset", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
    sqlite_with_rowid=False,
)

replay_offset_ranges = Table(
    "replay_offset_ranges",
    metadata,
    Column("replay_id", String(64), primary_key=True),
    Column("source_partition", Integer, primary_key=True, autoincrement=False),
    Column("target_partition", Integer, primary_key=True, autoincrement=False),
    Column("source_first", BigInteger, primary_key=True, autoincrement=False),
    Column("source_last", BigInteger, nullable=False),
    Column("target_first", BigInteger, nullable=False),
    Column("target_last", BigInteger, nullable=False),
    Column("count", BigInteger, nullable=False),
    Column("txn_seq", BigInteger, nullable=False),
    Index("ix_replay_ranges_lookup", "replay_id", "source_partition", "source_first"),
    sqlite_with_rowid=False,
)

replay_leases = Table(
    "replay_leases",
    metadata,
    Column("replay_id", String(64), primary_key=True),
    Column("owner", String(255), nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("acquired_at_ms", BigInteger, nullable=False),
    Column("heartbeat_ms", BigInteger, nullable=False),
)

restore_runs = Table(
    "restore_runs",
    metadata,
    Column("restore_id", String(64), primary_key=True),
    Column("cluster", String(255), nullable=False),
    Column("target", String(1024), nullable=False),
    Column("at_ms", BigInteger, nullable=False),
    Column("status", String(32), nullable=False),
    Column("request_json", Text, nullable=False),
    Column("replays_json", Text, nullable=False),
    Column("report_json", Text),
    Column("created_at_ms", BigInteger, nullable=False),
    Column("updated_at_ms", BigInteger, nullable=False),
    Column("finished_at_ms", BigInteger),
    Column("error", Text),
    Index("ix_restore_runs_source", "cluster", "target"),
)
