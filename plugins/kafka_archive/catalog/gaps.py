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
from itertools import groupby
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select

from kafka_archive.catalog import tables
from kafka_archive.catalog.chain import Version
from kafka_archive.catalog.coverage import Found, segment_rows, served_incarnation
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.query_errors import CatalogQueryError
from kafka_archive.catalog.versions import version_of_segment

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = ["SEVERITIES", "GapEntry", "gaps", "severity_of"]

_PART = tables.partitions.c

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
    def key(self) -> tuple[str, int]:
        """``(topic, partition)``."""
        return self.topic, self.partition

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
    """Coverage problems of ``cluster`` (one topic or all), in topic/partition/offset order.

    The segments' holes, overlaps and corrupt rows are read from ``coverage_gaps``, where the
    build and the prune keep them (:mod:`kafka_archive.catalog.coverage`): the cost is that of
    the problems, not of the archive. Only partitions with recorded integrity problems have
    their segments read, to say whether other versions serve the refused offsets."""
    out: list[GapEntry] = []
    with catalog.engine.connect() as s:  # Core: every replay plan reads the gaps (issue 27)
        q = select(_PART.id, _PART.topic, _PART.partition).where(_PART.cluster == cluster)
        if topic is not None:
            q = q.where(_PART.topic == topic)
        parts = s.execute(q.order_by(_PART.topic, _PART.partition)).all()
        problem_gaps = _problem_gaps(s, cluster, topic)
        out.extend(problem_gaps)
        out.extend(_pruned_gaps(s, cluster, topic))
        if not parts and not out:
            raise CatalogQueryError(
                f"the catalog holds nothing for cluster {cluster!r}"
                + (f" topic {topic!r}" if topic else ""),
                hint="run `kafka-archive catalog build` first",
            )
        stored = _stored_gaps(s, cluster, topic)
        for pid, t, p in parts:
            out.extend(GapEntry(k, t, p, lo, hi, d) for k, lo, hi, d in stored.get(pid, ()))
        ids: dict[tuple[str, int], int] = {(t, p): pid for pid, t, p in parts}
        spans = _sound_versions(s, {ids[g.key] for g in problem_gaps if g.key in ids})
    bad = {g.detail["manifest"] for g in problem_gaps}
    for g in problem_gaps:
        good = [v for v in spans.get(ids.get(g.key, -1), []) if v.manifest_key not in bad]
        g.detail["served"] = _covered(good, g.start_offset, g.end_offset)
    out.sort(key=lambda g: (g.topic, g.partition, g.start_offset, g.end_offset, g.kind))
    return out


def _stored_gaps(
    s: Session | Connection, cluster: str, topic: str | None
) -> dict[int, list[Found]]:
    """The ``coverage_gaps`` rows of ``cluster`` (one topic or all) by partition id, each
    partition's in its order."""
    cg = tables.coverage_gaps.c
    q = (
        select(cg.partition_id, cg.kind, cg.start_offset, cg.end_offset, cg.detail)
        .join(tables.partitions, _PART.id == cg.partition_id)
        .where(_PART.cluster == cluster)
    )
    if topic is not None:
        q = q.where(_PART.topic == topic)
    out: dict[int, list[Found]] = defaultdict(list)
    for pid, kind, lo, hi, detail in s.execute(q.order_by(cg.partition_id, cg.seq)):
        out[pid].append((kind, int(lo), int(hi), json.loads(detail)))
    return out


def _sound_versions(s: Session | Connection, partition_ids: set[int]) -> dict[int, list[Version]]:
    """The versions (not corrupt, not pruned, of the served incarnation) of ``partition_ids``
    by partition id, read in one statement of columns."""
    out: dict[int, list[Version]] = {}
    if partition_ids:
        for pid, segs in groupby(segment_rows(s, partition_ids), key=lambda x: x.partition_id):
            out[pid] = [
                version_of_segment(x)
                for x in served_incarnation(list(segs))
                if x.status not in ("corrupt", "pruned")
            ]
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


def _problem_gaps(s: Session | Connection, cluster: str, topic: str | None) -> list[GapEntry]:
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


def _pruned_gaps(s: Session | Connection, cluster: str, topic: str | None) -> list[GapEntry]:
    from kafka_archive.timeparse import format_ms

    pr = tables.pruned_ranges.c
    q = select(tables.pruned_ranges).where(pr.cluster == cluster)
    if topic is not None:
        q = q.where(pr.topic == topic)
    out = []
    for r in s.execute(q):
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
