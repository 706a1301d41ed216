"""The typed errors of the replay engine.

Every failure the replay layer reports on purpose is a :class:`ReplayError` carrying a ``hint``
(one sentence on what the operator should do next). Bad bytes in the archive are *not* wrapped:
they surface as :class:`segment_lib.errors.SegmentError` (naming the object key and byte
position), and store failures as :class:`kafka_archive.store.errors.StoreError`.

* :class:`ReplayConfigError` - the request itself is wrong (bad range, filter, mapping, option).
  Also a :class:`ValueError`. Its guard-rail subclasses:

  - :class:`EmptyRangeError` - the range selects nothing (or is inverted);
  - :class:`UnknownTopicError` - the catalog holds no such cluster/topic/partition;
  - :class:`SameTopicError` - the target is the source cluster and topic;
  - :class:`TargetTopicMissingError` - the target topic does not exist (and ``--create-topic``
    was not given, or creating it failed);
  - :class:`PartitionMappingError` - the partition mapping cannot hold on the target;
  - :class:`TargetConfigError` - the target topic's configs would reject the replayed records
    (e.g. timestamp bounds older than the data): refused before anything is sent.

* :class:`ReplayTargetError` - the target cluster refused or failed in a way retries did not fix.
* :class:`ReplayFencedError` - another process took over this replay's transactional id (a newer
  run of the same replay): this one must stop; nothing it wrote is visible.
* :class:`ReplayDataError` - the archive contradicts itself (e.g. the transaction index says a
  transaction was aborted and its marker says committed).
* :class:`GroupTranslationError` - ``translate-group`` cannot compute or apply positions (no
  offset map, group still active, ...).
"""

from __future__ import annotations

from typing import Any

from kafka_archive.errors import KafkaArchiveError

__all__ = [
    "EmptyRangeError",
    "GroupTranslationError",
    "PartitionMappingError",
    "ReplayConfigError",
    "ReplayDataError",
    "ReplayError",
    "ReplayFencedError",
    "ReplayTargetError",
    "SameTopicError",
    "TargetConfigError",
    "TargetTopicMissingError",
    "UnknownTopicError",
]


class ReplayError(KafkaArchiveError):
    """Base of every replay failure: ``message`` plus a ``hint`` on what to do next."""

    default_hint = ""
    http_status = 409
    api_error = "replay_refused"

    def __init__(self, message: str, *, hint: str | None = None, **details: Any) -> None:
        super().__init__(message, hint=hint)
        self.details = details
        if isinstance(details.get("field"), str):  # the request field at fault, for the API
            self.field = details["field"]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description for ``--json`` output and task reports."""
        return {
            "error": type(self).__name__,
            "message": self.message,
            "hint": self.hint or None,
            **self.details,
        }


class ReplayConfigError(ReplayError, ValueError):
    """The replay request is invalid."""

    http_status = 400
    api_error = "bad_replay_request"


class EmptyRangeError(ReplayConfigError):
    """The requested range selects no records (or ``--from`` is after ``--to``)."""

    field = "from"
    default_hint = "Check --from/--to against `kafka-archive catalog topics --cluster C`."


class UnknownTopicError(ReplayConfigError):
    """The catalog holds no such cluster, topic or partition."""

    field = "topic"
    default_hint = "List what the archive holds with `kafka-archive catalog topics --cluster C`."


class SameTopicError(ReplayConfigError):
    """Replaying into the very cluster and topic the data came from."""

    field = "target_topic"
    default_hint = (
        "Choose another --target-topic, or pass --allow-same-topic if duplicating the data "
        "into its own topic is really intended."
    )


class TargetTopicMissingError(ReplayConfigError):
    """The target topic does not exist."""

    field = "target_topic"
    default_hint = (
        "Create it first (with the source's partition count for --partition-mapping same), "
        "or pass --create-topic."
    )


class PartitionMappingError(ReplayConfigError):
    """The partition mapping cannot hold on the target topic."""

    field = "partition_mapping"
    default_hint = (
        "Use --partition-mapping murmur2 or round-robin, or a target topic with at least as "
        "many partitions as the source."
    )


class TargetConfigError(ReplayConfigError):
    """The target topic's configs would make the broker reject the replayed records."""

    field = "topic_config"
    default_hint = (
        "Alter the target topic's configs (kafka-configs.sh --alter), or replay into a new "
        "topic with --create-topic and --topic-config NAME=VALUE."
    )


class ReplayTargetError(ReplayError):
    """The target cluster failed and retries did not help."""

    http_status = 502
    field = "target"
    api_error = "target_unavailable"

    default_hint = (
        "Check the target brokers and re-run the same command: the replay resumes from its "
        "last committed transaction."
    )


class ReplayFencedError(ReplayTargetError):
    """A newer producer with the same transactional id fenced this one."""

    default_hint = "Another run of this replay is active; let it finish (see `replay status`)."


class ReplayDataError(ReplayError):
    """The archive contradicts itself."""

    default_hint = "Run `kafka-archive catalog gaps` and inspect the segment named here."


class GroupTranslationError(ReplayError):
    """Consumer-group positions cannot be computed or applied on the target."""
