"""Where a partition's replay resumes: its committed progress record.

Kafka's progress topic is authoritative; the catalog's mirror (:mod:`.ledger`) only tells where
in the progress partition to start reading, and is completed here when a crash between commit
and catalog update left it behind. Read it *after* ``init_transactions`` (see
:mod:`.engine`): only then is no zombie of the partition's producer still committing.
"""

from __future__ import annotations

from confluent_kafka import Producer

from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.errors import ReplayTargetError
from kafka_archive.replay.execution.progress import (
    CommittedLogReader,
    ProgressRecord,
    load_progress,
)

__all__ = ["committed_progress", "progress_partition_count"]


def progress_partition_count(producer: Producer, progress_topic: str) -> int:
    """The progress topic's partition count on the target (it must exist)."""
    md = producer.list_topics(progress_topic, timeout=30)
    topic = md.topics.get(progress_topic)
    if topic is None or topic.error is not None or not topic.partitions:
        raise ReplayTargetError(
            f"the progress topic {progress_topic} is not available on the target",
            hint="Create it (compacted) or let `replay run` create it.",
        )
    return len(topic.partitions)


def committed_progress(
    reader: CommittedLogReader,
    progress_topic: str,
    ppart: int,
    key: bytes,
    *,
    ledger: ReplayLedger | None,
    replay_id: str,
    partition: int,
) -> ProgressRecord | None:
    """The committed progress under ``key`` in partition ``ppart`` of the progress topic
    (Kafka, authoritative; the catalog gives a start offset), ``None`` before any commit."""
    start = 0
    mirrored = None
    if ledger is not None:
        mirrored = ledger.progress(replay_id, partition)
        if mirrored is not None and mirrored.progress_partition == ppart:
            start = mirrored.progress_offset
    record, offset = load_progress(reader, progress_topic, ppart, key, start_offset=start)
    if record is None and start > 0:
        # the catalog points past what Kafka holds (topic recreated?): scan it all
        record, offset = load_progress(reader, progress_topic, ppart, key)
    if record is not None and offset is not None and ledger is not None:
        # complete a mirror that a crash between commit and catalog update left behind
        ledger.mirror(record, ppart, offset)
    return record
