"""Whole-cluster restores: one row per restore (model
:class:`kafka_archive.replay.bookkeeping.models.RestoreRunRow`; logic in
:mod:`kafka_archive.replay.bookkeeping.restores`). A restore is a set of replays (one per topic),
so its record lives beside theirs on the ``replay`` branch.

Revision ID: r0003_restore_runs
Revises: r0002_replay_lease
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0003_restore_runs"
down_revision = "r0002_replay_lease"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "restore_runs",
        sa.Column("restore_id", sa.String(64), primary_key=True),
        sa.Column("cluster", sa.String(255), nullable=False),
        # the target's identity (a connection name or bootstrap servers, never credentials)
        sa.Column("target", sa.String(1024), nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("request_json", sa.Text(), nullable=False),
        sa.Column("replays_json", sa.Text(), nullable=False),
        sa.Column("report_json", sa.Text(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("finished_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
    )
    op.create_index("ix_restore_runs_source", "restore_runs", ["cluster", "target"])


def downgrade() -> None:
    op.drop_index("ix_restore_runs_source", table_name="restore_runs")
    op.drop_table("restore_runs")
