"""``catalog offsets`` answers that say how sure they are and whether the moment asked about
lies inside the archive.

:func:`~kafka_archive.catalog.queries.offsets_for_time` answers exactly like the broker's
ListOffsets, which is silent about two cases people misread: a moment *before* the archive's
first record answers the first archived offset (which looks like "offset 0 was written then"),
and a moment *after* its last record answers -1. :func:`offsets_at` adds, per partition, what
the archive spans and a ``clamped``/``note`` saying so.

It also answers without the store: the catalog alone knows the one time-index interval that
holds the answer, so its first offset is a safe place to start reading (no record at or after
the moment lies before it) and its last offset bounds the answer. Reading that interval's bytes
(at most one ranged read per partition) makes the answer exact.

Core only (the tables of :mod:`kafka_archive.catalog.tables`), like
:mod:`kafka_archive.catalog.queries.offsets`: ``catalog offsets`` imports no ORM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, func, select

from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.queries.offsets import offset_intervals, offsets_for_time
from kafka_archive.catalog.tables import chain_pieces as cp
from kafka_archive.catalog.tables import partitions as pt
from kafka_archive.catalog.tables import pruned_ranges, segments
from kafka_archive.store import ObjectStore
from kafka_archive.timeparse import format_ms

__all__ = ["ArchiveSpan", "PrunedBefore", "TimeAnswer", "archive_spans", "offsets_at"]

BEFORE_START = "before_start"
AFTER_END = "after_end"
#: the partition holds no retained record: a retention policy pruned all of it
PRUNED_AWAY = "pruned"


@dataclass(frozen=True, slots=True)
class ArchiveSpan:
    """A partition's archived chain: its first offset, the first batch's timestamp there and
    the largest timestamp anywhere (-1: nothing served)."""

    first_offset: int
    first_timestamp: int
    max_timestamp: int
    #: the newest pruned range before the retained span (``None``: nothing was pruned)
    pruned: PrunedBefore | None = None


@dataclass(frozen=True, slots=True)
class PrunedBefore:
    """What a retention prune removed before a partition's retained span."""

    policy: str
    pruned_at_ms: int | None
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class TimeAnswer:
    """One partition's answer for a moment ``at``.

    ``exact``: ``offset``/``timestamp`` are the broker's ListOffsets answer (the store was
    read). Otherwise ``offset`` is a safe lower bound (start reading there: no record at or
    after the moment lies earlier), ``offset_max`` bounds the answer and ``timestamp`` is -1.
    ``offset`` -1: no archived record is that late. ``clamped``: ``before_start`` when ``at``
    is before the timestamp of the partition's first archived record (the answer is then the
    first archived offset: it says nothing about what came before the archive), ``after_end``
    when it is after the largest archived timestamp (the answer is -1), else ``None``;
    ``note`` says it in a sentence; ``pruned`` when the partition holds no retained record at
    all (a retention policy pruned everything: the answer is -1 and the note names the policy,
    when, and up to which offset)."""

    partition: int
    at: int
    offset: int
    timestamp: int
    exact: bool
    offset_max: int
    span: ArchiveSpan
    #: the topic id of the archived segment the answer comes from (``None``: unknown or no
    #: record that late); two incarnations of a topic in one partition: see ``catalog gaps``
    topic_id: str | None = None

    @property
    def clamped(self) -> str | None:
        if self.span.pruned is not None and self.span.first_offset < 0:
            return PRUNED_AWAY  # nothing retained: no moment is before or after anything
        if self.span.first_timestamp >= 0 and self.at < self.span.first_timestamp:
            return BEFORE_START
        if self.at > self.span.max_timestamp:
            return AFTER_END
        return None

    @property
    def note(self) -> str | None:
        """One sentence for people when the moment is outside the archive, else ``None``."""
        if self.clamped == PRUNED_AWAY and self.span.pruned is not None:
            pr = self.span.pruned
            when = format_ms(pr.pruned_at_ms) if pr.pruned_at_ms is not None else "(unfinished)"
            newest = format_ms(pr.max_timestamp) if pr.max_timestamp >= 0 else "unknown"
            return (
                f"partition {self.partition} holds no retained record: all its archived data "
                f"(offsets up to {pr.last_offset}, newest record {newest}) was pruned by "
                f"policy {pr.policy} at {when}; no offset can be answered (-1), the records "
                "are gone from the archive"
            )
        if self.clamped == BEFORE_START and self.span.pruned is not None:
            pr = self.span.pruned
            when = format_ms(pr.pruned_at_ms) if pr.pruned_at_ms is not None else "(unfinished)"
            return (
                f"{format_ms(self.at)} is before the archive's first retained record of "
                f"partition {self.partition} ({format_ms(self.span.first_timestamp)}, offset "
                f"{self.span.first_offset}): the data was pruned by policy {pr.policy} at "
                f"{when} (offsets up to {pr.last_offset}); the answer is the first retained "
                "offset"
            )
        if self.clamped == BEFORE_START:
            return (
                f"{format_ms(self.at)} is before the archive's first record of partition "
                f"{self.partition} ({format_ms(self.span.first_timestamp)}, offset "
                f"{self.span.first_offset}): the answer is the first archived offset; records "
                "before it, if any, were not archived"
            )
        if self.clamped == AFTER_END:
            last = format_ms(self.span.max_timestamp) if self.span.max_timestamp >= 0 else "none"
            return (
                f"{format_ms(self.at)} is after the archive's last record of partition "
                f"{self.partition} ({last}): no archived record is that late (-1); newer "
                "records may still be on the brokers or not archived yet"
            )
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "offset": self.offset,
            "timestamp": self.timestamp,
            "exact": self.exact,
            "offset_max": self.offset_max,
            "clamped": self.clamped,
            "note": self.note,
            "topic_id": self.topic_id,
            "pruned": None
            if self.span.pruned is None or self.clamped not in (BEFORE_START, PRUNED_AWAY)
            else {
                "policy": self.span.pruned.policy,
                "pruned_at_ms": self.span.pruned.pruned_at_ms,
                "last_offset": self.span.pruned.last_offset,
            },
        }


def first_pieces_query(*where: ColumnElement[bool]) -> Select[int, int, int]:
    """Per partition matching ``where``: its chain's lowest piece (partition, ``lo``, the
    serving segment's first timestamp). One primary-key probe of ``chain_pieces`` per
    partition (the lowest ``lo`` is a correlated ``min``), never a scan of every piece: the
    answer's cost does not grow with the archive (``tests/test_time_answers_plan.py``)."""
    lowest = (
        select(func.min(cp.c.lo))
        .where(cp.c.partition_id == pt.c.id)
        .correlate(pt)
        .scalar_subquery()
    )
    return (
        select(pt.c.partition, cp.c.lo, segments.c.first_timestamp)
        .select_from(
            pt.join(cp, cp.c.partition_id == pt.c.id).join(
                segments, segments.c.id == cp.c.segment_id
            )
        )
        .where(*where, cp.c.lo == lowest)
    )


def last_pruned_query(
    cluster: str, topic: str, partitions: Sequence[int] | None = None
) -> Select[Any]:
    """Per partition of ``topic`` (``partitions``: only those), its highest pruned range (a
    row of every ``pruned_ranges`` column), in ``last_offset`` order. Each partition's ranges
    are found through ``ix_pruned_ranges_where`` and only the highest is loaded: every prune
    adds ranges, and loading all of them made ``offsets`` slower with every prune
    (``tests/test_time_answers_plan.py``)."""
    pr = pruned_ranges.c
    inner = pruned_ranges.alias("inner_pr").c
    highest = (
        select(func.max(inner.last_offset))
        .where(
            inner.cluster == pr.cluster, inner.topic == pr.topic, inner.partition == pr.partition
        )
        .correlate(pruned_ranges)
        .scalar_subquery()
    )
    where = [pr.cluster == cluster, pr.topic == topic, pr.last_offset == highest]
    if partitions:
        where.append(pr.partition.in_(sorted(set(partitions))))
    return select(pruned_ranges).where(*where).order_by(pr.last_offset)


def archive_spans(
    catalog: Catalog, cluster: str, topic: str, partitions: Sequence[int] | None = None
) -> dict[int, ArchiveSpan]:
    """Per archived partition of ``topic``: what its chain spans (two grouped queries)."""
    sg = segments.c
    serving = sg.status.in_(("canonical", "partial"))
    where = [pt.c.cluster == cluster, pt.c.topic == topic]
    if partitions:
        where.append(pt.c.partition.in_(sorted(set(partitions))))
    with catalog.engine.connect() as s:
        tops = dict(
            s.execute(
                select(pt.c.partition, func.max(sg.max_timestamp).filter(serving))
                .select_from(pt.join(segments, sg.partition_id == pt.c.id))
                .where(*where)
                .group_by(pt.c.partition)
            ).all()
        )
        firsts = {
            int(part): (int(lo), int(fts))
            for part, lo, fts in s.execute(first_pieces_query(*where))
        }
        pruned: dict[int, PrunedBefore] = {}
        for r in s.execute(last_pruned_query(cluster, topic, partitions)):
            pruned[int(r.partition)] = PrunedBefore(
                r.policy, r.pruned_at_ms, r.first_offset, r.last_offset, r.max_timestamp
            )
    return {
        int(p): ArchiveSpan(
            *firsts.get(int(p), (-1, -1)), -1 if mx is None else int(mx), pruned.get(int(p))
        )
        for p, mx in tops.items()
    }


def offsets_at(
    catalog: Catalog,
    store: ObjectStore | None,
    cluster: str,
    topic: str,
    timestamp: int,
    partitions: Sequence[int] | None = None,
) -> list[TimeAnswer]:
    """Per archived partition of ``topic``: the first offset whose timestamp is >=
    ``timestamp``, exact when ``store`` is given, else bounded from the catalog alone (see
    :class:`TimeAnswer`); each says whether the moment lies outside the archive.

    Raises :class:`~kafka_archive.catalog.queries.CatalogQueryError` as
    :func:`~kafka_archive.catalog.queries.offsets_for_time` does."""
    spans = archive_spans(catalog, cluster, topic, partitions)
    none = ArchiveSpan(-1, -1, -1)
    if store is not None:
        return [
            TimeAnswer(
                a.partition,
                timestamp,
                a.offset,
                a.timestamp,
                True,
                a.offset,
                spans.get(a.partition, none),
                a.topic_id,
            )
            for a in offsets_for_time(catalog, store, cluster, topic, timestamp, partitions)
        ]
    out = []
    for part, iv in offset_intervals(catalog, cluster, topic, timestamp, partitions):
        lo, hi = (-1, -1) if iv is None else (iv.start_offset, iv.end_offset)
        topic_id = None if iv is None else iv.topic_id
        span = spans.get(part, none)
        out.append(TimeAnswer(part, timestamp, lo, -1, iv is None, hi, span, topic_id))
    return out
