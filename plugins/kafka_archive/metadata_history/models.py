"""The metadata history tables (SQLAlchemy Core, registered on the catalog's ``MetaData``,
:data:`kafka_archive.catalog.tables.metadata`, so that the schema test compares them with the
migrations; no ORM is imported).

The schema is created by ``metadata_history/migrations/versions`` (branch ``metadata_history``);
these tables must match it.

Every history table is append-only: a row is the value of one key (a partition, a config, a
SCRAM user ...) from one change on, ``None`` values meaning "gone from here on". Each row keeps
its provenance:

* ``seq``: the order of changes within a cluster: the Raft offset of the record for the
  ``metadata_log`` source (a snapshot read after a gap: the snapshot's last offset), the
  snapshot time (epoch ms) for ``admin_snapshot`` (a cluster's history has one source);
* ``at_ms``: when the change happened (the record batch's timestamp, or the snapshot time);
* ``source``, ``record_type``, ``record_version``: what caused it ("by which record");
* ``snapshot_id``: ``<endOffset>-<epoch>`` when the change was found by comparing with a KRaft
  snapshot (log segments before it were missing).

The state at T of a key is its row with the greatest ``seq`` among rows with ``at_ms <= T``;
the ``(cluster, key..., at_ms)`` indexes serve that question.

Topics and ACLs have lifetimes instead (created/deleted): a topic is identified by its topic id
(Kafka's base64 Uuid form), so a deleted and re-created topic are two rows.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from kafka_archive.catalog.tables import metadata as _META

__all__ = [
    "ACLS",
    "ADMIN_SNAPSHOTS",
    "BUILD",
    "CONFIGS",
    "FEATURES",
    "PARTITIONS",
    "QUOTAS",
    "SCRAM",
    "TOPICS",
]


def _provenance() -> list[Column[object]]:
    return [
        Column("at_ms", BigInteger, nullable=False),
        Column("source", String(16), nullable=False),
        Column("record_type", String(64), nullable=False),
        Column("record_version", Integer, nullable=False),
        Column("snapshot_id", String(64), nullable=True),
    ]


#: topic incarnations: one row per topic id, with its lifetime
TOPICS = Table(
    "mh_topics",
    _META,
    Column("cluster", String(255), primary_key=True),
    Column("topic_id", String(32), primary_key=True),
    Column("name", String(255), nullable=False),
    Column("created_seq", BigInteger, nullable=False),
    Column("created_ms", BigInteger, nullable=False),
    Column("created_record", String(64), nullable=False),
    Column("deleted_seq", BigInteger, nullable=True),
    Column("deleted_ms", BigInteger, nullable=True),
    Column("deleted_record", String(64), nullable=True),
    Column("source", String(16), nullable=False),
    Index("ix_mh_topics_name", "cluster", "name", "created_ms"),
)

#: one partition's replicas, ISR and leader from one change on
PARTITIONS = Table(
    "mh_partitions",
    _META,
    Column("cluster", String(255), primary_key=True),
    Column("topic_id", String(32), primary_key=True),
    Column("partition", Integer, primary_key=True, autoincrement=False),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("replicas", Text, nullable=False),
    Column("isr", Text, nullable=False),
    Column("leader", Integer, nullable=False),
    Column("leader_epoch", Integer, nullable=False),
    *_provenance(),
    Index("ix_mh_partitions_at", "cluster", "topic_id", "at_ms"),
)

#: one config key of one resource (ConfigRecord: resource type 2 topic, 4 broker; the broker
#: resource named "" is the cluster-wide default); value NULL: the override was deleted
CONFIGS = Table(
    "mh_configs",
    _META,
    Column("cluster", String(255), primary_key=True),
    Column("resource_type", Integer, primary_key=True, autoincrement=False),
    Column("resource_name", String(255), primary_key=True),
    Column("name", String(255), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("value", Text, nullable=True),
    *_provenance(),
    Index("ix_mh_configs_at", "cluster", "resource_type", "resource_name", "at_ms"),
)

#: ACL bindings with their lifetime (id: the record's Uuid; admin snapshots: a digest)
ACLS = Table(
    "mh_acls",
    _META,
    Column("cluster", String(255), primary_key=True),
    Column("acl_id", String(64), primary_key=True),
    Column("resource_type", Integer, nullable=False),
    Column("resource_name", String(255), nullable=False),
    Column("pattern_type", Integer, nullable=False),
    Column("principal", String(255), nullable=False),
    Column("host", String(255), nullable=False),
    Column("operation", Integer, nullable=False),
    Column("permission_type", Integer, nullable=False),
    Column("created_seq", BigInteger, nullable=False),
    Column("created_ms", BigInteger, nullable=False),
    Column("deleted_seq", BigInteger, nullable=True),
    Column("deleted_ms", BigInteger, nullable=True),
    Column("source", String(16), nullable=False),
    Index("ix_mh_acls_at", "cluster", "created_ms"),
)

#: SCRAM users: that the user exists, its mechanism and iterations; never salts or keys.
#: iterations NULL: the credential was removed
SCRAM = Table(
    "mh_scram_users",
    _META,
    Column("cluster", String(255), primary_key=True),
    Column("user_name", String(255), primary_key=True),
    Column("mechanism", Integer, primary_key=True, autoincrement=False),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("iterations", Integer, nullable=True),
    *_provenance(),
)

#: client quotas: entity (canonical JSON of the entity parts), key; value NULL: removed
QUOTAS = Table(
    "mh_client_quotas",
    _META,
    Column("cluster", String(255), primary_key=True),
    Column("entity", String(1024), primary_key=True),
    Column("quota_key", String(255), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("value", Float, nullable=True),
    *_provenance(),
)

#: feature levels (metadata.version, kraft.version, ...); level NULL: removed
FEATURES = Table(
    "mh_features",
    _META,
    Column("cluster", String(255), primary_key=True),
    Column("name", String(255), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("level", Integer, nullable=True),
    *_provenance(),
)

#: how far the history of each cluster is built, and from which source
BUILD = Table(
    "mh_build",
    _META,
    Column("cluster", String(255), primary_key=True),
    Column("source", String(16), nullable=False),
    Column("last_seq", BigInteger, nullable=False),
    Column("last_ms", BigInteger, nullable=False),
    Column("snapshot_id", String(64), nullable=True),
    Column("updated_at_ms", BigInteger, nullable=False),
)

#: every Admin API snapshot taken (the resolution of the history of such a cluster)
ADMIN_SNAPSHOTS = Table(
    "mh_admin_snapshots",
    _META,
    Column("cluster", String(255), primary_key=True),
    Column("at_ms", BigInteger, primary_key=True, autoincrement=False),
    Column("topics", Integer, nullable=False),
    Column("changes", Integer, nullable=False),
    Column("acls_available", Boolean, nullable=False),
    Column("note", Text, nullable=True),
)
