"""The production :class:`~kafka_archive.replay.planning.plan.PlanSource`: the SQL catalog.

* partitions and offsets come from the catalog's canonical **chain** (``chain_pieces``: disjoint
  offset ranges, each served by exactly one archived segment version), so a replay reads every
  offset once, from the version the catalog chose (replicas, compaction rewrites);
* byte positions come from the sparse **time index** (``time_index``: whole-batch intervals with
  their byte range in the object): a replay starting mid-segment reads from the interval holding
  its start offset, not from byte 0;
* ``offset_for_time`` is the catalog's ListOffsets
  (:func:`kafka_archive.catalog.queries.offsets_for_time`);
* holes (:meth:`CatalogPlanSource.holes`) are the catalog's coverage problems
  (:func:`kafka_archive.catalog.queries.gaps`: missing offsets, quarantined objects), read
  generically by :func:`kafka_archive.replay.planning.completeness.holes_from_gaps`;
* the ``.txnindex`` object of each segment in a plan and the source's Kafka cluster id come from
  the segments' manifests (one read per planned segment; the reader works from the control
  markers alone when a segment has no ``.txnindex``);
* each partition's last stable offset (:meth:`CatalogPlanSource.stability`) is the one the
  catalog build recorded (:mod:`kafka_archive.catalog.stability`; see
  :mod:`kafka_archive.replay.planning.stability`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from sqlalchemy import func, select

from kafka_archive.catalog import tables
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.queries import CatalogQueryError, gaps, offsets_for_time
from kafka_archive.replay.errors import UnknownTopicError
from kafka_archive.replay.planning.completeness import PlanHole, holes_from_gaps
from kafka_archive.replay.planning.plan import PlannedSegment
from kafka_archive.replay.planning.stable_offsets import StabilityUnknownError, StableOffset
from kafka_archive.store.base import ObjectStore

__all__ = ["CatalogPlanSource"]

# Core columns, not the ORM classes: importing sqlalchemy.orm and configuring the mapped
# classes cost more CPU than the plan's queries, before every replay's first record (issue 27)
_PART, _CP, _SEG = tables.partitions.c, tables.chain_pieces.c, tables.segments.c
_TI = tables.time_index.c


class CatalogPlanSource:
    """A :class:`PlanSource` over an open catalog and the archive's store: one per plan (it
    remembers each partition's segments, so it does not see segments cataloged later)."""

    def __init__(self, catalog: Catalog, store: ObjectStore) -> None:
        self.catalog = catalog
        self.store = store
        self._manifest = lru_cache(maxsize=4096)(self._read_manifest)
        self._gaps: dict[tuple[str, str], list[object]] = {}
        # one plan asks for a partition's segments twice (the ranges, then the replayed data's
        # time span for the target topic's configs): one catalog query serves both
        self._segments: dict[tuple[str, str, int], tuple[PlannedSegment, ...]] = {}

    def _read_manifest(self, key: str) -> object | None:
        from kafka_archive.archive.manifest import read_manifest

        try:
            return read_manifest(self.store, key)
        except Exception:  # a missing/unreadable manifest only costs the .txnindex shortcut
            return None

    def partitions(self, cluster: str, topic: str) -> list[int]:
        with self.catalog.engine.connect() as s:
            rows = s.execute(
                select(_PART.partition)
                .join(tables.chain_pieces, _CP.partition_id == _PART.id)
                .where(_PART.cluster == cluster, _PART.topic == topic)
                .group_by(_PART.partition)
                .order_by(_PART.partition)
            ).all()
        found = [int(r[0]) for r in rows]
        if not found:
            from kafka_archive.catalog.pruned_away import PRUNED_AWAY_HINT, pruned_away_reason

            reason = pruned_away_reason(self.catalog, cluster, topic)
            if reason is not None:  # known, but retention deleted everything: say so
                raise UnknownTopicError(reason, hint=PRUNED_AWAY_HINT)
            raise UnknownTopicError(
                f"the catalog holds no topic {topic!r} of cluster {cluster!r}",
                hint="List what it holds with `kafka-archive catalog topics --cluster "
                f"{cluster}` (or run `kafka-archive catalog build` if the archive is newer).",
            )
        return found

    def partition_count(self, cluster: str, topic: str) -> int:
        with self.catalog.engine.connect() as s:
            top = s.scalar(
                select(func.max(_PART.partition)).where(
                    _PART.cluster == cluster, _PART.topic == topic
                )
            )
        if top is None:
            raise UnknownTopicError(f"the catalog holds no topic {topic!r} of cluster {cluster!r}")
        return int(top) + 1

    def segments(self, cluster: str, topic: str, partition: int) -> Sequence[PlannedSegment]:
        key = (cluster, topic, partition)
        if key not in self._segments:
            self._segments[key] = tuple(self._read_segments(cluster, topic, partition))
        return self._segments[key]

    def _read_segments(self, cluster: str, topic: str, partition: int) -> list[PlannedSegment]:
        with self.catalog.engine.connect() as s:
            pid = s.scalar(
                select(_PART.id).where(
                    _PART.cluster == cluster,
                    _PART.topic == topic,
                    _PART.partition == partition,
                )
            )
            if pid is None:
                raise UnknownTopicError(
                    f"the catalog holds no partition {partition} of {cluster}/{topic}"
                )
            pieces = s.execute(
                select(_CP.lo.label("piece_lo"), _CP.hi.label("piece_hi"), tables.segments)
                .join(tables.segments, _SEG.id == _CP.segment_id)
                .where(_CP.partition_id == pid)
                .order_by(_CP.lo)
            ).all()
            index_rows = s.execute(
                select(
                    _TI.segment_id,
                    _TI.start_offset,
                    _TI.byte_start,
                )
                .where(_TI.partition_id == pid)
                .order_by(_TI.start_offset)
            ).all()
        by_segment: dict[int, list[tuple[int, int]]] = {}
        for seg_id, start, byte_start in index_rows:
            by_segment.setdefault(int(seg_id), []).append((int(start), int(byte_start)))
        out: list[PlannedSegment] = []
        for seg in pieces:  # (one row: the piece's bounds, then the segment's columns)
            out.append(
                PlannedSegment(
                    key=seg.object_key,
                    base_offset=int(seg.piece_lo),
                    last_offset=int(seg.piece_hi),
                    size=int(seg.size_bytes),
                    record_count=int(seg.record_count),
                    batch_count=int(seg.batch_count),
                    first_timestamp=int(seg.first_timestamp),
                    max_timestamp=int(seg.max_timestamp),
                    txn_index_key=self._txn_index_key(seg.manifest_key)
                    if seg.transactional_batches
                    else None,
                    index=by_segment.get(int(seg.id), []),
                )
            )
        return out

    def holes(self, cluster: str, topic: str, partition: int) -> list[PlanHole]:
        """The partition's holes according to the catalog (see :mod:`..completeness`)."""
        if (cluster, topic) not in self._gaps:
            try:
                self._gaps[(cluster, topic)] = list(gaps(self.catalog, cluster, topic))
            except CatalogQueryError as exc:
                raise UnknownTopicError(str(exc), hint=exc.hint) from None
        return holes_from_gaps(self._gaps[(cluster, topic)], partition)

    def stability(self, cluster: str, topic: str, partition: int) -> StableOffset:
        """The partition's last stable offset as the catalog build recorded it (see
        :mod:`kafka_archive.catalog.stability`).

        Raises:
            StabilityUnknownError: a serving segment's transaction markers were not read yet
                (a catalog from before they were recorded, not built since).
        """
        from kafka_archive.catalog.stability import read_stability

        with self.catalog.engine.connect() as s:
            pid = s.scalar(
                select(_PART.id).where(
                    _PART.cluster == cluster,
                    _PART.topic == topic,
                    _PART.partition == partition,
                )
            )
            st = None if pid is None else read_stability(s, int(pid))
        if st is None:
            raise StabilityUnknownError(
                f"the catalog does not know where the committed data of partition {partition} "
                f"of {cluster}/{topic} ends (its transaction markers were not read yet)"
            )
        return StableOffset(st.stable_offset, st.end_offset, list(st.open_txns))

    def _txn_index_key(self, manifest_key: str) -> str | None:
        manifest = self._manifest(manifest_key)
        if manifest is None:
            return None
        entry = manifest.file("txnindex")  # type: ignore[attr-defined]
        return None if entry is None or entry.size == 0 else str(entry.key)

    def offset_for_time(self, cluster: str, topic: str, partition: int, timestamp_ms: int) -> int:
        try:
            answers = offsets_for_time(
                self.catalog, self.store, cluster, topic, timestamp_ms, [partition]
            )
        except CatalogQueryError as exc:
            raise UnknownTopicError(str(exc), hint=exc.hint) from None
        return answers[0].offset if answers else -1

    def cluster_id(self, cluster: str) -> str | None:
        with self.catalog.engine.connect() as s:
            key = s.scalar(
                select(_SEG.manifest_key)
                .join(tables.partitions, _PART.id == _SEG.partition_id)
                .where(_PART.cluster == cluster)
                .limit(1)
            )
        if key is None:
            return None
        manifest = self._manifest(key)
        source = getattr(manifest, "source", None)
        return getattr(source, "kafka_cluster_id", None)
