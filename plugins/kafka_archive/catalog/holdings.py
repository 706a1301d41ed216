"""What the catalog holds: per cluster (:func:`clusters`) and per topic partition
(:func:`topics`), with the counts every command names the same way.

Split from :mod:`kafka_archive.catalog.queries` (which re-exports both). The definitions the
CLI shows under these names everywhere:

* ``records``: data records actually archived on the partition's canonical chain (control
  records are not data; a record held by two overlapping copies counts once). It is the sum of
  the catalog's histogram, so ``catalog stats`` over all of time gives the same number.
* ``offset_span``: ``last_offset - first_offset + 1``, the offsets the archive spans. It is
  larger than ``records`` when compaction removed records, transactions wrote markers, or
  offsets are missing: the two are never the same count under one name.
* ``bytes``: batch bytes on the chain (as ``catalog stats``).
* ``errors``/``warnings``/``info``: the rows ``catalog gaps`` lists for the partition, by
  severity (:func:`kafka_archive.catalog.gaps.severity_of`); ``problems`` is
  ``errors + warnings`` (info rows, such as harmless overlaps, are not problems).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_, select

from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.gaps import gaps
from kafka_archive.catalog.models import BuildRun, ChainPiece, HistogramBucket, Partition, Segment
from kafka_archive.catalog.query_errors import CatalogQueryError

__all__ = ["ClusterHoldings", "PartitionHoldings", "clusters", "topics"]


def _i(v: Any) -> int:
    return -1 if v is None else int(v)


@dataclass(frozen=True, slots=True)
class PartitionHoldings:
    """What the archive holds for one partition (canonical chain only; see the module
    docstring for what each count means; -1: unknown, e.g. a partition known only from its
    problems)."""

    topic: str
    partition: int
    segments: int
    first_offset: int
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    records: int
    bytes: int
    errors: int = 0
    warnings: int = 0
    info: int = 0
    #: the topic ids of the archived segments, serving or not (two or more: the topic was
    #: re-created and ``catalog gaps`` reports ``incarnations``); empty when none is known
    topic_ids: tuple[str, ...] = ()

    @property
    def offset_span(self) -> int:
        """Offsets from the first to the last archived one, both included (0: none)."""
        return self.last_offset - self.first_offset + 1 if self.first_offset >= 0 else 0

    @property
    def problems(self) -> int:
        """Errors plus warnings (``info`` rows are harmless and not counted)."""
        return self.errors + self.warnings

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "segments": self.segments,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "offset_span": self.offset_span,
            "first_timestamp": self.first_timestamp,
            "max_timestamp": self.max_timestamp,
            "records": self.records,
            "bytes": self.bytes,
            "problems": self.problems,
            "errors": self.errors,
            "warnings": self.warnings,
            "info": self.info,
            "topic_ids": list(self.topic_ids),
        }


def topics(catalog: Catalog, cluster: str) -> list[PartitionHoldings]:
    """Per topic and partition: archived offsets, time range, records, bytes and problems.

    ``first_timestamp`` is that of the first archived batch, ``max_timestamp`` the largest
    anywhere (CreateTime timestamps need not be ordered). The problem counts are those of
    :func:`~kafka_archive.catalog.gaps.gaps` for the partition, by severity, so ``catalog
    topics`` and ``catalog gaps`` agree; a partition known only from its problems is listed
    with no segments. Problems not tied to a partition (an unreadable manifest whose key names
    none) are only in ``catalog gaps``.
    """
    sg = Segment
    serving = sg.status.in_(("canonical", "partial"))
    found = gaps(catalog, cluster) if _has_anything(catalog, cluster) else []
    by_severity: dict[tuple[str, int], Counter[str]] = defaultdict(Counter)
    for g in found:
        if g.topic and g.partition >= 0:
            by_severity[(g.topic, g.partition)][g.severity] += 1
    with catalog.session() as s:
        rows = s.execute(
            select(
                Partition.id,
                Partition.topic,
                Partition.partition,
                func.count(sg.id).filter(serving),
                func.min(sg.first_offset).filter(serving),
                func.max(sg.last_offset).filter(serving),
                func.max(sg.max_timestamp).filter(serving),
            )
            .join(sg, sg.partition_id == Partition.id)
            .where(Partition.cluster == cluster)
            .group_by(Partition.id, Partition.topic, Partition.partition)
            .order_by(Partition.topic, Partition.partition)
        ).all()
        if not rows and not by_severity:
            raise CatalogQueryError(
                f"the catalog holds nothing for cluster {cluster!r}",
                hint="run `kafka-archive catalog build` first, or `kafka-archive catalog "
                "clusters` to list the clusters it holds",
            )
        pids = [r[0] for r in rows]
        h = HistogramBucket
        volume = {
            int(pid): (int(n or 0), int(b or 0))
            for pid, n, b in s.execute(
                select(h.partition_id, func.sum(h.records), func.sum(h.bytes))
                .where(h.partition_id.in_(pids))
                .group_by(h.partition_id)
            )
        }
        firsts: dict[int, int] = defaultdict(lambda: -1)
        for pid, fts in s.execute(
            select(sg.partition_id, sg.first_timestamp)
            .join(ChainPiece, ChainPiece.segment_id == sg.id)
            .where(ChainPiece.partition_id.in_(pids))
            .order_by(sg.partition_id, ChainPiece.lo.desc())
        ):
            firsts[int(pid)] = int(fts)  # the last one written per partition is the lowest lo
        ids: dict[int, list[str]] = defaultdict(list)
        for pid, tid in s.execute(
            select(sg.partition_id, sg.topic_id)
            .distinct()
            .where(sg.partition_id.in_(pids), sg.topic_id.is_not(None), sg.status != "pruned")
            .order_by(sg.partition_id, sg.topic_id)
        ):
            ids[int(pid)].append(str(tid))
    out = []
    for pid, t, p, n, fo, lo, mx in rows:
        sev = by_severity.pop((t, p), Counter())
        recs, nbytes = volume.get(int(pid), (0, 0))
        span = (int(n or 0), _i(fo), _i(lo), firsts[pid], _i(mx))
        out.append(
            PartitionHoldings(t, p, *span, recs, nbytes, *_counts(sev), tuple(ids[int(pid)]))
        )
    for (t, p), sev in by_severity.items():
        out.append(PartitionHoldings(t, p, 0, -1, -1, -1, -1, 0, 0, *_counts(sev)))
    out.sort(key=lambda x: (x.topic, x.partition))
    return out


def _counts(sev: Counter[str]) -> tuple[int, int, int]:
    return sev["error"], sev["warning"], sev["info"]


def _has_anything(catalog: Catalog, cluster: str) -> bool:
    """Whether :func:`gaps` would answer (it raises for a cluster the catalog does not know)."""
    from kafka_archive.catalog.models import IntegrityProblem

    with catalog.session() as s:
        for table in (Partition, IntegrityProblem):
            hit = s.execute(select(table.id).where(table.cluster == cluster).limit(1)).first()
            if hit is not None:
                return True
    return False


@dataclass(frozen=True, slots=True)
class ClusterHoldings:
    """One cluster the catalog holds: how many topics and partitions, the archived time span
    (batch timestamps, -1 when nothing is served) and when a build that covered it last
    finished (-1: never finished)."""

    cluster: str
    topics: int
    partitions: int
    segments: int
    first_timestamp: int
    max_timestamp: int
    last_build_ms: int

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "topics": self.topics,
            "partitions": self.partitions,
            "segments": self.segments,
            "first_timestamp": self.first_timestamp,
            "max_timestamp": self.max_timestamp,
            "last_build_ms": self.last_build_ms,
        }


def clusters(catalog: Catalog) -> list[ClusterHoldings]:
    """Every cluster the catalog holds partitions of, by name. One grouped query plus one per
    cluster for its last finished build (a build of all clusters counts for each)."""
    sg = Segment
    serving = sg.status.in_(("canonical", "partial"))
    with catalog.session() as s:
        rows = s.execute(
            select(
                Partition.cluster,
                func.count(func.distinct(Partition.topic)),
                func.count(func.distinct(Partition.id)),
                func.count(sg.id).filter(serving),
                func.min(sg.first_timestamp).filter(serving),
                func.max(sg.max_timestamp).filter(serving),
            )
            .outerjoin(sg, sg.partition_id == Partition.id)
            .group_by(Partition.cluster)
            .order_by(Partition.cluster)
        ).all()
        out = []
        for name, nt, np_, ns, fts, mts in rows:
            built = s.execute(
                select(func.max(BuildRun.finished_at_ms)).where(
                    # a finished build is "ok" (the model's docstring says "done")
                    BuildRun.status.in_(("ok", "done")),
                    or_(BuildRun.cluster == name, BuildRun.cluster.is_(None)),
                )
            ).scalar_one()
            out.append(
                ClusterHoldings(
                    str(name), int(nt), int(np_), int(ns or 0), _i(fts), _i(mts), _i(built)
                )
            )
    return out
