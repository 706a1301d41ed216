"""An Admin API snapshot of a cluster's topics, configs and ACLs, as a history state (for
clusters without a metadata log: ZooKeeper-era, or no access to the controllers' disks).

:func:`read_admin_state` asks a confluent-kafka ``AdminClient``: ``describe_topics`` (topic ids,
partitions, replicas, leaders, ISR), ``describe_configs`` per topic (``DYNAMIC_TOPIC_CONFIG``
entries are the overrides; entries resolved from the cluster-wide dynamic default or from the
brokers' static configs are kept as such, so resolved values are exact), ``describe_acls``
(a cluster without an authorizer answers ``SECURITY_DISABLED``: recorded as "ACLs
unavailable", not an error). :func:`record_admin_snapshot` writes the differences from the
previous snapshot into the history tables (source ``admin_snapshot``, ``seq`` = the snapshot
time), in the caller's transaction. The history of such a cluster is at snapshot resolution.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from kafka_archive.metadata_history.apply import (
    ADMIN_SNAPSHOT,
    Provenance,
    SourceConflict,
    build_position,
    load_state,
    set_position,
    write_changes,
)
from kafka_archive.metadata_history.defaults import TOPIC_CONFIG_DEFAULTS
from kafka_archive.metadata_history.models import ADMIN_SNAPSHOTS
from kafka_archive.metadata_history.queries import RESOURCE_STATIC
from kafka_archive.metadata_history.state import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    Acl,
    ClusterState,
    PartitionInfo,
    diff,
)
from segment_lib.metadata_files import encode_kafka_uuid

__all__ = ["AdminSnapshot", "read_admin_state", "record_admin_snapshot"]

# ConfigSource ids (librdkafka / Kafka's DescribeConfigsResponse)
_DYNAMIC_TOPIC = 1
_DYNAMIC_DEFAULT_BROKER = 3
_STATIC_BROKER = 4
_SYNONYM = {topic_name: broker for topic_name, (broker, _d) in TOPIC_CONFIG_DEFAULTS.items()}


@dataclass(frozen=True)
class AdminSnapshot:
    """What one Admin API snapshot saw."""

    state: ClusterState
    acls_available: bool
    note: str | None = None


def acl_digest(acl: Acl) -> str:
    """An ACL binding's id in an admin snapshot history (bindings have no id there)."""
    text = "\x00".join(
        str(x)
        for x in (
            acl.resource_type,
            acl.resource_name,
            acl.pattern_type,
            acl.principal,
            acl.host,
            acl.operation,
            acl.permission_type,
        )
    )
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def kafka_topic_id(value: Any) -> str:
    """Kafka's string form of a ``confluent_kafka.Uuid`` (URL-safe base64 without padding, as
    Kafka's ``Uuid.toString``, ``kafka-topics --describe`` and the metadata log's JSON print
    it). Its ``str()`` is standard base64 (``/`` and ``+`` where Kafka has ``_`` and ``-``):
    a topic id taken from it would differ from the same topic's id in the metadata log and in
    ``partition.metadata``."""
    mask = (1 << 64) - 1
    msb = value.get_most_significant_bits() & mask
    lsb = value.get_least_significant_bits() & mask
    return encode_kafka_uuid(uuid.UUID(int=(msb << 64) | lsb))


def read_admin_state(admin: Any, *, timeout_s: float = 30.0) -> AdminSnapshot:
    """The cluster's topics (internal ones left out), their overrides, and its ACLs, through
    ``admin`` (a confluent-kafka ``AdminClient`` with ``client_log.CLIENT_LOG_SETTINGS``).

    Raises:
        ClusterUnreachable: the cluster did not answer (what librdkafka said, summarised).
        KafkaException: another Kafka error.
    """
    from confluent_kafka import KafkaError, KafkaException, TopicCollection
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ConfigResource,
        ResourcePatternType,
        ResourceType,
    )

    from kafka_archive.client_log import reach_metadata

    state = ClusterState()
    # short tries, and a quick clear error when every broker is down (a dead address)
    listed = reach_metadata(admin, None, timeout_s=timeout_s, what="the cluster's Admin API")
    names = sorted(n for n in listed.topics if not n.startswith("__"))
    described = admin.describe_topics(TopicCollection(names), request_timeout=timeout_s)
    gone: set[str] = set()
    for name, fut in described.items():
        desc = _unless_gone(fut, name, gone)
        if desc is None:
            continue
        topic_id = kafka_topic_id(desc.topic_id)
        state.topics[topic_id] = name
        for p in desc.partitions:
            leader = p.leader.id if p.leader is not None else -1
            state.partitions[(topic_id, p.id)] = PartitionInfo(
                tuple(n.id for n in p.replicas), tuple(n.id for n in p.isr), leader, 0
            )
    names = [n for n in names if n not in gone]
    if names:
        resources = [ConfigResource(ResourceType.TOPIC, n) for n in names]
        for res, fut in admin.describe_configs(resources, request_timeout=timeout_s).items():
            entries = _unless_gone(fut, res.name, gone)
            if entries is None:
                _drop_topic(state, res.name)
                continue
            for entry in entries.values():
                source = int(getattr(entry.source, "value", entry.source))
                if entry.value is None:
                    continue
                if source == _DYNAMIC_TOPIC:
                    state.configs[(RESOURCE_TOPIC, res.name, entry.name)] = entry.value
                elif source == _DYNAMIC_DEFAULT_BROKER and entry.name in _SYNONYM:
                    state.configs[(RESOURCE_BROKER, "", _SYNONYM[entry.name])] = entry.value
                elif source == _STATIC_BROKER:
                    state.configs[(RESOURCE_STATIC, "", entry.name)] = entry.value
    # None matches any name, principal and host (the stubs say str)
    anything: Any = None
    acl_filter = AclBindingFilter(
        ResourceType.ANY,
        anything,
        ResourcePatternType.ANY,
        anything,
        anything,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    try:
        bindings = admin.describe_acls(acl_filter, request_timeout=timeout_s).result()
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError.SECURITY_DISABLED:
            return AdminSnapshot(state, False, "ACLs unavailable: the cluster has no authorizer")
        raise
    for b in bindings:
        acl = Acl(
            int(b.restype.value),
            b.name,
            int(b.resource_pattern_type.value),
            b.principal,
            b.host,
            int(b.operation.value),
            int(b.permission_type.value),
        )
        state.acls[acl_digest(acl)] = acl
    return AdminSnapshot(state, True)


def _unless_gone(fut: Any, name: str, gone: set[str]) -> Any:
    """``fut``'s result, or ``None`` (``name`` added to ``gone``) when the topic was deleted
    between the listing and the question: it is then not in this snapshot (the next one
    records its deletion consistently)."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        return fut.result()
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            gone.add(name)
            return None
        raise


def _drop_topic(state: ClusterState, name: str) -> None:
    """Leave topic ``name`` out of ``state`` (it went away while being described)."""
    for topic_id in [t for t, n in state.topics.items() if n == name]:
        del state.topics[topic_id]
        for key in [k for k in state.partitions if k[0] == topic_id]:
            del state.partitions[key]
    for ckey in [k for k in state.configs if k[0] == RESOURCE_TOPIC and k[1] == name]:
        del state.configs[ckey]


def record_admin_snapshot(conn: Connection, cluster: str, snap: AdminSnapshot, at_ms: int) -> int:
    """Write ``snap`` (taken at ``at_ms``) into the history of ``cluster``: the changes since
    the previous snapshot, the snapshot itself and the new position; the number of changes.
    A snapshot at or before the last one recorded writes nothing (idempotent re-run)."""
    position = build_position(conn, cluster)
    if position is not None and position[0] != ADMIN_SNAPSHOT:
        raise SourceConflict(
            f"the history of cluster {cluster!r} comes from its metadata log; "
            "a cluster's history has one source"
        )
    if position is not None and at_ms <= position[1]:
        return 0
    old = load_state(conn, cluster)
    if not snap.acls_available:
        snap.state.acls.update(old.acls)  # unknown is not "none": keep what was known
    changes = diff(old, snap.state)
    p = Provenance(at_ms, at_ms, ADMIN_SNAPSHOT, "ADMIN_SNAPSHOT", 0)
    n = write_changes(conn, cluster, changes, p)
    conn.execute(
        ADMIN_SNAPSHOTS.insert().values(
            cluster=cluster,
            at_ms=at_ms,
            topics=len(snap.state.topics),
            changes=n,
            acls_available=snap.acls_available,
            note=snap.note,
        )
    )
    set_position(conn, cluster, ADMIN_SNAPSHOT, at_ms, at_ms, None)
    return n
