"""One partition of a fetch archive run: its position, its segment builder, its uploads.

:class:`PartitionArchiver` takes the partition's Fetch answers in order (:meth:`feed`), keeps
what :func:`~kafka_archive.archive.fetch.batches.usable_batches` allows, appends it to a
:class:`~segment_lib.segment_builder.SegmentBuilder` (the topic's ``segment.bytes``,
``segment.ms``, ``index.interval.bytes``) writing into a private work directory, and uploads
every segment the builder rolls (:func:`~kafka_archive.archive.fetch.store_side.
upload_segment`), deleting its local files afterwards. :meth:`finish` rolls the open segment
and uploads it too (a clean stop keeps everything fetched).

A segment's ``end_offset`` is the next segment's base offset (offsets in between, removed by
compaction, lie inside its range, as on a broker), or its own next offset for the last one.
Offsets deleted by the broker before they were archived (:meth:`hole`) end the open segment
there; the next segment's manifest names the hole (``fetch.hole_from``).

Leader changes (:mod:`~kafka_archive.archive.fetch.epochs`): :meth:`check_epoch` judges the
new leader's OffsetsForLeaderEpoch answer; :meth:`rewind` drops what is fetched but not stored
and goes on from the end of what is stored (:attr:`stored_end`), with the transactions open
and the epochs known there. Another archiver of the same partition that stored segments first
makes this one go on from the store's end, dropping what it holds: seen before an upload
(:func:`~kafka_archive.archive.fetch.store_side.fetched_from`, a cheap check that spares the
upload), or when the claim of the segment's base offset is lost
(:class:`~kafka_archive.archive.fetch.claims.Fenced`, the atomic fence).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_archive.archive.fetch.batches import FetchDiverged, usable_batches
from kafka_archive.archive.fetch.claims import Fenced
from kafka_archive.archive.fetch.epochs import judge_epoch_end
from kafka_archive.archive.fetch.report import Hole, PartitionReport
from kafka_archive.archive.fetch.store_side import (
    Resume,
    fetched_from,
    resume_point,
    upload_segment,
)
from kafka_archive.archive.manifest import FetchedSegment, OpenTransaction, SegmentSource
from kafka_archive.kafka_protocol.fetch import EpochEnd, FetchedPartition
from kafka_archive.store import ObjectStore
from segment_lib.log_file import iter_batches
from segment_lib.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from segment_lib.segment_builder import BuiltSegment, SegmentBuilder, SegmentConfig

__all__ = ["PartitionArchiver", "PartitionIdentity"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PartitionIdentity:
    cluster: str
    topic: str
    partition: int
    topic_id: str | None
    kafka_cluster_id: str | None
    hostname: str


class PartitionArchiver:
    """One partition's fetch archive (module docstring).

    Args:
        resume: where the store says the partition goes on.
        start: the first offset to fetch (the resume point, or the log start offset).
        work_dir: a private, empty directory for the segment files being built.
    """

    def __init__(
        self,
        ident: PartitionIdentity,
        store: ObjectStore,
        config: SegmentConfig,
        resume: Resume,
        start: int,
        work_dir: Path,
    ) -> None:
        self.ident = ident
        self.store = store
        self.position = start
        self.first_of_archive = resume.offset is None
        self.report = PartitionReport(ident.topic, ident.partition, from_offset=start)
        self.report.to_offset = start
        self.leader = -1
        #: the leader epoch Metadata gave (-1: unknown)
        self.leader_epoch = -1
        #: the leader's log must be checked against the archive before the next Fetch (a new
        #: leader or leader epoch; the start of a run that resumes)
        self.needs_check = bool(resume.leader_epochs)
        #: one past the last offset stored (by this run or before it)
        self.stored_end = start
        self.high_watermark = -1
        self.log_start_offset = -1
        self.holes: list[Hole] = []
        #: ``time.monotonic()`` of the leader's last answer (not a leadership error)
        self.last_answer_at = time.monotonic()
        self._hole_from: int | None = None
        self._work_dir = work_dir
        self._config = config
        self._resume = resume  # the builder's state at stored_end
        self._first_at_stored_end = self.first_of_archive
        self._builder = self._new_builder(start)
        self._uploaded = 0  # builder.segments already uploaded
        self._yielded = False  # rewound to another archiver's stored end during an upload
        self._foreign: set[str] = set()  # manifest keys not of this partition's fetch chain

    def _new_builder(self, start: int) -> SegmentBuilder:
        return SegmentBuilder(
            self._work_dir,
            self._config,
            start_offset=start,
            allow_gaps=True,
            open_transactions=self._resume.open_transactions,
            leader_epochs=self._resume.leader_epochs,
        )

    @property
    def name(self) -> str:
        return f"{self.ident.topic}-{self.ident.partition}"

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, answer: FetchedPartition, *, now_ms: int | None = None) -> int:
        """Archive what ``answer`` (error code 0, fetched at :attr:`position`) allows; the
        number of batches kept. Rolled segments are uploaded before this returns."""
        self.high_watermark = answer.high_watermark
        self.log_start_offset = answer.log_start_offset
        self.report.high_watermark = answer.high_watermark
        usable = usable_batches(
            answer.records,
            self.position,
            answer.high_watermark,
            archived_end=None if self.first_of_archive else self._builder.next_offset,
        )
        if usable.above_high_watermark:
            log.warning(
                "kafka-archive: %s: %d fetched batch(es) at or above the high watermark %d "
                "left out",
                self.name,
                usable.above_high_watermark,
                answer.high_watermark,
            )
        if usable.empty:
            return 0
        data = memoryview(answer.records)[usable.start : usable.end]
        now = int(time.time() * 1000) if now_ms is None else now_ms
        # batch by batch: a segment rolled before a batch is uploaded with the transactions
        # open before that batch (what the next segment's .txnindex needs on resume)
        for h in iter_batches(data, verify_crc=False):
            before = self._builder.open_transactions()
            self._builder.append(data[h.position : h.next_position], now_ms=now)
            self._upload_closed(final=False, open_txns=before)
            if self._yielded:  # going on from another archiver's end: the rest is dropped
                self._yielded = False
                return usable.batch_count
        self.position = usable.next_offset
        self.first_of_archive = False
        self.report.batches += usable.batch_count
        self.report.bytes_fetched += usable.end - usable.start
        return usable.batch_count

    def skip_to(self, offset: int) -> None:
        """Nothing lies in ``[position, offset)`` below the high watermark (a compaction gap at
        the log's end): fetch from ``offset`` on."""
        self.position = max(self.position, offset)

    def log_start_moved(self, log_start: int) -> Hole | None:
        """The broker answered OFFSET_OUT_OF_RANGE and its log now starts at ``log_start``:
        for a partition with nothing archived yet (by any run) the archive simply starts
        there; otherwise offsets ``[position, log_start)`` are a :meth:`hole`.

        Raises:
            FetchDiverged: ``log_start`` is not above the position (the log ends below the
                archive: truncated, or the topic recreated).
        """
        if log_start <= self.position:
            raise FetchDiverged(
                f"offset {self.position} is out of range while the log starts at {log_start}: "
                "the log ends below the archive (truncated, or the topic recreated?); "
                "nothing stored"
            )
        if self.first_of_archive and self._builder.next_offset == self.position:
            self.report.from_offset = self.report.to_offset = self.position = log_start
            self.stored_end = log_start
            self._builder = self._new_builder(log_start)
            return None
        return self.hole(log_start)

    def hole(self, log_start: int) -> Hole | None:
        """The broker's log now starts at ``log_start``, past :attr:`position`: offsets
        ``[position, log_start)`` are lost. The open segment ends at the position; the hole is
        recorded (report, log line, the next manifest) and fetching goes on at ``log_start``."""
        if log_start <= self.position:
            return None
        hole = Hole(self.ident.topic, self.ident.partition, self.position, log_start)
        log.warning(
            "kafka-archive: HOLE in %s: offsets %d..%d were deleted by the broker (retention "
            "or DeleteRecords) before they were archived; archiving goes on at %d",
            self.name,
            hole.start,
            hole.end - 1,
            log_start,
        )
        self._builder.roll()
        self._upload_closed(final=True, open_txns=self._builder.open_transactions())
        if self._yielded:  # another archiver's end: the hole is judged from there
            self._yielded = False
            return None
        if hole not in self.holes:  # met again after a rewind: one hole
            self.holes.append(hole)
        self._hole_from = self._hole_from if self._hole_from is not None else self.position
        self.position = log_start
        return hole

    # -- leader changes --------------------------------------------------------------------

    @property
    def last_epoch(self) -> int | None:
        """The leader epoch of the last batch held (stored or not), if any is known."""
        epochs = self._builder.leader_epochs
        return epochs[-1].epoch if epochs else None

    def check_epoch(self, answer: EpochEnd) -> bool:
        """Judge the leader's OffsetsForLeaderEpoch ``answer`` (error code 0) for
        :attr:`last_epoch` (:func:`~kafka_archive.archive.fetch.epochs.judge_epoch_end`):
        whether the log agrees with the archive (else the archiver rewound and asks again).

        Raises:
            LogTruncated: the divergence lies in what is stored.
        """
        epoch = self.last_epoch
        if epoch is None:
            self.needs_check = False
            return True
        held = self._builder.next_offset
        verdict = judge_epoch_end(
            self.name,
            epoch=epoch,
            position=self.position if held is None else held,
            stored_end=self.stored_end,
            leader=self.leader,
            answer=answer,
        )
        if verdict == "rewind":
            log.warning(
                "kafka-archive: %s: broker %d ends leader epoch %d at %s, below offset %s fetched "
                "(not stored yet): the fetched batches from %d on are dropped and fetched again",
                self.name,
                self.leader,
                epoch,
                answer.end_offset,
                held,
                self.stored_end,
            )
            self.rewind()
            return False
        self.needs_check = False
        return True

    def rewind(self) -> None:
        """Drop every batch fetched and not stored; fetching goes on at :attr:`stored_end`
        with the state the builder had there (the leader's log is checked again first)."""
        self._drop_held()
        self.report.rewinds += 1

    def _drop_held(self) -> None:
        self._builder.roll()
        for built in self._builder.segments[self._uploaded :]:
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                (self._work_dir / built.file_name(suffix)).unlink(missing_ok=True)
        self.position = self.stored_end
        self.first_of_archive = self._first_at_stored_end
        self._builder = self._new_builder(self.stored_end)
        self._uploaded = 0
        self.needs_check = bool(self._resume.leader_epochs)

    def _snapshot(self, offset: int, open_txns: dict[int, int]) -> Resume:
        """The builder's state at ``offset`` (what :meth:`rewind` starts from)."""
        return Resume(
            offset,
            dict(open_txns),
            tuple(
                (e.epoch, e.start_offset)
                for e in self._builder.leader_epochs
                if e.start_offset < offset
            ),
        )

    def finish(self) -> None:
        """Roll the open segment and upload it (a clean stop)."""
        self._builder.roll()
        self._upload_closed(final=True, open_txns=self._builder.open_transactions())
        self._yielded = False

    def _yield_to_store(self, why: str) -> None:
        """Another archiver stored this partition past :attr:`stored_end`: go on from the
        store's end (what this one holds beyond it is dropped)."""
        ident = self.ident
        resume = resume_point(
            self.store, ident.cluster, ident.topic, ident.partition, ident.topic_id
        )
        assert resume.offset is not None  # another archiver's manifest was just seen
        log.warning(
            "kafka-archive: %s: another archiver %s; going on from offset %d, the end of "
            "what the store holds",
            self.name,
            why,
            resume.offset,
        )
        self._resume = resume
        self.stored_end = max(resume.offset, self.stored_end)
        self._first_at_stored_end = False
        self._drop_held()
        self.report.to_offset = self.stored_end
        self._yielded = True

    # -- uploading -------------------------------------------------------------------------

    def _upload_closed(self, *, final: bool, open_txns: dict[int, int]) -> None:
        segments = self._builder.segments
        active = self._builder.active
        while not self._yielded and self._uploaded < len(segments):
            i = self._uploaded
            built = segments[i]
            if i + 1 < len(segments):
                end = segments[i + 1].base_offset
            elif active is not None and not final:
                end = active.base_offset
            else:  # the last one: up to where fetching got (past a trailing compaction gap)
                end = max(built.next_offset, self.position)
            if self._upload(built, end, open_txns):
                self._uploaded += 1

    def _upload(self, built: BuiltSegment, end: int, open_txns: dict[int, int]) -> bool:
        """Store ``built`` as ``[base, end)``; ``False`` if another archiver stored this
        partition from its base on first (this one rewound to the store's end)."""
        ident = self.ident
        theirs = fetched_from(
            self.store, ident.cluster, ident.topic, ident.partition, ident.topic_id,
            built.base_offset, self._foreign,
        )  # fmt: skip
        if theirs is not None:
            self.report.yielded += 1
            self._yield_to_store(f"stored offsets {built.base_offset}..{theirs - 1} first")
            return False
        gaps = [
            (exp, found)
            for exp, found in self._builder.gaps
            if built.base_offset <= exp < end and found < end
        ]
        fetch = FetchedSegment(
            high_watermark=self.high_watermark,
            log_start_offset=self.log_start_offset,
            open_transactions=[
                OpenTransaction(producer_id=pid, first_offset=first)
                for pid, first in sorted(open_txns.items())
            ],
            offset_gaps=gaps,
            hole_from=self._hole_from,
        )
        try:
            result = upload_segment(
                self.store,
                cluster=ident.cluster,
                topic=ident.topic,
                topic_id=ident.topic_id,
                partition=ident.partition,
                built=built,
                directory=self._work_dir,
                end_offset=end,
                leader_epochs=self._builder.leader_epochs,
                source=SegmentSource(
                    broker_id=self.leader,
                    log_dir="fetch",
                    partition_dir=self.name,
                    kafka_cluster_id=ident.kafka_cluster_id,
                    hostname=ident.hostname,
                    log_mtime_ms=int(time.time() * 1000),
                ),
                fetch=fetch,
            )
        except Fenced as exc:  # another archiver claimed this base offset first
            self.report.fenced += 1
            self._yield_to_store(f"claimed offset {built.base_offset} first ({exc})")
            return False
        self._hole_from = None
        self.stored_end = end
        self._resume = self._snapshot(end, open_txns)
        self._first_at_stored_end = False
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            try:
                os.remove(self._work_dir / built.file_name(suffix))
            except FileNotFoundError:
                pass
        self.report.segments += 1
        self.report.bytes_uploaded += result.bytes_uploaded
        self.report.offset_gaps += len(gaps)
        self.report.manifests.append(result.manifest_key)
        self.report.to_offset = end
        log.info(
            "kafka-archive: %s: segment %d..%d archived (%s)",
            self.name,
            built.base_offset,
            end,
            result.manifest_key,
        )
        return True
