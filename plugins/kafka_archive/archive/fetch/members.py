"""The partitions a fetch archive run follows, kept in step with the cluster's Metadata.

:class:`PartitionSet` opens a :class:`~kafka_archive.archive.fetch.partition.PartitionArchiver`
per selected partition (its resume point in the store for the topic's current topic id, else
the log start; a log start past the resume point is a hole) and, at each :meth:`~PartitionSet.
refresh` (every ``metadata_max_age_s``, and whenever a Fetch says leadership moved):

* **leaders**: a partition whose leader or leader epoch changed must have its leader's log
  checked against the archive before it is fetched again (:meth:`~PartitionSet.check_epochs`,
  OffsetsForLeaderEpoch, :mod:`~kafka_archive.archive.fetch.epochs`), as a follower does;
* **topic deleted**: its partitions end (what they fetched is stored: it was below the high
  watermark of that topic) and leave the run;
* **topic re-created** (same name, another topic id): the old incarnation's partitions end as
  for a deleted topic, and the new incarnation's are opened from its own resume point (none:
  its log start); its manifests carry its topic id, which is how the catalog tells the
  incarnations apart;
* **partitions added**, and new topics the selection matches: opened as at the start.

With a consumer group (:mod:`~kafka_archive.archive.fetch.group`) the group decides which
partitions this process archives: :attr:`PartitionSet.wanted` is its share, :meth:`~PartitionSet.
open_keys` opens what it gives, :meth:`~PartitionSet.release` uploads and drops what it takes
back, and a refresh opens only partitions of the share (a re-created topic's new incarnation
among them); partitions added are given by the group.

Fetches go by topic id where the cluster has them (:func:`~kafka_archive.kafka_protocol.fetch.
fetch_request`), so a re-created topic is never read at the old topic's offsets.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from kafka_archive.archive.fetch.batches import FetchDiverged
from kafka_archive.archive.fetch.partition import PartitionArchiver, PartitionIdentity
from kafka_archive.archive.fetch.report import PartitionReport
from kafka_archive.archive.fetch.source import FetchSource
from kafka_archive.archive.fetch.store_side import resume_point
from kafka_archive.archive.topic_selection import TopicSelection
from kafka_archive.errors import KafkaArchiveError
from kafka_archive.kafka_protocol.client import error_name, retriable
from kafka_archive.kafka_protocol.fetch import EARLIEST, LEADERSHIP_ERRORS, TopicInfo
from kafka_archive.store import ObjectStore
from segment_lib.segment_builder import SegmentConfig

__all__ = ["Key", "PartitionSet", "selected"]

log = logging.getLogger(__name__)

Key = tuple[str, int]


def selected(info: TopicInfo, selection: TopicSelection) -> bool:
    """Whether the run archives ``info``: internal topics only by their exact name."""
    if info.internal:
        return info.name in selection.patterns
    return not selection or selection.matches(info.name)


class PartitionSet:
    """The partitions of a run (module docstring).

    Args:
        config_of: the segment configs of a topic (asked once per topic).
        on_open: called with each partition's report as it is opened.
    """

    def __init__(
        self,
        *,
        cluster: str,
        source: FetchSource,
        store: ObjectStore,
        selection: TopicSelection,
        cluster_id: str | None,
        host: str,
        work_dir: Path,
        config_of: Callable[[str], SegmentConfig],
        on_open: Callable[[PartitionReport], None],
    ) -> None:
        self.cluster = cluster
        self.source = source
        self.store = store
        self.selection = selection
        self.cluster_id = cluster_id
        self.host = host
        self.work_dir = work_dir
        self._config_of = config_of
        self._configs: dict[str, SegmentConfig] = {}
        self._on_open = on_open
        #: the partitions followed now
        self.live: dict[Key, PartitionArchiver] = {}
        #: every partition of the run, ended ones included (their holes, their reports)
        self.every: list[PartitionArchiver] = []
        self._dirs = 0
        self._work: dict[Key, Path] = {}
        self.refreshed_at = time.monotonic()
        #: the partitions this process may archive (its group's share); None: every selected one
        self.wanted: set[Key] | None = None

    # -- opening ---------------------------------------------------------------------------

    def open_topic(self, info: TopicInfo, partitions: list[int]) -> None:
        """Open ``partitions`` of ``info`` (resume points, log starts, holes)."""
        name = info.name
        if name not in self._configs:
            self._configs[name] = self._config_of(name)
        resumes = {
            p: resume_point(self.store, self.cluster, name, p, info.topic_id) for p in partitions
        }
        earliest: dict[int, int] = {}
        by_leader: dict[int, list[int]] = {}
        for p in partitions:
            by_leader.setdefault(info.leaders.get(p, -1), []).append(p)
        for leader, ps in by_leader.items():
            if leader >= 0:
                earliest.update(self.source.list_offsets(leader, name, ps, EARLIEST))
        for p in sorted(partitions):
            resume = resumes[p]
            log_start = earliest.get(p, 0)
            start = resume.offset if resume.offset is not None else log_start
            self._dirs += 1
            work = self.work_dir / f"{self._dirs}-{name}-{p}"
            work.mkdir()
            ident = PartitionIdentity(
                self.cluster, name, p, info.topic_id, self.cluster_id, self.host
            )
            pa = PartitionArchiver(ident, self.store, self._configs[name], resume, start, work)
            pa.leader = info.leaders.get(p, -1)
            pa.leader_epoch = info.leader_epochs.get(p, -1)
            pa.report.topic_id = info.topic_id
            if resume.offset is not None and log_start > resume.offset:
                pa.hole(log_start)
            self.live[(name, p)] = pa
            self._work[(name, p)] = work
            self.every.append(pa)
            self._on_open(pa.report)

    def open_keys(self, keys: set[Key]) -> set[Key]:
        """Open ``keys`` (given by the group) from the current Metadata; the keys not opened
        now (no leader yet, Metadata failed: asked again next round). Keys of topics the
        cluster no longer has are dropped."""
        if not keys:
            return set()
        try:
            meta = self.source.topics()
        except KafkaArchiveError as exc:
            log.warning("kafka-archive: Metadata failed (%s); asking again", exc)
            return set(keys)
        left: set[Key] = set()
        for name in sorted({t for t, _ in keys}):
            info = meta.topics.get(name)
            ps = sorted(p for t, p in keys if t == name and info is not None and p in info.leaders)
            ps = [p for p in ps if (name, p) not in self.live]
            if info is None or not ps:
                continue
            try:
                self.open_topic(info, ps)
            except KafkaArchiveError as exc:  # e.g. its leader moved: next round
                log.warning("kafka-archive: %s %s: cannot open yet (%s)", name, ps, exc)
                left |= {(name, p) for p in ps}
        return left

    def release(self, keys: list[Key]) -> None:
        """Upload the open segments of ``keys`` and drop them (the group took them back; a
        store failure is the partition's error)."""
        for key in keys:
            p = self.live.pop(key, None)
            if p is None:
                continue
            if p.report.error is None:
                try:
                    p.finish()
                except Exception as exc:  # the store: recorded, the others still finish
                    p.report.error = f"{type(exc).__name__}: {exc}"
                    log.error("kafka-archive: %s: final upload failed: %s", p.name, exc)
            shutil.rmtree(self._work.pop(key), ignore_errors=True)

    # -- Metadata --------------------------------------------------------------------------

    def refresh(self) -> list[Key]:
        """Ask Metadata; follow leaders, incarnations, added partitions (module docstring).
        The keys of partitions opened or re-opened (a new incarnation)."""
        self.refreshed_at = time.monotonic()
        try:
            meta = self.source.topics()
        except KafkaArchiveError as exc:
            log.warning("kafka-archive: Metadata failed (%s); asking again", exc)
            return []
        for key, p in list(self.live.items()):
            info = meta.topics.get(key[0])
            if info is None or key[1] not in info.leaders:
                self._end(p, "the topic was deleted")
            elif info.topic_id and p.ident.topic_id and info.topic_id != p.ident.topic_id:
                self._end(p, f"the topic was re-created (topic id {info.topic_id})")
            else:
                leader = info.leaders[key[1]]
                epoch = info.leader_epochs.get(key[1], -1)
                if leader >= 0 and (leader, epoch) != (p.leader, p.leader_epoch):
                    p.needs_check = p.last_epoch is not None
                p.leader, p.leader_epoch = leader, epoch
        opened: list[Key] = []
        for name, info in sorted(meta.topics.items()):
            if not selected(info, self.selection):
                continue
            new = [
                p
                for p in sorted(info.leaders)
                if (name, p) not in self.live and (self.wanted is None or (name, p) in self.wanted)
            ]
            if new:
                log.info("kafka-archive: %s: partitions %s join the run", name, new)
                try:
                    self.open_topic(info, new)
                except KafkaArchiveError as exc:  # e.g. no leader yet: the next refresh
                    log.warning("kafka-archive: %s: not opened yet (%s)", name, exc)
                    continue
                opened += [(name, p) for p in new]
        return opened

    def _end(self, p: PartitionArchiver, why: str) -> None:
        """``p``'s incarnation is gone: store what it fetched, and leave the run."""
        log.warning("kafka-archive: %s: %s; what was fetched is archived", p.name, why)
        key = (p.ident.topic, p.ident.partition)
        del self.live[key]
        p.report.ended = why
        if p.report.error is None:
            try:
                p.finish()
            except Exception as exc:  # the store: recorded
                p.report.error = f"{type(exc).__name__}: {exc}"
        shutil.rmtree(self._work.pop(key), ignore_errors=True)

    # -- leader epochs ---------------------------------------------------------------------

    def check_epochs(self) -> bool:
        """Ask each leader OffsetsForLeaderEpoch for its partitions whose leader changed
        (:attr:`~kafka_archive.archive.fetch.partition.PartitionArchiver.needs_check`); a
        divergence in what is stored ends that partition with its
        :class:`~kafka_archive.archive.fetch.epochs.LogTruncated`. Whether Metadata must be
        asked again."""
        from kafka_archive.kafka_protocol.client import ProtocolConnectionError

        asks: dict[tuple[int, str], dict[int, PartitionArchiver]] = {}
        for (topic, partition), p in self.live.items():
            if p.needs_check and p.leader >= 0 and p.report.error is None:
                asks.setdefault((p.leader, topic), {})[partition] = p
        refresh = False
        for (leader, topic), ps in asks.items():
            epochs: Mapping[int, tuple[int, int]] = {
                n: (p.leader_epoch, p.last_epoch if p.last_epoch is not None else -1)
                for n, p in ps.items()
            }
            try:
                answers = self.source.epoch_ends(leader, topic, epochs)
            except (ProtocolConnectionError, KafkaArchiveError) as exc:
                log.warning("kafka-archive: OffsetsForLeaderEpoch of %s failed (%s)", topic, exc)
                for p in ps.values():
                    p.leader = -1
                refresh = True
                continue
            for n, p in ps.items():
                a = answers.get(n)
                if a is None or a.error_code in LEADERSHIP_ERRORS or retriable(a.error_code):
                    p.leader = -1
                    refresh = True
                elif a.error_code:
                    p.report.error = f"OffsetsForLeaderEpoch answered {error_name(a.error_code)}"
                    log.error("kafka-archive: %s: %s", p.name, p.report.error)
                else:
                    try:
                        p.check_epoch(a)
                    except FetchDiverged as exc:
                        p.report.error = f"{type(exc).__name__}: {exc}"
                        log.error("kafka-archive: %s: %s", p.name, exc)
        return refresh
