"""What extraction yields: the rows of one segment object (:class:`SegmentExtract`).

Plain values (named tuples and dataclasses), pickled from Spark executors back to the driver
and written by :mod:`kafka_archive.catalog.build.write` into the catalog's tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "CommitRow",
    "HistogramRow",
    "IntervalRow",
    "MarkerRow",
    "SegmentExtract",
    "SegmentStats",
]


class IntervalRow(NamedTuple):
    """Whole batches ``[byte_start, byte_end)`` holding chain offsets ``start..end_offset``.

    ``max_ts``: the largest batch max timestamp (what the broker's time index sees);
    ``record_max_ts``: the largest timestamp of a record actually present (lower only when
    log compaction emptied a batch that kept its max timestamp); -1 when none.
    """

    start_offset: int
    end_offset: int
    byte_start: int
    byte_end: int
    max_ts: int
    record_max_ts: int
    record_count: int


class HistogramRow(NamedTuple):
    """Data records and bytes of batches whose max timestamp is in ``[bucket_ms, +width)``."""

    bucket_ms: int
    records: int
    bytes: int


class CommitRow(NamedTuple):
    """One offset commit (``kind='commit'``) or offset tombstone (``kind='delete'``) of
    ``__consumer_offsets``, at ``log_offset`` of that partition."""

    group: str
    topic: str
    partition: int
    kind: str
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int
    log_offset: int
    record_timestamp: int
    producer_id: int
    transactional: bool


class MarkerRow(NamedTuple):
    """A transaction marker: ``committed`` is True for COMMIT, False for ABORT."""

    log_offset: int
    producer_id: int
    committed: bool
    timestamp: int


@dataclass(frozen=True, slots=True)
class SegmentStats:
    """A header scan of the whole segment. Offsets/timestamps are -1 when it holds no batch."""

    first_offset: int
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    batch_count: int
    size_bytes: int
    codecs: tuple[str, ...]
    magics: tuple[int, ...]
    transactional_batches: int
    control_batches: int
    #: ``(leader_epoch, first_offset, last_offset)`` per run of batches of one epoch
    epoch_runs: tuple[tuple[int, int, int], ...]

    def epoch_runs_json(self) -> str:
        return json.dumps([list(r) for r in self.epoch_runs], separators=(",", ":"))


@dataclass(slots=True)
class SegmentExtract:
    """Everything extracted from one segment object (see the module docstring)."""

    stats: SegmentStats
    pieces: tuple[tuple[int, int], ...] | None
    intervals: list[IntervalRow] = field(default_factory=list)
    histogram: list[HistogramRow] = field(default_factory=list)
    commits: list[CommitRow] = field(default_factory=list)
    markers: list[MarkerRow] = field(default_factory=list)
    #: ``__consumer_offsets`` records that are neither offset commits nor tombstones of one
    #: (group metadata, KIP-848 records...), and ones that could not be decoded
    other_offsets_records: int = 0
    undecodable_offsets_records: int = 0
