"""The walk of discovery: one broker log dir, partition by partition, segment by segment.

Contract: :func:`discover_log_dir` lists a log dir, reads nothing but its files and writes
nothing anywhere, and returns a :class:`~kafka_archive.archive.discovery.model.LogDirDiscovery`
holding every candidate and every item passed over with its reason; problems that make the
whole log dir unusable are in ``errors``, never raised. The rules a segment must pass are in
:mod:`kafka_archive.archive.discovery`.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path

from kafka_archive.archive.digests import DigestCache
from kafka_archive.archive.discovery.model import (
    LogDirDiscovery,
    ProblemInfo,
    SegmentCandidate,
    SkippedItem,
    SkipReason,
)
from kafka_archive.archive.discovery.side_files import (
    HIGH_WATERMARK_CHECKPOINT,
    META_PROPERTIES,
    METADATA_TOPIC,
    RECOVERY_POINT_CHECKPOINT,
    epochs_for_range,
    find_snapshots,
    local_file,
    metadata_committed_offset,
    optional_local_file,
    read_epochs,
    read_topic_id,
)
from kafka_archive.archive.manifest import utc_now
from kafka_archive.archive.strays import OddFile, inspect_partition, log_dir_entry_problem
from kafka_archive.archive.topic_selection import TopicSelection
from segment_lib.checkpoints import EpochEntry, read_offset_checkpoint
from segment_lib.errors import InvalidFileNameError, SegmentError
from segment_lib.metadata_files import read_meta_properties
from segment_lib.names import SWAP_SUFFIX, parse_partition_dir_name
from segment_lib.partition import PartitionView, SegmentFiles

__all__ = ["discover_log_dir"]

log = logging.getLogger(__name__)


class _Discoverer:
    def __init__(
        self,
        cluster: str,
        broker_id: int,
        log_dir: Path,
        digests: DigestCache,
        on_segment: Callable[[str], None] | None,
        topics: TopicSelection,
    ) -> None:
        self.topics = topics
        self.unselected = 0
        self.cluster = cluster
        self.broker_id = broker_id
        self.log_dir = log_dir
        self.digests = digests
        self.on_segment = on_segment
        self.candidates: list[SegmentCandidate] = []
        self.skipped: list[SkippedItem] = []
        self.errors: list[ProblemInfo] = []
        self.warnings: list[str] = []
        self.partitions = 0
        self.rolled = 0
        self.kafka_cluster_id: str | None = None
        self.directory_id: str | None = None

    def skip(self, reason: SkipReason, path: Path, detail: str = "", **kw: object) -> None:
        self.skipped.append(
            SkippedItem(
                reason=reason,
                path=str(path),
                detail=detail,
                cluster=self.cluster,
                broker_id=self.broker_id,
                log_dir=str(self.log_dir),
                **kw,  # type: ignore[arg-type]
            )
        )

    def run(self) -> None:
        if not self.log_dir.is_dir():
            self.errors.append(
                ProblemInfo(
                    error="LogDirNotFound",
                    message="log dir does not exist or is not a directory (is the broker's "
                    "volume mounted on this worker?)",
                    path=str(self.log_dir),
                )
            )
            return
        if not self._check_meta():
            return
        try:
            rp = self._checkpoint(RECOVERY_POINT_CHECKPOINT)
            hw = self._checkpoint(HIGH_WATERMARK_CHECKPOINT)
        except SegmentError as exc:
            self.errors.append(ProblemInfo.from_exception(exc))
            return
        for entry in sorted(os.scandir(self.log_dir), key=lambda e: e.name):
            if not entry.is_dir(follow_symlinks=False):
                odd = log_dir_entry_problem(entry)
                if odd is not None:
                    self.skip(SkipReason(odd.reason), odd.path, odd.detail)
                continue
            if self.topics and not self._selected(entry.name):
                self.unselected += 1  # not asked for: never opened (topic_selection)
                continue
            try:
                self._partition_dir(Path(entry.path), rp, hw)
            except FileNotFoundError:
                # Renamed (-delete, -future) or removed while we looked: not an error, the
                # next run sees its new state.
                self.skip(
                    SkipReason.VANISHED,
                    Path(entry.path),
                    "partition directory disappeared during discovery",
                )

    def _selected(self, name: str) -> bool:
        """Whether the directory ``name`` belongs to a selected topic (by its name only; a
        name that is no partition's is left to :meth:`_open_partition` to report)."""
        try:
            topic = parse_partition_dir_name(name).topic
        except InvalidFileNameError:
            return True
        return self.topics.selects(topic)

    def _check_meta(self) -> bool:
        path = self.log_dir / META_PROPERTIES
        if not path.exists():
            self.warnings.append(
                f"{path} is missing: the broker id {self.broker_id} could not be confirmed"
            )
            return True
        try:
            meta = read_meta_properties(path)
        except (SegmentError, OSError) as exc:
            self.errors.append(ProblemInfo.from_exception(exc, path=str(path)))
            return False
        self.kafka_cluster_id = meta.cluster_id
        self.directory_id = meta.directory_id
        if meta.node_id is not None and meta.node_id != self.broker_id:
            self.errors.append(
                ProblemInfo(
                    error="BrokerIdMismatch",
                    message=f"meta.properties names broker {meta.node_id}, but this log dir was "
                    f"configured for broker {self.broker_id}: refusing to archive it under the "
                    "wrong broker (check the configuration and the mounted volume)",
                    path=str(path),
                )
            )
            return False
        return True

    def _checkpoint(self, name: str) -> dict[tuple[str, int], int] | None:
        path = self.log_dir / name
        if not path.exists():
            if not (self.log_dir / f"{METADATA_TOPIC}-0").is_dir() or any(
                e.is_dir() and not e.name.startswith(METADATA_TOPIC)
                for e in os.scandir(self.log_dir)
            ):
                # (a controller's metadata.log.dir holds only the metadata log, which needs
                # no checkpoint: nothing to warn about there)
                self.warnings.append(
                    f"{path} is missing: no partition of this log dir is archived"
                    " (but KRaft's metadata log, bounded by its snapshots)"
                )
            return None
        return read_offset_checkpoint(path)

    def _partition_dir(
        self,
        path: Path,
        rp: dict[tuple[str, int], int] | None,
        hw: dict[tuple[str, int], int] | None,
    ) -> None:
        """Classify everything in one partition directory: candidates and skipped items."""
        view = self._open_partition(path)
        if view is None:
            return
        tp: dict[str, object] = dict(topic=view.topic, partition=view.partition)
        key = (view.topic, view.partition)
        rp_offset = rp.get(key) if rp is not None else None
        hw_offset = hw.get(key) if hw is not None else None
        if view.topic == METADATA_TOPIC:
            # the Raft log has no checkpoints: its committed bound is its newest snapshot
            rp_offset = hw_offset = metadata_committed_offset(path)
        # odd names and stray segments are reported; strays never become "the active segment"
        view, odd_files = inspect_partition(view, rp_offset, hw_offset)
        swapping = self._skip_unarchivable_files(view, odd_files, tp)
        rolled = view.rolled
        self.rolled += len(rolled)
        if not rolled:
            return
        warnings: list[str] = []
        topic_id = read_topic_id(path, warnings)
        epochs = read_epochs(path, warnings)
        snapshots = find_snapshots(path)
        for i, seg in enumerate(rolled):
            end = view.segments[i + 1].base_offset
            try:
                st = seg.log.stat()
            except FileNotFoundError:
                continue  # deleted by retention while we listed
            info = dict(
                **tp,
                base_offset=seg.base_offset,
                end_offset=end,
                size=st.st_size,
                mtime_ms=st.st_mtime_ns // 1_000_000,
            )
            not_yet = _not_archivable_yet(seg, end, st, swapping, rp_offset, hw_offset)
            if not_yet is not None and view.topic == METADATA_TOPIC:
                not_yet = _metadata_reason(not_yet, end, rp_offset)
            if not_yet is not None:
                reason, detail = not_yet
                self.skip(reason, seg.log, detail, **info)
                continue
            self._candidate(view, seg, end, st, topic_id, epochs, snapshots, warnings)

    def _open_partition(self, path: Path) -> PartitionView | None:
        """The live partition in ``path``, or None (skipped: not a partition directory, a
        transient one, the metadata log; or recorded in ``errors``: unreadable)."""
        try:
            name = parse_partition_dir_name(path.name)
        except InvalidFileNameError:
            self.skip(SkipReason.NOT_A_PARTITION, path, "not named <topic>-<partition>")
            return None
        if name.state is not None:
            self.skip(
                SkipReason.TRANSIENT_DIR,
                path,
                f"partition directory in state '{name.state}'",
                topic=name.topic,
                partition=name.partition,
            )
            return None
        self.partitions += 1
        try:
            return PartitionView.open(path)
        except FileNotFoundError:
            raise
        except (OSError, SegmentError) as exc:
            self.errors.append(ProblemInfo.from_exception(exc, path=str(path)))
            return None

    def _skip_unarchivable_files(
        self, view: PartitionView, odd_files: list[OddFile], tp: dict[str, object]
    ) -> bool:
        """Skip odd names, strays, transient files and the active segment; True if the
        cleaner is swapping segments of the partition (a ``.swap`` file is present)."""
        for odd in odd_files:
            self.skip(
                SkipReason(odd.reason), odd.path, odd.detail, **tp, base_offset=odd.base_offset
            )
        swapping = False
        for t in view.transient_files:
            self.skip(SkipReason.TRANSIENT_FILE, t, "transient file", **tp)
            swapping = swapping or t.name.endswith(SWAP_SUFFIX)
        if view.active is not None:
            self.skip(
                SkipReason.ACTIVE,
                view.active.log,
                "active segment",
                **tp,
                base_offset=view.active.base_offset,
            )
        return swapping

    def _candidate(
        self,
        view: PartitionView,
        seg: SegmentFiles,
        end: int,
        st: os.stat_result,
        topic_id: str | None,
        epochs: list[EpochEntry],
        snapshots: dict[int, Path],
        warnings: list[str],
    ) -> None:
        if self.on_segment is not None:
            self.on_segment(str(seg.log))
        try:
            digest = self.digests.digest(seg.log, st)
        except FileNotFoundError:
            return  # deleted by retention while we hashed
        self.candidates.append(
            SegmentCandidate(
                cluster=self.cluster,
                broker_id=self.broker_id,
                log_dir=str(self.log_dir),
                partition_dir=view.path.name,
                topic=view.topic,
                partition=view.partition,
                topic_id=topic_id,
                base_offset=seg.base_offset,
                end_offset=end,
                log=local_file(seg.log, st),
                log_sha256=digest.sha256,
                index=optional_local_file(seg.index),
                timeindex=optional_local_file(seg.time_index),
                txnindex=optional_local_file(seg.txn_index),
                snapshot=optional_local_file(snapshots.get(end)),
                leader_epochs=epochs_for_range(epochs, seg.base_offset, end),
                kafka_cluster_id=self.kafka_cluster_id,
                directory_id=self.directory_id,
                warnings=list(warnings),
            )
        )


def discover_log_dir(
    cluster: str,
    broker_id: int,
    log_dir: str | os.PathLike[str],
    *,
    digests: DigestCache | None = None,
    on_segment: Callable[[str], None] | None = None,
    topics: Sequence[str] = (),
) -> LogDirDiscovery:
    """Discover the archivable segments of one broker log dir (see the module docstring).

    ``on_segment`` is called with each candidate's path before it is hashed (progress display).
    ``topics``: glob patterns of the topics to archive (:mod:`~kafka_archive.archive.
    topic_selection`; empty: every topic); other partition directories are not opened.
    """
    cache = digests or DigestCache(None)
    hits, misses = cache.hits, cache.misses
    d = _Discoverer(
        cluster, broker_id, Path(log_dir).absolute(), cache, on_segment, TopicSelection(topics)
    )
    d.run()
    return LogDirDiscovery(
        cluster=cluster,
        broker_id=broker_id,
        log_dir=str(d.log_dir),
        hostname=socket.gethostname(),
        discovered_at=utc_now(),
        kafka_cluster_id=d.kafka_cluster_id,
        directory_id=d.directory_id,
        partitions=d.partitions,
        unselected_partitions=d.unselected,
        rolled_segments=d.rolled,
        candidates=d.candidates,
        skipped=d.skipped,
        errors=d.errors,
        warnings=d.warnings,
        digest_cache_hits=cache.hits - hits,
        digest_cache_misses=cache.misses - misses,
    )


def _not_archivable_yet(
    seg: SegmentFiles,
    end: int,
    st: os.stat_result,
    swapping: bool,
    rp_offset: int | None,
    hw_offset: int | None,
) -> tuple[SkipReason, str] | None:
    """Why a rolled segment may not be archived now (reason, detail), or None if it may."""
    if swapping:
        return SkipReason.CLEANING_IN_PROGRESS, "a .swap file is present; retried next run"
    if st.st_size == 0 or end <= seg.base_offset:
        return SkipReason.EMPTY_SEGMENT, "no bytes"
    if rp_offset is None or hw_offset is None:
        missing = [
            n
            for n, v in (
                (RECOVERY_POINT_CHECKPOINT, rp_offset),
                (HIGH_WATERMARK_CHECKPOINT, hw_offset),
            )
            if v is None
        ]
        return SkipReason.NO_CHECKPOINT, f"partition not in {', '.join(missing)}"
    if end > rp_offset:
        return (
            SkipReason.ABOVE_RECOVERY_POINT,
            f"range ends at {end}, recovery point is {rp_offset}",
        )
    if end > hw_offset:
        return (
            SkipReason.ABOVE_HIGH_WATERMARK,
            f"range ends at {end}, high watermark is {hw_offset}",
        )
    return None


def _metadata_reason(
    not_yet: tuple[SkipReason, str], end: int, bound: int | None
) -> tuple[SkipReason, str]:
    """The metadata log's wording of why a rolled segment waits: its bound is a snapshot."""
    reason, detail = not_yet
    if reason is SkipReason.NO_CHECKPOINT:
        return reason, "metadata log: no .checkpoint snapshot yet, so no offset is known committed"
    if reason in (SkipReason.ABOVE_RECOVERY_POINT, SkipReason.ABOVE_HIGH_WATERMARK):
        return (
            SkipReason.ABOVE_HIGH_WATERMARK,
            f"metadata log: range ends at {end}, the newest snapshot ends at {bound} "
            "(offsets after it are not known committed yet)",
        )
    return reason, detail
