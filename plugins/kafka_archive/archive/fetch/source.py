"""Where the fetch archiver's bytes come from: a live cluster, or (in unit tests) a fake.

:class:`FetchSource` is the few questions the archiver asks; :class:`KafkaFetchSource` asks them
over the Kafka protocol (:mod:`kafka_archive.kafka_protocol.fetch`, kafka-python's connections:
SSL and SASL settings as librdkafka names them, ``-X``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from kafka_archive.kafka_protocol.fetch import ClusterTopics, EpochEnd, FetchedPartition

__all__ = ["FetchSource", "KafkaFetchSource"]


class FetchSource(Protocol):
    """The archiver's questions to a cluster (each may raise
    :class:`~kafka_archive.kafka_protocol.client.ProtocolConnectionError` or
    :class:`~kafka_archive.kafka_protocol.fetch.ProtocolRequestError`)."""

    def topics(self) -> ClusterTopics:
        """Every topic the principal may describe, with partition leaders."""
        ...

    def configs(self, topic: str, names: Sequence[str]) -> dict[str, str]:
        """The topic's configs ``names`` (DescribeConfigs)."""
        ...

    def list_offsets(
        self, node: int, topic: str, partitions: Iterable[int], timestamp: int
    ) -> dict[int, int]:
        """ListOffsets at ``timestamp`` (EARLIEST -2, LATEST -1) from the leader ``node``."""
        ...

    def epoch_ends(
        self, node: int, topic: str, asks: Mapping[int, tuple[int, int]]
    ) -> dict[int, EpochEnd]:
        """OffsetsForLeaderEpoch of ``{partition: (current leader epoch, epoch asked)}`` from
        the leader ``node``."""
        ...

    def fetch(
        self,
        node: int,
        asks: Mapping[tuple[str, int], int],
        *,
        max_wait_ms: int,
        topic_ids: Mapping[str, str | None] | None = None,
        leader_epochs: Mapping[tuple[str, int], int] | None = None,
    ) -> list[FetchedPartition]:
        """One read_uncommitted Fetch of ``{(topic, partition): offset}`` from ``node`` (by
        topic id where ``topic_ids`` knows every topic's and the broker can: the topic
        re-created under the name is answered ``UNKNOWN_TOPIC_ID``; with the current leader
        epochs known, a leader of another epoch answers ``FENCED_LEADER_EPOCH``)."""
        ...

    def close(self) -> None: ...


class KafkaFetchSource:
    """A :class:`FetchSource` over a live cluster (``conf``: librdkafka settings, with
    ``bootstrap.servers``).

    Raises (construction): :class:`~kafka_archive.kafka_protocol.config.UnsupportedRawSetting`
    for a setting kafka-python cannot apply.
    """

    def __init__(
        self,
        conf: Mapping[str, Any],
        *,
        timeout_ms: int = 30_000,
        partition_max_bytes: int = 4 << 20,
        max_bytes: int = 64 << 20,
    ) -> None:
        from kafka_archive.kafka_protocol.client import ProtocolClient

        self.client = ProtocolClient(
            conf, client_id="kafka-archive-fetch-archiver", timeout_ms=timeout_ms
        )
        self.partition_max_bytes = partition_max_bytes
        self.max_bytes = max_bytes

    def topics(self) -> ClusterTopics:
        from kafka_archive.kafka_protocol.fetch import cluster_topics

        return cluster_topics(self.client)

    def configs(self, topic: str, names: Sequence[str]) -> dict[str, str]:
        from kafka_archive.kafka_protocol.fetch import topic_configs

        return topic_configs(self.client, topic, names)

    def list_offsets(
        self, node: int, topic: str, partitions: Iterable[int], timestamp: int
    ) -> dict[int, int]:
        from kafka_archive.kafka_protocol.fetch import list_offsets

        return list_offsets(self.client, node, topic, partitions, timestamp)

    def epoch_ends(
        self, node: int, topic: str, asks: Mapping[int, tuple[int, int]]
    ) -> dict[int, EpochEnd]:
        from kafka_archive.kafka_protocol.fetch import offsets_for_leader_epoch

        return offsets_for_leader_epoch(self.client, node, topic, asks)

    def fetch(
        self,
        node: int,
        asks: Mapping[tuple[str, int], int],
        *,
        max_wait_ms: int,
        topic_ids: Mapping[str, str | None] | None = None,
        leader_epochs: Mapping[tuple[str, int], int] | None = None,
    ) -> list[FetchedPartition]:
        from kafka_archive.kafka_protocol.fetch import fetch_partitions

        return fetch_partitions(
            self.client,
            node,
            asks,
            max_wait_ms=max_wait_ms,
            min_bytes=1 if max_wait_ms else 0,
            max_bytes=self.max_bytes,
            partition_max_bytes=self.partition_max_bytes,
            topic_ids=topic_ids,
            leader_epochs=leader_epochs,
        )

    def close(self) -> None:
        self.client.close()
