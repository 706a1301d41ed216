"""Planning one wave of a build: per touched partition, what the canonical chain makes of it.

Reads a partition's cataloged versions and chain (:func:`load_existing`), recomputes the chain
(:func:`~kafka_archive.catalog.chain.compute_pieces`) over old and new versions
(:func:`plan_partitions`), and says which versions must be extracted again restricted to their
new pieces (:func:`pass2_needed`: pass 2). Versions are keyed by their segment row id, new ones
by ``-(index + 1)`` in :attr:`PartitionPlan.new`. Reads only: the writes are
:mod:`kafka_archive.catalog.build.write`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from kafka_archive.catalog.build.tasks import Pieces, TaskResult
from kafka_archive.catalog.chain import Version, compute_pieces
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.models import ChainPiece, Partition, Segment
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.catalog.versions import version_of_segment

__all__ = [
    "Existing",
    "PartitionPlan",
    "load_existing",
    "newest_incarnation",
    "pass2_needed",
    "plan_partitions",
    "segment_status",
    "version_of_result",
]


@dataclass(slots=True)
class Existing:
    """A partition's cataloged versions and chain, as read before extraction."""

    pid: int | None
    versions: dict[int, Version]
    pieces: dict[int, Pieces]
    refs: dict[int, SegmentRef]
    manifests: set[str]
    #: segments a retention prune removed (their rows stay, status ``pruned``)
    pruned: set[int] = field(default_factory=set)
    #: each version's largest record timestamp (which incarnation of a topic is the newest)
    max_ts: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True)
class PartitionPlan:
    """For one partition in one wave: the new results and what the chain makes of them."""

    key: tuple[str, str, int]
    existing: Existing
    new: list[TaskResult]
    new_pieces: dict[int, Pieces]  # by version key (new versions: -(index+1))
    pass2: dict[int, TaskResult | None] = field(default_factory=dict)


def load_existing(session: Session, key: tuple[str, str, int]) -> Existing:
    cluster, topic, part = key
    pid = session.execute(
        select(Partition.id).where(
            Partition.cluster == cluster, Partition.topic == topic, Partition.partition == part
        )
    ).scalar_one_or_none()
    versions: dict[int, Version] = {}
    refs: dict[int, SegmentRef] = {}
    pieces: dict[int, list[tuple[int, int]]] = defaultdict(list)
    manifests: set[str] = set()
    pruned: set[int] = set()
    max_ts: dict[int, int] = {}
    if pid is None:
        return Existing(None, {}, {}, {}, set())
    for s in session.execute(select(Segment).where(Segment.partition_id == pid)).scalars():
        manifests.add(s.manifest_key)
        refs[s.id] = SegmentRef(
            cluster,
            topic,
            part,
            s.manifest_key,
            s.object_key,
            s.size_bytes,
            s.sha256,
            s.base_offset,
            s.archived_at_ms,
            s.broker_id,
            s.log_dir,
            s.end_offset,
            topic_id=s.topic_id,
        )
        if s.status == "pruned":
            pruned.add(s.id)  # kept so its manifest is never cataloged again; not a version
            continue
        if s.status == "corrupt":
            continue
        versions[s.id] = version_of_segment(s)
        max_ts[s.id] = s.max_timestamp
    for p in session.execute(
        select(ChainPiece).where(ChainPiece.partition_id == pid).order_by(ChainPiece.lo)
    ).scalars():
        pieces[p.segment_id].append((p.lo, p.hi))
    return Existing(
        pid, versions, {k: tuple(v) for k, v in pieces.items()}, refs, manifests, pruned, max_ts
    )


def version_of_result(key: int, r: TaskResult) -> Version | None:
    """The chain's view of a new version from its pass-1 result (``None``: no extract)."""
    if r.extract is None:
        return None
    st = r.extract.stats
    return Version(
        key,
        st.first_offset,
        st.last_offset,
        r.ref.archived_at_ms,
        r.ref.broker_id if r.ref.broker_id is not None else -1,
        r.ref.manifest_key,
        r.ref.base_offset,
        r.ref.end_offset,
        st.epoch_runs,
    )


def segment_status(v: Version | None, pieces: Pieces, corrupt: bool) -> str:
    """A version's ``segments.status`` given its chain ``pieces``."""
    if corrupt or v is None:
        return "corrupt"
    if v.is_empty:
        return "empty"
    if not pieces:
        return "shadowed"
    if pieces == ((v.first_offset, v.last_offset),):
        return "canonical"
    return "partial"


def _key_for(plan: PartitionPlan, manifest_key: str) -> int:
    for k, ref in plan.existing.refs.items():
        if ref.manifest_key == manifest_key:
            return k
    for i, r in enumerate(plan.new):
        if r.ref.manifest_key == manifest_key:
            return -(i + 1)
    raise KeyError(manifest_key)


def plan_partitions(
    catalog: Catalog, by_part: Mapping[tuple[str, str, int], list[TaskResult]]
) -> list[PartitionPlan]:
    plans = []
    with catalog.session() as s:
        for key in sorted(by_part):
            existing = load_existing(s, key)
            new = [r for r in by_part[key] if r.ref.manifest_key not in existing.manifests]
            versions = list(existing.versions.values())
            for i, r in enumerate(new):
                v = version_of_result(-(i + 1), r)
                if v is not None:
                    versions.append(v)
            served = newest_incarnation(versions, existing, new)
            pieces = {k: tuple(v) for k, v in compute_pieces(served).items()}
            for v in versions:  # an older incarnation's versions: no share of the chain
                pieces.setdefault(v.key, ())
            plans.append(PartitionPlan(key, existing, new, pieces))
    return plans


def newest_incarnation(
    versions: list[Version], existing: Existing, new: list[TaskResult]
) -> list[Version]:
    """The versions the chain may serve: when a partition's versions carry more than one
    topic id (the topic was deleted and re-created, its offsets started again), only those of
    the newest incarnation (the topic id whose records are the latest) and those of unknown
    id, so that two incarnations' offsets are never mixed in one chain; the others stay
    cataloged (``shadowed``) and ``catalog gaps`` reports ``incarnations``."""
    tid: dict[int, str | None] = {k: r.topic_id for k, r in existing.refs.items()}
    latest = dict(existing.max_ts)
    for i, r in enumerate(new):
        tid[-(i + 1)] = r.ref.topic_id
        latest[-(i + 1)] = r.extract.stats.max_timestamp if r.extract is not None else -1
    newest: dict[str, int] = {}
    for v in versions:
        t = tid.get(v.key)
        if t is not None:
            newest[t] = max(newest.get(t, -1), latest.get(v.key, -1))
    if len(newest) < 2:
        return versions
    served = max(newest, key=lambda t: (newest[t], t))
    return [v for v in versions if tid.get(v.key) in (None, served)]


def pass2_needed(plan: PartitionPlan) -> dict[int, Pieces]:
    """Versions to extract again restricted to their (new) pieces."""
    out: dict[int, Pieces] = {}
    for k, pieces in plan.new_pieces.items():
        if k < 0:
            r = plan.new[-k - 1]
            assert r.extract is not None
            st = r.extract.stats
            if pieces and pieces != ((st.first_offset, st.last_offset),):
                out[k] = pieces
        elif pieces != plan.existing.pieces.get(k, ()) and pieces:
            out[k] = pieces
    return out
