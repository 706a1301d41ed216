"""Consumer-group history read continuously from ``__consumer_offsets`` (the follower,
:mod:`kafka_archive.offsets_follower.follower`): commits it read and its position per partition
(models ``FollowedCommitRow``, ``FollowerPosition`` in :mod:`kafka_archive.catalog.models`).

Revision ID: g0001_followed_commits
Revises: 0001_initial
Depends on: r0001_replay (the revision it followed in the single history of older catalogs,
    whose version table names only this one; nothing here needs the replay tables)
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "g0001_followed_commits"
down_revision = "0001_initial"
branch_labels = None
depends_on = "r0001_replay"


def upgrade() -> None:
    op.create_table(
        "followed_commits",
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
        sa.Column("source_partition", sa.Integer(), nullable=False),
        sa.Column("log_offset", sa.BigInteger(), nullable=False),
        sa.Column("record_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("followed_at_ms", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint(
            "cluster", "source_partition", "log_offset", name="uq_followed_commits_log"
        ),
    )
    op.create_index(
        "ix_followed_commits_group",
        "followed_commits",
        ["cluster", "group_id", "record_timestamp"],
    )
    op.create_table(
        "offsets_follower_positions",
        sa.Column("cluster", sa.String(255), primary_key=True),
        sa.Column("source_partition", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("next_offset", sa.BigInteger(), nullable=False),
        sa.Column("records_read", sa.BigInteger(), nullable=False),
        sa.Column("commits_recorded", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("offsets_follower_positions")
    op.drop_index("ix_followed_commits_group", table_name="followed_commits")
    op.drop_table("followed_commits")
