"""Bookkeeping of one replay transaction: its runs and the source->target offset ranges.

A *run* (:class:`Run`) is a stretch of records of one source batch produced to one target
partition; delivery callbacks are attached only to its first and last record, which fill in
its target offsets. In ``same`` mapping a run is a stretch of consecutive source offsets
(:func:`same_runs`: source gaps split runs); in hashed mappings it is a batch's records for one
target partition and only its bounds are exact (:func:`hashed_runs`). :class:`OpenTxn` collects
the runs and counters of the open transaction; at commit :func:`merge_runs` joins its runs into
the :class:`~.progress.OffsetRange` s the progress record carries, and :func:`next_progress`
makes that record (counters cumulative over the previous one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError

from kafka_archive.replay.execution.progress import OffsetRange, ProgressRecord
from kafka_archive.replay.execution.reader import ReaderStats
from kafka_archive.timeparse import now_ms
from segment_lib.records import Record

__all__ = ["OpenTxn", "Run", "hashed_runs", "merge_runs", "next_progress", "same_runs"]


@dataclass(slots=True)
class Run:
    """A run of records produced to one target partition, bounds filled by delivery reports."""

    target_partition: int
    source_first: int
    source_last: int
    count: int
    target_first: int = -1
    target_last: int = -1

    def first(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.target_first = msg.offset()

    def last(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.target_last = msg.offset()

    def both(self, err: KafkaError | None, msg: Any) -> None:
        if err is None:
            self.target_first = self.target_last = msg.offset()


@dataclass(slots=True)
class OpenTxn:
    """The open transaction: its runs, source offsets, counters and delivery errors."""

    runs: list[Run] = field(default_factory=list)
    records: int = 0
    bytes: int = 0
    first_offset: int = -1
    last_offset: int = -1
    started: float = 0.0
    errors: list[str] = field(default_factory=list)

    def add(self, runs: Iterable[Run], first: int, last: int, records: int, nbytes: int) -> None:
        """Book one produced source batch: its runs, source offsets ``first..last``, counts."""
        self.runs.extend(runs)
        if self.first_offset < 0:
            self.first_offset = first
        self.last_offset = last
        self.records += records
        self.bytes += nbytes


def same_runs(group: list[Record], q: int) -> list[tuple[Run, list[Record]]]:
    """``same`` mapping: one run per stretch of consecutive source offsets (usually one)."""
    first, last = group[0].offset, group[-1].offset
    if last - first == len(group) - 1:
        return [(Run(q, first, last, len(group)), group)]
    out: list[tuple[Run, list[Record]]] = []
    start = 0
    for i in range(1, len(group) + 1):
        if i == len(group) or group[i].offset != group[i - 1].offset + 1:
            members = group[start:i]
            out.append((Run(q, members[0].offset, members[-1].offset, len(members)), members))
            start = i
    return out


def hashed_runs(group: list[Record], targets: list[int]) -> list[tuple[Run, list[Record]]]:
    """Hashed mappings: one run per target partition of the batch (only its bounds exact)."""
    by_q: dict[int, list[Record]] = {}
    for r, q in zip(group, targets, strict=True):
        by_q.setdefault(q, []).append(r)
    return [
        (Run(q, members[0].offset, members[-1].offset, len(members)), members)
        for q, members in by_q.items()
    ]


def merge_runs(runs: list[Run]) -> list[OffsetRange]:
    """Merge a transaction's runs into ranges: per target partition, consecutive runs join when
    both their source and target offsets continue exactly."""
    out: list[OffsetRange] = []
    by_q: dict[int, list[Run]] = {}
    for run in runs:
        by_q.setdefault(run.target_partition, []).append(run)
    for q in sorted(by_q):
        cur: Run | None = None
        for run in by_q[q]:
            exact = (
                run.source_last - run.source_first
                == run.target_last - run.target_first
                == run.count - 1
            )
            if (
                cur is not None
                and exact
                and cur.source_last - cur.source_first
                == cur.target_last - cur.target_first
                == cur.count - 1
                and run.source_first == cur.source_last + 1
                and run.target_first == cur.target_last + 1
            ):
                cur.source_last = run.source_last
                cur.target_last = run.target_last
                cur.count += run.count
                continue
            if cur is not None:
                out.append(_range(cur))
            cur = Run(
                q, run.source_first, run.source_last, run.count, run.target_first, run.target_last
            )
        if cur is not None:
            out.append(_range(cur))
    return out


def _range(run: Run) -> OffsetRange:
    return OffsetRange(
        target_partition=run.target_partition,
        source_first=run.source_first,
        source_last=run.source_last,
        target_first=run.target_first,
        target_last=run.target_last,
        count=run.count,
    )


def next_progress(
    prev: ProgressRecord | None,
    txn: OpenTxn,
    stats: ReaderStats,
    ranges: list[OffsetRange],
    *,
    replay_id: str,
    source_cluster: str,
    source_topic: str,
    source_partition: int,
    target_topic: str,
    next_offset: int,
    end_offset: int,
    txn_seq: int,
    done: bool,
) -> ProgressRecord:
    """The progress record committed with ``txn``: the position ``next_offset``, counters
    cumulative over ``prev`` (the last committed record) plus ``txn``'s and the reader's
    ``stats`` since then, and ``txn``'s offset ``ranges``."""
    return ProgressRecord(
        replay_id=replay_id,
        source_cluster=source_cluster,
        source_topic=source_topic,
        source_partition=source_partition,
        target_topic=target_topic,
        next_offset=next_offset,
        end_offset=end_offset,
        txn_seq=txn_seq,
        records_sent=(prev.records_sent if prev else 0) + txn.records,
        first_offset=(
            prev.first_offset if prev is not None and prev.first_offset >= 0 else txn.first_offset
        ),
        last_offset=txn.last_offset if txn.last_offset >= 0 else (prev.last_offset if prev else -1),
        aborted_records=(prev.aborted_records if prev else 0) + stats.aborted_records,
        control_batches=(prev.control_batches if prev else 0) + stats.control_batches,
        filtered_records=(prev.filtered_records if prev else 0) + stats.filtered_records,
        open_txn_records=(prev.open_txn_records if prev else 0) + stats.open_txn_records,
        done=done,
        updated_at_ms=now_ms(),
        ranges=ranges,
    )
