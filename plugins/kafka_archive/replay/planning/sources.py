"""Plan sources that do not need the SQL catalog: segment lists held in memory.

:class:`SegmentsPlanSource` implements :class:`~kafka_archive.replay.planning.plan.PlanSource` over
:class:`~kafka_archive.replay.planning.plan.PlannedSegment` lists (what the catalog's segment
summaries hold) and answers ``offset_for_time`` by scanning the archived objects (ListOffsets
semantics: the first record, in offset order, whose timestamp is >= T). The catalog's own source
answers the same questions from SQL plus at most one ranged read; this one serves tests, benchmarks
and replays straight from a copy of broker log dirs (:meth:`SegmentsPlanSource.upload_log_dirs`).
Its ``stability`` (the last stable offset) reads every segment of the partition at planning time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kafka_archive.replay.errors import UnknownTopicError
from kafka_archive.replay.planning.plan import PlannedSegment
from kafka_archive.replay.planning.stable_offsets import StableOffset
from kafka_archive.store.base import ObjectStore
from segment_lib.errors import SegmentError
from segment_lib.log_file import decode_batch, iter_batches
from segment_lib.names import parse_partition_dir_name
from segment_lib.record_batch import first_record_timestamp
from segment_lib.txn_state import TxnFold, scan_txn_events

__all__ = ["SegmentsPlanSource", "segment_ref_from_bytes"]


def segment_ref_from_bytes(
    data: bytes,
    key: str,
    *,
    txn_index_key: str | None = None,
    index_every_bytes: int = 1 << 20,
) -> PlannedSegment:
    """Summarise one ``.log`` segment's bytes (CRC-checked) into a :class:`PlannedSegment`, with a
    sparse ``(offset, position)`` index entry every ``index_every_bytes``."""
    base = last = -1
    first_ts: int | None = None
    max_ts: int | None = None
    count = batches = 0
    index: list[tuple[int, int]] = []
    next_index_at = 0
    try:
        for h in iter_batches(data):
            if base < 0:
                base = h.base_offset
            last = h.last_offset
            count += h.record_count
            batches += 1
            if h.position >= next_index_at:
                index.append((h.base_offset, h.position))
                next_index_at = h.position + index_every_bytes
            if not h.is_control:
                if first_ts is None:
                    # the first record's time, not a cleaner's delete horizon (KIP-534)
                    first_ts = first_record_timestamp(data, h)
                max_ts = h.max_timestamp if max_ts is None else max(max_ts, h.max_timestamp)
    except SegmentError as exc:
        raise exc.with_location(key) from exc
    if base < 0:
        raise ValueError(f"segment {key} holds no batches")
    return PlannedSegment(
        key=key,
        base_offset=base,
        last_offset=last,
        size=len(data),
        record_count=count,
        batch_count=batches,
        first_timestamp=first_ts,
        max_timestamp=max_ts,
        txn_index_key=txn_index_key,
        index=index,
    )


class SegmentsPlanSource:
    """A :class:`PlanSource` over in-memory segment lists of archived objects in ``store``.

    Args:
        store: the object store holding the segments' bytes.
        segments: ``{(cluster, topic, partition): [PlannedSegment, ...]}`` in offset order.
        partition_counts: the source topics' partition counts (default: partitions seen).
        cluster_ids: Kafka cluster ids of the archived clusters, if known.
    """

    def __init__(
        self,
        store: ObjectStore,
        segments: Mapping[tuple[str, str, int], Sequence[PlannedSegment]],
        *,
        partition_counts: Mapping[tuple[str, str], int] | None = None,
        cluster_ids: Mapping[str, str] | None = None,
    ) -> None:
        self.store = store
        self._segments = {k: sorted(v, key=lambda s: s.base_offset) for k, v in segments.items()}
        self._counts = dict(partition_counts or {})
        self._cluster_ids = dict(cluster_ids or {})

    def partitions(self, cluster: str, topic: str) -> list[int]:
        found = sorted(p for (c, t, p) in self._segments if c == cluster and t == topic)
        if not found:
            raise UnknownTopicError(f"the archive holds no topic {topic!r} of cluster {cluster!r}")
        return found

    def partition_count(self, cluster: str, topic: str) -> int:
        return self._counts.get((cluster, topic), max(self.partitions(cluster, topic)) + 1)

    def segments(self, cluster: str, topic: str, partition: int) -> Sequence[PlannedSegment]:
        try:
            return self._segments[(cluster, topic, partition)]
        except KeyError:
            raise UnknownTopicError(
                f"the archive holds no partition {partition} of {cluster}/{topic}"
            ) from None

    def cluster_id(self, cluster: str) -> str | None:
        return self._cluster_ids.get(cluster)

    def stability(self, cluster: str, topic: str, partition: int) -> StableOffset:
        """The last stable offset of the partition's segments, from their bytes
        (``segment_lib.txn_state``)."""
        fold = TxnFold()
        segments = self.segments(cluster, topic, partition)
        for seg in segments:
            fold.add(scan_txn_events(self.store.get_bytes(seg.key)), seg.base_offset,
                     seg.last_offset)  # fmt: skip
        end = segments[-1].last_offset + 1 if segments else 0
        return StableOffset(fold.stable_offset(end), end, fold.open_transactions())

    def offset_for_time(self, cluster: str, topic: str, partition: int, timestamp_ms: int) -> int:
        for seg in self.segments(cluster, topic, partition):
            if seg.max_timestamp is not None and seg.max_timestamp < timestamp_ms:
                continue
            data = self.store.get_bytes(seg.key)
            for h in iter_batches(data):
                if h.is_control or h.max_timestamp < timestamp_ms:
                    continue
                for rec in decode_batch(data, h):
                    if rec.timestamp >= timestamp_ms:
                        return rec.offset
        return -1

    # -- building one from broker log dirs ------------------------------------------------------

    @classmethod
    def upload_log_dirs(
        cls,
        store: ObjectStore,
        cluster: str,
        partition_dirs: Iterable[str | os.PathLike[str]],
        *,
        prefix: str = "replay-src",
        cluster_id: str | None = None,
    ) -> SegmentsPlanSource:
        """Copy every ``.log`` (and ``.txnindex``) of the given partition directories into
        ``store`` under ``<prefix>/<cluster>/<topic>/<partition>/`` and return a source over
        them. Meant for tests, benchmarks and one-off replays of a log-dir copy; the archive
        DAG is the production path."""
        segments: dict[tuple[str, str, int], list[PlannedSegment]] = {}
        for d in partition_dirs:
            path = Path(d)
            parsed = parse_partition_dir_name(path.name)
            topic, partition = parsed.topic, parsed.partition
            refs: list[PlannedSegment] = []
            for log in sorted(path.glob("*.log")):
                data = log.read_bytes()
                if not data:
                    continue
                base = log.stem
                key = f"{prefix}/{cluster}/{topic}/{partition}/{base}.log"
                store.put_bytes(key, data)
                txn_key = None
                txn_path = log.with_suffix(".txnindex")
                if txn_path.exists() and txn_path.stat().st_size:
                    txn_key = f"{prefix}/{cluster}/{topic}/{partition}/{base}.txnindex"
                    store.put_bytes(txn_key, txn_path.read_bytes())
                refs.append(segment_ref_from_bytes(data, key, txn_index_key=txn_key))
            if refs:
                segments[(cluster, topic, partition)] = refs
        return cls(store, segments, cluster_ids={cluster: cluster_id} if cluster_id else None)
