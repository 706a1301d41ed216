"""The cluster metadata history as a service: topic state at any moment, what changed when,
ACLs at T, topic incarnations; building the history from the metadata log, and snapshotting a
cluster through the Admin API.

:class:`MetadataHistoryService` opens the catalog from the settings (reads never create one;
:meth:`build` and :meth:`snapshot_from_admin` do). Replays use :meth:`topic_at` to recreate a
topic as it was at their start time. The answer objects (:class:`TopicState` and the
``metadata_history.queries`` classes) have ``to_json()``.

Errors: :class:`~kafka_archive.settings.SettingsError` (no catalog named),
:class:`~kafka_archive.catalog.db.CatalogError`, :class:`MetadataHistoryError` (a question
with no answer, e.g. a cluster without history), ``confluent_kafka.KafkaException`` from an
Admin API snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Self

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.metadata_history.queries import TopicState
from kafka_archive.services.resources import ResourceService
from kafka_archive.settings import Settings
from kafka_archive.timeparse import now_ms

if TYPE_CHECKING:
    from kafka_archive.metadata_history.apply import ApplyReport
    from kafka_archive.metadata_history.entries import MetadataEntryLike
    from kafka_archive.metadata_history.queries import (
        AclAt,
        HistoryEvent,
        Incarnation,
        ResolvedConfig,
    )

__all__ = [
    "MetadataHistoryError",
    "MetadataHistoryService",
    "MetadataHistoryUnknown",
    "SnapshotReport",
    "TopicState",
]


class MetadataHistoryError(KafkaArchiveError):
    """A history question without an answer; ``hint`` says what to do."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)


class MetadataHistoryUnknown(MetadataHistoryError, LookupError):
    """The history does not reach back to the moment asked (it begins with a later KRaft
    snapshot). A ``LookupError`` too, so that callers below the services (the replay's
    :class:`~kafka_archive.replay.planning.topic_config.TopicHistory`) can tell it apart."""


class SnapshotReport:
    """What one Admin API snapshot recorded."""

    def __init__(self, cluster: str, at_ms: int, changes: int, acls_available: bool) -> None:
        self.cluster, self.at_ms, self.changes = cluster, at_ms, changes
        self.acls_available = acls_available

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "admin_snapshot",
            "cluster": self.cluster,
            "at_ms": self.at_ms,
            "changes": self.changes,
            "acls_available": self.acls_available,
        }


class MetadataHistoryService(ResourceService):
    """Questions to, and builds of, the metadata history (see the module docstring).

    Not thread-safe (one per request or task); close it, or use it as a context manager."""

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> Self:
        """The service over the catalog the settings (default: the effective ones) name."""
        return cls(settings)

    # -- questions ---------------------------------------------------------------------------

    def topic_at(self, cluster: str, topic: str, at_ms: int) -> TopicState | None:
        """``topic`` as it was at ``at_ms`` (partitions, replicas, leaders, config overrides,
        topic id), or ``None`` when no topic of that name existed then.

        Raises:
            MetadataHistoryUnknown: the history is unknown at ``at_ms`` (it begins with a
                snapshot taken later: the metadata log before it is not archived).
        """
        from kafka_archive.metadata_history import queries

        with self.resources.catalog().engine.connect() as conn:
            self._require_known(conn, cluster, at_ms)
            return queries.topic_at(conn, cluster, topic, at_ms)

    def resolved_configs(self, state: TopicState, at_ms: int) -> list[ResolvedConfig]:
        """The effective values of ``state``'s configs that are derivable, with their source."""
        from kafka_archive.metadata_history import queries

        with self.resources.catalog().engine.connect() as conn:
            return queries.resolved_configs(conn, state.cluster, state, at_ms)

    def incarnations(self, cluster: str, topic: str) -> list[Incarnation]:
        """Every topic id ``topic`` had, with its lifetime, oldest first."""
        from kafka_archive.metadata_history import queries

        with self.resources.catalog().engine.connect() as conn:
            return queries.incarnations(conn, cluster, topic)

    def topics_at(self, cluster: str, at_ms: int) -> dict[str, str]:
        """``topic id -> name`` of the topics alive at ``at_ms``."""
        from kafka_archive.metadata_history import queries

        with self.resources.catalog().engine.connect() as conn:
            return queries.topics_at(conn, cluster, at_ms)

    def topic_history(self, cluster: str, topic: str) -> list[HistoryEvent]:
        """Every change of every incarnation of ``topic``, in order, with its record."""
        from kafka_archive.metadata_history import queries

        with self.resources.catalog().engine.connect() as conn:
            return queries.topic_history(conn, cluster, topic)

    def acls_at(self, cluster: str, at_ms: int) -> tuple[list[AclAt], str | None]:
        """The ACL bindings alive at ``at_ms`` and the resolution note (admin snapshots)."""
        from kafka_archive.metadata_history import queries

        with self.resources.catalog().engine.connect() as conn:
            self._require_history(conn, cluster)
            self._require_known(conn, cluster, at_ms)
            return queries.acls_at(conn, cluster, at_ms), queries.resolution_note(
                conn, cluster, at_ms
            )[1]

    def has_history(self, cluster: str) -> bool:
        """Whether any history of ``cluster`` is built."""
        from kafka_archive.metadata_history.apply import build_position

        with self.resources.catalog().engine.connect() as conn:
            return build_position(conn, cluster) is not None

    def _require_history(self, conn: Any, cluster: str) -> None:
        from kafka_archive.metadata_history.apply import build_position

        if build_position(conn, cluster) is None:
            raise MetadataHistoryError(
                f"no metadata history of cluster {cluster!r} in the catalog",
                hint="archive the controllers' __cluster_metadata log and run `kafka-archive "
                "catalog build`, or schedule the kafka_archive_metadata_snapshot DAG",
            )

    def _require_known(self, conn: Any, cluster: str, at_ms: int) -> None:
        """Unknown is not "nothing": before a history that begins with a snapshot (KRaft's, or
        the first Admin API snapshot), refuse."""
        from kafka_archive.metadata_history.queries import first_admin_snapshot, history_start
        from kafka_archive.timeparse import format_ms

        first_admin = first_admin_snapshot(conn, cluster)
        if first_admin is not None and at_ms < first_admin:
            raise MetadataHistoryUnknown(
                f"the metadata history of cluster {cluster!r} is unknown before "
                f"{format_ms(first_admin)}: it comes from Admin API snapshots and the first was "
                "taken then",
                hint=f"ask for a time at or after {format_ms(first_admin)}",
            )
        start = history_start(conn, cluster)
        if start is not None and at_ms < start[0]:
            raise MetadataHistoryUnknown(
                f"the metadata history of cluster {cluster!r} is unknown before "
                f"{format_ms(start[0])}: it begins with the KRaft snapshot {start[1]} (the "
                "metadata log before it is not archived)",
                hint=f"ask for a time at or after {format_ms(start[0])}",
            )

    # -- builds ------------------------------------------------------------------------------

    def build(
        self, cluster: str, entries: Iterable[MetadataEntryLike] | None = None
    ) -> ApplyReport:
        """Apply ``cluster``'s metadata log to the history, in one transaction, resuming after
        the last applied offset: ``entries`` (snapshot + deltas, offset order), by default
        the archived ``__cluster_metadata`` log read from the store
        (:func:`kafka_archive.archive.metadata_log.iter_archived_metadata`). A damaged archived
        segment or snapshot does not stop the build: it is skipped and named in the report's
        ``damaged`` (the history before and after it is built; a hole it leaves is a ``gaps``
        entry)."""
        from kafka_archive.archive.metadata_log import DamagedMetadataObject
        from kafka_archive.metadata_history.apply import METADATA_LOG, apply_entries, build_position

        damaged: list[DamagedMetadataObject] = []
        with self.resources.catalog(create=True).engine.begin() as conn:
            if entries is None:
                from kafka_archive.archive.metadata_log import iter_archived_metadata

                position = build_position(conn, cluster)
                after = position[1] if position and position[0] == METADATA_LOG else None
                entries = iter_archived_metadata(
                    self.resources.store(), cluster, after_offset=after, damaged=damaged
                )
            report = apply_entries(conn, cluster, entries)
        report.damaged = [d._asdict() for d in damaged]
        return report

    def build_archived(self, clusters: Iterable[str]) -> list[ApplyReport]:
        """:meth:`build` from the archive for each of ``clusters`` that has an archived
        metadata log and no Admin API snapshot history (the catalog build calls this)."""
        from kafka_archive.archive.metadata_log import metadata_coverage
        from kafka_archive.metadata_history.apply import ADMIN_SNAPSHOT, build_position

        out = []
        for cluster in clusters:
            with self.resources.catalog(create=True).engine.connect() as conn:
                position = build_position(conn, cluster)
            if position is not None and position[0] == ADMIN_SNAPSHOT:
                continue
            plan = metadata_coverage(self.resources.store(), cluster)
            if plan.snapshot is None and not plan.segments:
                continue  # no metadata log archived for this cluster
            out.append(self.build(cluster))
        return out

    def snapshot_from_admin(
        self,
        cluster: str,
        client_config: Mapping[str, str],
        *,
        at_ms: int | None = None,
        timeout_s: float = 30.0,
    ) -> SnapshotReport:
        """Snapshot ``cluster``'s topics, configs and ACLs through the Admin API
        (``client_config``: librdkafka settings, at least ``bootstrap.servers``) into the
        history (source ``admin_snapshot``).

        Raises:
            ClusterUnreachable: the cluster did not answer within ``timeout_s``;
            KafkaException: another Kafka error (a setting librdkafka refuses ...);
            SourceConflict: the cluster's history comes from its metadata log."""
        from confluent_kafka.admin import AdminClient

        from kafka_archive.client_log import CLIENT_LOG_SETTINGS
        from kafka_archive.kafka_protocol.config import librdkafka_config
        from kafka_archive.metadata_history.admin import read_admin_state, record_admin_snapshot

        # the cluster is asked first: an unreachable one creates no catalog
        admin = AdminClient(librdkafka_config({**CLIENT_LOG_SETTINGS, **client_config}))
        taken = now_ms() if at_ms is None else at_ms
        snap = read_admin_state(admin, timeout_s=timeout_s)
        with self.resources.catalog(create=True).engine.begin() as conn:
            n = record_admin_snapshot(conn, cluster, snap, taken)
        return SnapshotReport(cluster, taken, n, snap.acls_available)
