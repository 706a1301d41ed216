"""A fetch archive run: select partitions, resume each from the store, fetch, build, upload.

:func:`run_fetch_archive`:

1. asks Metadata for every topic and keeps those ``topics`` selects - shell-style globs matched
   against the whole name, as ``archive --topics`` (:mod:`~kafka_archive.archive.
   topic_selection`); internal topics (``__consumer_offsets``, ``__transaction_state``) only
   when a pattern is their exact name;
2. per topic, the segment configs (DescribeConfigs ``segment.bytes``, ``segment.ms``,
   ``index.interval.bytes``, ``segment.index.bytes``; each overridable);
3. per partition, the resume point (:func:`~kafka_archive.archive.fetch.store_side.
   resume_point`, of the topic's current topic id); a partition with nothing archived starts
   at its log start offset (ListOffsets earliest); a log start above the resume point is a
   **hole** (:meth:`~kafka_archive.archive.fetch.partition.PartitionArchiver.hole`)
   (:class:`~kafka_archive.archive.fetch.members.PartitionSet`);
4. fetches round by round, one request per leader for all its partitions, read_uncommitted;
   each answer goes to the partition's :class:`~kafka_archive.archive.fetch.partition.
   PartitionArchiver`. ``OFFSET_OUT_OF_RANGE`` asks ListOffsets earliest (a hole when it moved
   past the position); leadership errors ask Metadata again; any other error ends that
   partition for this run (named in the report) while the others go on. Metadata is asked
   again every ``metadata_max_age_s`` too: new leaders and leader epochs are checked with
   OffsetsForLeaderEpoch before the next Fetch (:mod:`~kafka_archive.archive.fetch.epochs`),
   deleted or re-created topics end their partitions, added partitions join
   (:class:`~kafka_archive.archive.fetch.members.PartitionSet`). With ``membership``
   (``--group``, :mod:`~kafka_archive.archive.fetch.group`) only the partitions the group
   gives this process are opened, as they are given; those it takes back are uploaded and
   dropped first. Two writers of one partition anyway (a hand-over, a member cut off) are
   harmless: each segment's base offset is claimed in the store before its manifest
   (:mod:`~kafka_archive.archive.fetch.claims`);
5. stops when ``until_caught_up`` and every partition reached the high watermark it had at its
   first answer, or after ``duration_s``, or when ``stop`` is set; then rolls and uploads every
   open segment (a clean stop keeps everything fetched).

A run killed at any point loses nothing: the store holds only whole segments with their
manifests, and the next run resumes from them.
"""

from __future__ import annotations

import logging
import socket
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kafka_archive.archive.fetch.batches import FetchDiverged
from kafka_archive.archive.fetch.group import (
    DEFAULT_SESSION_TIMEOUT_MS,
    GroupFailed,
    Membership,
)
from kafka_archive.archive.fetch.members import Key, PartitionSet, selected
from kafka_archive.archive.fetch.partition import PartitionArchiver
from kafka_archive.archive.fetch.report import FetchReport
from kafka_archive.archive.fetch.source import FetchSource
from kafka_archive.archive.layout import check_cluster
from kafka_archive.archive.manifest import utc_now
from kafka_archive.archive.topic_selection import TopicSelection
from kafka_archive.errors import KafkaArchiveError
from kafka_archive.kafka_protocol.client import error_name, retriable
from kafka_archive.kafka_protocol.fetch import EARLIEST, LEADERSHIP_ERRORS, OFFSET_OUT_OF_RANGE
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
    #: Metadata is asked again at least this often (leader changes, topics re-created,
    #: partitions added), besides whenever a Fetch says leadership moved
    metadata_max_age_s: float = 30.0
    #: the Kafka consumer group whose members share the partitions
    #: (:mod:`~kafka_archive.archive.fetch.group`); None: this process archives them all
    group: str | None = None
    group_session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS


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
    chosen = {n: t for n, t in sorted(meta.topics.items()) if selected(t, selection)}
    if not chosen:
        raise NoTopicSelected(
            f"no topic matches {' or '.join(options.topics)}"
            if options.topics
            else "the cluster has no topic"
        )
    with tempfile.TemporaryDirectory(prefix="kafka-archive-fetch-", dir=options.work_dir) as tmp:
        parts = PartitionSet(
            cluster=cluster,
            source=source,
            store=store,
            selection=selection,
            cluster_id=meta.cluster_id,
            host=socket.gethostname(),
            work_dir=Path(tmp),
            config_of=lambda topic: _segment_config(source, topic, options.segment_overrides),
            on_open=report.partitions.append,
        )
        try:
            if membership is None:
                for info in chosen.values():
                    parts.open_topic(info, sorted(info.leaders))
            else:
                parts.wanted = set()
                membership.start(sorted(chosen))
            report.stopped_by = _fetch_loop(source, parts, options, stop, membership)
        finally:
            try:
                parts.release(list(parts.live))
            finally:
                if membership is not None:
                    membership.close()
            for p in parts.every:
                report.holes.extend(p.holes)
    report.finished_at = utc_now().isoformat()
    return report


def _fetch_loop(
    source: FetchSource,
    parts: PartitionSet,
    options: FetchOptions,
    stop: threading.Event,
    membership: Membership | None,
) -> str:
    deadline = None if options.duration_s is None else time.monotonic() + options.duration_s
    targets: dict[Key, int] = {}
    solo: set[Key] = set()  # asked alone next (an empty answer below the HW)
    pending: set[Key] = set()  # given by the group, not opened yet
    max_wait = 0 if options.until_caught_up else options.max_wait_ms
    refresh = False
    while True:
        if stop.is_set():
            return "signal"
        if deadline is not None and time.monotonic() >= deadline:
            return "duration"
        if membership is not None:
            pending = _follow_group(parts, membership, pending, targets, solo)
        if refresh or time.monotonic() - parts.refreshed_at >= options.metadata_max_age_s:
            _forget(parts.refresh(), targets, solo)  # opened (again): fetched at least once
        refresh = parts.check_epochs()
        by_key = parts.live
        live = _to_fetch(by_key, options, targets)
        if not live:
            if membership is not None and (
                not options.until_caught_up or not membership.ownership.settled or pending
            ):
                time.sleep(0.2)  # waiting for the group to give partitions
                continue
            return "caught_up" if options.until_caught_up else "no_partition_left"
        groups: dict[int, dict[Key, int]] = {}
        for p in live:
            key = _key(p)
            if p.leader < 0:
                refresh = True
                continue
            if p.needs_check:  # its leader's log is checked first (next round)
                continue
            if key in solo:
                solo.discard(key)
                refresh |= _fetch_into(
                    source, p.leader, {key: p.position}, by_key, targets, solo, 0
                )
                continue
            groups.setdefault(p.leader, {})[key] = p.position
        for leader, asks in groups.items():
            if stop.is_set():
                break
            refresh |= _fetch_into(source, leader, asks, by_key, targets, solo, max_wait)
        if refresh:
            time.sleep(0.2)


def _forget(keys: Iterable[Key], targets: dict[Key, int], solo: set[Key]) -> None:
    for key in keys:
        targets.pop(key, None)
        solo.discard(key)


def _to_fetch(
    by_key: Mapping[Key, PartitionArchiver], options: FetchOptions, targets: Mapping[Key, int]
) -> list[PartitionArchiver]:
    """The partitions to fetch this round: without an error, and, with ``until_caught_up``,
    below their target (stalled ones fail)."""
    live = [p for p in by_key.values() if p.report.error is None]
    if options.until_caught_up:
        # a partition not fetched yet has no target: it is fetched at least once
        live = [p for p in live if targets.get(_key(p), p.position + 1) > p.position]
        _fail_stalled(live, options.stall_s)
        live = [p for p in live if p.report.error is None]
    return live


def _fail_stalled(live: list[PartitionArchiver], stall_s: float) -> None:
    now = time.monotonic()
    for p in live:
        if now - p.last_answer_at > stall_s:
            p.report.error = (
                f"not caught up: no Fetch answer from its leader for {stall_s:g} s "
                f"(archived up to offset {p.position})"
            )
            log.error("kafka-archive: %s: %s", p.name, p.report.error)


def _key(p: PartitionArchiver) -> Key:
    return (p.ident.topic, p.ident.partition)


def _fetch_into(
    source: FetchSource,
    leader: int,
    asks: Mapping[Key, int],
    by_key: Mapping[Key, PartitionArchiver],
    targets: dict[Key, int],
    solo: set[Key],
    max_wait_ms: int,
) -> bool:
    """One Fetch from ``leader`` (by topic id, with the current leader epoch, where known),
    each answer to its partition; whether leaders must be asked again."""
    from kafka_archive.kafka_protocol.client import ProtocolConnectionError

    topic_ids = {k[0]: by_key[k].ident.topic_id for k in asks}
    epochs = {k: by_key[k].leader_epoch for k in asks}
    try:
        answers = source.fetch(
            leader, asks, max_wait_ms=max_wait_ms, topic_ids=topic_ids, leader_epochs=epochs
        )
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
        if a.error_code in LEADERSHIP_ERRORS or (
            a.error_code and a.error_code != OFFSET_OUT_OF_RANGE and retriable(a.error_code)
        ):  # ask Metadata, then the leader again
            p.leader = -1
            refresh = True
            continue
        p.last_answer_at = time.monotonic()
        if a.error_code == OFFSET_OUT_OF_RANGE:
            try:
                found = source.list_offsets(leader, a.topic, [a.partition], EARLIEST)
            except KafkaArchiveError as exc:  # e.g. the leader moved meanwhile: ask again
                log.warning("kafka-archive: %s: ListOffsets failed (%s)", p.name, exc)
                p.leader = -1
                refresh = True
                continue
            try:
                p.log_start_moved(found[a.partition])
                targets.pop(key, None)  # a new position: caught up once fetched from it
            except FetchDiverged as exc:
                p.report.error = str(exc)
                log.error("kafka-archive: %s: %s", p.name, exc)
        elif a.error_code:
            p.report.error = f"Fetch answered {error_name(a.error_code)}"
            log.error("kafka-archive: %s: %s", p.name, p.report.error)
        else:
            targets.setdefault(key, a.high_watermark)
            try:
                kept = p.feed(a)
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


def _follow_group(
    parts: PartitionSet,
    membership: Membership,
    pending: set[Key],
    targets: dict[Key, int],
    solo: set[Key],
) -> set[Key]:
    """Take the group's changes: what was taken back is uploaded and dropped (then released
    to the group), what was given is opened; the keys given and not opened yet.

    Raises:
        GroupFailed: the group cannot be joined.
    """
    ownership = membership.ownership
    if ownership.error is not None:
        raise GroupFailed(ownership.error)
    added, revoked = ownership.changes()
    if not added and not revoked and not pending:
        return pending
    wanted = parts.wanted if parts.wanted is not None else set()
    parts.wanted = (wanted | added) - revoked
    pending = (pending | added) - revoked
    parts.release(sorted(k for k in revoked if k in parts.live))
    _forget(revoked, targets, solo)
    ownership.released(revoked)
    return parts.open_keys(pending)
