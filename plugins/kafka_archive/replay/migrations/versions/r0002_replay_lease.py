"""Replay leases: at most one live run per replay id (two identical ``replay run`` at once: one
proceeds, the other is refused), and a wider ``replay_runs.status`` for ``complete-with-gaps``
(models in :mod:`kafka_archive.replay.bookkeeping.models`; logic in
:mod:`kafka_archive.replay.bookkeeping.lease`).

Revision ID: r0002_replay_lease
Revises: r0001_replay
Depends on: 0002_integrity (the revision it followed in the single history of older catalogs,
    whose version table names only this one)
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "r0002_replay_lease"
down_revision = "r0001_replay"
branch_labels = None
depends_on = "0002_integrity"


def upgrade() -> None:
    op.create_table(
        "replay_leases",
        # one row per replay id while a run holds it (the primary key is the mutual exclusion)
        sa.Column("replay_id", sa.String(64), primary_key=True),
        # host:pid:random of the holder, and its host and pid (to tell a dead local holder)
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("acquired_at_ms", sa.BigInteger(), nullable=False),
        # renewed while the run works; a lease not renewed for its TTL is stale
        sa.Column("heartbeat_ms", sa.BigInteger(), nullable=False),
    )
    with op.batch_alter_table("replay_runs") as batch:
        batch.alter_column(
            "status", existing_type=sa.String(16), type_=sa.String(32), existing_nullable=False
        )


def downgrade() -> None:
    with op.batch_alter_table("replay_runs") as batch:
        batch.alter_column(
            "status", existing_type=sa.String(32), type_=sa.String(16), existing_nullable=False
        )
    op.drop_table("replay_leases")
