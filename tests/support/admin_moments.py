"""What a real cluster says of a topic now, through the Admin API, once it has settled: the
reference the metadata history tests compare the catalog's answers with (issue 12)."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from kafka_archive.metadata_history.defaults import TOPIC_CONFIG_DEFAULTS

__all__ = ["STATIC_BROKER", "done", "settled_topic", "topic_said"]

#: librdkafka's ConfigSource values used here
DYNAMIC_TOPIC, STATIC_BROKER = 1, 4


def done(futures: dict[Any, Any]) -> None:
    """Wait for every future of an Admin API call (raising its error)."""
    for f in futures.values():
        f.result(timeout=60)


def _source(entry: Any) -> int:
    return int(getattr(entry.source, "value", entry.source))


def topic_said(admin: AdminClient, topic: str, *, static: bool = True) -> dict[str, Any] | None:
    """``topic`` as the cluster describes it now (``None``: no such topic): topic id,
    partition count, replicas and leaders by partition, the dynamic overrides
    (``DYNAMIC_TOPIC_CONFIG``) and the resolved value of every well-known topic config
    (``static=False``: not those from the brokers' ``server.properties``, which the metadata
    log cannot see)."""
    if topic not in admin.list_topics(timeout=30).topics:
        return None
    try:
        desc = admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=30)
        (fut,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
        entries = fut.result(timeout=30)
    except KafkaException as exc:  # listed, but deleted since (or not everywhere yet)
        if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise
    return {
        # Kafka's form (URL-safe base64): confluent-kafka's str() is standard base64
        "topic_id": str(desc.topic_id).replace("/", "_").replace("+", "-"),
        "partitions": len(desc.partitions),
        "replicas": {p.id: [n.id for n in p.replicas] for p in desc.partitions},
        "leaders": {p.id: p.leader.id if p.leader else -1 for p in desc.partitions},
        "overrides": {
            e.name: e.value for e in entries.values() if _source(e) == DYNAMIC_TOPIC and e.value
        },
        "values": {
            n: entries[n].value
            for n in TOPIC_CONFIG_DEFAULTS
            if n in entries
            and entries[n].value
            and (static or _source(entries[n]) != STATIC_BROKER)
        },
    }


def settled_topic(
    admin: AdminClient, topic: str, partitions: int | None, *, static: bool = True
) -> dict[str, Any] | None:
    """:func:`topic_said` once the topic has settled: gone (``partitions`` None) or with that
    many partitions, each with a leader, and the same answer twice in a row."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        first = topic_said(admin, topic, static=static)
        ok = (
            first is None
            if partitions is None
            else first is not None
            and first["partitions"] == partitions
            and all(v >= 0 for v in first["leaders"].values())
        )
        if ok and topic_said(admin, topic, static=static) == first:
            return first
        time.sleep(0.3)
    raise AssertionError(f"{topic} did not settle")
