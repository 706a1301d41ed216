"""Retention: ``pruned_ranges`` (offsets a retention policy removed, recorded before their
objects are deleted) and ``object_leases`` (offset ranges a running or queued replay or export
needs, which prune never deletes); models ``PrunedRange`` and ``ObjectLease``. Segment rows of
pruned segments keep their row with ``status`` ``pruned`` (no schema change).

Revision ID: 0003_retention
Revises: 0002_integrity
Depends on: r0002_replay_lease (the replay branch's head: one row in ``alembic_version`` names
    everything a catalog holds, as before the branches split; see catalog/db.py)
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_retention"
down_revision = "0002_integrity"
branch_labels = None
depends_on = "r0002_replay_lease"


def upgrade() -> None:
    op.create_table(
        "pruned_ranges",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("cluster", sa.String(255), nullable=False),
        sa.Column("topic", sa.String(255), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        # inclusive offsets, and the time span of the records they held
        sa.Column("first_offset", sa.BigInteger(), nullable=False),
        sa.Column("last_offset", sa.BigInteger(), nullable=False),
        sa.Column("first_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("max_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("policy", sa.String(255), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("segments", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        # JSON list of every object key to delete (manifests first)
        sa.Column("objects", sa.Text(), nullable=False),
        # planned (recorded, objects maybe not all deleted yet) -> done
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("planned_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("pruned_at_ms", sa.BigInteger(), nullable=True),
    )
    op.create_index(
        "ix_pruned_ranges_where",
        "pruned_ranges",
        ["cluster", "topic", "partition", "first_offset"],
    )
    op.create_table(
        "object_leases",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        # who needs the objects: replay:<id>, export:<id>
        sa.Column("holder", sa.String(255), nullable=False),
        sa.Column("cluster", sa.String(255), nullable=False),
        sa.Column("topic", sa.String(255), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("first_offset", sa.BigInteger(), nullable=False),
        sa.Column("last_offset", sa.BigInteger(), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        # > 0: tied to this process (stale when it is gone); 0: a queued job's lease
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("acquired_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("heartbeat_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_object_leases_where", "object_leases", ["cluster", "topic", "partition"])
    op.create_index("ix_object_leases_holder", "object_leases", ["holder"])


def downgrade() -> None:
    op.drop_index("ix_object_leases_holder", table_name="object_leases")
    op.drop_index("ix_object_leases_where", table_name="object_leases")
    op.drop_table("object_leases")
    op.drop_index("ix_pruned_ranges_where", table_name="pruned_ranges")
    op.drop_table("pruned_ranges")
