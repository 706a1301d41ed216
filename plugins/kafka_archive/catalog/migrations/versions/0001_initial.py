"""Initial catalog schema: partitions, segment versions, canonical chain, time index,
histogram, consumer-offset commit history, transaction markers, build runs.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = ("catalog",)
depends_on = None

_NO_ROWID = {"sqlite_with_rowid": False}


def upgrade() -> None:
    op.create_table(
        "partitions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("cluster", sa.String(255), nullable=False),
        sa.Column("topic", sa.String(255), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.UniqueConstraint("cluster", "topic", "partition", name="uq_partitions"),
    )
    op.create_table(
        "segments",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("partition_id", sa.Integer(), sa.ForeignKey("partitions.id"), nullable=False),
        sa.Column("manifest_key", sa.String(1024), nullable=False),
        sa.Column("object_key", sa.String(1024), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=True),
        sa.Column("broker_id", sa.Integer(), nullable=True),
        sa.Column("log_dir", sa.String(1024), nullable=True),
        sa.Column("archived_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("base_offset", sa.BigInteger(), nullable=False),
        sa.Column("end_offset", sa.BigInteger(), nullable=False),
        sa.Column("first_offset", sa.BigInteger(), nullable=False),
        sa.Column("last_offset", sa.BigInteger(), nullable=False),
        sa.Column("first_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("max_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("offset_of_max_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("record_count", sa.BigInteger(), nullable=False),
        sa.Column("batch_count", sa.BigInteger(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("codecs", sa.String(255), nullable=False),
        sa.Column("magics", sa.String(32), nullable=False),
        sa.Column("transactional_batches", sa.BigInteger(), nullable=False),
        sa.Column("control_batches", sa.BigInteger(), nullable=False),
        sa.Column("epoch_runs", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("cataloged_at_ms", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint("partition_id", "manifest_key", name="uq_segments_manifest"),
    )
    op.create_index("ix_segments_partition_base", "segments", ["partition_id", "base_offset"])
    op.create_table(
        "chain_pieces",
        sa.Column("partition_id", sa.Integer(), sa.ForeignKey("partitions.id"), nullable=False),
        sa.Column("lo", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("hi", sa.BigInteger(), nullable=False),
        sa.Column("segment_id", sa.Integer(), sa.ForeignKey("segments.id"), nullable=False),
        sa.PrimaryKeyConstraint("partition_id", "lo"),
        **_NO_ROWID,
    )
    op.create_index("ix_chain_pieces_segment_id", "chain_pieces", ["segment_id"])
    op.create_table(
        "time_index",
        sa.Column("partition_id", sa.Integer(), sa.ForeignKey("partitions.id"), nullable=False),
        sa.Column("start_offset", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("end_offset", sa.BigInteger(), nullable=False),
        sa.Column("segment_id", sa.Integer(), sa.ForeignKey("segments.id"), nullable=False),
        sa.Column("byte_start", sa.BigInteger(), nullable=False),
        sa.Column("byte_end", sa.BigInteger(), nullable=False),
        sa.Column("max_ts", sa.BigInteger(), nullable=False),
        sa.Column("record_max_ts", sa.BigInteger(), nullable=False),
        sa.Column("running_max_ts", sa.BigInteger(), nullable=False),
        sa.Column("record_count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("partition_id", "start_offset"),
        **_NO_ROWID,
    )
    op.create_index(
        "ix_time_index_running", "time_index", ["partition_id", "running_max_ts", "start_offset"]
    )
    op.create_table(
        "histogram",
        sa.Column("partition_id", sa.Integer(), sa.ForeignKey("partitions.id"), nullable=False),
        sa.Column("bucket_ms", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("segment_id", sa.Integer(), sa.ForeignKey("segments.id"), nullable=False),
        sa.Column("records", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("partition_id", "bucket_ms", "segment_id"),
        **_NO_ROWID,
    )
    op.create_table(
        "offset_commits",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("cluster", sa.String(255), nullable=False),
        sa.Column("group_id", sa.String(1024), nullable=False),
        sa.Column("topic", sa.String(255), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("committed_offset", sa.BigInteger(), nullable=False),
        sa.Column("leader_epoch", sa.Integer(), nullable=False),
        sa.Column("metadata_text", sa.Text(), nullable=False),
        sa.Column("commit_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("expire_timestamp", sa.BigInteger(), nullable=False),
        sa.Column(
            "source_partition_id", sa.Integer(), sa.ForeignKey("partitions.id"), nullable=False
        ),
        sa.Column("segment_id", sa.Integer(), sa.ForeignKey("segments.id"), nullable=False),
        sa.Column("log_offset", sa.BigInteger(), nullable=False),
        sa.Column("record_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("producer_id", sa.BigInteger(), nullable=False),
        sa.Column("txn_state", sa.String(16), nullable=False),
        sa.Column("effective_offset", sa.BigInteger(), nullable=True),
        sa.Column("visible_ts", sa.BigInteger(), nullable=True),
        sa.UniqueConstraint("source_partition_id", "log_offset", name="uq_offset_commits_log"),
    )
    op.create_index(
        "ix_offset_commits_group", "offset_commits", ["cluster", "group_id", "visible_ts"]
    )
    op.create_index("ix_offset_commits_segment_id", "offset_commits", ["segment_id"])
    op.create_table(
        "txn_markers",
        sa.Column(
            "source_partition_id", sa.Integer(), sa.ForeignKey("partitions.id"), nullable=False
        ),
        sa.Column("log_offset", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("producer_id", sa.BigInteger(), nullable=False),
        sa.Column("committed", sa.Integer(), nullable=False),
        sa.Column("timestamp", sa.BigInteger(), nullable=False),
        sa.Column("segment_id", sa.Integer(), sa.ForeignKey("segments.id"), nullable=False),
        sa.PrimaryKeyConstraint("source_partition_id", "log_offset"),
        **_NO_ROWID,
    )
    op.create_index("ix_txn_markers_segment_id", "txn_markers", ["segment_id"])
    op.create_table(
        "build_runs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("cluster", sa.String(255), nullable=True),
        sa.Column("store_uri", sa.String(1024), nullable=False),
        sa.Column("started_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("finished_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    for index, table in (
        ("ix_txn_markers_segment_id", "txn_markers"),
        ("ix_offset_commits_segment_id", "offset_commits"),
        ("ix_offset_commits_group", "offset_commits"),
        ("ix_time_index_running", "time_index"),
        ("ix_chain_pieces_segment_id", "chain_pieces"),
        ("ix_segments_partition_base", "segments"),
    ):
        op.drop_index(index, table_name=table)
    for table in (
        "build_runs",
        "txn_markers",
        "offset_commits",
        "histogram",
        "time_index",
        "chain_pieces",
        "segments",
        "partitions",
    ):
        op.drop_table(table)
