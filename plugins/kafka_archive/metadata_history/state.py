"""A cluster's metadata state in memory, the records that change it, and the changes between
two states (pure: no database).

:func:`apply_record` replays one decoded metadata record into a :class:`ClusterState` the way
Kafka's ``MetadataDelta`` does and returns the :class:`Change`\\ s it made; :func:`diff` returns
the changes that turn one state into another (a KRaft snapshot read after missing log
segments, or an Admin API snapshot). Both return changes in a deterministic order.

Semantics taken from Kafka's record schemas and image code:

* ``PartitionChangeRecord`` holds deltas: an absent field is unchanged; ``leader`` -2 (the
  default, omitted in JSON) is "no change", -1 "no leader"; a leader change bumps the leader
  epoch (as ``PartitionRegistration.merge`` does).
* ``RemoveTopicRecord`` removes the topic, its partitions and its config overrides (the image
  drops the topic's configs; no ``ConfigRecord`` is written for them).
* ``ConfigRecord`` with ``value`` null deletes the override.
* ``UserScramCredentialRecord``: only the user, mechanism and iterations are kept; salts and
  keys are never read.
* ``ClientQuotaRecord`` with ``remove`` true deletes the quota.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RESOURCE_BROKER",
    "RESOURCE_TOPIC",
    "Acl",
    "Change",
    "ClusterState",
    "PartitionInfo",
    "apply_record",
    "diff",
    "quota_entity",
]

#: ConfigResource.Type ids in ConfigRecord.resourceType
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

#: the kinds of :class:`Change` (one per history table)
KINDS = ("topic", "partition", "config", "acl", "scram", "quota", "feature")


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition's assignment and leadership."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class Acl:
    """One ACL binding (the ints are Kafka's enum ids: AclResourceType, PatternType,
    AclOperation, AclPermissionType)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class Change:
    """One key's new value (``None``: gone). ``key`` by kind: topic ``(topic_id,)`` (value:
    the name), partition ``(topic_id, partition)`` (:class:`PartitionInfo`), config
    ``(resource_type, resource_name, name)`` (str), acl ``(acl_id,)`` (:class:`Acl`), scram
    ``(user, mechanism)`` (iterations), quota ``(entity, key)`` (float), feature ``(name,)``
    (level)."""

    kind: str
    key: tuple[Any, ...]
    value: Any


@dataclass
class ClusterState:
    """Everything the history tracks of one cluster at one moment."""

    topics: dict[str, str] = field(default_factory=dict)  # topic id -> name
    partitions: dict[tuple[str, int], PartitionInfo] = field(default_factory=dict)
    configs: dict[tuple[int, str, str], str] = field(default_factory=dict)
    acls: dict[str, Acl] = field(default_factory=dict)
    scram: dict[tuple[str, int], int] = field(default_factory=dict)
    quotas: dict[tuple[str, str], float] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)

    def table(self, kind: str) -> dict[Any, Any]:
        """The mapping of one kind of :class:`Change`."""
        tables: dict[str, dict[Any, Any]] = {
            "topic": self.topics,
            "partition": self.partitions,
            "config": self.configs,
            "acl": self.acls,
            "scram": self.scram,
            "quota": self.quotas,
            "feature": self.features,
        }
        return tables[kind]

    def set(self, change: Change) -> None:
        """Apply one change (``value is None``: remove the key)."""
        table = self.table(change.kind)
        key = change.key if len(change.key) > 1 else change.key[0]
        if change.value is None:
            table.pop(key, None)
        else:
            table[key] = change.value


def quota_entity(parts: list[Mapping[str, Any]]) -> str:
    """The canonical text of a client quota entity (``[{"entityType", "entityName"}]``):
    compact JSON sorted by entity type, so equal entities compare equal as strings."""
    canon = sorted((str(p.get("entityType")), p.get("entityName")) for p in parts)
    return json.dumps([{"entityType": t, "entityName": n} for t, n in canon], separators=(",", ":"))


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in (value or ()))


def _partition_change(old: PartitionInfo, data: Mapping[str, Any]) -> PartitionInfo:
    leader = int(data.get("leader", -2))
    new_leader = old.leader if leader == -2 else leader
    epoch = old.leader_epoch + 1 if leader != -2 else old.leader_epoch
    return PartitionInfo(
        replicas=_ints(data["replicas"]) if data.get("replicas") is not None else old.replicas,
        isr=_ints(data["isr"]) if data.get("isr") is not None else old.isr,
        leader=new_leader,
        leader_epoch=epoch,
    )


def _changes_of(state: ClusterState, changes: list[Change]) -> list[Change]:
    """Apply ``changes`` to ``state``, keep those that change something."""
    out = []
    for ch in changes:
        table = state.table(ch.kind)
        key = ch.key if len(ch.key) > 1 else ch.key[0]
        if table.get(key) != ch.value:
            state.set(ch)
            out.append(ch)
    return out


def _remove_topic(state: ClusterState, topic_id: str) -> list[Change]:
    name = state.topics.get(topic_id)
    if name is None:
        return []
    changes = [Change("topic", (topic_id,), None)]
    changes += [Change("partition", k, None) for k in sorted(state.partitions) if k[0] == topic_id]
    changes += [
        Change("config", k, None)
        for k in sorted(state.configs)
        if k[0] == RESOURCE_TOPIC and k[1] == name
    ]
    return changes


def apply_record(state: ClusterState, type_name: str, data: Mapping[str, Any]) -> list[Change]:
    """Replay one record into ``state``; the changes it made (empty for record types the
    history does not track, e.g. broker registrations, and for no-op records)."""
    changes: list[Change] = []
    if type_name == "TOPIC_RECORD":
        # a topic id is never reused by Kafka: a TopicRecord for a live id changes nothing
        if data["topicId"] not in state.topics:
            changes.append(Change("topic", (data["topicId"],), data["name"]))
    elif type_name == "REMOVE_TOPIC_RECORD":
        changes = _remove_topic(state, data["topicId"])
    elif type_name == "PARTITION_RECORD":
        info = PartitionInfo(
            replicas=_ints(data.get("replicas")),
            isr=_ints(data.get("isr")),
            leader=int(data.get("leader", -1)),
            leader_epoch=int(data.get("leaderEpoch", 0)),
        )
        changes.append(Change("partition", (data["topicId"], int(data["partitionId"])), info))
    elif type_name == "PARTITION_CHANGE_RECORD":
        key = (data["topicId"], int(data["partitionId"]))
        old = state.partitions.get(key)
        if old is not None:  # a change of an unknown partition: nothing to change (gap)
            changes.append(Change("partition", key, _partition_change(old, data)))
    elif type_name == "CONFIG_RECORD":
        key3 = (int(data["resourceType"]), str(data["resourceName"]), str(data["name"]))
        changes.append(Change("config", key3, data.get("value")))
    elif type_name == "ACCESS_CONTROL_ENTRY_RECORD":
        acl = Acl(
            resource_type=int(data["resourceType"]),
            resource_name=str(data["resourceName"]),
            pattern_type=int(data["patternType"]),
            principal=str(data["principal"]),
            host=str(data["host"]),
            operation=int(data["operation"]),
            permission_type=int(data["permissionType"]),
        )
        changes.append(Change("acl", (data["id"],), acl))
    elif type_name == "REMOVE_ACCESS_CONTROL_ENTRY_RECORD":
        changes.append(Change("acl", (data["id"],), None))
    elif type_name == "USER_SCRAM_CREDENTIAL_RECORD":
        key2 = (str(data["name"]), int(data["mechanism"]))
        changes.append(Change("scram", key2, int(data["iterations"])))
    elif type_name == "REMOVE_USER_SCRAM_CREDENTIAL_RECORD":
        changes.append(Change("scram", (str(data["name"]), int(data["mechanism"])), None))
    elif type_name == "CLIENT_QUOTA_RECORD":
        qkey = (quota_entity(data.get("entity") or []), str(data["key"]))
        removed = bool(data.get("remove", False))
        changes.append(Change("quota", qkey, None if removed else float(data["value"])))
    elif type_name == "FEATURE_LEVEL_RECORD":
        level = int(data["featureLevel"])
        # level 0 removes the feature (FeaturesDelta: a finalized level of 0 is "not set")
        changes.append(Change("feature", (str(data["name"]),), level or None))
    return _changes_of(state, changes)


def diff(old: ClusterState, new: ClusterState) -> list[Change]:
    """The changes that turn ``old`` into ``new`` (removals of topics first, so that a
    re-created name never has two live ids), in a deterministic order."""
    out: list[Change] = []
    for kind in KINDS:
        a, b = old.table(kind), new.table(kind)
        for key in sorted(set(a) | set(b), key=repr):
            if a.get(key) != b.get(key):
                k = key if isinstance(key, tuple) else (key,)
                out.append(Change(kind, k, b.get(key)))
    out.sort(key=lambda c: (c.kind != "topic" or c.value is not None,))
    return out
