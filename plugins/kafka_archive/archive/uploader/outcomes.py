"""The outcome of one segment task, as the archive report records it.

Contract: :func:`outcome` fills a :class:`~kafka_archive.archive.report.SegmentOutcome` with
the task's segment (cluster, broker, log dir, partition, range, manifest key) and the given
status and fields; :func:`failed_outcome` is the ``failed`` outcome of an exception
(``store_error`` for a store's error, ``error`` otherwise).
"""

from __future__ import annotations

from typing import Any

from kafka_archive.archive.discovery import ProblemInfo
from kafka_archive.archive.planner import SegmentTask
from kafka_archive.archive.report import SegmentOutcome, SegmentStatus
from kafka_archive.store import StoreError

__all__ = ["failed_outcome", "outcome"]


def outcome(task: SegmentTask, status: SegmentStatus, **kw: Any) -> SegmentOutcome:
    c = task.candidate
    kw.setdefault("manifest_key", task.manifest_key)
    return SegmentOutcome(
        cluster=c.cluster,
        broker_id=c.broker_id,
        log_dir=c.log_dir,
        topic=c.topic,
        partition=c.partition,
        base_offset=c.base_offset,
        end_offset=c.end_offset,
        status=status,
        log_mtime_ms=c.mtime_ms,
        **kw,
    )


def failed_outcome(
    task: SegmentTask, exc: BaseException, detail: str | None = None
) -> SegmentOutcome:
    problem = ProblemInfo.from_exception(exc)
    return outcome(
        task,
        SegmentStatus.FAILED,
        manifest_key=None,
        detail=detail or f"{problem.error}: {exc}",
        error=problem,
        reason="store_error" if isinstance(exc, StoreError) else "error",
    )
