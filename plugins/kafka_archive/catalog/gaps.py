"""``catalog gaps``: what is wrong with the archive's coverage, per partition.

Split from :mod:`kafka_archive.catalog.queries` (which re-exports :func:`gaps` and
:class:`GapEntry`, the API replay planning reads holes through): holes no archived version
covers, overlapping and divergent versions, corrupt segments, and the refused manifests and
objects recorded in ``integrity_problems`` (:mod:`kafka_archive.catalog.problems`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from kafka_archive.catalog.chain import Version, find_holes, find_overlaps
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.models import Partition, Segment
from kafka_archive.catalog.query_errors import CatalogQueryError
from kafka_archive.catalog.versions import version_of_segment

__all__ = ["SEVERITIES", "GapEntry", "gaps", "severity_of"]

#: How bad each kind of gap is, worst first in :data:`SEVERITIES`. ``info``: nothing is lost or
#: ambiguous (an overlap is two identical copies); ``warning``: every offset is archived but
#: two versions disagree (a divergence: replay serves one of them); ``error``: offsets are not
#: served (missing, corrupt, refused or unreadable). ``catalog topics`` counts the same
#: severities per partition, so its totals and the rows of ``catalog gaps`` always agree.
#: ``pruned`` is ``info`` too: a retention policy deleted the offsets on purpose (recorded in
#: ``pruned_ranges``); nothing was lost by accident.
_SEVERITY: dict[str, str] = {"overlap": "info", "divergent": "warning", "pruned": "info"}
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")


def severity_of(kind: str) -> str:
    """``info``, ``warning`` or ``error`` for a gap ``kind``; any kind not known to be
    harmless is an error (a new kind of problem must not be hidden by default)."""
    return _SEVERITY.get(kind, "error")


def _i(v: Any) -> int:
    return -1 if v is None else int(v)


@dataclass(frozen=True, slots=True)
class GapEntry:
    """One problem of the archive's coverage.

    ``kind``: ``missing`` (offsets no archived segment holds, e.g. retention deleted them before
    they were archived), ``overlap`` (two versions hold the same offsets with the same leader
    epochs: replicas rolled differently or a compaction rewrite; harmless), ``divergent`` (the
    same offsets under different leader epochs: an unclean leader election), ``corrupt`` (a
    segment whose bytes failed verification; its offsets are missing unless another version
    holds them); and the refused manifests and objects recorded in ``integrity_problems``
    (:mod:`kafka_archive.catalog.problems`): ``corrupt``, ``misfiled``, ``unreadable-manifest``,
    ``unreadable``, ``missing-object``, ``changed``, with ``object``, ``manifest``,
    ``position`` (byte, or ``None``) and ``reason`` in ``detail`` and the offsets the manifest
    claims (``start_offset``..``end_offset`` inclusive; the manifest key's base offset for an
    unreadable manifest, whose range is unknown). Their offsets also show as ``missing``
    unless another version holds them. ``detail["served"]`` says whether other, sound
    versions hold all the claimed offsets (a refused duplicate: nothing is lost).
    ``pruned``: offsets a retention policy deleted (``detail``: ``policy``, ``pruned_at``
    (ISO-8601, ``None`` while the prune is unfinished), ``status``, ``reason`` "pruned by
    policy X at T", the records' ``first_timestamp``/``max_timestamp``).
    ``incarnations``: the partition's segments carry more than one topic id (the topic was
    deleted and re-created; ``detail["topic_ids"]``: each id's offset span).
    ``severity`` (:func:`severity_of`) ranks the kind: ``info``, ``warning`` or ``error``.
    """

    kind: str
    topic: str
    partition: int
    start_offset: int
    end_offset: int
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def severity(self) -> str:
        """``error``, ``warning`` or ``info`` (:func:`severity_of`)."""
        return severity_of(self.kind)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "severity": self.severity,
            "topic": self.topic,
            "partition": self.partition,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            **self.detail,
        }


def gaps(catalog: Catalog, cluster: str, topic: str | None = None) -> list[GapEntry]:
    """Coverage problems of ``cluster`` (one topic or all), in topic/partition/offset order."""
    out: list[GapEntry] = []
    with catalog.session() as s:
        q = select(Partition).where(Partition.cluster == cluster)
        if topic is not None:
            q = q.where(Partition.topic == topic)
        parts = s.execute(q.order_by(Partition.topic, Partition.partition)).scalars().all()
        problem_gaps = _problem_gaps(s, cluster, topic)
        out.extend(problem_gaps)
        out.extend(_pruned_gaps(s, cluster, topic))
        spans: dict[tuple[str, int], list[Version]] = {}
        if not parts and not out:
            raise CatalogQueryError(
                f"the catalog holds nothing for cluster {cluster!r}"
                + (f" topic {topic!r}" if topic else ""),
                hint="run `kafka-archive catalog build` first",
            )
        segments = _segments_by_partition(s, cluster, topic)
        for p in parts:
            segs = segments.get(p.id, [])
            by_id = {x.id: x for x in segs}
            versions = [
                version_of_segment(x)
                for x in _served_incarnation(segs)
                if x.status not in ("corrupt", "pruned")
            ]
            spans[(p.topic, p.partition)] = versions
            found: list[GapEntry] = []
            for hole in find_holes(versions):
                found.append(
                    GapEntry(
                        "missing",
                        p.topic,
                        p.partition,
                        hole.lo,
                        hole.hi,
                        {
                            "after_object": by_id[hole.after].object_key
                            if hole.after in by_id
                            else None,
                            "before_object": by_id[hole.before].object_key
                            if hole.before in by_id
                            else None,
                        },
                    )
                )
            for ov in find_overlaps(versions):
                a, b = by_id[ov.a], by_id[ov.b]
                detail: dict[str, Any] = {
                    "objects": [a.object_key, b.object_key],
                    "brokers": [a.broker_id, b.broker_id],
                    "serving": [
                        x.object_key for x in (a, b) if x.status in ("canonical", "partial")
                    ],
                }
                if ov.divergent:
                    detail.update(
                        first_divergent_offset=ov.first_divergent_offset,
                        leader_epochs=[ov.epoch_a, ov.epoch_b],
                    )
                found.append(
                    GapEntry(
                        "divergent" if ov.divergent else "overlap",
                        p.topic,
                        p.partition,
                        ov.lo,
                        ov.hi,
                        detail,
                    )
                )
            for x in segs:
                if x.status == "corrupt":
                    found.append(
                        GapEntry(
                            "corrupt",
                            p.topic,
                            p.partition,
                            x.base_offset,
                            x.base_offset,
                            _corrupt_detail(x),
                        )
                    )
            found.extend(_incarnation_gaps(p.topic, p.partition, segs))
            found.sort(key=lambda g: (g.start_offset, g.end_offset, g.kind))
            out.extend(found)
    bad = {g.detail["manifest"] for g in problem_gaps}
    for g in problem_gaps:
        good = [v for v in spans.get((g.topic, g.partition), []) if v.manifest_key not in bad]
        g.detail["served"] = _covered(good, g.start_offset, g.end_offset)
    out.sort(key=lambda g: (g.topic, g.partition, g.start_offset, g.end_offset, g.kind))
    return out


def _served_incarnation(segs: Sequence[Segment]) -> Sequence[Segment]:
    """The segments holes and overlaps are judged over: with two incarnations of the topic in
    the partition, those of the one served (and of unknown id): another incarnation's
    offsets are other records, not copies (see :func:`_incarnation_gaps`)."""
    ids = {x.topic_id for x in segs if x.topic_id}
    if len(ids) < 2:
        return segs
    served = {x.topic_id for x in segs if x.topic_id and x.status in ("canonical", "partial")}
    return [x for x in segs if x.topic_id is None or x.topic_id in served]


def _incarnation_gaps(topic: str, partition: int, segs: Sequence[Segment]) -> list[GapEntry]:
    """``incarnations`` (an error): the partition's segments carry more than one topic id, so
    the topic was deleted and re-created and the archive holds both incarnations' offsets
    under one partition. The build serves only the newest incarnation's (``served``); the
    older ones' segments are archived and cataloged but answer nothing."""
    ids: dict[str, list[Segment]] = defaultdict(list)
    for x in segs:
        if x.topic_id and x.status != "pruned":
            ids[x.topic_id].append(x)
    if len(ids) < 2:
        return []
    spans = {
        tid: [min(x.base_offset for x in xs), max(x.last_offset for x in xs)]
        for tid, xs in sorted(ids.items())
    }
    lo = min(a for a, _b in spans.values())
    hi = max(b for _a, b in spans.values())
    served = sorted(
        {x.topic_id for x in segs if x.topic_id and x.status in ("canonical", "partial")}
    )
    reason = (
        f"{len(ids)} topic ids: the topic was deleted and re-created and each incarnation's "
        f"offsets start again; only {', '.join(served) or 'none'} is served, the others' "
        "segments are archived but answer no query "
        "(`kafka-archive catalog topic-history` shows the incarnations)"
    )
    detail = {"topic_ids": spans, "served": served, "reason": reason}
    return [GapEntry("incarnations", topic, partition, lo, hi, detail)]


def _segments_by_partition(s: Session, cluster: str, topic: str | None) -> dict[int, list[Segment]]:
    """Every segment of ``cluster`` (one topic or all) by partition id, in one query (one per
    partition made ``gaps`` a thousand round trips on a 1,000-partition topic)."""
    q = (
        select(Segment)
        .join(Partition, Partition.id == Segment.partition_id)
        .where(Partition.cluster == cluster)
    )
    if topic is not None:
        q = q.where(Partition.topic == topic)
    out: dict[int, list[Segment]] = defaultdict(list)
    for x in s.execute(q.order_by(Segment.partition_id, Segment.id)).scalars():
        out[x.partition_id].append(x)
    return out


def _covered(versions: Sequence[Version], lo: int, hi: int) -> bool:
    """Whether sound versions cover every offset ``lo..hi`` (each its ``[base, end)`` range,
    as :func:`~kafka_archive.catalog.chain.find_holes` counts coverage)."""
    reach = lo - 1
    for a, b in sorted(
        (min(v.base_offset, v.first_offset), max(v.last_offset, v.end_offset - 1))
        for v in versions
        if not v.is_empty
    ):
        if a > reach + 1:
            break
        reach = max(reach, b)
    return reach >= hi


def _corrupt_detail(x: Segment) -> dict[str, Any]:
    error = json.loads(x.error or "{}")
    return {
        "object": x.object_key,
        "manifest": x.manifest_key,
        "position": error.get("position"),
        "reason": str(error.get("detail") or error.get("error") or "corrupt"),
        "error": error,
    }


def _problem_gaps(s: Session, cluster: str, topic: str | None) -> list[GapEntry]:
    from kafka_archive.archive.layout import parse_manifest_key
    from kafka_archive.catalog.problems import problem_rows

    out = []
    for p in problem_rows(s, cluster, topic):
        base = p.start_offset
        if base is None:
            mk = parse_manifest_key(p.manifest_key or "")
            base = mk.base_offset if mk is not None else -1
        detail = {
            "object": p.object_key,
            "manifest": p.manifest_key,
            "position": p.position,
            "reason": p.reason,
            "detected_by": p.detected_by,
        }
        end = p.end_offset if p.end_offset is not None else base
        out.append(GapEntry(p.kind, p.topic or "", _i(p.partition), base, end, detail))
    return out


def _pruned_gaps(s: Session, cluster: str, topic: str | None) -> list[GapEntry]:
    from kafka_archive.catalog.models import PrunedRange
    from kafka_archive.timeparse import format_ms

    q = select(PrunedRange).where(PrunedRange.cluster == cluster)
    if topic is not None:
        q = q.where(PrunedRange.topic == topic)
    out = []
    for r in s.execute(q).scalars():
        when = format_ms(r.pruned_at_ms) if r.pruned_at_ms is not None else None
        reason = (
            f"pruned by policy {r.policy} at {when}"
            if when
            else (
                f"being pruned by policy {r.policy} (recorded {format_ms(r.planned_at_ms)}; "
                "the next prune finishes it)"
            )
        )
        detail = {
            "policy": r.policy,
            "pruned_at": when,
            "status": r.status,
            "reason": reason,
            "rule": r.reason,
            "first_timestamp": r.first_timestamp,
            "max_timestamp": r.max_timestamp,
            "segments": r.segments,
            "bytes": r.bytes,
        }
        out.append(GapEntry("pruned", r.topic, r.partition, r.first_offset, r.last_offset, detail))
    return out
