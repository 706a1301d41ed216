"""A plan's target-topic settings: :func:`plan_topic_settings` decides them at plan time.

A module of its own, above both :mod:`kafka_archive.replay.planning.plan` (which stores
:class:`~kafka_archive.replay.planning.topic_config.TopicSettings` in the plan) and
:mod:`kafka_archive.replay.planning.topic_config` (what those settings are), so that neither imports
the other. Pure functions: the catalog's segments through :class:`PlanSource`, the metadata history
through :class:`~kafka_archive.replay.planning.topic_config.TopicHistory`.
"""

from __future__ import annotations

from kafka_archive.replay.planning.plan import PlanSource, ReplayPlan
from kafka_archive.replay.planning.topic_config import TopicHistory, topic_settings

__all__ = ["data_span", "plan_topic_settings"]


def data_span(plan: ReplayPlan, source: PlanSource) -> tuple[int | None, int | None]:
    """The replayed records' timestamp bounds ``(first, last)`` by the catalog: the segments
    overlapping each partition's range (a time ``from`` raises the first to it); ``None``
    where no segment has a timestamp."""
    firsts: list[int] = []
    lasts: list[int] = []
    for p in plan.partitions:
        if p.empty:
            continue
        for seg in source.segments(plan.spec.cluster, plan.spec.topic, p.partition):
            if seg.last_offset < p.start_offset or seg.base_offset >= p.end_offset:
                continue
            if seg.first_timestamp is not None and seg.first_timestamp >= 0:
                firsts.append(seg.first_timestamp)
            if seg.max_timestamp is not None and seg.max_timestamp >= 0:
                lasts.append(seg.max_timestamp)
    first = min(firsts) if firsts else None
    frm = plan.spec.from_
    if frm.kind == "time" and frm.value is not None:
        first = frm.value if first is None else max(first, frm.value)
    return first, (max(lasts) if lasts else None)


def plan_topic_settings(
    plan: ReplayPlan,
    source: PlanSource,
    history: TopicHistory | None,
    *,
    at_ms: int | None = None,
) -> ReplayPlan:
    """``plan`` with its :class:`TopicSettings`: the source topic as it was at ``at_ms`` when
    given (a restore: the topic as it was at the restore's moment), else at the replay's start
    - ``--from`` when it is a time, else the first replayed record's timestamp."""
    spec = plan.spec
    span = data_span(plan, source)
    frm = spec.from_
    if at_ms is None:
        at_ms = frm.value if frm.kind == "time" and frm.value is not None else span[0]
    settings = topic_settings(
        history,
        cluster=spec.cluster,
        topic=spec.topic,
        at_ms=at_ms,
        overrides=spec.topic_config,
        use_source=spec.source_config,
        archive_partitions=plan.source_partition_count,
        replication_factor=spec.replication_factor,
        data_span=span,
    )
    return plan.model_copy(update={"topic_settings": settings})
