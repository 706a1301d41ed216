"""Replay tables: replay runs, mirrored per-partition progress, source->target offset ranges
(models in :mod:`kafka_archive.replay.bookkeeping.models`). The base of the ``replay`` branch.

Revision ID: r0001_replay
Revises:
Depends on: 0001_initial (catalogs made before the replay had its own branch applied this
    revision right after the catalog's first; the dependency keeps that order)
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0001_replay"
down_revision = None
branch_labels = ("replay",)
depends_on = "0001_initial"

_NO_ROWID = {"sqlite_with_rowid": False}


def upgrade() -> None:
    op.create_table(
        "replay_runs",
        sa.Column("replay_id", sa.String(64), primary_key=True),
        sa.Column("cluster", sa.String(255), nullable=False),
        sa.Column("topic", sa.String(255), nullable=False),
        sa.Column("target", sa.String(1024), nullable=False),
        sa.Column("target_topic", sa.String(255), nullable=False),
        sa.Column("partition_mapping", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("plan_json", sa.Text(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("finished_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
    )
    op.create_index("ix_replay_runs_source", "replay_runs", ["cluster", "topic"])
    op.create_table(
        "replay_progress",
        sa.Column("replay_id", sa.String(64), primary_key=True),
        sa.Column("source_partition", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("next_offset", sa.BigInteger(), nullable=False),
        sa.Column("end_offset", sa.BigInteger(), nullable=False),
        sa.Column("txn_seq", sa.BigInteger(), nullable=False),
        sa.Column("records_sent", sa.BigInteger(), nullable=False),
        sa.Column("first_offset", sa.BigInteger(), nullable=False),
        sa.Column("last_offset", sa.BigInteger(), nullable=False),
        sa.Column("aborted_records", sa.BigInteger(), nullable=False),
        sa.Column("control_batches", sa.BigInteger(), nullable=False),
        sa.Column("filtered_records", sa.BigInteger(), nullable=False),
        sa.Column("open_txn_records", sa.BigInteger(), nullable=False),
        sa.Column("done", sa.Boolean(), nullable=False),
        sa.Column("progress_partition", sa.Integer(), nullable=False),
        sa.Column("progress_offset", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        **_NO_ROWID,
    )
    op.create_table(
        "replay_offset_ranges",
        sa.Column("replay_id", sa.String(64), primary_key=True),
        sa.Column("source_partition", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("target_partition", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("source_first", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("source_last", sa.BigInteger(), nullable=False),
        sa.Column("target_first", sa.BigInteger(), nullable=False),
        sa.Column("target_last", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("txn_seq", sa.BigInteger(), nullable=False),
        **_NO_ROWID,
    )
    op.create_index(
        "ix_replay_ranges_lookup",
        "replay_offset_ranges",
        ["replay_id", "source_partition", "source_first"],
    )


def downgrade() -> None:
    op.drop_index("ix_replay_ranges_lookup", table_name="replay_offset_ranges")
    op.drop_table("replay_offset_ranges")
    op.drop_table("replay_progress")
    op.drop_index("ix_replay_runs_source", table_name="replay_runs")
    op.drop_table("replay_runs")
