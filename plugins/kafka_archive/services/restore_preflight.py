"""A whole-cluster restore's preflight: what it would do, and every problem it would meet.

:func:`prepare` plans each selected topic as the replay it will be (from the range start to T,
the target topic created with its configs at T), and gathers the consumer groups that
committed on them, the ACLs at T (mapped onto the target's names and principals), the
permissions all of that needs, and the target's own answers (asked in a thread while the
catalog plans). Nothing is written: :class:`~kafka_archive.services.restore.RestoreService`
``.plan`` returns the :class:`~kafka_archive.restore.model.RestorePlan`, and ``.run`` executes
the replay plans kept beside it (:class:`Prepared`).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.restore.groups import set_after_data
from kafka_archive.restore.model import (
    ESTIMATE_BYTES_PER_S,
    GroupEntry,
    RestorePlan,
    TopicEntry,
)
from kafka_archive.restore.request import RestoreRequest
from kafka_archive.timeparse import format_ms

if TYPE_CHECKING:
    from kafka_archive.catalog.db import Catalog
    from kafka_archive.replay.planning.plan import ReplayPlan, ReplaySpec
    from kafka_archive.restore.acls import AclRule, SkippedAcl
    from kafka_archive.services.metadata_history import MetadataHistoryService
    from kafka_archive.services.replay import ReplayService

__all__ = ["Prepared", "prepare", "replay_spec"]


class Prepared:
    """A plan with the replay plan of each topic (``None``: nothing to replay before T)."""

    def __init__(self, plan: RestorePlan, replays: dict[str, ReplayPlan | None]) -> None:
        self.plan, self.replays = plan, replays


def prepare(
    request: RestoreRequest,
    *,
    catalog: Catalog,
    replays: ReplayService,
    history: MetadataHistoryService,
    restarted: bool,
    check_target: bool = True,
) -> Prepared:
    """The preflight of ``request``: every selected topic planned as a replay (``replays``,
    nothing registered), its groups, ACLs and the permissions they need, judged against the
    target's own answers (``check_target`` False: the target is not asked). ``restarted``: the
    same restore ran before (a topic it created empty is then its own, not a collision).
    Writes nothing."""
    from kafka_archive.catalog.holdings import topics as holdings
    from kafka_archive.catalog.queries.group_offsets import groups_by_topic
    from kafka_archive.replay.execution.engine import transactional_id
    from kafka_archive.restore.acls import map_acls
    from kafka_archive.restore.preflight import check_permissions, judge, needs_of
    from kafka_archive.restore.request import select_groups, select_topics
    from kafka_archive.restore.target import TargetFacts, principal_of, target_facts

    held = holdings(catalog, request.cluster)
    # the topics archived, and those alive at T by the metadata history (a topic without
    # any archived record existed at T too: it is created, empty)
    try:
        alive = set(history.topics_at(request.cluster, request.at_ms).values())
    except (LookupError, KafkaArchiveError):
        alive = set()
    names, unmatched = select_topics({h.topic for h in held} | alive, request)
    client = request.target.client_config()
    # the target is asked (round trips, no GIL held) while the catalog plans each topic
    asking = ThreadPoolExecutor(1, thread_name_prefix="restore-preflight")
    facts_of: Future[TargetFacts] | None = (
        asking.submit(target_facts, client, [request.rename.apply(t) for t in names])
        if check_target
        else None
    )
    asking.shutdown(wait=False)  # (the one task still runs; its answer is waited for)
    points: dict[str, dict[int, int]] = {}
    for h in held:
        if h.max_timestamp >= 0:
            points.setdefault(h.topic, {})[h.partition] = h.max_timestamp
    plans: dict[str, ReplayPlan | None] = {}
    entries: list[TopicEntry] = []
    known = {r.replay_id for r in replays.ledger.runs(cluster=request.cluster)}
    for topic in names:
        entry, plan = _topic(replays, history, request, topic, known)
        update: dict[str, Any] = {"recovery_point_ms": points.get(topic, {})}
        if plan is None and restarted:
            update["resumed"] = True
        entries.append(entry.model_copy(update=update))
        plans[topic] = plan
    committed = groups_by_topic(catalog, request.cluster, request.at_ms)
    chosen = select_groups(committed, names, request.groups)
    target_of = {e.source: e.target for e in entries}
    groups = [
        GroupEntry(group=g, topics=sorted(t & set(names)), outside=sorted(t - set(names)))
        for g, t in chosen.items()
    ]
    acls: list[AclRule] = []
    skipped: list[SkippedAcl] = []
    notes: list[str] = []
    if request.acls:
        found, note = history.acls_at(request.cluster, request.at_ms)
        if note:
            notes.append(note)
        acls, skipped = map_acls(
            found,
            topics=target_of,
            groups=chosen,
            rename=request.rename,
            principal_map=request.principal_map,
        )
    principal = request.principal or principal_of(client)
    facts = (
        facts_of.result() if facts_of is not None else TargetFacts(reachable=True, authorizer=False)
    )
    tids = [
        transactional_id(p.txn_base, pp.partition)
        for p in plans.values()
        if p is not None
        for pp in p.partitions
    ]
    progress = next((p.spec.progress_topic for p in plans.values() if p), None)
    needs = needs_of(
        entries,
        existing=facts.topics,
        transactional_ids=tids,
        progress_topic=progress or "__kafka_archive_replay_progress",
        groups={g.group: [target_of[t] for t in g.topics] for g in groups},
        acls=bool(acls),
    )
    verdicts = check_permissions(needs, facts, principal) if check_target else []
    problems = judge(
        entries,
        facts,
        verdicts,
        principal=principal,
        unmatched=unmatched,
        allow_gaps=request.allow_gaps,
        unverified_permissions=request.unverified_permissions,
    )
    if not check_target:
        notes.append(
            "the target was not asked (offline plan): permissions, collisions and "
            "broker count are unchecked"
        )
    for g in groups:
        if g.outside:
            notes.append(
                f"group {g.group} also committed on topics outside the selection: "
                f"{', '.join(g.outside)} (their positions are not restored)"
            )
    total = sum(e.bytes for e in entries)
    restore = RestorePlan(
        restore_id=request.restore_id(),
        cluster=request.cluster,
        at_ms=request.at_ms,
        at=format_ms(request.at_ms),
        target=request.target.identity(),
        target_cluster_id=facts.cluster_id,
        target_brokers=facts.brokers,
        principal=principal,
        topics=entries,
        groups=groups,
        acls=acls,
        skipped_acls=skipped,
        permissions=[
            {**n.model_dump(), "allowed": ok, "checked_by": how} for n, ok, how in verdicts
        ],
        problems=problems,
        estimate={
            "bytes": total,
            "records": sum(e.records for e in entries),
            "partitions": sum(e.partitions for e in entries),
            "seconds": round(total / ESTIMATE_BYTES_PER_S, 1),
            "assumed_bytes_per_s": ESTIMATE_BYTES_PER_S,
        },
        notes=notes,
    )
    return Prepared(restore, plans)


def _topic(
    svc: ReplayService,
    history: MetadataHistoryService,
    request: RestoreRequest,
    topic: str,
    known: set[str],
) -> tuple[TopicEntry, ReplayPlan | None]:
    """One topic's entry and replay plan (``None``: no record before T)."""
    from kafka_archive.replay.errors import EmptyRangeError, UnknownTopicError
    from kafka_archive.replay.runner import dry_run_report

    target = request.rename.apply(topic)
    state = None
    notes: list[str] = []
    try:
        state = history.topic_at(request.cluster, topic, request.at_ms)
    except (LookupError, KafkaArchiveError) as exc:
        notes.append(f"no metadata history at T: {exc}")
    rf = request.replication_factor
    if rf is None and state is not None and state.replicas:
        rf = len(next(iter(state.replicas.values())))
    later = set_after_data(dict(state.configs) if state is not None else {})
    try:
        spec = replay_spec(request, topic, target, rf, later)
        plan = svc.plan(spec, config_at_ms=request.at_ms)
    except (EmptyRangeError, UnknownTopicError):
        entry = TopicEntry(
            source=topic,
            target=target,
            empty=True,
            notes=notes,
            partitions_at_t=state.partitions if state else None,
            configs_at_t=dict(state.configs) if state else {},
            replication_factor=rf,
        )
        return entry, None
    notes += svc.notes
    settings = plan.topic_settings
    holes = dry_run_report(plan).holes
    entry = TopicEntry(
        source=topic,
        target=target,
        replay_id=plan.replay_id,
        resumed=plan.replay_id in known,
        partitions=len(plan.partitions),
        partitions_at_t=settings.source_partitions if settings else None,
        replication_factor=rf,
        records=plan.total_records,
        bytes=plan.total_bytes,
        configs_at_t=dict(settings.source_configs) if settings else {},
        configs=settings.config_dict() if settings else {},
        dropped_configs=[d.model_dump() for d in settings.dropped] if settings else [],
        holes=holes,
        notes=[*notes, *(settings.notes if settings else [])],
    )
    return entry, plan


def replay_spec(
    request: RestoreRequest, topic: str, target: str, rf: int | None, later: dict[str, str]
) -> ReplaySpec:
    """The replay that restores ``topic`` as ``target``: everything from the request's start
    up to T, the target topic created (replication factor ``rf``) as CreateTime for the configs
    in ``later`` (set once its data is in)."""
    from kafka_archive.replay.planning.plan import ReplaySpec
    from kafka_archive.replay.planning.position import Position, parse_position

    return ReplaySpec.model_validate(
        {
            "cluster": request.cluster,
            "topic": topic,
            "from": parse_position(request.from_),
            "to": Position(kind="time", value=request.at_ms),
            "target": request.target,
            "target_topic": target,
            "create_topic": True,
            "replication_factor": rf,
            # created CreateTime, so the broker keeps the records' archived timestamps;
            # the config of T is set once the data is in (_set_after_data)
            "topic_config": {n: "CreateTime" for n in later},
            "allow_gaps": request.allow_gaps,
            # another cluster: the same name is not the source topic (the restore's
            # preflight refuses existing names instead)
            "allow_same_topic": True,
        }
    )
