"""Hand-built metadata log entries for the history tests: ``segment_lib.cluster_metadata``'s
``MetadataRecord``/``MetadataEntry`` (field names and value forms as Kafka's JSON: camelCase,
Uuids in Kafka's base64 form), plus a scripted history of one cluster whose state at every
step is known."""

from __future__ import annotations

from typing import Any

from segment_lib.cluster_metadata import MetadataEntry as Entry
from segment_lib.cluster_metadata import MetadataRecord

__all__ = ["Entry", "Rec", "entry", "scripted_history", "uuid"]


def Rec(
    type_name: str,
    data: dict[str, Any],
    *,
    version: int = 0,
    type_id: int = 0,
    error: str | None = None,
) -> MetadataRecord:
    """A decoded record as the decoder returns it."""
    return MetadataRecord(type_name, type_id, version, data, error)


def uuid(n: int) -> str:
    """Kafka's base64 form of the Uuid with these low bits (``uuid(1)``: AAAA...AQ)."""
    import base64

    return base64.urlsafe_b64encode(n.to_bytes(16, "big")).decode().rstrip("=")


def entry(offset: int, type_name: str, data: dict[str, Any], *, ts: int | None = None) -> Entry:
    """A log entry at ``offset``, timestamp ``offset * 1000`` unless given."""
    return Entry(offset, offset * 1000 if ts is None else ts, Rec(type_name, data))


TOPIC_A, TOPIC_B, ACL_1 = uuid(101), uuid(102), uuid(201)
SECRET_SALT = "c2VjcmV0LXNhbHQtbmV2ZXItc3RvcmVk"


def _part(topic_id: str, p: int, replicas: list[int], leader: int) -> dict[str, Any]:
    return {
        "partitionId": p,
        "topicId": topic_id,
        "replicas": replicas,
        "isr": replicas,
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": leader,
        "leaderRecoveryState": 0,
        "leaderEpoch": 0,
        "partitionEpoch": 0,
    }


def scripted_history() -> list[Entry]:
    """A cluster's metadata log: topic ``orders`` created with an override, a cluster default
    set, a leader change, a partition added, an ACL, a SCRAM user, ``orders`` deleted and
    re-created (new id), the ACL removed. Offsets 1..16, timestamps offset * 1000."""
    acl = {
        "id": ACL_1,
        "resourceType": 2,
        "resourceName": "orders",
        "patternType": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permissionType": 3,
    }
    return [
        Entry(0, 0, None, control="LEADER_CHANGE"),
        entry(1, "FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 25}),
        # CreateTopics writes a new topic's configs just before its TopicRecord
        entry(2, "CONFIG_RECORD", _cfg(2, "orders", "retention.ms", "1000")),
        entry(3, "TOPIC_RECORD", {"name": "orders", "topicId": TOPIC_A}),
        entry(4, "PARTITION_RECORD", _part(TOPIC_A, 0, [1, 2, 3], 1)),
        entry(5, "PARTITION_RECORD", _part(TOPIC_A, 1, [2, 3, 1], 2)),
        entry(6, "CONFIG_RECORD", _cfg(4, "", "log.retention.ms", "5000")),
        entry(7, "PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TOPIC_A, "leader": 2}),
        entry(8, "PARTITION_RECORD", _part(TOPIC_A, 2, [3, 1, 2], 3)),
        entry(9, "ACCESS_CONTROL_ENTRY_RECORD", acl),
        entry(
            10,
            "USER_SCRAM_CREDENTIAL_RECORD",
            {"name": "alice", "mechanism": 1, "iterations": 8192, "salt": SECRET_SALT},
        ),
        entry(11, "CONFIG_RECORD", _cfg(2, "orders", "cleanup.policy", "compact")),
        entry(12, "REMOVE_TOPIC_RECORD", {"topicId": TOPIC_A}),
        entry(13, "TOPIC_RECORD", {"name": "orders", "topicId": TOPIC_B}),
        entry(14, "PARTITION_RECORD", _part(TOPIC_B, 0, [1], 1)),
        entry(15, "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", {"id": ACL_1}),
        entry(16, "PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": TOPIC_B, "leader": -1}),
    ]


def _cfg(rtype: int, rname: str, name: str, value: str | None) -> dict[str, Any]:
    return {"resourceType": rtype, "resourceName": rname, "name": name, "value": value}
