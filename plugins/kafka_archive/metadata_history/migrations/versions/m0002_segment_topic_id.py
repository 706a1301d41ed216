"""The topic id of each cataloged segment (``segments.topic_id``, from the manifest's
``topic_id``: the partition directory's ``partition.metadata``), so that data of two
incarnations of a topic (deleted and re-created: a new topic id) is told apart.

Revision ID: m0002_segment_topic_id
Revises: m0001_metadata_history
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "m0002_segment_topic_id"
down_revision = "m0001_metadata_history"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("segments", sa.Column("topic_id", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("segments") as batch:
        batch.drop_column("topic_id")
