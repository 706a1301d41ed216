"""Replay requests and plans: what to replay, resolved against the catalog into byte ranges.

A :class:`ReplaySpec` is what an operator asks for (cluster, topic, partitions, ``from``/``to``,
target, mapping, filters, limits; declared in :mod:`~kafka_archive.replay.planning.spec` and
importable from here). :func:`build_plan` resolves it through a :class:`PlanSource`
(the catalog) into a :class:`ReplayPlan`: per source partition the offset range
``[start_offset, end_offset)`` (start inclusive, end **exclusive**), an upper bound of the records
in it, the bytes to read, and the archived objects with the byte range to read from each. A dry
run prints exactly this plan.

Range semantics (those of a consumer that seeks by time, i.e. Kafka's ListOffsets):

* ``from`` as a time T: the partition's earliest offset whose record timestamp is >= T;
* ``to`` as a time T: the same lookup, used as the *exclusive* end (so ``--from A --to B`` and
  ``--from B --to C`` split a history without overlap or gap);
* ``offset:N`` (or ``offset:P=N,P=N`` per partition): that offset, inclusive for ``from`` and
  exclusive for ``to``; ``earliest`` / ``latest``: the archive's first offset / its end.
* no ``to``: the end of the archive (one past the last archived offset).

The replay id is derived from the *resolved* plan (ranges, target, mapping, filters), so running
the same request again (same absolute times or offsets) finds the same replay and does nothing
once it is complete; ``force`` derives a fresh id and replays again.

The **intent** (:func:`intent_id`) is the request as given, before resolution; the same command
run again has it even when its plan resolves differently
(:mod:`kafka_archive.replay.planning.intent`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from kafka_archive.frozen import FrozenModel
from kafka_archive.replay.errors import (
    EmptyRangeError,
    ReplayConfigError,
    UnknownTopicError,
)
from kafka_archive.replay.planning.completeness import (
    HoleSource,
    PlanHole,
    ReplayGapsError,
    bound_holes,
    clip_holes,
    disjoint_holes,
    gaps_refusal,
    pruned_holes,
)
from kafka_archive.replay.planning.position import Position, parse_position
from kafka_archive.replay.planning.spec import (
    DEFAULT_PROGRESS_TOPIC,
    REDACTED,
    PartitionMapping,
    ReplaySpec,
    TargetSpec,
)
from kafka_archive.replay.planning.stable_offsets import StabilitySource
from kafka_archive.replay.planning.topic_config import TopicSettings

__all__ = [
    "DEFAULT_PROGRESS_TOPIC",
    "MAX_TAIL_OBJECTS",
    "ObjectRange",
    "PartitionMapping",
    "PartitionPlan",
    "PlanSource",
    "PlannedSegment",
    "Position",
    "ReplayPlan",
    "ReplaySpec",
    "TargetSpec",
    "build_plan",
    "id_ranges",
    "intent_id",
    "object_ranges",
    "parse_position",
    "stabilize",
]

#: segments after a range's end that a plan lists so the reader can find the COMMIT/ABORT
#: markers of transactions still open at the end (transactions are short-lived: one or two
#: segments are normally enough)
MAX_TAIL_OBJECTS = 32


class ObjectRange(FrozenModel):
    """Bytes ``[start, end)`` of one archived segment object, of which offsets
    ``base_offset..last_offset`` are to be read (``start`` is a batch boundary; the object may
    hold more offsets - another version serves them - and the reader stops past
    ``last_offset``)."""

    key: str
    start: int
    end: int
    base_offset: int
    last_offset: int
    txn_index_key: str | None = None


class PartitionPlan(FrozenModel):
    """One source partition's share of a replay."""

    partition: int
    start_offset: int
    end_offset: int
    #: upper bound of the records in ``[start_offset, end_offset)`` (the offset span the archived
    #: segments cover; compaction, control records and aborted data make the real count lower)
    records: int
    bytes: int
    objects: list[ObjectRange]
    #: segments after ``end_offset``, read only to find markers of transactions open at the end
    tail_objects: list[ObjectRange] = Field(default_factory=list)
    #: offsets of the range the replay cannot deliver (see :mod:`.completeness`)
    holes: list[PlanHole] = Field(default_factory=list)
    #: the mean records per archived batch of the segments read (control batches included),
    #: ``None`` when the source does not count batches: how batch-level replay's ``auto``
    #: chooses a partition's path (``execution.batch_engine.small_batches``)
    records_per_batch: float | None = None

    #: the archive's last stable offset when it lies below ``end_offset``: a transaction was
    #: still open where the archive ends, so records at or above it are not delivered by this
    #: run (it ends ``incomplete``; see :mod:`.stability`). ``None``: the whole range is stable
    stable_offset: int | None = None
    #: the transactions open at the archive's end, ``(producer_id, first_offset)``
    open_txns: list[tuple[int, int]] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.start_offset >= self.end_offset

    @property
    def deliver_end(self) -> int:
        """Where this run stops delivering (exclusive): ``end_offset``, or the stable offset
        when a transaction open at the archive's end lies inside the range."""
        if self.stable_offset is None:
            return self.end_offset
        return max(self.start_offset, min(self.end_offset, self.stable_offset))

    @property
    def incomplete(self) -> bool:
        """Whether records of the range lie above the archive's last stable offset."""
        return self.deliver_end < self.end_offset


class ReplayPlan(FrozenModel):
    """A resolved replay: the spec, its id and every partition's offsets and byte ranges."""

    replay_id: str
    spec: ReplaySpec
    partitions: list[PartitionPlan]
    source_partition_count: int
    source_cluster_id: str | None = None
    created_at_ms: int
    #: the target topic's configs as planned (:mod:`.topic_config`); ``None``: not looked up
    topic_settings: TopicSettings | None = None
    #: the request's intent (:func:`intent_id`); ``None``: a plan made before intents existed
    intent_id: str | None = None

    @property
    def txn_base(self) -> str:
        """What the producers' transactional ids are made of: the intent, so that every run of
        the same request (a resume, a ``--force`` run, a run after ``replay abandon``) fences
        a killed producer at once; the replay id for plans stored before intents existed
        (their producers used it)."""
        return self.intent_id or self.replay_id

    @property
    def target_topic(self) -> str:
        return self.spec.effective_target_topic

    @property
    def total_records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def total_bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)

    @property
    def holes(self) -> list[tuple[int, PlanHole]]:
        """Every hole of the plan as ``(partition, hole)``, in partition and offset order."""
        return [(p.partition, h) for p in self.partitions for h in p.holes]

    @property
    def has_holes(self) -> bool:
        return any(p.holes for p in self.partitions)

    @property
    def incomplete(self) -> bool:
        """Whether a partition's range reaches above the archive's last stable offset."""
        return any(p.incomplete for p in self.partitions)

    def partition(self, partition: int) -> PartitionPlan:
        for p in self.partitions:
            if p.partition == partition:
                return p
        raise KeyError(partition)

    def to_json(self, *, redact: bool = True) -> str:
        """The plan as JSON; secret target settings are redacted unless ``redact=False`` (only
        for handing the plan to executors, never for storing or printing it)."""
        plan = self
        if redact:
            plan = self.with_target(self.spec.target.redacted())
        return plan.model_dump_json(by_alias=True)

    def with_target(self, target: TargetSpec) -> ReplayPlan:
        return self.model_copy(update={"spec": self.spec.model_copy(update={"target": target})})

    @property
    def has_redacted_secrets(self) -> bool:
        return any(v == REDACTED for v in self.spec.target.config.values())

    @classmethod
    def from_json(cls, text: str | bytes) -> ReplayPlan:
        return cls.model_validate_json(text)


class PlannedSegment(FrozenModel):
    """What the catalog knows about one archived segment object, as the replay plans with it
    (not the catalog builder's ``SegmentRef``, its reference to a manifest to extract).

    ``index`` holds sparse ``(offset, position)`` pairs: a batch containing or following
    ``offset`` starts at or after byte ``position`` - the catalog's sparse time index gives
    them; an empty index means "read from byte 0".
    """

    key: str
    base_offset: int
    last_offset: int
    size: int
    record_count: int | None = None
    #: the record batches in the segment (control batches included), when known
    batch_count: int | None = None
    first_timestamp: int | None = None
    max_timestamp: int | None = None
    txn_index_key: str | None = None
    index: list[tuple[int, int]] = Field(default_factory=list)

    def position_for(self, offset: int) -> int:
        """Byte position to start reading at to find ``offset`` (floor lookup in ``index``)."""
        best = 0
        for off, pos in self.index:
            if off <= offset and pos >= best:
                best = pos
            elif off > offset:
                break
        return best


@runtime_checkable
class PlanSource(Protocol):
    """What planning needs from the catalog (the catalog implements it; see
    :mod:`kafka_archive.replay.planning.sources` for one built from archived objects)."""

    def partitions(self, cluster: str, topic: str) -> list[int]:
        """Archived partitions of the topic, ascending; raises UnknownTopicError if none."""
        ...

    def partition_count(self, cluster: str, topic: str) -> int:
        """The source topic's partition count (for --create-topic and mapping checks)."""
        ...

    def segments(self, cluster: str, topic: str, partition: int) -> Sequence[PlannedSegment]:
        """The partition's archived segments in offset order, without overlaps."""
        ...

    def offset_for_time(self, cluster: str, topic: str, partition: int, timestamp_ms: int) -> int:
        """ListOffsets semantics: the earliest offset with timestamp >= T, -1 when none."""
        ...

    def cluster_id(self, cluster: str) -> str | None:
        """The Kafka cluster id of the archived cluster (meta.properties), if known."""
        ...


def _resolve(
    pos: Position,
    *,
    partition: int,
    log_start: int,
    log_end: int,
    source: PlanSource,
    cluster: str,
    topic: str,
) -> int:
    if pos.kind == "earliest":
        return log_start
    if pos.kind == "latest":
        return log_end
    if pos.kind == "offset":
        if pos.per_partition is not None:
            off = pos.per_partition.get(partition)
            if off is None:
                raise ReplayConfigError(
                    f"no offset given for partition {partition} in offset:P=N,...",
                    hint="Give an offset for every selected partition, or select partitions "
                    "with --partitions.",
                )
        else:
            assert pos.value is not None
            off = pos.value
        return min(max(off, log_start), log_end)
    assert pos.value is not None
    found = source.offset_for_time(cluster, topic, partition, pos.value)
    return log_end if found < 0 else max(found, log_start)


def object_ranges(
    segments: Sequence[PlannedSegment], start: int, end: int
) -> tuple[list[ObjectRange], list[ObjectRange], int]:
    """The objects to read for ``[start, end)``, the tail objects after ``end`` (read for
    markers only) and the bytes to read."""
    objects: list[ObjectRange] = []
    tail: list[ObjectRange] = []
    nbytes = 0
    for seg in segments:
        if seg.last_offset < start:
            continue
        if seg.base_offset >= end:
            if len(tail) < MAX_TAIL_OBJECTS:
                tail.append(
                    ObjectRange(
                        key=seg.key,
                        start=0,
                        end=seg.size,
                        base_offset=seg.base_offset,
                        last_offset=seg.last_offset,
                        txn_index_key=seg.txn_index_key,
                    )
                )
            continue
        first = seg.position_for(max(start, seg.base_offset))
        # the end of the range is found while reading (the next index entry past ``end``
        # would bound it, but the reader must also see markers right after ``end``)
        objects.append(
            ObjectRange(
                key=seg.key,
                start=first,
                end=seg.size,
                base_offset=seg.base_offset,
                last_offset=seg.last_offset,
                txn_index_key=seg.txn_index_key,
            )
        )
        nbytes += seg.size - first
    return objects, tail, nbytes


def records_per_batch(segments: Sequence[PlannedSegment], start: int, end: int) -> float | None:
    """The mean records per batch of the segments ``[start, end)`` reads (``None`` when a
    segment's counts are unknown or nothing is read)."""
    records = batches = 0
    for seg in segments:
        if seg.last_offset < start or seg.base_offset >= end:
            continue
        if seg.batch_count is None or seg.record_count is None:
            return None
        records += seg.record_count
        batches += seg.batch_count
    return records / batches if batches else None


def _spans(segments: Sequence[PlannedSegment], start: int, end: int) -> int:
    total = 0
    for seg in segments:
        lo = max(seg.base_offset, start)
        hi = min(seg.last_offset + 1, end)
        if hi > lo:
            total += hi - lo
    return total


def plan_id(spec: ReplaySpec, partitions: Iterable[PartitionPlan], *, nonce: str = "") -> str:
    """The replay id: a digest of the resolved ranges and every option that changes what
    lands on the target (never credentials: only the target's bootstrap list or name)."""
    ident = {
        "cluster": spec.cluster,
        "topic": spec.topic,
        "ranges": [[p.partition, p.start_offset, p.end_offset] for p in partitions],
        "target": spec.target.identity(),
        "target_topic": spec.effective_target_topic,
        "mapping": spec.partition_mapping,
        "timestamps": spec.preserve_timestamps,
        "provenance": spec.provenance_headers,
        "key_filter": spec.key_filter,
        "nonce": nonce,
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()
    return f"r-{digest[:16]}"


def intent_id(spec: ReplaySpec) -> str:
    """The request's intent: a digest of what was asked for, *before* resolution (``from``/
    ``to`` as given, partition selection, target, every option that changes what is written;
    never credentials, rate limits or transaction sizes)."""
    ident = {
        "cluster": spec.cluster,
        "topic": spec.topic,
        "partitions": sorted(set(spec.partitions)) if spec.partitions else None,
        "from": spec.from_.model_dump(mode="json"),
        "to": None if spec.to is None else spec.to.model_dump(mode="json"),
        "target": spec.target.identity(),
        "target_topic": spec.effective_target_topic,
        "mapping": spec.partition_mapping,
        "timestamps": spec.preserve_timestamps,
        "provenance": spec.provenance_headers,
        "key_filter": spec.key_filter,
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()
    return f"i-{digest[:16]}"


def _requested(pos: Position | None, partition: int) -> int | None:
    """The offset an explicit ``offset:`` bound names for ``partition`` (else ``None``)."""
    if pos is None or pos.kind != "offset":
        return None
    if pos.per_partition is not None:
        return pos.per_partition.get(partition)
    return pos.value


def _asked_before(pos: Position, partition: int, log_start: int, first: PlannedSegment) -> bool:
    """Whether ``pos`` names an offset or a moment before the partition's retained span (the
    plan starts at the first retained offset instead)."""
    if pos.kind == "offset":
        off = _requested(pos, partition)
        return off is not None and off < log_start
    if pos.kind == "time" and pos.value is not None:
        ts = first.first_timestamp
        return ts is not None and ts >= 0 and pos.value < ts
    return False


def _asked_span(
    spec: ReplaySpec, partition: int, start: int, end: int, *, asked_before: bool
) -> tuple[int | None, int | None]:
    """The offsets ``lo..hi`` (inclusive, ``None``: open) the request asked for, as far as
    they are known: a plan's holes name only their part inside it (an explicit ``offset:``
    bound counts even outside the archived span; a moment before the retained span leaves
    the start open, since which pruned offset it meant is not known)."""
    req_from = _requested(spec.from_, partition)
    if spec.from_.kind == "earliest" or (req_from is None and asked_before):
        lo: int | None = None
    else:
        lo = start if req_from is None else min(req_from, start)
    if spec.to is None or spec.to.kind == "latest":
        return lo, None
    req_to = _requested(spec.to, partition)
    return lo, (end if req_to is None else req_to) - 1


def id_ranges(ids: Sequence[int], limit: int = 20) -> str:
    """Sorted ids as ``0-3,7,9-12`` (runs joined), at most ``limit`` runs then ``...``: a
    message that names many partitions stays one short line."""
    runs: list[list[int]] = []
    for i in sorted(set(ids)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    text = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:limit])
    return text + (f",... ({len(runs) - limit} more run(s))" if len(runs) > limit else "")


def build_plan(spec: ReplaySpec, source: PlanSource, *, now_ms: int | None = None) -> ReplayPlan:
    """Resolve ``spec`` against the catalog into a :class:`ReplayPlan`.

    Every partition plan lists its holes (:mod:`.completeness`): the catalog's (when ``source``
    is a :class:`~.completeness.HoleSource`) that touch the range, and explicit offset bounds
    outside the archived span. Refusing a plan with holes is the caller's decision
    (:func:`.runner.require_complete`): a dry run shows them.

    Raises:
        UnknownTopicError: the cluster/topic (or a requested partition) is not archived.
        EmptyRangeError: ``from`` is after ``to``, or no partition has anything to replay.
        ReplayConfigError: other invalid requests (bad key filter, per-partition offsets...).
    """
    from kafka_archive.replay.planning.filters import KeyFilter

    if spec.key_filter is not None:
        KeyFilter.parse(spec.key_filter)  # validate early, with a clear message
    archived = source.partitions(spec.cluster, spec.topic)
    if not archived:
        raise UnknownTopicError(f"the archive holds no topic {spec.topic!r} of {spec.cluster!r}")
    wanted = sorted(set(spec.partitions)) if spec.partitions else archived
    held = set(archived)
    missing = [p for p in wanted if p not in held]
    if missing:
        raise UnknownTopicError(
            f"partitions {id_ranges(missing)} of {spec.cluster}/{spec.topic} are not in the "
            f"archive (archived: {id_ranges(archived)})"
        )
    if (
        spec.to is not None
        and spec.from_.kind == spec.to.kind
        and spec.from_.value is not None
        and spec.to.value is not None
        and spec.from_.value > spec.to.value
    ):
        raise EmptyRangeError(
            f"the range is inverted: from {spec.from_.describe()} is after to {spec.to.describe()}"
        )
    plans: list[PartitionPlan] = []
    for p in wanted:
        segments = list(source.segments(spec.cluster, spec.topic, p))
        if not segments:
            raise UnknownTopicError(f"partition {p} of {spec.cluster}/{spec.topic} has no segments")
        log_start = segments[0].base_offset
        log_end = segments[-1].last_offset + 1
        kw = {
            "partition": p,
            "log_start": log_start,
            "log_end": log_end,
            "source": source,
            "cluster": spec.cluster,
            "topic": spec.topic,
        }
        start = _resolve(spec.from_, **kw)  # type: ignore[arg-type]
        end = log_end if spec.to is None else _resolve(spec.to, **kw)  # type: ignore[arg-type]
        if start > end:
            raise EmptyRangeError(
                f"the range is inverted on partition {p}: from resolves to offset {start}, "
                f"after the end offset {end}"
            )
        objects, tail, nbytes = object_ranges(segments, start, end)
        holes = bound_holes(_requested(spec.from_, p), _requested(spec.to, p), log_start, log_end)
        if isinstance(source, HoleSource):
            found = source.holes(spec.cluster, spec.topic, p)
            open_end = None if spec.to is None or spec.to.kind == "latest" else end
            holes += clip_holes(
                [h for h in found if h.kind != "pruned"],
                start,
                open_end,
                open_start=spec.from_.kind == "earliest",
            )
            asked_before = _asked_before(spec.from_, p, log_start, segments[0])
            pruned = pruned_holes(found, start, open_end, asked_before_start=asked_before)
            if pruned:  # offsets before the retained span were pruned, not "not archived"
                lowest = min(h.first_offset for h in pruned)
                holes = [
                    h
                    for h in holes
                    if not (h.kind == "not-archived" and lowest <= h.first_offset < log_start)
                ]
                holes += pruned
        else:
            asked_before = False
        lo, hi = _asked_span(spec, p, start, end, asked_before=asked_before)
        holes = disjoint_holes(holes, lo, hi)
        plans.append(
            PartitionPlan(
                partition=p,
                start_offset=start,
                end_offset=end,
                records=_spans(segments, start, end),
                bytes=nbytes if end > start else 0,
                objects=objects if end > start else [],
                tail_objects=tail if end > start else [],
                holes=holes,
                records_per_batch=records_per_batch(segments, start, end),
            )
        )
    if all(pp.empty for pp in plans):
        holes_of = [(pp.partition, h) for pp in plans for h in pp.holes]
        if holes_of:  # the whole request lies in holes (e.g. pruned away): say which
            message, hint = gaps_refusal(spec.cluster, spec.topic, holes_of)
            raise ReplayGapsError(
                f"nothing to replay: {message}",
                hint=hint,
                holes=[
                    {"partition": part, **h.model_dump(mode="json", exclude={"detail"}), **h.detail}
                    for part, h in holes_of
                ],
            )
        to_text = "the end of the archive" if spec.to is None else spec.to.describe()
        raise EmptyRangeError(
            f"nothing to replay: from {spec.from_.describe()} to {to_text} selects no records "
            f"in {spec.cluster}/{spec.topic} partitions {wanted}"
        )
    now = int(time.time() * 1000) if now_ms is None else now_ms
    replay_id = spec.replay_id or plan_id(spec, plans, nonce=str(now) if spec.force else "")
    plan = ReplayPlan(
        replay_id=replay_id,
        spec=spec,
        partitions=plans,
        source_partition_count=source.partition_count(spec.cluster, spec.topic),
        source_cluster_id=source.cluster_id(spec.cluster),
        created_at_ms=now,
        intent_id=intent_id(spec),
    )
    # the archive's last stable offsets (after the id: they do not change what is asked for)
    return stabilize(plan, source)


def stabilize(plan: ReplayPlan, source: PlanSource) -> ReplayPlan:
    """``plan`` with every partition's ``stable_offset``/``open_txns`` set from ``source``
    (unchanged when the source is no :class:`StabilitySource`)."""
    if not isinstance(source, StabilitySource):
        return plan
    spec = plan.spec
    parts: list[PartitionPlan] = []
    for p in plan.partitions:
        update: dict[str, Any] = {"stable_offset": None, "open_txns": []}
        if not p.empty:
            st = source.stability(spec.cluster, spec.topic, p.partition)
            if st.stable_offset < p.end_offset:
                update = {"stable_offset": st.stable_offset, "open_txns": list(st.open_txns)}
        parts.append(p.model_copy(update=update))
    return plan.model_copy(update={"partitions": parts})
