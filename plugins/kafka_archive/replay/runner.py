"""Orchestrating a replay: plan, check the target, execute every partition, report.

The same three steps run from the CLI, the Airflow DAG and the Spark job:

1. :func:`plan_replay` - resolve the request against the catalog (:func:`.plan.build_plan`);
2. :func:`check_target` (:mod:`.target`) - the guard rails that need the target cluster: not
   the source's own cluster and topic (unless allowed), the target topic exists (or is created
   with the source's partition count when asked), the partition mapping can hold, the progress
   topic exists;
3. :func:`execute` - one :class:`~.engine.PartitionReplay` per source partition, in threads
   (in-process) or as Spark tasks (``spark_jobs/replay.py`` calls :func:`run_partition` on the
   executors); the driver collects per-partition results into a :class:`ReplayReport`. With
   fewer threads than partitions, the partition that starts next is prepared (producer,
   ``init_transactions``, committed progress) while the current one produces. The run's claim
   (:func:`claim_run`) is announced in the background while the partitions start; each waits
   for its acknowledgement before checking it, and so before producing anything.

A dry run stops after step 1 (and, when the target is reachable, step 2) and reports the plan.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from confluent_kafka import KafkaError, Producer
from pydantic import BaseModel

from kafka_archive.kafka_protocol.config import librdkafka_config
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.bookkeeping.lifecycle import replay_run
from kafka_archive.replay.errors import ReplayError, ReplayTargetError
from kafka_archive.replay.execution.batch_engine import partition_replay, replay_path_refusal
from kafka_archive.replay.execution.engine import Hook, PartitionReplay, PartitionResult
from kafka_archive.replay.execution.progress import (
    CLIENT_DEFAULTS,
    CommittedLogReader,
    RunClaim,
    claim_key,
    progress_partition,
)
from kafka_archive.replay.planning.completeness import (
    ReplayGapsError,
    final_status,
    gaps_refusal,
)
from kafka_archive.replay.planning.plan import PlanSource, ReplayPlan, ReplaySpec, build_plan
from kafka_archive.replay.planning.stability import INCOMPLETE, INCOMPLETE_HINT, incomplete_rows
from kafka_archive.replay.target.checks import (
    DEFAULT_PROGRESS_PARTITIONS,
    TargetInfo,
    check_target,
    target_metadata,
    wait_until_ready,
)
from kafka_archive.store.base import ObjectStore
from kafka_archive.timeparse import now_ms

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
    #: partitions whose records above the archive's last stable offset were not delivered (a
    #: transaction open where the archive ends): ``partition``, ``stable_offset`` (where it
    #: stopped), ``end_offset``, ``open_txns``, ``message`` (:mod:`.stability`)
    incomplete: list[dict[str, Any]] = []
    #: what to do next (set when the run is ``incomplete``)
    hint: str | None = None
    #: a dry run's view of the target (``None``: ``--offline``, not checked)
    target_check: dict[str, Any] | None = None
    #: the target topic's configs: created with, dropped, differences from the source's at the
    #: start, findings (:class:`~.target_config.TopicConfigCheck`; ``None``: not checked)
    topic_config: dict[str, Any] | None = None
    #: what the service decided about the request (e.g. it resumed the unfinished replay of the
    #: same request, or continued after a finished one: :mod:`.intent`)
    notes: list[str] = []
    #: how records travelled: ``batches`` (the archived batches themselves), ``records``, or
    #: ``mixed`` (some partitions fell back); ``path_notes`` say why, per partition
    replay_path: str = "records"
    path_notes: list[str] = []


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
    message, hint = gaps_refusal(plan.spec.cluster, plan.spec.topic, plan.holes)
    raise ReplayGapsError(
        message,
        hint=hint,
        holes=_hole_rows(plan),
    )


def plan_replay(spec: ReplaySpec, source: PlanSource, *, now_ms: int | None = None) -> ReplayPlan:
    """Step 1: resolve ``spec`` against the catalog (see :func:`.plan.build_plan`)."""
    return build_plan(spec, source, now_ms=now_ms)


def claim_run(plan: ReplayPlan) -> RunClaim:
    """Announce a new run of ``plan``'s replay in the progress topic (see
    :class:`~.progress.RunClaim`): the record is acknowledged by every in-sync replica before
    this returns, so any run that checks after its own ``init_transactions`` sees it.

    Not idempotent: librdkafka's idempotent producer first acquires a producer id, which took
    a 500 ms retry in about half of the claims on a fresh 3-broker cluster (0.28 s median
    against 0.02 s plain, ``acks=all`` both), on every replay's way to its first record. The
    claim does not need it: it is one record, so nothing can be reordered, and a copy a retry
    may leave is a record of this same run, which :func:`~.progress.newer_claim` skips; which
    run is newest is decided by the offsets of the distinct runs' records, as before."""
    spec = plan.spec
    producer = Producer(
        librdkafka_config(
            {
                **CLIENT_DEFAULTS,
                **spec.target.client_config(),
                "enable.idempotence": False,
                "acks": "all",
            }
        )
    )
    md = producer.list_topics(spec.progress_topic, timeout=30)
    meta = md.topics.get(spec.progress_topic)
    if meta is None or meta.error is not None or not meta.partitions:
        raise ReplayTargetError(f"the progress topic {spec.progress_topic} is not available")
    key = claim_key(plan.replay_id)
    partition = progress_partition(key, len(meta.partitions))
    claim = RunClaim(replay_id=plan.replay_id, run=uuid.uuid4().hex[:16], claimed_at_ms=now_ms())
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
    return partition_replay(
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
    data_slot: AbstractContextManager[Any] | None = None,
) -> ReplayReport:
    """Step 3 in-process: every partition in its own thread; returns the report.

    Raises the first partition failure (after every partition has stopped); partitions that
    finished keep their committed progress, so running again resumes only what is missing.

    ``data_slot``: entered once the first wave of partitions is prepared (run claimed,
    ``init_transactions``, committed progress read: nothing produced) and held until every
    partition has finished - so that a caller running many replays (a restore) can start the
    next ones while a bounded number send, their start overlapping the others' data.

    Refuses a plan with holes unless gaps are allowed (:func:`require_complete`), and, with a
    ``ledger``, a replay another live run holds (:class:`~.lease.ReplayBusyError`).
    """
    require_complete(plan)
    with replay_run(plan, ledger) as outcome:
        report = _execute(
            plan,
            store=store,
            target=target,
            ledger=ledger,
            parallelism=parallelism,
            committed_reader=committed_reader,
            hook=hook,
            on_records=on_records,
            producer_config=producer_config,
            data_slot=data_slot,
        )
        outcome.status = report.status
        return report


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
    data_slot: AbstractContextManager[Any] | None = None,
) -> ReplayReport:
    started = time.monotonic()
    todo = [p.partition for p in plan.partitions]
    workers = max(1, min(parallelism or len(todo), len(todo)))
    # The run's claim (two runs of one replay: the newest claim wins whole, instead of each run
    # winning some partitions) is announced in the background once the target has passed its
    # checks: its acks=all round trip (70-520 ms measured) overlaps the choice of path and the
    # partitions' start (connections, init_transactions). Each partition waits for it before its
    # first check of the claim, which follows its own init_transactions: so any run that checks
    # sees every claim acknowledged before that check (see PartitionReplay._check_claim), and
    # nothing is produced before a partition has checked.
    announcer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="replay-claim")
    claim: Future[RunClaim] | None = None
    if target is not None:
        claim = announcer.submit(claim_run, plan)
    try:
        return _start_and_run(
            plan,
            claim,
            announcer,
            started=started,
            todo=todo,
            workers=workers,
            store=store,
            target=target,
            ledger=ledger,
            committed_reader=committed_reader,
            hook=hook,
            on_records=on_records,
            producer_config=producer_config,
            data_slot=data_slot,
        )
    finally:
        announcer.shutdown(wait=True)  # no claim producer outlives the run


def _start_and_run(
    plan: ReplayPlan,
    claim: Future[RunClaim] | None,
    announcer: ThreadPoolExecutor,
    *,
    started: float,
    todo: list[int],
    workers: int,
    store: ObjectStore,
    target: TargetInfo | None,
    ledger: ReplayLedger | None,
    committed_reader: CommittedLogReader | None,
    hook: Hook | None,
    on_records: Callable[[int], None] | None,
    producer_config: dict[str, Any] | None,
    data_slot: AbstractContextManager[Any] | None = None,
) -> ReplayReport:
    why_not = replay_path_refusal(plan)
    replays: list[PartitionReplay | None] = [
        partition_replay(
            plan,
            p,
            why_not=why_not,
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
        if claim is None:
            claim = announcer.submit(claim_run, plan)
    except BaseException:
        for early in replays[: 2 * workers]:
            assert early is not None
            early.close()
        raise
    for pending in replays:
        assert pending is not None
        pending.target_partitions = target.partitions
        pending.claim = claim
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
        if data_slot is not None:
            _prepare_wave(replays[:workers], preparer, prepared)
        with data_slot if data_slot is not None else nullcontext():
            futures = [pool.submit(one, i, ahead_pool) for i in range(len(todo))]
            for fut in futures:
                try:
                    results.append(fut.result())
                except BaseException as exc:  # collected, re-raised below
                    errors.append(exc)
    if errors:
        raise errors[0]
    claim.result()  # (every partition waited for it; a failed claim failed them all)
    return build_report(plan, results, time.monotonic() - started)


def _prepare_wave(
    wave: list[PartitionReplay | None],
    preparer: ThreadPoolExecutor,
    prepared: dict[int, Future[None]],
) -> None:
    """Prepare ``wave`` (the first partitions) at once and wait for them, before a data slot
    is taken: a failed preparation is kept in ``prepared`` as its partition's failure (the
    partition raises it when it starts), as when prepared ahead."""
    for i, early in enumerate(wave):
        assert early is not None
        prepared[i] = preparer.submit(early.prepare)
    wait(list(prepared.values()))


def build_report(
    plan: ReplayPlan, results: list[PartitionResult], duration_s: float
) -> ReplayReport:
    """Collect per-partition results (from threads or Spark tasks) into the final report."""
    spec = plan.spec
    records_this_run = sum(r.records_this_run for r in results)
    bytes_this_run = sum(r.bytes_this_run for r in results)
    statuses = {r.status for r in results}
    stopped = [r for r in results if r.status == INCOMPLETE]
    paths = {r.path for r in results}
    incomplete = incomplete_rows(
        plan,
        {r.partition: r.next_offset for r in stopped},
        {r.partition: list(r.open_txns) for r in stopped},
    )
    if incomplete:
        status = INCOMPLETE  # never "complete" (nor "already-done") with records held back
    elif statuses == {"already-done"}:
        status = "already-done"
    else:
        status = final_status(plan.has_holes)
    return ReplayReport(
        replay_id=plan.replay_id,
        status=status,
        incomplete=incomplete,
        hint=INCOMPLETE_HINT if incomplete else None,
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
        replay_path=paths.pop() if len(paths) == 1 else ("mixed" if paths else "records"),
        path_notes=[
            f"partition {r.partition}: {r.path_note}"
            for r in sorted(results, key=lambda r: r.partition)
            if r.path_note
        ],
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
                "stable_offset": p.stable_offset,
                "open_txns": [list(t) for t in p.open_txns],
            }
            for p in plan.partitions
        },
        plan=json.loads(plan.to_json()),
        allow_gaps=spec.allow_gaps,
        holes=_hole_rows(plan),
        incomplete=incomplete_rows(plan),
        hint=INCOMPLETE_HINT if plan.incomplete else None,
    )


def describe_error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, ReplayError):
        return exc.to_dict()
    return {"error": type(exc).__name__, "message": str(exc)}
