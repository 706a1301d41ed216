"""Orchestrating a replay: plan, check the target, execute every partition, report.

The same three steps run from the CLI, the Airflow DAG and the Spark job:

1. :func:`plan_replay` - resolve the request against the catalog (:func:`.plan.build_plan`);
2. :func:`check_target` - the guard rails that need the target cluster: not the source's own
   cluster and topic (unless allowed), the target topic exists (or is created with the source's
   partition count when asked), the partition mapping can hold, the progress topic exists;
3. :func:`execute` - one :class:`~.engine.PartitionReplay` per source partition, in threads
   (in-process) or as Spark tasks (``spark_jobs/replay.py`` calls :func:`run_partition` on the
   executors); the driver collects per-partition results into a :class:`ReplayReport`. With
   fewer threads than partitions, the partition that starts next is prepared (producer,
   ``init_transactions``, committed progress) while the current one produces.

A dry run stops after step 1 (and, when the target is reachable, step 2) and reports the plan.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from pydantic import BaseModel

from kafka_archive.replay.client_log import CLIENT_LOG, new_client
from kafka_archive.replay.completeness import (
    ReplayGapsError,
    describe_hole,
    final_status,
)
from kafka_archive.replay.engine import Hook, PartitionReplay, PartitionResult
from kafka_archive.replay.errors import (
    PartitionMappingError,
    ReplayError,
    ReplayTargetError,
    SameTopicError,
    TargetTopicMissingError,
)
from kafka_archive.replay.lease import ReplayLease
from kafka_archive.replay.ledger import ReplayLedger
from kafka_archive.replay.plan import PlanSource, ReplayPlan, ReplaySpec, build_plan
from kafka_archive.replay.progress import (
    CLIENT_DEFAULTS,
    CommittedLogReader,
    RunClaim,
    claim_key,
    is_retriable,
    progress_partition,
)
from kafka_archive.store.base import ObjectStore

__all__ = [
    "DEFAULT_PROGRESS_PARTITIONS",
    "ReplayReport",
    "TargetInfo",
    "check_target",
    "claim_run",
    "execute",
    "plan_replay",
    "require_complete",
    "run_partition",
    "target_metadata",
    "wait_until_ready",
]

#: partitions of the progress topic when ``replay run`` creates it
DEFAULT_PROGRESS_PARTITIONS = 12

#: how long the guard rails wait for the target's metadata at most, and how long once
#: librdkafka reports every broker down (a refused connection is reported within milliseconds;
#: the grace lets a broker that is just starting answer)
TARGET_REACH_TIMEOUT_S = 30.0
ALL_DOWN_GRACE_S = 3.0

#: how long a topic the replay created may take until every partition has a leader that serves
TOPIC_READY_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class TargetInfo:
    """What the guard rails learned about the target."""

    cluster_id: str | None
    partitions: int
    created_topic: bool = False


class ReplayReport(BaseModel):
    """The final report of a replay (``--json`` prints it as one object)."""

    replay_id: str
    status: str
    dry_run: bool = False
    cluster: str
    topic: str
    target: str
    target_topic: str
    partition_mapping: str
    records_sent: int
    records_sent_this_run: int
    bytes_sent_this_run: int
    skipped_control_batches: int
    skipped_aborted_records: int
    filtered_records: int
    open_txn_records: int
    duration_s: float
    records_per_s: float
    mb_per_s: float
    partitions: dict[int, dict[str, Any]]
    plan: dict[str, Any] | None = None
    #: whether the run was allowed to replay around holes (``--allow-gaps``)
    allow_gaps: bool = False
    #: every hole of the plan: ``partition``, offsets, kind, object key, byte position, reason
    holes: list[dict[str, Any]] = []
    #: a dry run's view of the target (``None``: ``--offline``, not checked)
    target_check: dict[str, Any] | None = None


def _hole_rows(plan: ReplayPlan) -> list[dict[str, Any]]:
    return [
        {"partition": p, **h.model_dump(mode="json", exclude={"detail"}), **h.detail}
        for p, h in plan.holes
    ]


def require_complete(plan: ReplayPlan) -> None:
    """Refuse a plan with holes unless its request allows gaps (see :mod:`.completeness`).

    Raises:
        ReplayGapsError: naming every hole (offsets, object key, byte position, reason).
    """
    if not plan.has_holes or plan.spec.allow_gaps:
        return
    holes = plan.holes
    lines = "; ".join(describe_hole(p, h) for p, h in holes[:10])
    more = f"; and {len(holes) - 10} more" if len(holes) > 10 else ""
    missing = sum(h.offsets for _p, h in holes)
    raise ReplayGapsError(
        f"the archive cannot deliver {missing} offset(s) of the requested range of "
        f"{plan.spec.cluster}/{plan.spec.topic} ({len(holes)} hole(s)): {lines}{more}",
        holes=_hole_rows(plan),
    )


def plan_replay(spec: ReplaySpec, source: PlanSource, *, now_ms: int | None = None) -> ReplayPlan:
    """Step 1: resolve ``spec`` against the catalog (see :func:`.plan.build_plan`)."""
    return build_plan(spec, source, now_ms=now_ms)


def _metadata_client(client_config: dict[str, str]) -> Consumer:
    # A consumer, so that asking about a missing topic cannot auto-create it; the replay's client
    # defaults let its second question wait ~12 ms instead of ~50 (see CLIENT_DEFAULTS).
    return new_client(
        Consumer,
        {
            **CLIENT_DEFAULTS,
            **client_config,
            "group.id": "kafka-archive-replay-check",
            "allow.auto.create.topics": False,
            "enable.auto.commit": False,
        },
    )


def target_metadata(client_config: dict[str, str], topic: str) -> tuple[str | None, int | None]:
    """``(cluster id, partition count or None when the topic does not exist)`` - asked without
    letting the broker auto-create the topic."""
    consumer = _metadata_client(client_config)
    try:
        return _topic_metadata(consumer, topic)
    finally:
        consumer.close()


def _topic_metadata(consumer: Consumer, topic: str) -> tuple[str | None, int | None]:
    md = _reach(consumer, topic)
    meta = md.topics.get(topic)
    if meta is None or meta.error is not None:
        if meta is not None and meta.error.code() not in (
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            KafkaError._UNKNOWN_TOPIC,
        ):
            raise ReplayTargetError(f"target metadata for {topic}: {meta.error.str()}")
        return md.cluster_id, None
    return md.cluster_id, len(meta.partitions)


def _reach(consumer: Consumer, topic: str) -> Any:
    """The target's metadata for ``topic``, asked in short tries for up to
    :data:`TARGET_REACH_TIMEOUT_S`; gives up after :data:`ALL_DOWN_GRACE_S` once librdkafka
    reports every broker down (a dead or mistyped target: one clear error, quickly, with a
    summary of what librdkafka said instead of its thousands of log lines).

    Raises:
        ReplayTargetError: the target did not answer.
    """
    mark = CLIENT_LOG.mark()
    started = time.monotonic()
    last = ""
    while True:
        try:
            return consumer.list_topics(topic, timeout=1.0)
        except KafkaException as exc:
            err = exc.args[0]
            last = err.str() if isinstance(err, KafkaError) else str(err)
        consumer.poll(0)  # serves the error callbacks (and log lines) queued so far
        waited = time.monotonic() - started
        all_down = CLIENT_LOG.all_brokers_down(mark)
        if waited >= TARGET_REACH_TIMEOUT_S or (all_down and waited >= ALL_DOWN_GRACE_S):
            said = CLIENT_LOG.summary(mark)
            raise ReplayTargetError(
                f"cannot reach the target cluster after {waited:.0f} s: {last}"
                + (f" ({said})" if said else ""),
                hint="Check --target (host:port of the target brokers), the network and the "
                "target's security settings (--target-config), then run again.",
            ) from None


def _create_topic(
    client_config: dict[str, str], topic: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    admin = AdminClient(dict(client_config))  # type: ignore[arg-type]
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=-1, config=config or {})],
        operation_timeout=30,
        request_timeout=30,
    )
    for name, fut in futures.items():
        try:
            fut.result(60)
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            raise TargetTopicMissingError(
                f"creating {name} with {partitions} partitions on the target failed: "
                f"{err.str() or err.name()}",
                hint="Create the topic with your usual tooling (the target may not allow "
                "CreateTopics) and run again.",
            ) from None


def wait_until_ready(
    consumer: Consumer,
    topic: str,
    partitions: int,
    *,
    timeout_s: float = TOPIC_READY_TIMEOUT_S,
) -> int:
    """Wait until ``topic`` (just created) is usable: the metadata shows it with at least
    ``partitions`` partitions, each with a leader, and every partition's leader answers
    ListOffsets (what reading the progress topic asks first). Returns the partition count.

    CreateTopics returns once the controller has committed the topic; the brokers learn it (and
    become leaders) a moment later. Until then metadata lacks the topic or its leaders, and a
    read gets ``NOT_LEADER_FOR_PARTITION`` - which crashed the first replay into a real cluster.

    Raises:
        ReplayTargetError: not ready within ``timeout_s``, or a non-retriable error.
    """
    deadline = time.monotonic() + timeout_s
    last = "not in the metadata yet"
    while True:
        left = deadline - time.monotonic()
        try:
            md = consumer.list_topics(topic, timeout=max(1.0, min(10.0, left)))
            meta = md.topics.get(topic)
            if meta is None or meta.error is not None:
                last = meta.error.str() if meta is not None else "not in the metadata yet"
            elif len(meta.partitions) < partitions:
                last = f"{len(meta.partitions)} of {partitions} partitions in the metadata"
            else:
                leaderless = sorted(
                    p for p, pm in meta.partitions.items() if pm.leader < 0 or pm.error is not None
                )
                if leaderless:
                    last = f"no leader yet for partition(s) {leaderless}"
                else:
                    for p in sorted(meta.partitions):
                        consumer.get_watermark_offsets(
                            TopicPartition(topic, p), timeout=max(1.0, min(10.0, left))
                        )
                    return len(meta.partitions)
        except KafkaException as exc:
            err = exc.args[0]
            if not isinstance(err, KafkaError) or not is_retriable(err):
                raise ReplayTargetError(f"target metadata for {topic}: {exc}") from None
            last = err.str()
        if time.monotonic() >= deadline:
            raise ReplayTargetError(
                f"{topic} was created but is not ready on the target after {timeout_s:g} s: {last}",
                hint="Check the target brokers (every partition needs a leader) and run again.",
            )
        time.sleep(0.1)


def check_target(plan: ReplayPlan, *, read_only: bool = False) -> TargetInfo:
    """Step 2: the guard rails that need the target (see the module docstring).

    ``read_only`` (a dry run): the same checks, but nothing is created on the target - a
    missing target topic with ``create_topic`` is reported as ``created_topic=True`` with the
    source's partition count, and the progress topic is left alone.

    Raises:
        SameTopicError, TargetTopicMissingError, PartitionMappingError, ReplayTargetError.
    """
    spec = plan.spec
    client = spec.target.client_config()
    # one metadata client for every question (a client costs a bootstrap connection each)
    consumer = _metadata_client(client)
    try:
        return _check_target(plan, client, consumer, read_only=read_only)
    finally:
        consumer.close()


def _known_id(cluster_id: str | None) -> str | None:
    """A cluster id, or ``None`` when it is missing or blank (i.e. unknown)."""
    return cluster_id.strip() if cluster_id and cluster_id.strip() else None


def _check_target(
    plan: ReplayPlan, client: dict[str, str], consumer: Consumer, *, read_only: bool
) -> TargetInfo:
    spec = plan.spec
    cluster_id, partitions = _topic_metadata(consumer, plan.target_topic)
    if plan.target_topic == spec.topic and not spec.allow_same_topic:
        # Identities are compared only when both are known: an empty ``cluster.id=`` in the
        # archived meta.properties (or a target whose metadata names no cluster) is *unknown*,
        # and unknown must refuse - comparing "" with the target's id used to let it through.
        source_id = _known_id(plan.source_cluster_id)
        target_id = _known_id(cluster_id)
        if source_id is None or target_id is None:
            which = (
                f"the archive does not record the Kafka cluster id of {spec.cluster!r}"
                if source_id is None
                else "the target cluster's metadata names no cluster id"
            )
            raise SameTopicError(
                f"the target topic is the source topic {spec.topic!r} and {which}, so the "
                "target may be the very cluster the data came from",
                hint="Pass --allow-same-topic if the target is another cluster (e.g. the "
                "failover region), or choose another --target-topic.",
            )
        if target_id == source_id:
            raise SameTopicError(
                f"the target is cluster {cluster_id}, the source cluster {spec.cluster!r} "
                f"itself, and topic {spec.topic!r} is the source topic"
            )
    created = False
    if partitions is None:
        if not spec.create_topic:
            raise TargetTopicMissingError(
                f"the target topic {plan.target_topic!r} does not exist on the target cluster"
            )
        if read_only:
            partitions = plan.source_partition_count
        else:
            _create_topic(client, plan.target_topic, plan.source_partition_count)
            partitions = wait_until_ready(consumer, plan.target_topic, plan.source_partition_count)
        created = True
    if spec.partition_mapping == "same":
        highest = max(p.partition for p in plan.partitions)
        if highest >= partitions:
            raise PartitionMappingError(
                f"--partition-mapping same needs target partitions 0..{highest}, but "
                f"{plan.target_topic!r} has {partitions} partition(s)"
            )
    if read_only:
        return TargetInfo(cluster_id, partitions, created)
    _cid, progress_parts = _topic_metadata(consumer, spec.progress_topic)
    if progress_parts is None:
        _create_topic(
            client,
            spec.progress_topic,
            DEFAULT_PROGRESS_PARTITIONS,
            {"cleanup.policy": "compact"},
        )
        # (also when another replay created it a moment ago: TOPIC_ALREADY_EXISTS)
        wait_until_ready(consumer, spec.progress_topic, 1)
    return TargetInfo(cluster_id, partitions, created)


def claim_run(plan: ReplayPlan) -> RunClaim:
    """Announce a new run of ``plan``'s replay in the progress topic (see
    :class:`~.progress.RunClaim`): the record is acknowledged by every in-sync replica before
    this returns, so any run that checks after its own ``init_transactions`` sees it."""
    spec = plan.spec
    producer = Producer(
        {
            **CLIENT_DEFAULTS,
            **spec.target.client_config(),
            "enable.idempotence": True,
            "acks": "all",
        }
    )
    md = producer.list_topics(spec.progress_topic, timeout=30)
    meta = md.topics.get(spec.progress_topic)
    if meta is None or meta.error is not None or not meta.partitions:
        raise ReplayTargetError(f"the progress topic {spec.progress_topic} is not available")
    key = claim_key(plan.replay_id)
    partition = progress_partition(key, len(meta.partitions))
    claim = RunClaim(
        replay_id=plan.replay_id, run=uuid.uuid4().hex[:16], claimed_at_ms=int(time.time() * 1000)
    )
    delivered: list[tuple[KafkaError | None, int]] = []
    producer.produce(
        spec.progress_topic,
        claim.model_dump_json(exclude={"partition", "offset"}).encode(),
        key,
        partition,
        lambda err, msg: delivered.append((err, msg.offset() or 0)),
    )
    producer.flush(60)
    if not delivered or delivered[0][0] is not None:
        why = delivered[0][0].str() if delivered and delivered[0][0] else "no delivery report"
        raise ReplayTargetError(f"announcing the run in {spec.progress_topic} failed: {why}")
    return claim.model_copy(update={"partition": partition, "offset": delivered[0][1]})


def run_partition(
    plan: ReplayPlan,
    partition: int,
    *,
    store: ObjectStore,
    target_partitions: int,
    ledger: ReplayLedger | None = None,
    committed_reader: CommittedLogReader | None = None,
    hook: Hook | None = None,
    on_records: Callable[[int], None] | None = None,
    producer_config: dict[str, Any] | None = None,
) -> PartitionResult:
    """Replay one source partition (what each thread or Spark task runs)."""
    return PartitionReplay(
        plan,
        partition,
        store=store,
        target_partitions=target_partitions,
        ledger=ledger,
        committed_reader=committed_reader,
        hook=hook,
        on_records=on_records,
        producer_config=producer_config,
    ).run()


def execute(
    plan: ReplayPlan,
    *,
    store: ObjectStore,
    target: TargetInfo | None = None,
    ledger: ReplayLedger | None = None,
    parallelism: int | None = None,
    committed_reader: CommittedLogReader | None = None,
    hook: Hook | None = None,
    on_records: Callable[[int], None] | None = None,
    producer_config: dict[str, Any] | None = None,
) -> ReplayReport:
    """Step 3 in-process: every partition in its own thread; returns the report.

    Raises the first partition failure (after every partition has stopped); partitions that
    finished keep their committed progress, so running again resumes only what is missing.

    Refuses a plan with holes unless gaps are allowed (:func:`require_complete`), and, with a
    ``ledger``, a replay another live run holds (:class:`~.lease.ReplayBusyError`).
    """
    require_complete(plan)

    def run() -> ReplayReport:
        return _execute(
            plan,
            store=store,
            target=target,
            ledger=ledger,
            parallelism=parallelism,
            committed_reader=committed_reader,
            hook=hook,
            on_records=on_records,
            producer_config=producer_config,
        )

    if ledger is None:
        return run()
    # one live run per replay id (a second identical run is refused, see .lease)
    with ReplayLease(ledger.engine, plan.replay_id):
        return run()


def _execute(
    plan: ReplayPlan,
    *,
    store: ObjectStore,
    target: TargetInfo | None = None,
    ledger: ReplayLedger | None = None,
    parallelism: int | None = None,
    committed_reader: CommittedLogReader | None = None,
    hook: Hook | None = None,
    on_records: Callable[[int], None] | None = None,
    producer_config: dict[str, Any] | None = None,
) -> ReplayReport:
    started = time.monotonic()
    todo = [p.partition for p in plan.partitions]
    workers = max(1, min(parallelism or len(todo), len(todo)))
    replays: list[PartitionReplay | None] = [
        PartitionReplay(
            plan,
            p,
            store=store,
            target_partitions=target.partitions if target is not None else 0,  # set below
            ledger=ledger,
            committed_reader=committed_reader,
            hook=hook,
            on_records=on_records,
            producer_config=producer_config,
        )
        for p in todo
    ]
    # Partitions start in waves of `workers`. A producer's start-up (connections, metadata) and
    # preparation (init_transactions, committed progress) are round trips with little CPU, so
    # they are overlapped with other work: the producers of the first two waves connect while
    # the guard rails run; when partition i starts, partition i + workers (next wave) is prepared
    # and partition i + 2 * workers (the wave after) connects. Neither writes anything, so this
    # changes no guarantee; with workers >= partitions every partition starts at once anyway.
    for early in replays[: 2 * workers]:
        assert early is not None
        early.connect()
    try:
        if target is None:
            target = check_target(plan)
        # the run's claim, before any partition's init_transactions (two runs of one replay:
        # the newest claim wins whole, instead of each run winning some partitions)
        claim = claim_run(plan)
    except BaseException:
        for early in replays[: 2 * workers]:
            assert early is not None
            early.close()
        raise
    for pending in replays:
        assert pending is not None
        pending.target_partitions = target.partitions
        pending.claim = claim
    if ledger is not None:
        ledger.register(plan)
        ledger.set_status(plan.replay_id, "running")
    prepared: dict[int, Future[None]] = {}
    lock = threading.Lock()

    def one(i: int, preparer: ThreadPoolExecutor | None) -> PartitionResult:
        with lock:
            ahead = prepared.get(i)
            nxt, far = i + workers, i + 2 * workers
            if preparer is not None and nxt < len(replays) and nxt not in prepared:
                later = replays[nxt]
                assert later is not None  # partitions start in order: nxt has not run yet
                prepared[nxt] = preparer.submit(later.prepare)
            if far < len(replays):
                farther = replays[far]
                assert farther is not None
                farther.connect()  # does not block
        if ahead is not None:
            ahead.result()  # its failure is this partition's failure
        replay = replays[i]
        assert replay is not None
        replays[i] = None  # drop the reference: its producer goes when run() returns
        return replay.run()

    results: list[PartitionResult] = []
    errors: list[BaseException] = []
    with (
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="replay") as pool,
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="replay-prepare") as preparer,
    ):
        ahead_pool = preparer if workers < len(todo) else None
        futures = [pool.submit(one, i, ahead_pool) for i in range(len(todo))]
        for fut in futures:
            try:
                results.append(fut.result())
            except BaseException as exc:  # collected, re-raised below
                errors.append(exc)
    if errors:
        if ledger is not None:
            ledger.set_status(plan.replay_id, "failed", error=str(errors[0]))
        raise errors[0]
    report = build_report(plan, results, time.monotonic() - started)
    if ledger is not None:
        ledger.set_status(plan.replay_id, final_status(plan.has_holes))
    return report


def build_report(
    plan: ReplayPlan, results: list[PartitionResult], duration_s: float
) -> ReplayReport:
    """Collect per-partition results (from threads or Spark tasks) into the final report."""
    spec = plan.spec
    records_this_run = sum(r.records_this_run for r in results)
    bytes_this_run = sum(r.bytes_this_run for r in results)
    statuses = {r.status for r in results}
    return ReplayReport(
        replay_id=plan.replay_id,
        status="already-done" if statuses == {"already-done"} else final_status(plan.has_holes),
        cluster=spec.cluster,
        topic=spec.topic,
        target=spec.target.identity(),
        target_topic=plan.target_topic,
        partition_mapping=spec.partition_mapping,
        records_sent=sum(r.records for r in results),
        records_sent_this_run=records_this_run,
        bytes_sent_this_run=bytes_this_run,
        skipped_control_batches=sum(r.control_batches for r in results),
        skipped_aborted_records=sum(r.aborted_records for r in results),
        filtered_records=sum(r.filtered_records for r in results),
        open_txn_records=sum(r.open_txn_records for r in results),
        duration_s=round(duration_s, 3),
        records_per_s=round(records_this_run / duration_s, 1) if duration_s > 0 else 0.0,
        mb_per_s=round(bytes_this_run / duration_s / 1e6, 3) if duration_s > 0 else 0.0,
        partitions={r.partition: r.to_dict() for r in sorted(results, key=lambda r: r.partition)},
        allow_gaps=spec.allow_gaps,
        holes=_hole_rows(plan),
    )


def dry_run_report(plan: ReplayPlan) -> ReplayReport:
    """The report of a dry run: the plan, nothing sent."""
    spec = plan.spec
    return ReplayReport(
        replay_id=plan.replay_id,
        status="planned",
        dry_run=True,
        cluster=spec.cluster,
        topic=spec.topic,
        target=spec.target.identity(),
        target_topic=plan.target_topic,
        partition_mapping=spec.partition_mapping,
        records_sent=0,
        records_sent_this_run=0,
        bytes_sent_this_run=0,
        skipped_control_batches=0,
        skipped_aborted_records=0,
        filtered_records=0,
        open_txn_records=0,
        duration_s=0.0,
        records_per_s=0.0,
        mb_per_s=0.0,
        partitions={
            p.partition: {
                "start_offset": p.start_offset,
                "end_offset": p.end_offset,
                "first_offset": p.start_offset,
                "last_offset": p.end_offset - 1,
                "records": p.records,
                "bytes": p.bytes,
                "objects": [o.model_dump() for o in p.objects],
                "tail_objects": len(p.tail_objects),
                "holes": [h.model_dump(mode="json") for h in p.holes],
            }
            for p in plan.partitions
        },
        plan=json.loads(plan.to_json()),
        allow_gaps=spec.allow_gaps,
        holes=_hole_rows(plan),
    )


def describe_error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, ReplayError):
        return exc.to_dict()
    return {"error": type(exc).__name__, "message": str(exc)}
