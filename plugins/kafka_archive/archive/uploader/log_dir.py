"""One log dir's upload step: its planned tasks on a small thread pool, stopping on a dead store.

Contract: :func:`archive_log_dir` runs every task of a
:class:`~kafka_archive.archive.planner.LogDirPlan` and returns the outcomes in plan order. A
store that is unreachable or refuses the credentials sets the run's :class:`StopSignal` (shared
by its log dirs): the remaining segments are reported as failed without being attempted,
instead of timing out one after the other. Other store, OS and manifest errors fail only the
segment.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from kafka_archive.archive.manifest import InvalidManifest
from kafka_archive.archive.planner import LogDirPlan, SegmentTask
from kafka_archive.archive.report import SegmentOutcome
from kafka_archive.archive.uploader.outcomes import failed_outcome
from kafka_archive.archive.uploader.segment import archive_segment
from kafka_archive.store import AccessDenied, ObjectStore, StoreError, StoreUnavailable

__all__ = ["StopSignal", "archive_log_dir"]


class StopSignal:
    """Shared by the log dirs of one run: set by the first fatal store error (unreachable
    store, refused credentials), after which no further segment is attempted."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.reason: BaseException | None = None

    def set(self, reason: BaseException) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
                self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


def archive_log_dir(
    store: ObjectStore,
    plan: LogDirPlan,
    *,
    dry_run: bool = False,
    concurrency: int = 4,
    on_outcome: Callable[[SegmentOutcome], None] | None = None,
    stop: StopSignal | None = None,
) -> list[SegmentOutcome]:
    """Run every task of one log dir's plan; outcomes in plan order."""
    tasks: Sequence[SegmentTask] = plan.tasks
    host = socket.gethostname()
    signal = stop or StopSignal()

    def run(task: SegmentTask) -> SegmentOutcome:
        if signal.is_set() and signal.reason is not None:
            return failed_outcome(
                task,
                signal.reason,
                f"not attempted: the store failed earlier in this run ({signal.reason})",
            )
        try:
            return archive_segment(store, task, dry_run=dry_run, hostname=host)
        except (StoreUnavailable, AccessDenied) as exc:
            signal.set(exc)
            return failed_outcome(task, exc)
        except (StoreError, OSError, InvalidManifest) as exc:
            return failed_outcome(task, exc)

    results: dict[int, SegmentOutcome] = {}
    with ThreadPoolExecutor(
        max_workers=max(1, concurrency), thread_name_prefix="kafka-archive-upload"
    ) as pool:
        futures = {pool.submit(run, t): i for i, t in enumerate(tasks)}
        for fut in as_completed(futures):
            outcome = fut.result()
            results[futures[fut]] = outcome
            if on_outcome is not None:
                on_outcome(outcome)
    return [results[i] for i in range(len(tasks))]
