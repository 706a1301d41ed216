"""Integrity is remembered: archived objects and manifests the catalog refused (corrupt,
misfiled, unreadable manifest, missing, ...) with key, byte position and reason
(model ``IntegrityProblem``), and the liveness of a build (``build_runs`` gets its owner's host
and pid and a heartbeat, so the next build can mark a killed one ``stale``).

Revision ID: 0002_integrity
Revises: g0001_followed_commits
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_integrity"
down_revision = "g0001_followed_commits"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "integrity_problems",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        # What is wrong with it: corrupt, misfiled, unreadable-manifest, missing, ...
        sa.Column("kind", sa.String(32), nullable=False),
        # The key the problem is about (the object's, or the manifest's when there is no usable
        # object key); unique with ``kind`` so that re-detecting a problem updates its row.
        sa.Column("subject_key", sa.String(1024), nullable=False),
        sa.Column("manifest_key", sa.String(1024), nullable=True),
        sa.Column("object_key", sa.String(1024), nullable=True),
        # Where the manifest (or, failing that, the key) says the bytes belong; NULL if unknown.
        sa.Column("cluster", sa.String(255), nullable=True),
        sa.Column("topic", sa.String(255), nullable=True),
        sa.Column("partition", sa.Integer(), nullable=True),
        sa.Column("start_offset", sa.BigInteger(), nullable=True),
        sa.Column("end_offset", sa.BigInteger(), nullable=True),
        sa.Column("position", sa.BigInteger(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("detected_by", sa.String(16), nullable=False),
        sa.Column("first_seen_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_seen_ms", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint("subject_key", "kind", name="uq_integrity_problems_subject"),
    )
    op.create_index(
        "ix_integrity_problems_where",
        "integrity_problems",
        ["cluster", "topic", "partition"],
    )
    op.add_column("build_runs", sa.Column("owner_host", sa.String(255), nullable=True))
    op.add_column("build_runs", sa.Column("owner_pid", sa.Integer(), nullable=True))
    op.add_column("build_runs", sa.Column("heartbeat_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("build_runs") as batch:
        batch.drop_column("heartbeat_ms")
        batch.drop_column("owner_pid")
        batch.drop_column("owner_host")
    op.drop_index("ix_integrity_problems_where", table_name="integrity_problems")
    op.drop_table("integrity_problems")
