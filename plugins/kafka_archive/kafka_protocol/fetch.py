"""Raw reads of a cluster's partitions over the Kafka protocol: Metadata of every topic,
ListOffsets, OffsetsForLeaderEpoch, DescribeConfigs of a topic, and Fetch
(``read_uncommitted``) handing back each partition's record bytes exactly as the broker sent
them.

kafka-python's generated request and response classes do the encoding (its ``FetchResponse``
keeps ``records`` as the raw bytes of the partition: nothing is decoded or re-encoded), sent
through :class:`~kafka_archive.kafka_protocol.client.ProtocolClient`; this module only shapes
the questions and the answers.

Fetch versions 4-13: topics by name up to 12; when every topic asked has a known topic id,
version 13 (brokers of 3.1 and later) addresses them by id, so a topic deleted and re-created
under the same name is answered ``UNKNOWN_TOPIC_ID`` instead of with the new topic's batches at
the old topic's offsets. Every version returns magic-2 batches as stored (a broker
down-converts only for fetch versions below 4), the high watermark, the last stable offset and
the log start offset. A consumer Fetch (``replica_id`` -1) is served up to the high watermark
only (``FetchIsolation.HIGH_WATERMARK`` in ``ReplicaManager``): no byte it returns can be
truncated by a clean leader change (an unclean one is found by OffsetsForLeaderEpoch,
:mod:`kafka_archive.archive.fetch.epochs`).

Errors: the broker's per-partition error codes are returned in :class:`FetchedPartition`
(``error_code``) for the caller to judge (:data:`LEADERSHIP_ERRORS`,
:data:`OFFSET_OUT_OF_RANGE`); a whole-request failure (unreachable broker, timeout) is the
client's :class:`~kafka_archive.kafka_protocol.client.ProtocolConnectionError`; a refused
Metadata/ListOffsets/DescribeConfigs is a :class:`ProtocolRequestError` naming the error.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.kafka_protocol.client import ProtocolClient, error_name
from segment_lib.metadata_files import decode_kafka_uuid, encode_kafka_uuid

__all__ = [
    "EARLIEST",
    "LATEST",
    "LEADERSHIP_ERRORS",
    "OFFSET_OUT_OF_RANGE",
    "UNDEFINED_EPOCH",
    "ClusterTopics",
    "EpochEnd",
    "FetchedPartition",
    "ProtocolRequestError",
    "TopicInfo",
    "cluster_topics",
    "fetch_partitions",
    "fetch_request",
    "list_offsets",
    "offsets_for_leader_epoch",
    "topic_configs",
]

#: ListOffsets timestamps: the log start offset and the high watermark
EARLIEST: Final = -2
LATEST: Final = -1
#: OffsetsForLeaderEpoch's "no such epoch / offset" (``UNDEFINED_EPOCH``,
#: ``UNDEFINED_EPOCH_OFFSET``)
UNDEFINED_EPOCH: Final = -1

OFFSET_OUT_OF_RANGE: Final = 1
#: UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
#: REPLICA_NOT_AVAILABLE, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID,
#: INCONSISTENT_TOPIC_ID: ask Metadata again
LEADERSHIP_ERRORS: Final = frozenset({3, 5, 6, 9, 74, 75, 100, 103})

_TOPIC_RESOURCE: Final = 2  # DescribeConfigs resource type TOPIC


class ProtocolRequestError(KafkaArchiveError, RuntimeError):
    """The broker refused a request (its error name in the message: no permission, unknown
    topic, ...)."""


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic as Metadata describes it."""

    name: str
    topic_id: str | None
    internal: bool
    #: partition -> leader broker id (-1: none)
    leaders: dict[int, int]
    #: partition -> leader epoch (Metadata v7+; absent: unknown)
    leader_epochs: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterTopics:
    """Every topic the principal may describe, and the cluster's id."""

    cluster_id: str | None
    topics: dict[str, TopicInfo] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    """One partition of a FetchResponse: its error code and offsets, and its record bytes as
    sent (whole batches, possibly ending in a partial one cut at the size limit)."""

    topic: str
    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes


def cluster_topics(client: ProtocolClient) -> ClusterTopics:
    """Metadata of every topic (the principal needs Describe on the topics it should see)."""
    from kafka.protocol.metadata import MetadataRequest

    md = client.request(
        client.any_node(),
        MetadataRequest(topics=None, allow_auto_topic_creation=False, max_version=12),
        "Metadata",
    )
    out: dict[str, TopicInfo] = {}
    for t in md.topics:
        if t.error_code:
            continue  # e.g. TOPIC_AUTHORIZATION_FAILED: not ours to archive
        tid = getattr(t, "topic_id", None)
        # Kafka's own text form (base64url, as partition.metadata and the tools show it), so a
        # fetched manifest's topic id equals a disk-archived one's
        tid_s = encode_kafka_uuid(tid) if isinstance(tid, uuid.UUID) and tid.int else None
        out[t.name] = TopicInfo(
            t.name,
            tid_s,
            bool(getattr(t, "is_internal", False)),
            {p.partition_index: p.leader_id for p in t.partitions},
            {
                p.partition_index: int(p.leader_epoch)
                for p in t.partitions
                if getattr(p, "leader_epoch", None) is not None
            },
        )
    return ClusterTopics(getattr(md, "cluster_id", None), out)


def list_offsets(
    client: ProtocolClient, node: int, topic: str, partitions: Iterable[int], timestamp: int
) -> dict[int, int]:
    """Partition -> ListOffsets answer at ``timestamp`` (:data:`EARLIEST`, :data:`LATEST` or a
    time) from broker ``node`` (the partitions' leader), read_uncommitted.

    Raises:
        ProtocolRequestError: a partition's answer is an error (named).
    """
    from kafka.protocol.consumer import ListOffsetsRequest

    lt, lp = (
        ListOffsetsRequest.ListOffsetsTopic,
        ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition,
    )
    resp = client.request(
        node,
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[
                lt(
                    name=topic,
                    partitions=[
                        lp(partition_index=p, current_leader_epoch=-1, timestamp=timestamp)
                        for p in partitions
                    ],
                )
            ],
            min_version=1,
            max_version=7,
        ),
        f"ListOffsets of {topic}",
    )
    out: dict[int, int] = {}
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code:
                raise ProtocolRequestError(
                    f"ListOffsets of {topic}-{p.partition_index}: {error_name(p.error_code)}"
                )
            out[p.partition_index] = int(p.offset)
    return out


@dataclass(frozen=True, slots=True)
class EpochEnd:
    """One partition's OffsetsForLeaderEpoch answer: the largest epoch the leader knows that is
    at most the one asked, and where it ends (the start of the leader's next epoch, or its log
    end offset for its current epoch); both :data:`UNDEFINED_EPOCH` when the leader knows no
    epoch at or below the one asked."""

    error_code: int
    leader_epoch: int
    end_offset: int


def offsets_for_leader_epoch(
    client: ProtocolClient, node: int, topic: str, asks: Mapping[int, tuple[int, int]]
) -> dict[int, EpochEnd]:
    """OffsetsForLeaderEpoch (versions 3-4, as a consumer: ``replica_id`` -1, Describe on the
    topic) of ``{partition: (current leader epoch or -1, epoch asked)}`` from broker ``node``
    (their leader): partition -> :class:`EpochEnd`, per-partition errors in it (a stale
    ``current leader epoch`` is answered ``FENCED_LEADER_EPOCH``/``UNKNOWN_LEADER_EPOCH``:
    :data:`LEADERSHIP_ERRORS`)."""
    from kafka.protocol.consumer import OffsetForLeaderEpochRequest

    ot = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    op = ot.OffsetForLeaderPartition
    resp = client.request(
        node,
        OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                ot(
                    topic=topic,
                    partitions=[
                        op(partition=p, current_leader_epoch=current, leader_epoch=epoch)
                        for p, (current, epoch) in sorted(asks.items())
                    ],
                )
            ],
            min_version=3,
            max_version=4,
        ),
        f"OffsetsForLeaderEpoch of {topic}",
    )
    out: dict[int, EpochEnd] = {}
    for t in resp.topics:
        for p in t.partitions:
            out[p.partition] = EpochEnd(
                p.error_code,
                int(UNDEFINED_EPOCH if p.leader_epoch is None else p.leader_epoch),
                int(p.end_offset),
            )
    return out


def topic_configs(client: ProtocolClient, topic: str, names: Sequence[str]) -> dict[str, str]:
    """The values of the topic configs ``names`` (DescribeConfigs: the topic's own, else the
    broker's or Kafka's default, as the broker resolves them).

    Raises:
        ProtocolRequestError: refused (e.g. no DescribeConfigs permission on the topic).
    """
    from kafka.protocol.admin import DescribeConfigsRequest

    res = DescribeConfigsRequest.DescribeConfigsResource
    resp = client.request(
        client.any_node(),
        DescribeConfigsRequest(
            resources=[
                res(
                    resource_type=_TOPIC_RESOURCE,
                    resource_name=topic,
                    configuration_keys=list(names),
                )
            ],
            include_synonyms=False,
            min_version=1,
            max_version=4,
        ),
        f"DescribeConfigs of {topic}",
    )
    out: dict[str, str] = {}
    for r in resp.results:
        if r.error_code:
            raise ProtocolRequestError(
                f"DescribeConfigs of topic {topic}: {error_name(r.error_code)}"
            )
        for c in r.configs:
            if c.value is not None:
                out[c.name] = c.value
    return out


def fetch_request(
    asks: Mapping[tuple[str, int], int],
    *,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    partition_max_bytes: int,
    topic_ids: Mapping[str, str | None] | None = None,
    leader_epochs: Mapping[tuple[str, int], int] | None = None,
) -> Any:
    """A read_uncommitted consumer FetchRequest of ``{(topic, partition): fetch offset}``:
    versions 4-12, or 4-13 when ``topic_ids`` (Kafka's text form) names every topic (module
    docstring; the broker's highest version is used, each version encodes the topic's name or
    its id). ``leader_epochs``: the current leader epoch the client knows per partition
    (versions 9 on; a leader of another epoch answers ``FENCED_LEADER_EPOCH`` or
    ``UNKNOWN_LEADER_EPOCH`` instead of serving stale metadata, KIP-320)."""
    from kafka.protocol.consumer import FetchRequest

    ft, fp = FetchRequest.FetchTopic, FetchRequest.FetchTopic.FetchPartition
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), offset in asks.items():
        by_topic.setdefault(topic, []).append(
            fp(
                partition=partition,
                current_leader_epoch=(leader_epochs or {}).get((topic, partition), -1),
                fetch_offset=offset,
                partition_max_bytes=partition_max_bytes,
            )
        )
    ids = {t: (topic_ids or {}).get(t) for t in by_topic}
    by_id = all(ids.values())
    return FetchRequest(
        replica_id=-1,  # a consumer: served up to the high watermark only
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,  # read_uncommitted: every batch, aborted data and markers included
        topics=[
            ft(topic=t, topic_id=decode_kafka_uuid(ids[t]) if by_id else None, partitions=ps)  # type: ignore[arg-type]
            for t, ps in by_topic.items()
        ],
        min_version=4,
        max_version=13 if by_id else 12,  # 13 on: topics by id
    )


def fetch_partitions(
    client: ProtocolClient,
    node: int,
    asks: Mapping[tuple[str, int], int],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = 64 << 20,
    partition_max_bytes: int = 4 << 20,
    topic_ids: Mapping[str, str | None] | None = None,
    leader_epochs: Mapping[tuple[str, int], int] | None = None,
) -> list[FetchedPartition]:
    """One Fetch of ``{(topic, partition): offset}`` from broker ``node`` (their leader); each
    partition's answer, its record bytes untouched (``topic_ids``, ``leader_epochs``:
    :func:`fetch_request`)."""
    names = {decode_kafka_uuid(i): t for t, i in (topic_ids or {}).items() if i}
    resp = client.request(
        node,
        fetch_request(
            asks,
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            partition_max_bytes=partition_max_bytes,
            topic_ids=topic_ids,
            leader_epochs=leader_epochs,
        ),
        f"Fetch from broker {node}",
    )
    if getattr(resp, "error_code", 0):
        raise ProtocolRequestError(f"Fetch from broker {node}: {error_name(resp.error_code)}")
    out: list[FetchedPartition] = []
    for t in resp.responses:
        tid = getattr(t, "topic_id", None)
        topic = getattr(t, "topic", None) or (names.get(tid, "") if tid is not None else "")
        for p in t.partitions:
            out.append(
                FetchedPartition(
                    topic,
                    p.partition_index,
                    p.error_code,
                    int(p.high_watermark),
                    int(getattr(p, "last_stable_offset", -1)),
                    int(getattr(p, "log_start_offset", -1)),
                    bytes(p.records or b""),
                )
            )
    return out
