"""A partition directory seen as the broker sees it: ordered segments, rolled and active.

:class:`PartitionView` lists a ``topic-N`` directory once (no file is opened until asked):
segments ordered by base offset, the one with the highest base offset being the **active**
segment (still appended to) and all others **rolled**; files in transient states (``.deleted``,
``.cleaned``, ``.swap``) are listed apart and never taken as segments. Summaries (offset and time
ranges, counts, codecs) come from a header-only scan with CRC checks; :meth:`PartitionView.gaps`
reports offset ranges that no batch covers (compaction, retention, or missing segments).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from segment_lib.errors import InvalidFileNameError
from segment_lib.log_file import open_log
from segment_lib.names import (
    FileKind,
    classify_file,
    parse_partition_dir_name,
    segment_file_name,
)
from segment_lib.record_batch import first_record_timestamp
from segment_lib.records import BatchHeader

__all__ = ["OffsetGap", "PartitionView", "SegmentFiles", "SegmentSummary"]


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    """The files of one segment (companions are ``None`` when absent)."""

    base_offset: int
    log: Path
    index: Path | None = None
    time_index: Path | None = None
    txn_index: Path | None = None

    @property
    def name(self) -> str:
        """The ``.log`` file name, e.g. ``00000000000000170410.log``."""
        return self.log.name


@dataclass(frozen=True, slots=True)
class SegmentSummary:
    """What a header scan of one segment found.

    ``first_offset``/``last_offset`` are -1 for a segment holding no batch. ``torn_tail_position``
    is set when an active segment ends in an incomplete batch (the valid bytes end there).
    """

    segment: SegmentFiles
    is_active: bool
    size_bytes: int
    batch_count: int
    record_count: int
    first_offset: int
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    offset_of_max_timestamp: int
    magics: frozenset[int]
    codecs: frozenset[str]
    transactional_batches: int
    control_batches: int
    torn_tail_position: int | None = None

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1 if self.last_offset >= 0 else self.segment.base_offset


@dataclass(frozen=True, slots=True)
class OffsetGap:
    """Offsets ``start..end`` (inclusive) that no batch of the partition covers."""

    start: int
    end: int
    before_segment: str
    reason: str


@dataclass(slots=True)
class PartitionView:
    """A partition directory: ``topic``, ``partition``, ordered ``segments`` and the rest.

    Construct with :meth:`open`. ``state`` is ``delete``/``future``/``stray`` for a directory in a
    transient state (its data is not the partition's live data).
    """

    path: Path
    topic: str
    partition: int
    state: str | None
    segments: tuple[SegmentFiles, ...]
    snapshot_offsets: tuple[int, ...] = ()
    transient_files: tuple[Path, ...] = ()
    other_files: tuple[Path, ...] = ()
    _summaries: dict[int, SegmentSummary] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> PartitionView:
        """List a partition directory (raises InvalidFileNameError if it is not one)."""
        p = Path(path)
        name = parse_partition_dir_name(p.name)
        logs: dict[int, Path] = {}
        companions: dict[tuple[int, str], Path] = {}
        snapshots: list[int] = []
        transient: list[Path] = []
        other: list[Path] = []
        for entry in sorted(os.scandir(p), key=lambda e: e.name):
            if not entry.is_file():
                other.append(Path(entry.path))
                continue
            cls_ = classify_file(entry.name)
            seg = cls_.segment
            if cls_.kind is not FileKind.SEGMENT or seg is None:
                other.append(Path(entry.path))
            elif seg.transient is not None:
                transient.append(Path(entry.path))
            elif seg.kind == ".log":
                logs[seg.base_offset] = Path(entry.path)
            elif seg.kind == ".snapshot":
                snapshots.append(seg.base_offset)
            else:
                companions[(seg.base_offset, seg.kind)] = Path(entry.path)
        segments = tuple(
            SegmentFiles(
                base,
                logs[base],
                companions.get((base, ".index")),
                companions.get((base, ".timeindex")),
                companions.get((base, ".txnindex")),
            )
            for base in sorted(logs)
        )
        return cls(
            p,
            name.topic,
            name.partition,
            name.state,
            segments,
            tuple(sorted(snapshots)),
            tuple(transient),
            tuple(other),
        )

    @property
    def active(self) -> SegmentFiles | None:
        """The segment with the highest base offset (the broker appends to it)."""
        return self.segments[-1] if self.segments else None

    @property
    def rolled(self) -> tuple[SegmentFiles, ...]:
        """Every segment but the active one: complete, immutable until deleted or cleaned."""
        return self.segments[:-1]

    def is_active(self, segment: SegmentFiles) -> bool:
        return self.active is not None and segment.base_offset == self.active.base_offset

    def segment_for_offset(self, offset: int) -> SegmentFiles | None:
        """The segment whose base offset is the greatest <= ``offset`` (the broker's floor)."""
        lo, hi = 0, len(self.segments)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.segments[mid].base_offset <= offset:
                lo = mid + 1
            else:
                hi = mid
        return self.segments[lo - 1] if lo else None

    def segments_from(self, segment: SegmentFiles) -> Iterator[SegmentFiles]:
        """``segment`` and every later one, in offset order."""
        started = False
        for s in self.segments:
            started = started or s.base_offset == segment.base_offset
            if started:
                yield s

    def batches(self, segment: SegmentFiles, start: int = 0) -> Iterator[BatchHeader]:
        """Batch headers of one segment from byte ``start``; CRC-checked. The active segment may
        end in a torn batch (iteration stops there); a rolled one may not."""
        with open_log(segment.log) as log:
            yield from log.batches(start, allow_torn_tail=self.is_active(segment))

    def summary(self, segment: SegmentFiles) -> SegmentSummary:
        """Scan one segment's batch headers (cached per view)."""
        cached = self._summaries.get(segment.base_offset)
        if cached is not None:
            return cached
        active = self.is_active(segment)
        batches = records = txn = control = 0
        first = last = -1
        first_ts = max_ts = off_max = -1
        magics: set[int] = set()
        codecs: set[str] = set()
        with open_log(segment.log) as log:
            size = len(log)
            for b in log.batches(allow_torn_tail=active):
                if first < 0:
                    # the first record's time, not a cleaner's delete horizon (KIP-534)
                    first, first_ts = b.base_offset, first_record_timestamp(log.data, b)
                last = b.last_offset
                batches += 1
                records += b.record_count
                txn += b.is_transactional
                control += b.is_control
                magics.add(b.magic)
                codecs.add(b.codec.label)
                if b.max_timestamp > max_ts:
                    max_ts, off_max = b.max_timestamp, b.last_offset
            torn = log.torn_tail_position
        result = SegmentSummary(
            segment,
            active,
            size,
            batches,
            records,
            first,
            last,
            first_ts,
            max_ts,
            off_max,
            frozenset(magics),
            frozenset(codecs),
            txn,
            control,
            torn,
        )
        self._summaries[segment.base_offset] = result
        return result

    def summaries(self) -> list[SegmentSummary]:
        return [self.summary(s) for s in self.segments]

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record would get (as the broker's LEO)."""
        for seg in reversed(self.segments):
            s = self.summary(seg)
            if s.last_offset >= 0:
                return s.last_offset + 1
        return self.segments[-1].base_offset if self.segments else 0

    @property
    def first_offset(self) -> int:
        """The first offset held by any batch (-1 when the partition holds none)."""
        for seg in self.segments:
            s = self.summary(seg)
            if s.first_offset >= 0:
                return s.first_offset
        return -1

    def gaps(self) -> list[OffsetGap]:
        """Offset ranges between batches that no batch covers, in offset order.

        Compaction leaves gaps inside and between segments; retention or a lost segment leaves
        a gap between segments. Offsets before the first batch are not reported.
        """
        gaps: list[OffsetGap] = []
        expected: int | None = None
        for seg in self.segments:
            seg_start = True
            for b in self.batches(seg):
                if expected is not None and b.base_offset > expected:
                    reason = "between segments" if seg_start else "inside segment"
                    gaps.append(OffsetGap(expected, b.base_offset - 1, seg.name, reason))
                seg_start = False
                expected = b.last_offset + 1
        return gaps


def segment_files_for(directory: Path, base_offset: int) -> SegmentFiles:
    """The (possibly partial) file set of one segment in ``directory``, by base offset."""

    def present(suffix: str) -> Path | None:
        p = directory / segment_file_name(base_offset, suffix)  # type: ignore[arg-type]
        return p if p.exists() else None

    log = directory / segment_file_name(base_offset, ".log")
    if not log.exists():
        raise InvalidFileNameError(f"no segment {log.name} in {directory}", path=directory)
    return SegmentFiles(
        base_offset, log, present(".index"), present(".timeindex"), present(".txnindex")
    )
