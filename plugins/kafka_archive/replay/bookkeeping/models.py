"""The replay tables of the catalog (registered on the catalog's SQLAlchemy ``Base``).

They are a *mirror* of what the target cluster holds authoritatively (the progress topic, see
:mod:`kafka_archive.replay.execution.progress`), written after each committed transaction, for
display (``replay status``), for ``translate-group`` and as a fast path on resume. The schema is
created by the replay's own Alembic revisions (``replay/migrations/versions``, branch ``replay``,
run in the catalog database by :func:`kafka_archive.catalog.db.open_catalog`). The classes are
mapped onto the Core tables of :mod:`kafka_archive.replay.bookkeeping.tables` (``__table__``):
the columns are declared there once; a replay's start-up uses the tables and never imports
this module.

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

from sqlalchemy.orm import Mapped

from kafka_archive.catalog.models import Base
from kafka_archive.replay.bookkeeping import tables

__all__ = [
    "ReplayLeaseRow",
    "ReplayOffsetRangeRow",
    "ReplayProgressRow",
    "ReplayRun",
    "RestoreRunRow",
]


class ReplayRun(Base):
    """One replay: what was asked, where it goes, and how far it is."""

    __table__ = tables.replay_runs

    replay_id: Mapped[str]
    cluster: Mapped[str]
    topic: Mapped[str]
    target: Mapped[str]
    target_topic: Mapped[str]
    partition_mapping: Mapped[str]
    #: planned | running | complete | complete-with-gaps | failed ("done": before r0002)
    status: Mapped[str]
    plan_json: Mapped[str]
    created_at_ms: Mapped[int]
    updated_at_ms: Mapped[int]
    finished_at_ms: Mapped[int | None]
    error: Mapped[str | None]


class ReplayProgressRow(Base):
    """The newest mirrored progress of one source partition of a replay."""

    __table__ = tables.replay_progress

    replay_id: Mapped[str]
    source_partition: Mapped[int]
    next_offset: Mapped[int]
    end_offset: Mapped[int]
    txn_seq: Mapped[int]
    records_sent: Mapped[int]
    first_offset: Mapped[int]
    last_offset: Mapped[int]
    aborted_records: Mapped[int]
    control_batches: Mapped[int]
    filtered_records: Mapped[int]
    open_txn_records: Mapped[int]
    done: Mapped[bool]
    progress_partition: Mapped[int]
    progress_offset: Mapped[int]
    updated_at_ms: Mapped[int]


class ReplayOffsetRangeRow(Base):
    """Source offsets ``source_first..source_last`` of ``source_partition`` replayed to target
    offsets ``target_first..target_last`` of ``target_partition`` (``count`` records; exact
    offset-for-offset when both spans have ``count`` offsets)."""

    __table__ = tables.replay_offset_ranges

    replay_id: Mapped[str]
    source_partition: Mapped[int]
    target_partition: Mapped[int]
    source_first: Mapped[int]
    source_last: Mapped[int]
    target_first: Mapped[int]
    target_last: Mapped[int]
    count: Mapped[int]
    txn_seq: Mapped[int]


class ReplayLeaseRow(Base):
    """The run holding a replay: at most one row (one live run) per replay id."""

    __table__ = tables.replay_leases

    replay_id: Mapped[str]
    owner: Mapped[str]
    host: Mapped[str]
    pid: Mapped[int]
    acquired_at_ms: Mapped[int]
    heartbeat_ms: Mapped[int]


class RestoreRunRow(Base):
    """One whole-cluster restore: the request as given (JSON, secrets redacted), its moment,
    the replay id of each topic (JSON ``{source topic: replay id}``), status and last report."""

    __table__ = tables.restore_runs

    restore_id: Mapped[str]
    cluster: Mapped[str]
    target: Mapped[str]
    at_ms: Mapped[int]
    #: planned | running | complete | complete-with-gaps | failed | abandoned
    status: Mapped[str]
    request_json: Mapped[str]
    replays_json: Mapped[str]
    report_json: Mapped[str | None]
    created_at_ms: Mapped[int]
    updated_at_ms: Mapped[int]
    finished_at_ms: Mapped[int | None]
    error: Mapped[str | None]
