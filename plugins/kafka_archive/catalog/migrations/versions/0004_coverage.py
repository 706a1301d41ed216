"""Coverage gaps and totals kept per partition: ``coverage_gaps`` (model ``CoverageGap``)
holds the holes, overlaps and corrupt segments ``catalog gaps`` lists, ``partition_totals``
(model ``PartitionTotals``) what ``catalog topics`` shows per partition, so ``catalog
gaps``/``topics`` and the on-call page read a few rows instead of rebuilding every
partition's chain from all its segment rows, or aggregating them, on each call.

The build and the prune rewrite a partition's rows in the transaction that changes its
segments (:func:`kafka_archive.catalog.coverage.refresh_partitions`). A catalog made before
this revision gets its rows here, computed from its rows by the same functions (one pass
over the segments, once).

It also adds ``segments.topic_id`` (the topic id from the segment's ``partition.metadata``,
through its manifest; NULL: unknown), so data of two incarnations of a topic (deleted and
re-created: a new topic id) is told apart; the fill reads it. Existing segment rows keep NULL
until a build re-reads their manifests.

Revision ID: 0004_coverage
Revises: 0003_retention
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_coverage"
down_revision = "0003_retention"
branch_labels = None
depends_on = None

_NO_ROWID = {"sqlite_with_rowid": False}


def upgrade() -> None:
    op.add_column("segments", sa.Column("topic_id", sa.String(32), nullable=True))
    op.create_table(
        "coverage_gaps",
        sa.Column("partition_id", sa.Integer(), sa.ForeignKey("partitions.id"), nullable=False),
        # the entry's place in the partition's `catalog gaps` order
        sa.Column("seq", sa.Integer(), nullable=False, autoincrement=False),
        # missing, overlap, divergent, corrupt
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("start_offset", sa.BigInteger(), nullable=False),
        sa.Column("end_offset", sa.BigInteger(), nullable=False),
        # the entry's detail, JSON
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("partition_id", "seq"),
        **_NO_ROWID,
    )
    op.create_table(
        "partition_totals",
        sa.Column("partition_id", sa.Integer(), sa.ForeignKey("partitions.id"), nullable=False),
        # of the serving (canonical, partial) segments; -1: none
        sa.Column("segments", sa.Integer(), nullable=False),
        sa.Column("first_offset", sa.BigInteger(), nullable=False),
        sa.Column("last_offset", sa.BigInteger(), nullable=False),
        # the first timestamp of the chain's lowest piece; the largest max timestamp
        sa.Column("first_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("max_timestamp", sa.BigInteger(), nullable=False),
        # the histogram's sums
        sa.Column("records", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        # JSON list of the topic ids of the segments not pruned (two or more: incarnations)
        sa.Column("topic_ids", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("partition_id"),
    )
    from kafka_archive.catalog.coverage import refresh_all

    refresh_all(op.get_bind())


def downgrade() -> None:
    op.drop_table("partition_totals")
    op.drop_table("coverage_gaps")
    with op.batch_alter_table("segments") as batch:
        batch.drop_column("topic_id")
