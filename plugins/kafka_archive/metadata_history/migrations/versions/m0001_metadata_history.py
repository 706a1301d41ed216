"""Metadata history tables (models in :mod:`kafka_archive.metadata_history.models`): topic
incarnations, partitions, configs, ACLs, SCRAM users (no secrets), client quotas, feature
levels, the build position and the Admin API snapshots. The base of the ``metadata_history``
branch.

Revision ID: m0001_metadata_history
Revises:
Depends on: 0001_initial
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "m0001_metadata_history"
down_revision = None
branch_labels = ("metadata_history",)
depends_on = "0001_initial"


def _provenance() -> list[sa.Column[object]]:
    # frozen copy of models._provenance: a revision never changes with the models
    return [
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("record_type", sa.String(64), nullable=False),
        sa.Column("record_version", sa.Integer(), nullable=False),
        sa.Column("snapshot_id", sa.String(64), nullable=True),
    ]


def _key(*names: str) -> list[sa.Column[object]]:
    types = {
        "cluster": sa.String(255),
        "topic_id": sa.String(32),
        "resource_name": sa.String(255),
        "name": sa.String(255),
        "user_name": sa.String(255),
        "entity": sa.String(1024),
        "quota_key": sa.String(255),
        "acl_id": sa.String(64),
    }
    out: list[sa.Column[object]] = []
    for n in names:
        if n in types:
            out.append(sa.Column(n, types[n], primary_key=True))
        else:  # integer key parts (partition, seq, resource_type, mechanism, at_ms)
            big = n in ("seq", "at_ms")
            out.append(
                sa.Column(
                    n,
                    sa.BigInteger() if big else sa.Integer(),
                    primary_key=True,
                    autoincrement=False,
                )
            )
    return out


def upgrade() -> None:
    op.create_table(
        "mh_topics",
        *_key("cluster", "topic_id"),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("created_seq", sa.BigInteger(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("created_record", sa.String(64), nullable=False),
        sa.Column("deleted_seq", sa.BigInteger(), nullable=True),
        sa.Column("deleted_ms", sa.BigInteger(), nullable=True),
        sa.Column("deleted_record", sa.String(64), nullable=True),
        sa.Column("source", sa.String(16), nullable=False),
    )
    op.create_index("ix_mh_topics_name", "mh_topics", ["cluster", "name", "created_ms"])
    op.create_table(
        "mh_partitions",
        *_key("cluster", "topic_id", "partition", "seq"),
        sa.Column("replicas", sa.Text(), nullable=False),
        sa.Column("isr", sa.Text(), nullable=False),
        sa.Column("leader", sa.Integer(), nullable=False),
        sa.Column("leader_epoch", sa.Integer(), nullable=False),
        *_provenance(),
    )
    op.create_index("ix_mh_partitions_at", "mh_partitions", ["cluster", "topic_id", "at_ms"])
    op.create_table(
        "mh_configs",
        *_key("cluster", "resource_type", "resource_name", "name", "seq"),
        sa.Column("value", sa.Text(), nullable=True),
        *_provenance(),
    )
    op.create_index(
        "ix_mh_configs_at",
        "mh_configs",
        ["cluster", "resource_type", "resource_name", "at_ms"],
    )
    op.create_table(
        "mh_acls",
        *_key("cluster", "acl_id"),
        sa.Column("resource_type", sa.Integer(), nullable=False),
        sa.Column("resource_name", sa.String(255), nullable=False),
        sa.Column("pattern_type", sa.Integer(), nullable=False),
        sa.Column("principal", sa.String(255), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("operation", sa.Integer(), nullable=False),
        sa.Column("permission_type", sa.Integer(), nullable=False),
        sa.Column("created_seq", sa.BigInteger(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("deleted_seq", sa.BigInteger(), nullable=True),
        sa.Column("deleted_ms", sa.BigInteger(), nullable=True),
        sa.Column("source", sa.String(16), nullable=False),
    )
    op.create_index("ix_mh_acls_at", "mh_acls", ["cluster", "created_ms"])
    op.create_table(
        "mh_scram_users",
        *_key("cluster", "user_name", "mechanism", "seq"),
        sa.Column("iterations", sa.Integer(), nullable=True),
        *_provenance(),
    )
    op.create_table(
        "mh_client_quotas",
        *_key("cluster", "entity", "quota_key", "seq"),
        sa.Column("value", sa.Float(), nullable=True),
        *_provenance(),
    )
    op.create_table(
        "mh_features",
        *_key("cluster", "name", "seq"),
        sa.Column("level", sa.Integer(), nullable=True),
        *_provenance(),
    )
    op.create_table(
        "mh_build",
        *_key("cluster"),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_ms", sa.BigInteger(), nullable=False),
        sa.Column("snapshot_id", sa.String(64), nullable=True),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "mh_admin_snapshots",
        *_key("cluster", "at_ms"),
        sa.Column("topics", sa.Integer(), nullable=False),
        sa.Column("changes", sa.Integer(), nullable=False),
        sa.Column("acls_available", sa.Boolean(), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
    )


def downgrade() -> None:
    for table in (
        "mh_admin_snapshots",
        "mh_build",
        "mh_features",
        "mh_client_quotas",
        "mh_scram_users",
        "mh_configs",
        "mh_partitions",
        "mh_acls",
        "mh_topics",
    ):
        op.drop_table(table)
