"""The catalog mirror of replays: runs, per-partition progress and offset ranges (SQL).

Written *after* each committed target transaction; the target's progress topic stays the
authority (see :mod:`kafka_archive.replay.execution.progress`). :meth:`ReplayLedger.mirror` is
idempotent and monotone: a progress record older than (or equal to) what the row holds changes
nothing, and ranges are keyed by ``(replay, source partition, target partition, source_first)``, so
replaying the same progress record twice (e.g. once from the engine, once from a resume that re-read
it from Kafka) leaves one copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, Row, bindparam, delete, insert, select, update

from kafka_archive.replay.bookkeeping.tables import (
    replay_offset_ranges,
    replay_progress,
    replay_runs,
)
from kafka_archive.replay.execution.progress import OffsetRange, ProgressRecord
from kafka_archive.replay.planning.completeness import FINISHED_STATUSES
from kafka_archive.replay.planning.plan import ReplayPlan
from kafka_archive.timeparse import now_ms

#: a row of ``replay_runs``, ``replay_progress`` or ``replay_offset_ranges``: its columns are
#: attributes, named as on the ORM classes of :mod:`~kafka_archive.replay.bookkeeping.models`
LedgerRow = Row[Any]

__all__ = ["LedgerRow", "MirroredProgress", "RangeRow", "ReplayLedger"]


@dataclass(frozen=True, slots=True)
class RangeRow:
    """A row of ``replay_offset_ranges`` (see
    :class:`~kafka_archive.replay.bookkeeping.models.ReplayOffsetRangeRow`); not a
    :class:`~sqlalchemy.Row`, whose ``count`` is the tuple method, not the column."""

    replay_id: str
    source_partition: int
    target_partition: int
    source_first: int
    source_last: int
    target_first: int
    target_last: int
    count: int
    txn_seq: int


@dataclass(frozen=True, slots=True)
class MirroredProgress:
    """The catalog's view of one partition's progress."""

    record: ProgressRecord
    progress_partition: int
    progress_offset: int


class ReplayLedger:
    """Replay bookkeeping in the catalog database (``engine``: the catalog's engine, migrated).

    Runs on SQLAlchemy Core: every replay registers and reads its run here before its first
    record, and the ORM's import and mapper configuration cost more than all of these
    statements (issue 27). Rows are returned as read-only :data:`LedgerRow` objects."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str | None) -> ReplayLedger:
        """Open (and migrate) the catalog at ``url`` or ``$KAFKA_ARCHIVE_DB``."""
        from kafka_archive.catalog.db import open_catalog

        return cls(open_catalog(url).engine)

    # -- runs ------------------------------------------------------------------------------------

    def register(self, plan: ReplayPlan) -> LedgerRow:
        """Record ``plan`` (once; a known replay id keeps its row, updated only when the
        ``allow_gaps`` choice changed) and return its run row."""
        with self.engine.begin() as conn:
            run = _run_row(conn, plan.replay_id)
            if run is None:
                now = now_ms()
                conn.execute(
                    insert(replay_runs).values(
                        replay_id=plan.replay_id,
                        cluster=plan.spec.cluster,
                        topic=plan.spec.topic,
                        target=plan.spec.target.identity(),
                        target_topic=plan.target_topic,
                        partition_mapping=plan.spec.partition_mapping,
                        status="planned",
                        plan_json=plan.to_json(),
                        created_at_ms=now,
                        updated_at_ms=now,
                        finished_at_ms=None,
                        error=None,
                    )
                )
            elif ReplayPlan.from_json(run.plan_json).spec.allow_gaps != plan.spec.allow_gaps:
                # the same replay run again with(out) --allow-gaps: the stored plan records the
                # choice of the run that goes ahead (``replay status`` shows it)
                conn.execute(
                    update(replay_runs)
                    .where(replay_runs.c.replay_id == plan.replay_id)
                    .values(plan_json=plan.to_json())
                )
            else:
                return run
            row = _run_row(conn, plan.replay_id)
        assert row is not None  # (written in this transaction)
        return row

    def set_status(self, replay_id: str, status: str, *, error: str | None = None) -> None:
        now = now_ms()
        values: dict[str, Any] = {"status": status, "updated_at_ms": now, "error": error}
        if status in FINISHED_STATUSES:
            values["finished_at_ms"] = now
        with self.engine.begin() as conn:
            conn.execute(
                update(replay_runs).where(replay_runs.c.replay_id == replay_id).values(**values)
            )

    def run(self, replay_id: str) -> LedgerRow | None:
        with self.engine.connect() as conn:
            return _run_row(conn, replay_id)

    def plan(self, replay_id: str) -> ReplayPlan | None:
        run = self.run(replay_id)
        return None if run is None else ReplayPlan.from_json(run.plan_json)

    def runs(self, *, cluster: str | None = None, topic: str | None = None) -> list[LedgerRow]:
        q = select(replay_runs).order_by(replay_runs.c.created_at_ms)
        if cluster:
            q = q.where(replay_runs.c.cluster == cluster)
        if topic:
            q = q.where(replay_runs.c.topic == topic)
        with self.engine.connect() as conn:
            return list(conn.execute(q))

    # -- progress --------------------------------------------------------------------------------

    def progress(self, replay_id: str, partition: int) -> MirroredProgress | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(replay_progress).where(
                    replay_progress.c.replay_id == replay_id,
                    replay_progress.c.source_partition == partition,
                )
            ).first()
            if row is None:
                return None
            run = _run_row(conn, replay_id)
        return MirroredProgress(_record_of(row, run), row.progress_partition, row.progress_offset)

    def all_progress(self, replay_id: str) -> list[LedgerRow]:
        q = (
            select(replay_progress)
            .where(replay_progress.c.replay_id == replay_id)
            .order_by(replay_progress.c.source_partition)
        )
        with self.engine.connect() as conn:
            return list(conn.execute(q))

    def mirror(self, record: ProgressRecord, progress_partition: int, progress_offset: int) -> bool:
        """Store ``record`` (and its ranges) unless the row already holds it or a newer one.
        Returns whether anything changed.

        Called after every committed replay transaction, so it runs prebuilt Core statements
        (one select, one insert or update, and for the ranges one select and one insert):
        building statements or going through the ORM costs several times more per call."""
        rid, spart = record.replay_id, record.source_partition
        values = {
            "next_offset": record.next_offset,
            "end_offset": record.end_offset,
            "txn_seq": record.txn_seq,
            "records_sent": record.records_sent,
            "first_offset": record.first_offset,
            "last_offset": record.last_offset,
            "aborted_records": record.aborted_records,
            "control_batches": record.control_batches,
            "filtered_records": record.filtered_records,
            "open_txn_records": record.open_txn_records,
            "done": record.done,
            "progress_partition": progress_partition,
            "progress_offset": progress_offset,
            "updated_at_ms": record.updated_at_ms or now_ms(),
        }
        with self.engine.begin() as conn:
            seq = conn.execute(_PROGRESS_SEQ, {"b_rid": rid, "b_sp": spart}).scalar_one_or_none()
            if seq is not None and seq >= record.txn_seq:
                return False
            if seq is None:
                conn.execute(
                    _PROGRESS_INSERT, {"replay_id": rid, "source_partition": spart, **values}
                )
            else:
                conn.execute(_PROGRESS_UPDATE, {"b_rid": rid, "b_sp": spart, **values})
            if record.ranges:
                known = {
                    (q, first)
                    for q, first in conn.execute(
                        _RANGES_KNOWN,
                        {
                            "b_rid": rid,
                            "b_sp": spart,
                            "b_firsts": sorted({r.source_first for r in record.ranges}),
                        },
                    )
                }
                rows = [
                    {
                        "replay_id": rid,
                        "source_partition": spart,
                        "target_partition": r.target_partition,
                        "source_first": r.source_first,
                        "source_last": r.source_last,
                        "target_first": r.target_first,
                        "target_last": r.target_last,
                        "count": r.count,
                        "txn_seq": record.txn_seq,
                    }
                    for r in record.ranges
                    if (r.target_partition, r.source_first) not in known
                ]
                if rows:
                    conn.execute(_RANGES_INSERT, rows)
            return True

    def ranges(self, replay_id: str, source_partition: int | None = None) -> list[RangeRow]:
        r = replay_offset_ranges.c
        q = select(replay_offset_ranges).where(r.replay_id == replay_id)
        if source_partition is not None:
            q = q.where(r.source_partition == source_partition)
        with self.engine.connect() as conn:
            rows = conn.execute(q.order_by(r.source_partition, r.target_partition, r.source_first))
            return [RangeRow(**row._mapping) for row in rows]

    def forget(self, replay_id: str) -> None:
        """Remove every row of ``replay_id`` (tests and operators cleaning up)."""
        with self.engine.begin() as conn:
            for table in (replay_offset_ranges, replay_progress, replay_runs):
                conn.execute(delete(table).where(table.c.replay_id == replay_id))


def _run_row(conn: Connection, replay_id: str) -> LedgerRow | None:
    return conn.execute(select(replay_runs).where(replay_runs.c.replay_id == replay_id)).first()


# the statements of ReplayLedger.mirror, built once (parameters: b_* for keys, columns by name)
_P, _R = replay_progress.c, replay_offset_ranges.c
_PROGRESS_SEQ = select(_P.txn_seq).where(
    _P.replay_id == bindparam("b_rid"), _P.source_partition == bindparam("b_sp")
)
_PROGRESS_INSERT = insert(replay_progress)
_PROGRESS_UPDATE = update(replay_progress).where(
    _P.replay_id == bindparam("b_rid"), _P.source_partition == bindparam("b_sp")
)
_RANGES_KNOWN = select(_R.target_partition, _R.source_first).where(
    _R.replay_id == bindparam("b_rid"),
    _R.source_partition == bindparam("b_sp"),
    _R.source_first.in_(bindparam("b_firsts", expanding=True)),
)
_RANGES_INSERT = insert(replay_offset_ranges)


def _record_of(row: LedgerRow, run: LedgerRow | None) -> ProgressRecord:
    return ProgressRecord(
        replay_id=row.replay_id,
        source_cluster=run.cluster if run else "",
        source_topic=run.topic if run else "",
        source_partition=row.source_partition,
        target_topic=run.target_topic if run else "",
        next_offset=row.next_offset,
        end_offset=row.end_offset,
        txn_seq=row.txn_seq,
        records_sent=row.records_sent,
        first_offset=row.first_offset,
        last_offset=row.last_offset,
        aborted_records=row.aborted_records,
        control_batches=row.control_batches,
        filtered_records=row.filtered_records,
        open_txn_records=row.open_txn_records,
        done=row.done,
        updated_at_ms=row.updated_at_ms,
    )


def ranges_as_models(rows: Sequence[RangeRow]) -> list[OffsetRange]:
    return [
        OffsetRange(
            target_partition=r.target_partition,
            source_first=r.source_first,
            source_last=r.source_last,
            target_first=r.target_first,
            target_last=r.target_last,
            count=r.count,
        )
        for r in rows
    ]
