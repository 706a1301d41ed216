"""The last stable offset of each partition's archived chain: ``partition_stability`` (model
``PartitionStability``) and ``segments.txn_events``.

A replay or export must not deliver records at or above the first offset of a transaction
that was still open where the archive ends (a ``read_committed`` consumer would not see them
yet, and they may still be aborted). The catalog build computes each partition's last stable
offset from the archived bytes (:mod:`kafka_archive.catalog.stability`): every segment's
transaction events (``segment_lib.txn_state``), read once and kept in ``segments.txn_events``,
folded along the chain.

A catalog made before this revision has no rows: the next ``catalog build`` fills them for
every partition (it reads the events of the segments holding transactional or control
batches once). Until then planning treats a partition with transactional batches and no row
as not known to be stable (see
:class:`kafka_archive.replay.planning.catalog_source.CatalogPlanSource`).

Revision ID: 0005_stable_offsets
Revises: 0004_coverage
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_stable_offsets"
down_revision = "0004_coverage"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("segments", sa.Column("txn_events", sa.Text(), nullable=True))
    op.create_table(
        "partition_stability",
        sa.Column("partition_id", sa.Integer(), sa.ForeignKey("partitions.id"), nullable=False),
        # the first offset of the earliest transaction open at the chain's end (else end_offset)
        sa.Column("stable_offset", sa.BigInteger(), nullable=False),
        # the chain's end (exclusive) it was computed for
        sa.Column("end_offset", sa.BigInteger(), nullable=False),
        # JSON [[producer_id, first_offset], ...]
        sa.Column("open_txns", sa.Text(), nullable=False),
        sa.Column("computed_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("partition_id"),
    )


def downgrade() -> None:
    op.drop_table("partition_stability")
    with op.batch_alter_table("segments") as batch:
        batch.drop_column("txn_events")
