"""A fetch archive run: select partitions, resume each from the store, fetch, build, upload.

:func:`run_fetch_archive`:

1. asks Metadata for every topic and keeps those ``topics`` selects - shell-style globs matched
   against the whole name, as ``archive --topics`` (:mod:`~kafka_archive.archive.
   topic_selection`); internal topics (``__consumer_offsets``, ``__transaction_state``) only
   when a pattern is their exact name;
2. per topic, the segment configs (DescribeConfigs ``segment.bytes``, ``segment.ms``,
   ``index.interval.bytes``, ``segment.index.bytes``; each overridable);
3. per partition, the resume point (:func:`~kafka_archive.archive.fetch.store_side.
   resume_point`); a partition with nothing archived starts at its log start offset
   (ListOffsets earliest); a log start above the resume point is a **hole**
   (:meth:`~kafka_archive.archive.fetch.partition.PartitionArchiver.hole`);
4. fetches round by round, one request per leader for all its partitions, read_uncommitted;
   each answer goes to the partition's :class:`~kafka_archive.archive.fetch.partition.
   PartitionArchiver`. ``OFFSET_OUT_OF_RANGE`` asks ListOffsets earliest (a hole when it moved
   past the position); leadership errors ask Metadata again; any other error ends that
   partition for this run (named in the report) while the others go on;
5. stops when ``until_caught_up`` and every partition reached the high watermark it had at its
   first answer, or after ``duration_s``, or when ``stop`` is set; then rolls and uploads every
   open segment (a clean stop keeps everything fetched).

A run killed at any point loses nothing: the store holds only whole segments with their
manifests, and the next run resumes from them.
"""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kafka_archive.archive.fetch.batches import FetchDiverged
from kafka_archive.archive.fetch.claims import Fenced
from kafka_archive.archive.fetch.group import (
    DEFAULT_SESSION_TIMEOUT_MS,
    GroupFailed,
    Membership,
)
from kafka_archive.archive.fetch.partition import PartitionArchiver, PartitionIdentity
from kafka_archive.archive.fetch.report import FetchReport
from kafka_archive.archive.fetch.source import FetchSource
from kafka_archive.archive.fetch.store_side import resume_point
from kafka_archive.archive.layout import check_cluster
from kafka_archive.archive.manifest import utc_now
from kafka_archive.archive.topic_selection import TopicSelection
from kafka_archive.errors import KafkaArchiveError
from kafka_archive.kafka_protocol.client import error_name
from kafka_archive.kafka_protocol.fetch import (
    EARLIEST,
    LEADERSHIP_ERRORS,
    OFFSET_OUT_OF_RANGE,
    TopicInfo,
)
from kafka_archive.store import ObjectStore
from segment_lib.errors import SegmentError
from segment_lib.segment_builder import SegmentConfig

__all__ = [
    "SEGMENT_CONFIGS",
    "FetchOptions",
    "NoTopicSelected",
    "run_fetch_archive",
    "split_segment_overrides",
]

log = logging.getLogger(__name__)

#: topic config -> SegmentConfig field
SEGMENT_CONFIGS: Final = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "index.interval.bytes": "index_interval_bytes",
    "segment.index.bytes": "segment_index_bytes",
}


def split_segment_overrides(
    settings: Mapping[str, str],
) -> tuple[dict[str, int], dict[str, str]]:
    """``settings`` (client settings as ``-X`` or a task's ``client_config`` give them) split
    into the segment configs forced for every topic (names of :data:`SEGMENT_CONFIGS`, as
    positive integers) and the client settings proper.

    Raises:
        ValueError: a segment config that is not a positive integer (the message names it).
    """
    overrides: dict[str, int] = {}
    rest: dict[str, str] = {}
    for name, value in settings.items():
        if name not in SEGMENT_CONFIGS:
            rest[name] = value
        elif not str(value).strip().isdigit() or int(value) <= 0:
            raise ValueError(f"{name} must be a positive integer")
        else:
            overrides[name] = int(value)
    return overrides, rest


class NoTopicSelected(KafkaArchiveError, LookupError):
    """The topic pattern selects no topic the principal may describe."""


@dataclass(slots=True)
class FetchOptions:
    """What a run archives and when it stops."""

    #: globs of the topics (whole names, case-sensitive); empty: every non-internal topic
    topics: tuple[str, ...] = ()
    until_caught_up: bool = False
    duration_s: float | None = None
    #: topic configs forced for every topic (names of :data:`SEGMENT_CONFIGS`)
    segment_overrides: Mapping[str, int] = field(default_factory=dict)
    #: how long a Fetch waits for data at the partitions' ends (continuous runs)
    max_wait_ms: int = 500
    #: where segments are built (a temporary directory under it; system temp by default)
    work_dir: str | None = None
    #: with ``until_caught_up``: a partition whose leader answered nothing for this long
    #: fails (named in the report) instead of holding the run forever; a continuous run
    #: waits for the cluster instead
    stall_s: float = 120.0
    #: the Kafka consumer group whose members share the partitions
    #: (:mod:`~kafka_archive.archive.fetch.group`); None: this process archives them all
    group: str | None = None
    group_session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS


def _selected(info: TopicInfo, selection: TopicSelection) -> bool:
    if info.internal:
        return info.name in selection.patterns
    return not selection or selection.matches(info.name)


def _segment_config(source: FetchSource, topic: str, overrides: Mapping[str, int]) -> SegmentConfig:
    # all four forced: DescribeConfigs is not asked (a principal without it may archive)
    asked = [n for n in SEGMENT_CONFIGS if n not in overrides]
    found = source.configs(topic, asked) if asked else {}
    values: dict[str, int] = {}
    for name, attr in SEGMENT_CONFIGS.items():
        if name in overrides:
            values[attr] = int(overrides[name])
        elif name in found:
            values[attr] = int(found[name])
    return SegmentConfig(**values)  # type: ignore[arg-type]


def run_fetch_archive(
    *,
    cluster: str,
    source: FetchSource,
    store: ObjectStore,
    options: FetchOptions,
    stop: threading.Event | None = None,
    membership: Membership | None = None,
) -> FetchReport:
    """Archive the selected partitions over the Kafka protocol (module docstring); with
    ``membership`` only the partitions its group gives this process, as they come and go.

    Raises:
        ValueError: ``cluster`` cannot name a cluster (checked before anything is asked or
            written).
        NoTopicSelected: no topic matches.
        ProtocolConnectionError / ProtocolRequestError: the cluster cannot be reached or
            refused Metadata / DescribeConfigs / ListOffsets at the start.
        StoreError: the store failed (whatever was uploaded before stays archived).
    """
    check_cluster(cluster)
    selection = TopicSelection(options.topics)
    stop = stop or threading.Event()
    report = FetchReport(cluster, store.uri, utc_now().isoformat())
    meta = source.topics()
    chosen = {n: t for n, t in sorted(meta.topics.items()) if _selected(t, selection)}
    if not chosen:
        raise NoTopicSelected(
            f"no topic matches {' or '.join(options.topics)}"
            if options.topics
            else "the cluster has no topic"
        )
    with tempfile.TemporaryDirectory(prefix="kafka-archive-fetch-", dir=options.work_dir) as tmp:
        run = _Partitions(
            cluster, source, store, chosen, meta.cluster_id, options, Path(tmp), report
        )
        try:
            if membership is None:
                run.open({(n, p) for n, t in chosen.items() for p in t.leaders})
            else:
                membership.start(sorted(chosen))
            report.stopped_by = _fetch_loop(run, options, stop, membership)
        finally:
            try:
                run.finish(list(run.by_key))
            finally:
                if membership is not None:
                    membership.close()
            for p in run.opened:
                report.holes.extend(p.holes)
    report.finished_at = utc_now().isoformat()
    return report


class _Partitions:
    """The partitions this process archives now: opened from the store's resume point,
    finished (open segment uploaded) and dropped when given up, opened again when fenced."""

    def __init__(
        self,
        cluster: str,
        source: FetchSource,
        store: ObjectStore,
        chosen: Mapping[str, TopicInfo],
        cluster_id: str | None,
        options: FetchOptions,
        tmp: Path,
        report: FetchReport,
    ) -> None:
        self.cluster = cluster
        self.source = source
        self.store = store
        self.chosen = dict(chosen)
        self.cluster_id = cluster_id
        self.options = options
        self.tmp = tmp
        self.host = socket.gethostname()
        self.report = report
        self.by_key: dict[tuple[str, int], PartitionArchiver] = {}
        self.work_dirs: dict[tuple[str, int], Path] = {}
        #: given by the group, not opened yet (opening failed: asked again next round)
        self.pending: set[tuple[str, int]] = set()
        self.opened: list[PartitionArchiver] = []  # every one of the run, for the report
        self.targets: dict[tuple[str, int], int] = {}
        self.solo: set[tuple[str, int]] = set()  # asked alone next (an empty answer below HW)
        self.fenced: set[tuple[str, int]] = set()  # lost a claim: opened again from the store
        self._configs: dict[str, SegmentConfig] = {}
        self._n = 0

    def open(self, keys: set[tuple[str, int]]) -> None:
        if any(t not in self.chosen or p not in self.chosen[t].leaders for t, p in keys):
            # a partition added since the run started (the group saw it first)
            self.chosen.update({t: i for t, i in self.source.topics().topics.items()})
        for name in sorted({t for t, _ in keys}):
            info = self.chosen.get(name)
            if info is None:
                continue
            ps = sorted(p for t, p in keys if t == name and p in info.leaders)
            if name not in self._configs:
                self._configs[name] = _segment_config(
                    self.source, name, self.options.segment_overrides
                )
            for pa, work in self._open_topic(info, ps):
                self.by_key[_key(pa)] = pa
                self.work_dirs[_key(pa)] = work
                self.opened.append(pa)
                self.report.partitions.append(pa.report)

    def open_pending(self) -> None:
        """Open the partitions the group gave; one that cannot be opened now (its leader
        moved) is asked again next round."""
        for key in sorted(self.pending):
            try:
                self.open({key})
            except KafkaArchiveError as exc:
                log.warning("kafka-archive: %s-%d: cannot open yet (%s)", *key, exc)
            else:
                self.pending.discard(key)

    def _open_topic(self, info: TopicInfo, ps: list[int]) -> list[tuple[PartitionArchiver, Path]]:
        name = info.name
        resumes = {p: resume_point(self.store, self.cluster, name, p, info.topic_id) for p in ps}
        earliest: dict[int, int] = {}
        by_leader: dict[int, list[int]] = {}
        for p in ps:
            by_leader.setdefault(info.leaders[p], []).append(p)
        for leader, lps in by_leader.items():
            if leader >= 0:
                earliest.update(self.source.list_offsets(leader, name, lps, EARLIEST))
        out = []
        for p in ps:
            resume = resumes[p]
            log_start = earliest.get(p, 0)
            start = resume.offset if resume.offset is not None else log_start
            self._n += 1
            work = self.tmp / f"{name}-{p}.{self._n}"
            work.mkdir()
            ident = PartitionIdentity(
                self.cluster, name, p, info.topic_id, self.cluster_id, self.host
            )
            pa = PartitionArchiver(ident, self.store, self._configs[name], resume, start, work)
            pa.leader = info.leaders[p]
            if resume.offset is not None and log_start > resume.offset:
                pa.hole(log_start)
            out.append((pa, work))
        return out

    def finish(self, keys: list[tuple[str, int]]) -> None:
        """Upload the open segments of ``keys`` (a failure is the partition's error; a lost
        claim is not: the other writer has it) and drop them."""
        for key in keys:
            p = self.by_key.pop(key)
            self.targets.pop(key, None)
            self.solo.discard(key)
            if p.report.error is None and key not in self.fenced:
                try:
                    p.finish()
                except Fenced as exc:
                    p.report.fenced += 1
                    log.info("kafka-archive: %s: %s", p.name, exc)
                except Exception as exc:  # the store: recorded, the others still finish
                    p.report.error = f"{type(exc).__name__}: {exc}"
                    log.error("kafka-archive: %s: final upload failed: %s", p.name, exc)
            self.fenced.discard(key)
            shutil.rmtree(self.work_dirs.pop(key), ignore_errors=True)

    def reopen_fenced(self) -> None:
        """Partitions that lost a claim drop what they built and go on from the store."""
        keys = {k for k in self.fenced if k in self.by_key}
        for key in keys:
            del self.by_key[key]
            shutil.rmtree(self.work_dirs.pop(key), ignore_errors=True)
            self.fenced.discard(key)
        if keys:
            self.open(keys)


def _fetch_loop(
    run: _Partitions,
    options: FetchOptions,
    stop: threading.Event,
    membership: Membership | None,
) -> str:
    deadline = None if options.duration_s is None else time.monotonic() + options.duration_s
    by_key, targets, solo = run.by_key, run.targets, run.solo
    max_wait = 0 if options.until_caught_up else options.max_wait_ms
    while True:
        if stop.is_set():
            return "signal"
        if deadline is not None and time.monotonic() >= deadline:
            return "duration"
        if membership is not None:
            if membership.ownership.error is not None:
                raise GroupFailed(membership.ownership.error)
            added, revoked = membership.ownership.changes()
            run.pending = (run.pending | added) - revoked
            run.finish(sorted(k for k in revoked if k in by_key))
            membership.ownership.released(revoked)
            run.open_pending()
        run.reopen_fenced()
        live = [p for k, p in by_key.items() if p.report.error is None]
        if options.until_caught_up:
            # a partition not fetched yet has no target: it is fetched at least once
            live = [p for p in live if targets.get(_key(p), p.position + 1) > p.position]
            _fail_stalled(live, options.stall_s)
            live = [p for p in live if p.report.error is None]
        if not live:
            if membership is not None and (
                not options.until_caught_up or not membership.ownership.settled or run.pending
            ):
                time.sleep(0.2)  # waiting for the group to give partitions
                continue
            return "caught_up" if options.until_caught_up else "no_partition_left"
        refresh = False
        groups: dict[int, dict[tuple[str, int], int]] = {}
        for p in live:
            key = (p.ident.topic, p.ident.partition)
            if p.leader < 0:
                refresh = True
                continue
            if key in solo:
                solo.discard(key)
                refresh |= _fetch_into(
                    run.source, p.leader, {key: p.position}, by_key, targets, solo, 0, run.fenced
                )
                continue
            groups.setdefault(p.leader, {})[key] = p.position
        for leader, asks in groups.items():
            if stop.is_set():
                break
            refresh |= _fetch_into(
                run.source, leader, asks, by_key, targets, solo, max_wait, run.fenced
            )
        if refresh:
            _refresh_leaders(run.source, by_key)
            time.sleep(0.2)


def _fail_stalled(live: list[PartitionArchiver], stall_s: float) -> None:
    now = time.monotonic()
    for p in live:
        if now - p.last_answer_at > stall_s:
            p.report.error = (
                f"not caught up: no Fetch answer from its leader for {stall_s:g} s "
                f"(archived up to offset {p.position})"
            )
            log.error("kafka-archive: %s: %s", p.name, p.report.error)


def _key(p: PartitionArchiver) -> tuple[str, int]:
    return (p.ident.topic, p.ident.partition)


def _fetch_into(
    source: FetchSource,
    leader: int,
    asks: Mapping[tuple[str, int], int],
    by_key: Mapping[tuple[str, int], PartitionArchiver],
    targets: dict[tuple[str, int], int],
    solo: set[tuple[str, int]],
    max_wait_ms: int,
    fenced: set[tuple[str, int]],
) -> bool:
    """One Fetch from ``leader``, each answer to its partition; whether leaders must be asked
    again."""
    from kafka_archive.kafka_protocol.client import ProtocolConnectionError

    try:
        answers = source.fetch(leader, asks, max_wait_ms=max_wait_ms)
    except ProtocolConnectionError as exc:
        log.warning("kafka-archive: Fetch from broker %d failed (%s); asking again", leader, exc)
        for key in asks:
            by_key[key].leader = -1
        return True
    refresh = False
    for a in answers:
        key = (a.topic, a.partition)
        p = by_key.get(key)
        if p is None or key not in asks or asks[key] != p.position:
            continue
        if a.error_code in LEADERSHIP_ERRORS:
            p.leader = -1
            refresh = True
            continue
        p.last_answer_at = time.monotonic()
        if a.error_code == OFFSET_OUT_OF_RANGE:
            refresh |= _out_of_range(source, leader, p, fenced)
        elif a.error_code:
            p.report.error = f"Fetch answered {error_name(a.error_code)}"
            log.error("kafka-archive: %s: %s", p.name, p.report.error)
        else:
            targets.setdefault(key, a.high_watermark)
            try:
                kept = p.feed(a)
            except Fenced as exc:  # another writer's segment: go on from the store
                p.report.fenced += 1
                fenced.add(key)
                log.info("kafka-archive: %s: %s", p.name, exc)
                continue
            except (KafkaArchiveError, SegmentError) as exc:  # diverged, or damaged bytes
                p.report.error = f"{type(exc).__name__}: {exc}"
                log.error("kafka-archive: %s: %s", p.name, exc)
                continue
            if kept == 0 and p.position < a.high_watermark:
                if len(asks) == 1:  # alone and still nothing: no batch left below the HW
                    p.skip_to(a.high_watermark)
                else:  # maybe crowded out by the response's size limit: ask it alone
                    solo.add(key)
    return refresh


def _out_of_range(
    source: FetchSource, leader: int, p: PartitionArchiver, fenced: set[tuple[str, int]]
) -> bool:
    """OFFSET_OUT_OF_RANGE: where the log starts now (a hole, or a diverged log); whether
    leaders must be asked again."""
    try:
        found = source.list_offsets(leader, p.ident.topic, [p.ident.partition], EARLIEST)
    except KafkaArchiveError as exc:  # e.g. the leader moved meanwhile: ask again
        log.warning("kafka-archive: %s: ListOffsets failed (%s)", p.name, exc)
        p.leader = -1
        return True
    try:
        p.log_start_moved(found[p.ident.partition])
    except Fenced as exc:  # the segment the hole ended: another writer's
        p.report.fenced += 1
        fenced.add(_key(p))
        log.info("kafka-archive: %s: %s", p.name, exc)
    except FetchDiverged as exc:
        p.report.error = str(exc)
        log.error("kafka-archive: %s: %s", p.name, exc)
    return False


def _refresh_leaders(
    source: FetchSource, by_key: Mapping[tuple[str, int], PartitionArchiver]
) -> None:
    try:
        meta = source.topics()
    except KafkaArchiveError as exc:
        log.warning("kafka-archive: Metadata failed (%s); asking again", exc)
        return
    for (topic, partition), p in by_key.items():
        info = meta.topics.get(topic)
        if info is not None:
            p.leader = info.leaders.get(partition, -1)
