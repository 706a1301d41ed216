"""Step 2 of a replay: the guard rails that need the target cluster.

:func:`check_target` asks the target's metadata (without letting the broker auto-create
anything) and refuses: the source's own cluster and topic (cluster identities compared only
when both are known: unknown refuses, unless ``allow_same_topic``), a missing target topic
(created with the source's partition count when asked), a partition mapping that cannot hold;
it creates the progress topic when missing. ``read_only`` (a dry run) checks the same and
creates nothing.

The target topic's configs (:mod:`.target_config`, when the plan carries
:class:`~.topic_config.TopicSettings`): a created topic gets the source's partition count and
configs as they were at the replay's start (the history's, else the archive's partition count);
an existing one is compared with the source's configs at T, and configs that would reject the
replayed records refuse the replay before anything is sent. ``TargetInfo.config_check`` holds
what was done and found; its warnings are what the operator must see before the run starts.

A target that does not answer is one :class:`~.errors.ReplayTargetError` within seconds, with a
summary of what librdkafka reported (:mod:`.client_log`), never its stream of log lines.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from kafka_archive.client_log import ClusterUnreachable, reach_metadata
from kafka_archive.kafka_protocol.config import librdkafka_config
from kafka_archive.replay.errors import (
    PartitionMappingError,
    ReplayTargetError,
    SameTopicError,
    TargetTopicMissingError,
)
from kafka_archive.replay.execution.progress import CLIENT_DEFAULTS, is_retriable
from kafka_archive.replay.planning.plan import ReplayPlan
from kafka_archive.replay.target.clients import CLIENT_LOG_SETTINGS, new_client
from kafka_archive.replay.target.topic import (
    TopicConfigCheck,
    check_configs,
    create_configured,
    unchecked,
)
from kafka_archive.timeparse import now_ms

__all__ = [
    "DEFAULT_PROGRESS_PARTITIONS",
    "TargetInfo",
    "check_target",
    "target_metadata",
    "wait_until_ready",
]

#: partitions of the progress topic when ``replay run`` creates it
DEFAULT_PROGRESS_PARTITIONS = 12

#: how long the guard rails wait for the target's metadata at most
TARGET_REACH_TIMEOUT_S = 30.0

#: how long a topic the replay created may take until every partition has a leader that serves
TOPIC_READY_TIMEOUT_S = 60.0

#: how long a target topic that the broker asked does not know is asked about again before the
#: replay calls it missing (each broker applies the cluster's metadata on its own: a topic
#: created a moment ago may not have reached the one asked yet)
MISSING_TOPIC_WAIT_S = 3.0


@dataclass(frozen=True, slots=True)
class TargetInfo:
    """What the guard rails learned about the target."""

    cluster_id: str | None
    partitions: int
    created_topic: bool = False
    #: the target topic's configs: created with / compared (``None``: the plan has no settings)
    config_check: TopicConfigCheck | None = None


def _metadata_client(client_config: dict[str, str]) -> Consumer:
    # A consumer, so that asking about a missing topic cannot auto-create it; the replay's client
    # defaults let its second question wait ~12 ms instead of ~50 (see CLIENT_DEFAULTS).
    return new_client(
        Consumer,
        {
            **CLIENT_DEFAULTS,
            **client_config,
            "group.id": "kafka-archive-replay-check",
            "allow.auto.create.topics": False,
            "enable.auto.commit": False,
        },
    )


def target_metadata(client_config: dict[str, str], topic: str) -> tuple[str | None, int | None]:
    """``(cluster id, partition count or None when the topic does not exist)`` - asked without
    letting the broker auto-create the topic."""
    consumer = _metadata_client(client_config)
    try:
        return _topic_metadata(consumer, topic)
    finally:
        consumer.close()


def _topic_metadata(consumer: Consumer, topic: str) -> tuple[str | None, int | None]:
    md = _reach(consumer, topic)
    meta = md.topics.get(topic)
    if meta is None or meta.error is not None:
        if meta is not None and meta.error.code() not in (
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            KafkaError._UNKNOWN_TOPIC,
        ):
            raise ReplayTargetError(f"target metadata for {topic}: {meta.error.str()}")
        return md.cluster_id, None
    return md.cluster_id, len(meta.partitions)


def _topic_metadata_settled(
    consumer: Consumer, topic: str, wait_s: float
) -> tuple[str | None, int | None]:
    """:func:`_topic_metadata`, asked again for up to ``wait_s`` while the topic is unknown:
    ``(cluster id, None)`` only when it stayed unknown that long."""
    deadline = time.monotonic() + wait_s
    while True:
        cluster_id, partitions = _topic_metadata(consumer, topic)
        if partitions is not None or time.monotonic() >= deadline:
            return cluster_id, partitions
        time.sleep(0.25)


def _reach(consumer: Consumer, topic: str) -> Any:
    """The target's metadata for ``topic`` (:func:`~kafka_archive.client_log.reach_metadata`).

    Raises:
        ReplayTargetError: the target did not answer.
    """
    try:
        return reach_metadata(
            consumer, topic, timeout_s=TARGET_REACH_TIMEOUT_S, what="the target cluster"
        )
    except ClusterUnreachable as exc:
        raise ReplayTargetError(
            str(exc),
            hint="Check --target (host:port of the target brokers), the network and the "
            "target's security settings (--target-config), then run again.",
        ) from None


def _create_topic(
    client_config: dict[str, str], topic: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    admin = AdminClient(librdkafka_config(client_config))
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=-1, config=config or {})],
        operation_timeout=30,
        request_timeout=30,
    )
    for name, fut in futures.items():
        try:
            fut.result(60)
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            raise TargetTopicMissingError(
                f"creating {name} with {partitions} partitions on the target failed: "
                f"{err.str() or err.name()}",
                hint="Create the topic with your usual tooling (the target may not allow "
                "CreateTopics) and run again.",
            ) from None


def wait_until_ready(
    consumer: Consumer,
    topic: str,
    partitions: int,
    *,
    timeout_s: float = TOPIC_READY_TIMEOUT_S,
) -> int:
    """Wait until ``topic`` (just created) is usable: the metadata shows it with at least
    ``partitions`` partitions, each with a leader, and every partition's leader answers
    ListOffsets (what reading the progress topic asks first). Returns the partition count.

    CreateTopics returns once the controller has committed the topic; the brokers learn it (and
    become leaders) a moment later. Until then metadata lacks the topic or its leaders, and a
    read gets ``NOT_LEADER_FOR_PARTITION`` - which crashed the first replay into a real cluster.

    Raises:
        ReplayTargetError: not ready within ``timeout_s``, or a non-retriable error.
    """
    deadline = time.monotonic() + timeout_s
    last = "not in the metadata yet"
    # asked again soon, then less often: a broker learns a new topic within a few ms
    # to a few hundred (each question is one Metadata round trip, no load on the target)
    pause = 0.005
    while True:
        left = deadline - time.monotonic()
        try:
            md = consumer.list_topics(topic, timeout=max(1.0, min(10.0, left)))
            meta = md.topics.get(topic)
            if meta is None or meta.error is not None:
                last = meta.error.str() if meta is not None else "not in the metadata yet"
            elif len(meta.partitions) < partitions:
                last = f"{len(meta.partitions)} of {partitions} partitions in the metadata"
            else:
                leaderless = sorted(
                    p for p, pm in meta.partitions.items() if pm.leader < 0 or pm.error is not None
                )
                if leaderless:
                    last = f"no leader yet for partition(s) {leaderless}"
                else:
                    for p in sorted(meta.partitions):
                        consumer.get_watermark_offsets(
                            TopicPartition(topic, p), timeout=max(1.0, min(10.0, left))
                        )
                    return len(meta.partitions)
        except KafkaException as exc:
            err = exc.args[0]
            if not isinstance(err, KafkaError) or not is_retriable(err):
                raise ReplayTargetError(f"target metadata for {topic}: {exc}") from None
            last = err.str()
        if time.monotonic() >= deadline:
            raise ReplayTargetError(
                f"{topic} was created but is not ready on the target after {timeout_s:g} s: {last}",
                hint="Check the target brokers (every partition needs a leader) and run again.",
            )
        time.sleep(pause)
        pause = min(0.1, pause * 2)


def _partitions_to_create(plan: ReplayPlan) -> int:
    """The created target topic's partition count: the source's at the replay's start (the
    metadata history), else the archive's. With ``--partition-mapping same`` at least one more
    than the highest replayed partition (a range spanning an added partition needs it; the
    check's notes say so)."""
    settings = plan.topic_settings
    count = plan.source_partition_count
    if settings is not None and settings.source_partitions is not None:
        count = settings.source_partitions
    if plan.spec.partition_mapping == "same":
        count = max(count, max(p.partition for p in plan.partitions) + 1)
    return count


def _answers_admin(consumer: Consumer) -> bool:
    """Whether the target can answer admin requests: the controller its metadata names is one
    of its brokers (librdkafka's mock cluster names none and would let DescribeConfigs wait for
    its whole timeout)."""
    md = consumer.list_topics(timeout=TARGET_REACH_TIMEOUT_S)
    return md.controller_id in md.brokers


def _configs(
    plan: ReplayPlan,
    consumer: Consumer,
    admin: AdminClient,
    created: TopicConfigCheck | None,
    partitions: int,
    *,
    read_only: bool,
) -> TopicConfigCheck:
    assert plan.topic_settings is not None
    if not _answers_admin(consumer):
        return unchecked(
            plan.topic_settings,
            created,
            "the target's metadata names no live controller to answer DescribeConfigs",
        ).model_copy(update={"target_partitions": partitions})
    check = check_configs(
        admin,
        plan.topic_settings,
        plan.target_topic,
        created=created,
        preserve_timestamps=plan.spec.preserve_timestamps,
        now_ms=now_ms(),
        read_only=read_only,
    )
    return check.model_copy(update={"target_partitions": partitions})


def check_target(plan: ReplayPlan, *, read_only: bool = False) -> TargetInfo:
    """Step 2: the guard rails that need the target (see the module docstring).

    ``read_only`` (a dry run): the same checks, but nothing is created on the target - a
    missing target topic with ``create_topic`` is reported as ``created_topic=True`` with the
    source's partition count, and the progress topic is left alone.

    Raises:
        SameTopicError, TargetTopicMissingError, PartitionMappingError, ReplayTargetError.
    """
    spec = plan.spec
    client = spec.target.client_config()
    # one metadata client for every question (a client costs a bootstrap connection each)
    consumer = _metadata_client(client)
    try:
        return _check_target(plan, client, consumer, read_only=read_only)
    finally:
        consumer.close()


def _known_id(cluster_id: str | None) -> str | None:
    """A cluster id, or ``None`` when it is missing or blank (i.e. unknown)."""
    return cluster_id.strip() if cluster_id and cluster_id.strip() else None


def _check_target(
    plan: ReplayPlan, client: dict[str, str], consumer: Consumer, *, read_only: bool
) -> TargetInfo:
    spec = plan.spec
    # a topic the replay would refuse as missing is asked about again for a moment first
    # (created just before the replay, it may not have reached the broker asked); one it would
    # create is not waited for
    cluster_id, partitions = _topic_metadata_settled(
        consumer, plan.target_topic, 0.0 if spec.create_topic else MISSING_TOPIC_WAIT_S
    )
    if plan.target_topic == spec.topic and not spec.allow_same_topic:
        # Identities are compared only when both are known: an empty ``cluster.id=`` in the
        # archived meta.properties (or a target whose metadata names no cluster) is *unknown*,
        # and unknown must refuse - comparing "" with the target's id used to let it through.
        source_id = _known_id(plan.source_cluster_id)
        target_id = _known_id(cluster_id)
        if source_id is None or target_id is None:
            which = (
                f"the archive does not record the Kafka cluster id of {spec.cluster!r}"
                if source_id is None
                else "the target cluster's metadata names no cluster id"
            )
            raise SameTopicError(
                f"the target topic is the source topic {spec.topic!r} and {which}, so the "
                "target may be the very cluster the data came from",
                hint="Pass --allow-same-topic if the target is another cluster (e.g. the "
                "failover region), or choose another --target-topic.",
            )
        if target_id == source_id:
            raise SameTopicError(
                f"the target is cluster {cluster_id}, the source cluster {spec.cluster!r} "
                f"itself, and topic {spec.topic!r} is the source topic"
            )
    created = False
    config_check: TopicConfigCheck | None = None
    if partitions is None:
        if not spec.create_topic:
            raise TargetTopicMissingError(
                f"the target topic {plan.target_topic!r} does not exist on the target cluster"
            )
        wanted = _partitions_to_create(plan)
        settings = plan.topic_settings
        admin = new_client(AdminClient, {**CLIENT_LOG_SETTINGS, **client})
        if settings is not None:
            brokers = sorted(consumer.list_topics(timeout=TARGET_REACH_TIMEOUT_S).brokers)
            if settings.source_partitions is not None and wanted > settings.source_partitions:
                settings = settings.model_copy(
                    update={
                        "notes": [
                            *settings.notes,
                            f"created with {wanted} partitions, not the source's "
                            f"{settings.source_partitions} at the start: the replayed range "
                            f"holds partition {wanted - 1} (added later)",
                        ]
                    }
                )
            config_check = create_configured(
                admin, settings, plan.target_topic, wanted, brokers=brokers, validate_only=read_only
            )
        elif not read_only:
            _create_topic(client, plan.target_topic, wanted)
        partitions = wanted if read_only else wait_until_ready(consumer, plan.target_topic, wanted)
        if settings is not None:
            config_check = _configs(
                plan, consumer, admin, config_check, partitions, read_only=read_only
            )
        created = True
    elif plan.topic_settings is not None:
        admin = new_client(AdminClient, {**CLIENT_LOG_SETTINGS, **client})
        config_check = _configs(plan, consumer, admin, None, partitions, read_only=read_only)
    if spec.partition_mapping == "same":
        highest = max(p.partition for p in plan.partitions)
        if highest >= partitions:
            raise PartitionMappingError(
                f"--partition-mapping same needs target partitions 0..{highest}, but "
                f"{plan.target_topic!r} has {partitions} partition(s)"
            )
    if read_only:
        return TargetInfo(cluster_id, partitions, created, config_check)
    _cid, progress_parts = _topic_metadata(consumer, spec.progress_topic)
    if progress_parts is None:
        _create_topic(
            client,
            spec.progress_topic,
            DEFAULT_PROGRESS_PARTITIONS,
            {"cleanup.policy": "compact"},
        )
        # (also when another replay created it a moment ago: TOPIC_ALREADY_EXISTS)
        wait_until_ready(consumer, spec.progress_topic, 1)
    return TargetInfo(cluster_id, partitions, created, config_check)
