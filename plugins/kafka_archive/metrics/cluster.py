"""What a live cluster answers about its ends: high watermarks of the archived partitions and
the ends of ``__consumer_offsets`` (for the follower's lag), in one ListOffsets request batch.

A cluster is optional everywhere: without one the metrics and the status view say what the
catalog knows (archive age, follower age), with one they also say how far behind it is.
Failures never raise out of :func:`cluster_ends`: an unreachable cluster is itself a fact
(:attr:`ClusterEnds.error`), shown by ``kafka_archive_cluster_up`` and by ``status``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CONSUMER_OFFSETS", "ClusterEnds", "ClusterTarget", "cluster_ends"]

CONSUMER_OFFSETS = "__consumer_offsets"


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    """A cluster to ask: its archive name, bootstrap servers and librdkafka settings
    (security); ``config`` is never shown."""

    name: str
    bootstrap: str
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class ClusterEnds:
    """The high watermark of each asked ``(topic, partition)``; ``error``: why the cluster
    did not answer (then ``ends`` holds what it did answer, possibly nothing)."""

    cluster: str
    ends: dict[tuple[str, int], int] = field(default_factory=dict)
    error: str | None = None


def cluster_ends(
    target: ClusterTarget,
    partitions: Iterable[tuple[str, int]],
    *,
    with_consumer_offsets: bool = True,
    timeout_s: float = 4.0,
) -> ClusterEnds:
    """High watermarks of ``partitions`` (and of every ``__consumer_offsets`` partition when
    ``with_consumer_offsets``) on ``target``. Partitions the cluster no longer has are left
    out; anything else that goes wrong is the answer's ``error``. ``timeout_s`` bounds each of
    the two requests (metadata, ListOffsets): an unreachable cluster must cost a scrape less than
    Prometheus's default 10 s scrape timeout, or the exporter itself would look down."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

    from kafka_archive.kafka_protocol.config import librdkafka_config
    from kafka_archive.redact import redact_text

    answer = ClusterEnds(target.name)
    conf: dict[str, Any] = {"bootstrap.servers": target.bootstrap, **dict(target.config)}
    try:
        admin = AdminClient(librdkafka_config(conf))
        wanted = set(partitions)
        topics = {t for t, _ in wanted}
        if with_consumer_offsets:
            topics.add(CONSUMER_OFFSETS)
        meta = admin.list_topics(timeout=timeout_s)
        present: set[tuple[str, int]] = set()
        for name in topics:
            tmeta = meta.topics.get(name)
            if tmeta is None or tmeta.error is not None:
                continue
            for p in tmeta.partitions:
                if name == CONSUMER_OFFSETS or (name, p) in wanted:
                    present.add((name, p))
        if not present:
            return answer
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        request = {TopicPartition(t, p): latest for t, p in sorted(present)}
        futures = admin.list_offsets(request, request_timeout=timeout_s)
        for tp, fut in futures.items():
            try:
                answer.ends[(tp.topic, tp.partition)] = int(fut.result().offset)
            except KafkaException as exc:  # one partition without a leader: leave it out
                answer.error = answer.error or redact_text(str(exc))
    except Exception as exc:  # unreachable, refused settings, timeout: a fact to report
        answer.error = redact_text(str(exc)) or type(exc).__name__
    return answer
