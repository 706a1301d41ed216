"""What makes the writer's output deterministic: a settable clock and seeded Kafka ids.

:class:`ManualClock` is the default clock of :class:`~kafka_archive_dev.writer.PartitionWriter`
and :class:`~kafka_archive_dev.writer.BrokerWriter` (time moves only when told to);
:func:`new_topic_id` derives a Kafka ``Uuid`` string from a seed (random without one), for
topic, directory and cluster ids.
"""

from __future__ import annotations

import uuid

from segment_lib.metadata_files import encode_kafka_uuid

__all__ = ["ManualClock", "new_topic_id"]


class ManualClock:
    """A settable millisecond clock (the writer's default, so output is deterministic)."""

    __slots__ = ("now_ms",)

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = start_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        """Move the clock forward by ``ms`` and return the new time."""
        self.now_ms += ms
        return self.now_ms


def new_topic_id(seed: str | None = None) -> str:
    """A Kafka ``Uuid`` string (topic or directory id); deterministic from ``seed``."""
    value = uuid.uuid5(uuid.NAMESPACE_URL, seed) if seed is not None else uuid.uuid4()
    return encode_kafka_uuid(value)
