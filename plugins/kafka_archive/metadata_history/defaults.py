"""Kafka's topic config defaults, for the *resolved* value of a topic config.

A topic's effective value of a config is, in Kafka's order: the topic's dynamic override
(``ConfigRecord`` resource type TOPIC), the cluster-wide dynamic default of the broker synonym
(``ConfigRecord`` resource type BROKER, resource name ``""``), the brokers' static
``server.properties`` (invisible to the metadata log; an Admin API snapshot sees it), then
Kafka's built-in default. :data:`TOPIC_CONFIG_DEFAULTS` is a small table of the well-known topic
configs, their broker synonym and Kafka's default (Kafka 3.x/4.x ``LogConfig`` /
``ServerLogConfigs``); values that differ between releases are left out rather than guessed.
"""

from __future__ import annotations

__all__ = ["TOPIC_CONFIG_DEFAULTS"]

_LONG_MAX = str((1 << 63) - 1)

#: topic config -> (broker config whose cluster default applies, Kafka's default)
TOPIC_CONFIG_DEFAULTS: dict[str, tuple[str, str]] = {
    "cleanup.policy": ("log.cleanup.policy", "delete"),
    "compression.type": ("compression.type", "producer"),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", "86400000"),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms", "60000"),
    "flush.messages": ("log.flush.interval.messages", _LONG_MAX),
    "index.interval.bytes": ("log.index.interval.bytes", "4096"),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms", _LONG_MAX),
    "max.message.bytes": ("message.max.bytes", "1048588"),
    "message.timestamp.type": ("log.message.timestamp.type", "CreateTime"),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio", "0.5"),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms", "0"),
    "min.insync.replicas": ("min.insync.replicas", "1"),
    "preallocate": ("log.preallocate", "false"),
    "retention.bytes": ("log.retention.bytes", "-1"),
    "retention.ms": ("log.retention.ms", "604800000"),
    "segment.bytes": ("log.segment.bytes", "1073741824"),
    "segment.index.bytes": ("log.index.size.max.bytes", "10485760"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "0"),
    "segment.ms": ("log.roll.ms", "604800000"),
    "unclean.leader.election.enable": ("unclean.leader.election.enable", "false"),
}
