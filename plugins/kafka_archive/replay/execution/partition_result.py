"""What replaying one partition did: :class:`PartitionResult`, the engine's answer per partition.

Made by :class:`~.engine.PartitionReplay` from the final committed progress record (counters
cumulative over resumes) and this run's own counts (``*_this_run``); the runner collects them
into its report, the Spark job ships them as :meth:`PartitionResult.to_dict`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kafka_archive.replay.execution.progress import ProgressRecord
from kafka_archive.replay.planning.plan import PartitionPlan

__all__ = ["PartitionResult"]


@dataclass(slots=True)
class PartitionResult:
    """What one partition's replay did (cumulative over resumes, except ``*_this_run``)."""

    partition: int
    start_offset: int
    end_offset: int
    first_offset: int
    last_offset: int
    records: int
    records_this_run: int
    bytes_this_run: int
    transactions_this_run: int
    aborted_records: int
    control_batches: int
    filtered_records: int
    open_txn_records: int
    open_txns: list[tuple[int, int]]
    status: str  # done | already-done | incomplete (stopped at the last stable offset)
    resumed_from: int | None
    duration_s: float
    retries: int = 0
    #: the next source offset to deliver (``end_offset`` once done)
    next_offset: int = -1
    #: how records travelled: ``batches`` (the archived batches, re-stamped) or ``records``
    path: str = "records"
    #: why the path is what it is, when that is worth saying (a fallback, re-encoded batches)
    path_note: str = ""

    @classmethod
    def of(
        cls,
        progress: ProgressRecord,
        part: PartitionPlan,
        *,
        resumed_from: int | None,
        started: float,
        this_run: Sequence[int],
        retries: int,
        status: str,
        open_txns: list[tuple[int, int]],
    ) -> PartitionResult:
        """The result from the final committed ``progress``, this run's ``(records, bytes,
        transactions)`` and the transactions left open at the archive's end (``status`` done
        or incomplete; ``next_offset`` is where an incomplete one stopped)."""
        records, nbytes, txns = this_run
        return cls(
            partition=part.partition,
            start_offset=part.start_offset,
            end_offset=part.end_offset,
            first_offset=progress.first_offset,
            last_offset=progress.last_offset,
            records=progress.records_sent,
            records_this_run=records,
            bytes_this_run=nbytes,
            transactions_this_run=txns,
            aborted_records=progress.aborted_records,
            control_batches=progress.control_batches,
            filtered_records=progress.filtered_records,
            open_txn_records=progress.open_txn_records,
            open_txns=list(open_txns if status in ("done", "incomplete") else []),
            next_offset=progress.next_offset,
            status=status,
            resumed_from=resumed_from,
            duration_s=time.monotonic() - started,
            retries=retries,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "records": self.records,
            "records_this_run": self.records_this_run,
            "bytes_this_run": self.bytes_this_run,
            "transactions_this_run": self.transactions_this_run,
            "skipped_aborted_records": self.aborted_records,
            "skipped_control_batches": self.control_batches,
            "filtered_records": self.filtered_records,
            "open_txn_records": self.open_txn_records,
            "open_txns": [list(t) for t in self.open_txns],
            "status": self.status,
            "resumed_from": self.resumed_from,
            "duration_s": round(self.duration_s, 3),
            "retries": self.retries,
            "next_offset": self.next_offset,
            "path": self.path,
            "path_note": self.path_note,
        }
