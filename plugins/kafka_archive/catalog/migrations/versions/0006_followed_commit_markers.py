"""When a followed transactional offset commit took effect: ``followed_commits.effective_offset``
and ``followed_commits.visible_ts``.

The offsets follower now finds the COMMIT marker of a transactional commit it reads
(:mod:`kafka_archive.offsets_follower.txn_moments`) and stores the marker's offset and
timestamp, as the archive stores them in ``offset_commits`` (``effective_offset``,
``visible_ts``); for any other row they are its own log offset and record timestamp.

Rows stored before this revision have NULL in both: queries read them as the record's own
offset and time (what they meant before).

Revision ID: 0006_followed_commit_markers
Revises: 0005_stable_offsets
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_followed_commit_markers"
down_revision = "0005_stable_offsets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("followed_commits") as batch:
        batch.add_column(sa.Column("effective_offset", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("visible_ts", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("followed_commits") as batch:
        batch.drop_column("visible_ts")
        batch.drop_column("effective_offset")
