"""The platform's health facts, read from the catalog in a few aggregate queries.

:func:`read_snapshot` is the one place that knows which table says what: both the metrics
(:mod:`kafka_archive.metrics.collector`) and the status view
(:mod:`kafka_archive.services.status`) are computed from its :class:`Snapshot`. Plain SQL on
the tables' names (stable, owned by migrations) so that it needs no ORM class of the replay:
it works on SQLite and PostgreSQL alike, and its cost is bounded by the number of partitions,
brokers and active replays, never by the number of segments returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from kafka_archive.catalog.db import Catalog

__all__ = [
    "ActiveReplay",
    "BrokerArchive",
    "BuildRuns",
    "FollowerPartition",
    "PartitionArchive",
    "PruneState",
    "Snapshot",
    "TopicStore",
    "read_snapshot",
]

#: replay statuses that are still working (``replay_runs.status``)
ACTIVE_REPLAY_STATUSES = ("planned", "running")


@dataclass(frozen=True, slots=True)
class PartitionArchive:
    """What the catalog holds of one partition: ``end_offset`` is one past the highest offset
    it can serve (-1: nothing served), ``max_timestamp_ms`` the newest record timestamp it
    serves, ``last_archived_ms`` when its newest segment version was archived."""

    cluster: str
    topic: str
    partition: int
    end_offset: int
    max_timestamp_ms: int
    last_archived_ms: int


@dataclass(frozen=True, slots=True)
class BrokerArchive:
    """The newest archived segment of one broker (``broker`` ``""``: segments fetched over the
    protocol, which name no broker)."""

    cluster: str
    broker: str
    last_archived_ms: int
    segments: int


@dataclass(frozen=True, slots=True)
class TopicStore:
    """Stored segment versions (not pruned) of one topic and their bytes."""

    cluster: str
    topic: str
    segments: int
    bytes: int


@dataclass(frozen=True, slots=True)
class BuildRuns:
    """Catalog builds: how many per status, the newest success and the newest failure (ms;
    0: none)."""

    by_status: dict[str, int]
    last_success_ms: int
    last_failure_ms: int
    last_failure_summary: str
    running: int


@dataclass(frozen=True, slots=True)
class FollowerPartition:
    """The offsets follower's stored position on one ``__consumer_offsets`` partition."""

    cluster: str
    partition: int
    next_offset: int
    updated_at_ms: int


@dataclass(frozen=True, slots=True)
class PruneState:
    """Prunes of one cluster: ranges done, ranges planned but not finished (a prune that
    stopped between its plan and its deletes), the newest completion, the oldest unfinished
    plan (ms; 0: none)."""

    cluster: str
    done: int
    unfinished: int
    last_done_ms: int
    oldest_unfinished_ms: int
    bytes_pruned: int


@dataclass(frozen=True, slots=True)
class ActiveReplay:
    """A replay still planned or running: its records sent so far, records left (offsets
    between each unfinished partition's position and its end), partitions done of all, and
    its last progress (ms)."""

    replay_id: str
    cluster: str
    topic: str
    status: str
    created_ms: int
    last_progress_ms: int
    records_sent: int
    offsets_remaining: int
    partitions: int
    partitions_done: int


@dataclass(slots=True)
class Snapshot:
    """Everything :func:`read_snapshot` read, at ``now_ms``."""

    now_ms: int
    partitions: list[PartitionArchive] = field(default_factory=list)
    brokers: list[BrokerArchive] = field(default_factory=list)
    topics: list[TopicStore] = field(default_factory=list)
    builds: BuildRuns = field(default_factory=lambda: BuildRuns({}, 0, 0, "", 0))
    integrity: dict[str, int] = field(default_factory=dict)
    #: (cluster, topic, kind) -> number of coverage problems (missing, overlap, divergent, corrupt)
    coverage: dict[tuple[str, str, str], int] = field(default_factory=dict)
    follower: list[FollowerPartition] = field(default_factory=list)
    prunes: list[PruneState] = field(default_factory=list)
    replays_by_status: dict[str, int] = field(default_factory=dict)
    active_replays: list[ActiveReplay] = field(default_factory=list)


def _i(value: Any) -> int:
    return int(value) if value is not None else 0


def read_snapshot(catalog: Catalog, *, now_ms: int | None = None) -> Snapshot:
    """Read the health facts of ``catalog`` in one connection (one consistent-enough view:
    each query is an aggregate; no locks are taken)."""
    snap = Snapshot(now_ms=int(time.time() * 1000) if now_ms is None else now_ms)
    with catalog.engine.connect() as conn:
        _archive(conn, snap)
        _builds(conn, snap)
        _problems(conn, snap)
        _follower(conn, snap)
        _prunes(conn, snap)
        _replays(conn, snap)
    return snap


def _archive(conn: Connection, snap: Snapshot) -> None:
    # serving segments give the end; every segment that is not pruned gives the archive time
    rows = conn.execute(
        text(
            "SELECT p.cluster, p.topic, p.partition, "
            "MAX(CASE WHEN s.status IN ('canonical', 'partial') THEN "
            "  CASE WHEN s.end_offset > s.last_offset THEN s.end_offset ELSE s.last_offset + 1 END "
            "  ELSE -1 END), "
            "MAX(CASE WHEN s.status IN ('canonical', 'partial') THEN s.max_timestamp ELSE -1 END), "
            "MAX(s.archived_at_ms) "
            "FROM partitions p JOIN segments s ON s.partition_id = p.id "
            "WHERE s.status <> 'pruned' "
            "GROUP BY p.cluster, p.topic, p.partition "
            "ORDER BY p.cluster, p.topic, p.partition"
        )
    ).all()
    snap.partitions = [
        PartitionArchive(str(r[0]), str(r[1]), int(r[2]), _i(r[3]), _i(r[4]), _i(r[5]))
        for r in rows
    ]
    rows = conn.execute(
        text(
            "SELECT p.cluster, s.broker_id, MAX(s.archived_at_ms), COUNT(*) "
            "FROM partitions p JOIN segments s ON s.partition_id = p.id "
            "GROUP BY p.cluster, s.broker_id ORDER BY p.cluster, s.broker_id"
        )
    ).all()
    snap.brokers = [
        BrokerArchive(str(r[0]), "" if r[1] is None else str(r[1]), _i(r[2]), _i(r[3]))
        for r in rows
    ]
    rows = conn.execute(
        text(
            "SELECT p.cluster, p.topic, COUNT(*), SUM(s.size_bytes) "
            "FROM partitions p JOIN segments s ON s.partition_id = p.id "
            "WHERE s.status <> 'pruned' GROUP BY p.cluster, p.topic ORDER BY p.cluster, p.topic"
        )
    ).all()
    snap.topics = [TopicStore(str(r[0]), str(r[1]), _i(r[2]), _i(r[3])) for r in rows]


def _builds(conn: Connection, snap: Snapshot) -> None:
    rows = conn.execute(
        text("SELECT status, COUNT(*), MAX(finished_at_ms) FROM build_runs GROUP BY status")
    ).all()
    by_status = {str(r[0]): int(r[1]) for r in rows}
    # a build that finished writes "ok" ("done" in older docs): both are a success
    success = max((_i(r[2]) for r in rows if r[0] in ("ok", "done")), default=0)
    fail_row = conn.execute(
        text(
            "SELECT COALESCE(finished_at_ms, heartbeat_ms, started_at_ms), summary "
            "FROM build_runs WHERE status IN ('failed', 'stale') "
            "ORDER BY COALESCE(finished_at_ms, heartbeat_ms, started_at_ms) DESC LIMIT 1"
        )
    ).first()
    snap.builds = BuildRuns(
        by_status,
        success,
        _i(fail_row[0]) if fail_row else 0,
        str(fail_row[1] or "") if fail_row else "",
        by_status.get("running", 0),
    )


def _problems(conn: Connection, snap: Snapshot) -> None:
    rows = conn.execute(
        text("SELECT kind, COUNT(*) FROM integrity_problems GROUP BY kind ORDER BY kind")
    ).all()
    snap.integrity = {str(r[0]): int(r[1]) for r in rows}
    rows = conn.execute(
        text(
            "SELECT p.cluster, p.topic, g.kind, COUNT(*) "
            "FROM partitions p JOIN coverage_gaps g ON g.partition_id = p.id "
            "GROUP BY p.cluster, p.topic, g.kind"
        )
    ).all()
    snap.coverage = {(str(r[0]), str(r[1]), str(r[2])): int(r[3]) for r in rows}


def _follower(conn: Connection, snap: Snapshot) -> None:
    rows = conn.execute(
        text(
            "SELECT cluster, source_partition, next_offset, updated_at_ms "
            "FROM offsets_follower_positions ORDER BY cluster, source_partition"
        )
    ).all()
    snap.follower = [FollowerPartition(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]


def _prunes(conn: Connection, snap: Snapshot) -> None:
    rows = conn.execute(
        text(
            "SELECT cluster, "
            "SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END), "
            "SUM(CASE WHEN status = 'done' THEN 0 ELSE 1 END), "
            "MAX(CASE WHEN status = 'done' THEN pruned_at_ms ELSE 0 END), "
            "MIN(CASE WHEN status = 'done' THEN NULL ELSE planned_at_ms END), "
            "SUM(CASE WHEN status = 'done' THEN bytes ELSE 0 END) "
            "FROM pruned_ranges GROUP BY cluster ORDER BY cluster"
        )
    ).all()
    snap.prunes = [
        PruneState(str(r[0]), _i(r[1]), _i(r[2]), _i(r[3]), _i(r[4]), _i(r[5])) for r in rows
    ]


def _replays(conn: Connection, snap: Snapshot) -> None:
    rows = conn.execute(text("SELECT status, COUNT(*) FROM replay_runs GROUP BY status")).all()
    snap.replays_by_status = {str(r[0]): int(r[1]) for r in rows}
    rows = conn.execute(
        text(
            "SELECT r.replay_id, r.cluster, r.topic, r.status, r.created_at_ms, r.updated_at_ms, "
            "COALESCE(SUM(p.records_sent), 0), "
            "COALESCE(SUM(CASE WHEN p.done THEN 0 "
            "  WHEN p.end_offset > p.next_offset THEN p.end_offset - p.next_offset "
            "  ELSE 0 END), 0), "
            "COUNT(p.source_partition), "
            "COALESCE(SUM(CASE WHEN p.done THEN 1 ELSE 0 END), 0), "
            "MAX(p.updated_at_ms) "
            "FROM replay_runs r LEFT JOIN replay_progress p ON p.replay_id = r.replay_id "
            "WHERE r.status IN ('planned', 'running') "
            "GROUP BY r.replay_id, r.cluster, r.topic, r.status, r.created_at_ms, r.updated_at_ms "
            "ORDER BY r.created_at_ms"
        )
    ).all()
    snap.active_replays = [
        ActiveReplay(
            replay_id=str(r[0]),
            cluster=str(r[1]),
            topic=str(r[2]),
            status=str(r[3]),
            created_ms=_i(r[4]),
            last_progress_ms=max(_i(r[5]), _i(r[10])),
            records_sent=_i(r[6]),
            offsets_remaining=_i(r[7]),
            partitions=_i(r[8]),
            partitions_done=_i(r[9]),
        )
        for r in rows
    ]
