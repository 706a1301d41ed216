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

from sqlalchemy import Engine, bindparam, delete, insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from kafka_archive.replay.bookkeeping.models import (
    ReplayOffsetRangeRow,
    ReplayProgressRow,
    ReplayRun,
)
from kafka_archive.replay.execution.progress import OffsetRange, ProgressRecord
from kafka_archive.replay.planning.completeness import FINISHED_STATUSES
from kafka_archive.replay.planning.plan import ReplayPlan
from kafka_archive.timeparse import now_ms

__all__ = ["MirroredProgress", "ReplayLedger"]


@dataclass(frozen=True, slots=True)
class MirroredProgress:
    """The catalog's view of one partition's progress."""

    record: ProgressRecord
    progress_partition: int
    progress_offset: int


class ReplayLedger:
    """Replay bookkeeping in the catalog database (``engine``: the catalog's engine, migrated)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @classmethod
    def open(cls, url: str | None) -> ReplayLedger:
        """Open (and migrate) the catalog at ``url`` or ``$KAFKA_ARCHIVE_DB``."""
        from kafka_archive.catalog.db import open_catalog

        return cls(open_catalog(url).engine)

    def session(self) -> Session:
        return self._sessions()

    # -- runs ------------------------------------------------------------------------------------

    def register(self, plan: ReplayPlan) -> ReplayRun:
        """Record ``plan`` (once; a known replay id keeps its row, updated only when the
        ``allow_gaps`` choice changed) and return its run row."""
        with self.session() as s, s.begin():
            run = s.get(ReplayRun, plan.replay_id)
            if run is None:
                now = now_ms()
                run = ReplayRun(
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
                s.add(run)
            elif ReplayPlan.from_json(run.plan_json).spec.allow_gaps != plan.spec.allow_gaps:
                # the same replay run again with(out) --allow-gaps: the stored plan records the
                # choice of the run that goes ahead (``replay status`` shows it)
                run.plan_json = plan.to_json()
            return run

    def set_status(self, replay_id: str, status: str, *, error: str | None = None) -> None:
        with self.session() as s, s.begin():
            run = s.get(ReplayRun, replay_id)
            if run is None:
                return
            run.status = status
            run.updated_at_ms = now_ms()
            run.error = error
            if status in FINISHED_STATUSES:
                run.finished_at_ms = run.updated_at_ms

    def run(self, replay_id: str) -> ReplayRun | None:
        with self.session() as s:
            return s.get(ReplayRun, replay_id)

    def plan(self, replay_id: str) -> ReplayPlan | None:
        run = self.run(replay_id)
        return None if run is None else ReplayPlan.from_json(run.plan_json)

    def runs(self, *, cluster: str | None = None, topic: str | None = None) -> list[ReplayRun]:
        with self.session() as s:
            q = select(ReplayRun).order_by(ReplayRun.created_at_ms)
            if cluster:
                q = q.where(ReplayRun.cluster == cluster)
            if topic:
                q = q.where(ReplayRun.topic == topic)
            return list(s.scalars(q))

    # -- progress --------------------------------------------------------------------------------

    def progress(self, replay_id: str, partition: int) -> MirroredProgress | None:
        with self.session() as s:
            row = s.get(ReplayProgressRow, (replay_id, partition))
            if row is None:
                return None
            return MirroredProgress(_record_of(row, s), row.progress_partition, row.progress_offset)

    def all_progress(self, replay_id: str) -> list[ReplayProgressRow]:
        with self.session() as s:
            q = (
                select(ReplayProgressRow)
                .where(ReplayProgressRow.replay_id == replay_id)
                .order_by(ReplayProgressRow.source_partition)
            )
            return list(s.scalars(q))

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

    def ranges(
        self, replay_id: str, source_partition: int | None = None
    ) -> list[ReplayOffsetRangeRow]:
        with self.session() as s:
            q = select(ReplayOffsetRangeRow).where(ReplayOffsetRangeRow.replay_id == replay_id)
            if source_partition is not None:
                q = q.where(ReplayOffsetRangeRow.source_partition == source_partition)
            return list(
                s.scalars(
                    q.order_by(
                        ReplayOffsetRangeRow.source_partition,
                        ReplayOffsetRangeRow.target_partition,
                        ReplayOffsetRangeRow.source_first,
                    )
                )
            )

    def forget(self, replay_id: str) -> None:
        """Remove every row of ``replay_id`` (tests and operators cleaning up)."""
        with self.session() as s, s.begin():
            for model in (ReplayOffsetRangeRow, ReplayProgressRow):
                s.execute(delete(model).where(model.replay_id == replay_id))  # type: ignore[attr-defined]
            s.execute(delete(ReplayRun).where(ReplayRun.replay_id == replay_id))


# the statements of ReplayLedger.mirror, built once (parameters: b_* for keys, columns by name)
_P, _R = ReplayProgressRow, ReplayOffsetRangeRow
_PROGRESS_SEQ = select(_P.txn_seq).where(
    _P.replay_id == bindparam("b_rid"), _P.source_partition == bindparam("b_sp")
)
_PROGRESS_INSERT = insert(_P)
_PROGRESS_UPDATE = update(_P).where(
    _P.replay_id == bindparam("b_rid"), _P.source_partition == bindparam("b_sp")
)
_RANGES_KNOWN = select(_R.target_partition, _R.source_first).where(
    _R.replay_id == bindparam("b_rid"),
    _R.source_partition == bindparam("b_sp"),
    _R.source_first.in_(bindparam("b_firsts", expanding=True)),
)
_RANGES_INSERT = insert(_R)


def _record_of(row: ReplayProgressRow, s: Session) -> ProgressRecord:
    run = s.get(ReplayRun, row.replay_id)
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


def ranges_as_models(rows: Sequence[ReplayOffsetRangeRow]) -> list[OffsetRange]:
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
