"""The replay tables of the catalog (registered on the catalog's SQLAlchemy ``Base``).

They are a *mirror* of what the target cluster holds authoritatively (the progress topic, see
:mod:`kafka_archive.replay.execution.progress`), written after each committed transaction, for
display (``replay status``), for ``translate-group`` and as a fast path on resume. The schema is
created by the replay's own Alembic revisions (``replay/migrations/versions``, branch ``replay``,
run in the catalog database by :func:`kafka_archive.catalog.db.open_catalog`); these classes must
match it.

* ``replay_runs``: one row per replay id: the plan (JSON), status, timestamps.
* ``replay_progress``: per (replay, source partition): the newest mirrored progress record and
  where it lies in the progress topic.
* ``replay_leases``: the run currently holding a replay (revision ``r0002_replay_lease``; see
  :mod:`kafka_archive.replay.bookkeeping.lease`).
* ``replay_offset_ranges``: compact source->target offset ranges (run-length, one row per
  contiguous run per transaction, never one per message).
* ``restore_runs``: one row per whole-cluster restore (revision ``r0003_restore_runs``): its
  request, the replay id of each of its topics, status and report (see
  :mod:`kafka_archive.replay.bookkeeping.restores`).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from kafka_archive.catalog.models import Base

__all__ = [
    "ReplayLeaseRow",
    "ReplayOffsetRangeRow",
    "ReplayProgressRow",
    "ReplayRun",
    "RestoreRunRow",
]


class ReplayRun(Base):
    """One replay: what was asked, where it goes, and how far it is."""

    __tablename__ = "replay_runs"
    __table_args__ = (Index("ix_replay_runs_source", "cluster", "topic"),)

    replay_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    cluster: Mapped[str] = mapped_column(String(255))
    topic: Mapped[str] = mapped_column(String(255))
    target: Mapped[str] = mapped_column(String(1024))
    target_topic: Mapped[str] = mapped_column(String(255))
    partition_mapping: Mapped[str] = mapped_column(String(16))
    #: planned | running | complete | complete-with-gaps | failed ("done": before r0002)
    status: Mapped[str] = mapped_column(String(32))
    plan_json: Mapped[str] = mapped_column(Text)
    created_at_ms: Mapped[int] = mapped_column(BigInteger)
    updated_at_ms: Mapped[int] = mapped_column(BigInteger)
    finished_at_ms: Mapped[int | None] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)


class ReplayProgressRow(Base):
    """The newest mirrored progress of one source partition of a replay."""

    __tablename__ = "replay_progress"
    __table_args__ = ({"sqlite_with_rowid": False},)

    replay_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    source_partition: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    next_offset: Mapped[int] = mapped_column(BigInteger)
    end_offset: Mapped[int] = mapped_column(BigInteger)
    txn_seq: Mapped[int] = mapped_column(BigInteger)
    records_sent: Mapped[int] = mapped_column(BigInteger)
    first_offset: Mapped[int] = mapped_column(BigInteger)
    last_offset: Mapped[int] = mapped_column(BigInteger)
    aborted_records: Mapped[int] = mapped_column(BigInteger)
    control_batches: Mapped[int] = mapped_column(BigInteger)
    filtered_records: Mapped[int] = mapped_column(BigInteger)
    open_txn_records: Mapped[int] = mapped_column(BigInteger)
    done: Mapped[bool] = mapped_column(Boolean)
    progress_partition: Mapped[int] = mapped_column(Integer)
    progress_offset: Mapped[int] = mapped_column(BigInteger)
    updated_at_ms: Mapped[int] = mapped_column(BigInteger)


class ReplayOffsetRangeRow(Base):
    """Source offsets ``source_first..source_last`` of ``source_partition`` replayed to target
    offsets ``target_first..target_last`` of ``target_partition`` (``count`` records; exact
    offset-for-offset when both spans have ``count`` offsets)."""

    __tablename__ = "replay_offset_ranges"
    __table_args__ = (
        Index("ix_replay_ranges_lookup", "replay_id", "source_partition", "source_first"),
        {"sqlite_with_rowid": False},
    )

    replay_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    source_partition: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    target_partition: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    source_first: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    source_last: Mapped[int] = mapped_column(BigInteger)
    target_first: Mapped[int] = mapped_column(BigInteger)
    target_last: Mapped[int] = mapped_column(BigInteger)
    count: Mapped[int] = mapped_column(BigInteger)
    txn_seq: Mapped[int] = mapped_column(BigInteger)


class ReplayLeaseRow(Base):
    """The run holding a replay: at most one row (one live run) per replay id."""

    __tablename__ = "replay_leases"

    replay_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str] = mapped_column(String(255))
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    acquired_at_ms: Mapped[int] = mapped_column(BigInteger)
    heartbeat_ms: Mapped[int] = mapped_column(BigInteger)


class RestoreRunRow(Base):
    """One whole-cluster restore: the request as given (JSON, secrets redacted), its moment,
    the replay id of each topic (JSON ``{source topic: replay id}``), status and last report."""

    __tablename__ = "restore_runs"
    __table_args__ = (Index("ix_restore_runs_source", "cluster", "target"),)

    restore_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    cluster: Mapped[str] = mapped_column(String(255))
    target: Mapped[str] = mapped_column(String(1024))
    at_ms: Mapped[int] = mapped_column(BigInteger)
    #: planned | running | complete | complete-with-gaps | failed | abandoned
    status: Mapped[str] = mapped_column(String(32))
    request_json: Mapped[str] = mapped_column(Text)
    replays_json: Mapped[str] = mapped_column(Text)
    report_json: Mapped[str | None] = mapped_column(Text)
    created_at_ms: Mapped[int] = mapped_column(BigInteger)
    updated_at_ms: Mapped[int] = mapped_column(BigInteger)
    finished_at_ms: Mapped[int | None] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)
