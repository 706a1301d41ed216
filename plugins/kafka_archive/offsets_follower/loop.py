"""One follower run, :func:`follow_offsets` (the guarantees: :mod:`.follower`'s docstring), and
its poll loop :class:`FollowLoop`: assign the partitions at the stored
positions, consume, date transactional records at their COMMIT marker
(:class:`~kafka_archive.offsets_follower.txn_moments.TxnMomentResolver`), store each consume
call's records in one :func:`~kafka_archive.offsets_follower.follower.apply_batch` transaction.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from kafka_archive.catalog.db import Catalog
from kafka_archive.errors import KafkaArchiveError
from kafka_archive.kafka_protocol.config import librdkafka_config
from kafka_archive.offsets_follower.follower import (
    CONSUMER_OFFSETS_TOPIC,
    BatchResult,
    FollowReport,
    PositionConflictError,
    ReadRecord,
    apply_batch,
    consumer_config,
    load_positions,
)
from kafka_archive.offsets_follower.raw_batches import KafkaRawBatchReader, RawBatchSource
from kafka_archive.offsets_follower.txn_moments import TxnMomentResolver

__all__ = ["FollowLoop", "FollowerNotAuthorized", "follow_offsets"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class FollowLoop:
    """The poll loop of one :func:`follow_offsets` run over ``parts``.

    State: ``stored`` (the position per partition this follower read at its start or last
    wrote, ``None`` when no row exists), ``end_at_start`` (each partition's end when the run
    began) and ``at_end`` (the partitions seen caught up: an end-of-partition event, or a record
    at or past the last offset that existed at the start, since a busy partition may never
    report its end).
    """

    catalog: Catalog
    cluster: str
    consumer: Any
    parts: list[int]
    report: FollowReport
    batch_records: int
    poll_timeout_s: float
    on_batch: Callable[[BatchResult], None] | None
    resolver: TxnMomentResolver
    stored: dict[int, int | None] = field(default_factory=dict)
    end_at_start: dict[int, int] = field(default_factory=dict)
    at_end: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.stored = {p: None for p in self.parts}

    def assign(self) -> None:
        """Read the stored positions and assign every partition there (the beginning when
        none is stored)."""
        from confluent_kafka import TopicPartition

        stored = self.stored
        stored.update(load_positions(self.catalog, self.cluster))
        self.consumer.assign(
            [
                TopicPartition(CONSUMER_OFFSETS_TOPIC, p, stored[p] or 0)
                if stored[p] is not None
                else TopicPartition(CONSUMER_OFFSETS_TOPIC, p, -2)  # OFFSET_BEGINNING
                for p in self.parts
            ]
        )

    def start(self) -> None:
        """Assign, note each partition's end now, and report (and log) stored positions below
        the log start: records in between were deleted before they were read."""
        from confluent_kafka import TopicPartition

        self.assign()
        for p in self.parts:
            low, high = self._watermarks(TopicPartition(CONSUMER_OFFSETS_TOPIC, p))
            self.end_at_start[p] = high
            pos = self.stored[p]
            if pos is not None and pos < low:
                self.report.behind_log_start[p] = [pos, low]
                log.warning(
                    "__consumer_offsets-%d: stored position %d is below the log start %d: "
                    "records in between were deleted before they were read",
                    p,
                    pos,
                    low,
                )
        self.at_end = {p for p in self.parts if (self.stored[p] or 0) >= self.end_at_start[p]}

    def _watermarks(self, tp: Any, timeout_s: float = 30.0) -> tuple[int, int]:
        """``tp``'s log start and end. Retried for ``timeout_s`` while the broker answers
        with an error that passes: ``__consumer_offsets`` is created on the first group
        lookup, and for a moment after that its partitions' leaders do not know them yet
        (UNKNOWN_TOPIC_OR_PART) or are still being elected."""
        from confluent_kafka import KafkaError, KafkaException

        passing = {
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            KafkaError.LEADER_NOT_AVAILABLE,
            KafkaError.NOT_LEADER_FOR_PARTITION,
            KafkaError._UNKNOWN_PARTITION,
        }
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                low, high = self.consumer.get_watermark_offsets(
                    tp, timeout=max(1.0, deadline - time.monotonic()), cached=False
                )
                return int(low), int(high)
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                code = err.code() if isinstance(err, KafkaError) else None
                if code not in passing or time.monotonic() >= deadline:
                    raise
                log.info("__consumer_offsets-%d: %s; asking again", tp.partition, err)
                time.sleep(0.5)

    def run(
        self, stop: threading.Event, expired: Callable[[], bool], *, until_caught_up: bool
    ) -> None:
        """Consume and store batch after batch until ``stop`` is set, ``expired()``, or (with
        ``until_caught_up``) every partition is at its end; sets the report's ``stopped_by``."""
        report = self.report
        while True:
            if stop.is_set():
                report.stopped_by = "stop requested"
                return
            if expired():
                report.stopped_by = "duration"
                return
            msgs = self.consumer.consume(
                num_messages=self.batch_records, timeout=self.poll_timeout_s
            )
            records, ends = self._read(msgs)
            records = self._at_markers(records)
            if not self._store(records, ends):
                continue  # positions re-read after a conflict: poll again from there
            if until_caught_up and self.at_end >= set(self.parts):
                report.caught_up = True
                report.stopped_by = "caught up"
                return

    def _read(self, msgs: list[Any]) -> tuple[list[ReadRecord], dict[int, int]]:
        """The records of one consume call, and the end offsets of the partitions that
        reported their end; marks partitions caught up. A fatal client error raises
        :class:`KafkaException`; other errors are logged and skipped."""
        from confluent_kafka import KafkaError, KafkaException

        records: list[ReadRecord] = []
        ends: dict[int, int] = {}
        for m in msgs:
            part, off = m.partition() or 0, m.offset() or 0
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    self.at_end.add(part)
                    ends[part] = off
                    continue
                if err.fatal():
                    raise KafkaException(err)
                log.warning("__consumer_offsets follower: %s", err)
                continue
            if off >= self.end_at_start[part] - 1:
                self.at_end.add(part)
            ts_type, ts = m.timestamp()
            key, value = m.key(), m.value()
            records.append(
                ReadRecord(
                    part,
                    off,
                    ts if ts_type else -1,
                    key.encode() if isinstance(key, str) else key,
                    value.encode() if isinstance(value, str) else value,
                )
            )
        return records, ends

    def _at_markers(self, records: list[ReadRecord]) -> list[ReadRecord]:
        """``records`` with the COMMIT marker of each one written inside a transaction (the
        raw-batch scan, :class:`TxnMomentResolver`)."""
        by_part: dict[int, list[int]] = {}
        for r in records:
            by_part.setdefault(r.partition, []).append(r.offset)
        markers = {
            (p, off): m
            for p, offs in by_part.items()
            for off, m in self.resolver.resolve(p, offs).items()
        }
        if not markers:
            return records
        self.report.transactional_records += len(markers)
        return [
            replace(r, marker=markers[(r.partition, r.offset)])
            if (r.partition, r.offset) in markers
            else r
            for r in records
        ]

    def _store(self, records: list[ReadRecord], ends: dict[int, int]) -> bool:
        """Store one consume call's records in one :func:`apply_batch` transaction (none when
        nothing was read). False when another follower moved a position meanwhile: nothing was
        stored, the positions are re-read and the consumer re-assigned there."""
        touched = {r.partition for r in records} | set(ends)
        if not touched:
            return True
        report = self.report
        try:
            res = apply_batch(
                self.catalog,
                self.cluster,
                records,
                {p: self.stored[p] for p in touched},
                ends=ends,
            )
        except PositionConflictError as exc:
            report.conflicts += 1
            log.warning("%s: re-reading stored positions", exc)
            self.assign()
            self.at_end = {p for p in self.at_end if (self.stored[p] or 0) >= self.end_at_start[p]}
            return False
        self.stored.update(res.positions)
        for p, pos in res.positions.items():
            self.resolver.prune(p, pos)
        report.transactions += 1
        report.records_read += len(records)
        report.commits_recorded += res.counts.commits
        report.tombstones_recorded += res.counts.tombstones
        report.group_records += res.counts.group_records
        report.other_records += res.counts.other_records
        report.undecodable += res.counts.undecodable
        if self.on_batch is not None:
            self.on_batch(res)
        return True


class FollowerNotAuthorized(KafkaArchiveError, PermissionError):
    """The cluster refused the follower's principal ``__consumer_offsets`` (an ACL missing)."""


#: librdkafka's codes of a topic the principal may not describe
_NOT_AUTHORIZED: Final = frozenset({29})  # TOPIC_AUTHORIZATION_FAILED


def _partitions(consumer: Any, timeout_s: float) -> list[int]:
    from kafka_archive.client_log import reach_metadata

    md = reach_metadata(consumer, CONSUMER_OFFSETS_TOPIC, timeout_s=timeout_s)
    t = md.topics.get(CONSUMER_OFFSETS_TOPIC)
    if t is not None and t.error is not None and t.error.code() in _NOT_AUTHORIZED:
        # not "no topic yet": a principal without ACLs would otherwise be told it caught up
        raise FollowerNotAuthorized(
            f"not authorized to read {CONSUMER_OFFSETS_TOPIC} ({t.error.name()}): the "
            f"follower's principal needs Read on topic {CONSUMER_OFFSETS_TOPIC} "
            "(docs/security.md)"
        )
    if t is None or t.error is not None:
        return []  # created lazily by the first group: nothing to follow yet
    return sorted(t.partitions)


def follow_offsets(
    catalog: Catalog,
    cluster: str,
    bootstrap: str,
    *,
    until_caught_up: bool = False,
    duration_s: float | None = None,
    config: Mapping[str, str] | None = None,
    batch_records: int = 2000,
    poll_timeout_s: float = 0.5,
    stop: threading.Event | None = None,
    on_batch: Callable[[BatchResult], None] | None = None,
    handle_signals: bool = False,
    raw_source: RawBatchSource | None = None,
) -> FollowReport:
    """Follow ``__consumer_offsets`` of the cluster at ``bootstrap`` into ``catalog`` (see the
    module docstring for the guarantees) until caught up, ``duration_s`` passed, ``stop`` is
    set, or (``handle_signals``) SIGTERM/SIGINT arrives. With none of them, runs for ever.

    Each consume call's records go to the catalog in one :func:`.follower.apply_batch` transaction
    before the next call; ``on_batch`` sees each committed result. Set-up waits for the topic;
    :class:`FollowLoop` assigns and polls; shut-down
    (always) closes the consumer and reads the report's positions back from the catalog.

    ``raw_source`` is where the raw batches come from (default: a
    :class:`~kafka_archive.offsets_follower.raw_batches.KafkaRawBatchReader` on the same
    cluster with the same settings); the follower closes it.

    Raises:
        UnsupportedRawSetting: a setting of ``config`` the raw-batch reader cannot apply.
        RawFetchError: a raw Fetch failed (what was stored so far is kept).
    """
    from confluent_kafka import Consumer

    started = time.monotonic()
    report = FollowReport(cluster)
    stop = stop or threading.Event()
    if handle_signals:
        _stop_on_signals(stop)

    def expired() -> bool:
        return duration_s is not None and time.monotonic() - started >= duration_s

    resolver = TxnMomentResolver(
        raw_source
        if raw_source is not None
        else KafkaRawBatchReader(consumer_config(bootstrap, config))
    )
    consumer = Consumer(librdkafka_config(consumer_config(bootstrap, config)))
    try:
        parts = _wait_for_partitions(consumer, stop, expired, until_caught_up=until_caught_up)
        report.partitions = len(parts)
        if not parts:
            report.caught_up = until_caught_up
            report.stopped_by = "no __consumer_offsets topic yet"
            return report
        loop = FollowLoop(
            catalog,
            cluster,
            consumer,
            parts,
            report,
            batch_records=batch_records,
            poll_timeout_s=poll_timeout_s,
            on_batch=on_batch,
            resolver=resolver,
        )
        loop.start()
        loop.run(stop, expired, until_caught_up=until_caught_up)
    finally:
        consumer.close()
        resolver.close()
        report.unresolved_markers = resolver.unresolved
        report.positions = load_positions(catalog, cluster)
        report.seconds = round(time.monotonic() - started, 3)
    return report


def _stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop`` (the run ends after its current batch)."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())


def _wait_for_partitions(
    consumer: Any, stop: threading.Event, expired: Callable[[], bool], *, until_caught_up: bool
) -> list[int]:
    """The partitions of ``__consumer_offsets``; empty when the topic does not exist yet and
    the run is ``until_caught_up``, or was stopped (``stop``, ``expired``) while waiting."""
    parts = _partitions(consumer, 30.0)
    while not parts and not until_caught_up:
        # created by the first group that commits: a long-running follower waits for it
        if stop.wait(1.0) or expired():
            break
        parts = _partitions(consumer, 30.0)
    return parts
