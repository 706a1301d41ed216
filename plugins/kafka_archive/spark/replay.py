"""Running a replay on Spark: one Spark task per source partition, in parallel.

:func:`run_on_spark` ships the plan (as JSON) to the executors; each task opens the object store
and the catalog itself, replays its source partition with its own transactional producer
(:func:`kafka_archive.replay.runner.run_partition`) and returns its
:class:`~kafka_archive.replay.execution.engine.PartitionResult` as a dict; the driver builds the
report. A retried Spark task is safe: the producer's ``transactional.id`` is the same, so the retry
fences the failed attempt and resumes from its last committed transaction.

The same code runs with ``local[*]`` and with a cluster master URL (only the URL changes); on a
cluster the executors need the ``kafka-archive`` package and the store/target credentials in
their environment. The plan carries the target's librdkafka settings (TLS/SASL) to the
executors: it travels inside the job, never through the catalog (which stores it redacted).
"""

from __future__ import annotations

import time
from typing import Any

from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.bookkeeping.lifecycle import replay_run
from kafka_archive.replay.execution.engine import PartitionResult
from kafka_archive.replay.planning.plan import ReplayPlan
from kafka_archive.replay.runner import (
    ReplayReport,
    TargetInfo,
    build_report,
    check_target,
    require_complete,
)

__all__ = ["partition_task", "run_on_spark"]

APP_NAME = "kafka-archive-replay"


def partition_task(args: tuple[str, int, str, str | None, int]) -> dict[str, Any]:
    """One Spark task: ``(plan_json, partition, store_uri, db_url, target_partitions)``."""
    from kafka_archive.replay.runner import run_partition
    from kafka_archive.store import open_store

    plan_json, partition, store_uri, db_url, target_partitions = args
    plan = ReplayPlan.from_json(plan_json)
    store = open_store(store_uri)
    ledger = ReplayLedger.open(db_url) if db_url else None
    try:
        result = run_partition(
            plan, partition, store=store, target_partitions=target_partitions, ledger=ledger
        )
    finally:
        store.close()
        if ledger is not None:
            ledger.engine.dispose()
    return result.to_dict() | {"open_txns": result.open_txns}


def _result_of(d: dict[str, Any]) -> PartitionResult:
    return PartitionResult(
        partition=d["partition"],
        start_offset=d["start_offset"],
        end_offset=d["end_offset"],
        first_offset=d["first_offset"],
        last_offset=d["last_offset"],
        records=d["records"],
        records_this_run=d["records_this_run"],
        bytes_this_run=d["bytes_this_run"],
        transactions_this_run=d["transactions_this_run"],
        aborted_records=d["skipped_aborted_records"],
        control_batches=d["skipped_control_batches"],
        filtered_records=d["filtered_records"],
        open_txn_records=d["open_txn_records"],
        open_txns=[tuple(t) for t in d["open_txns"]],  # type: ignore[misc]
        status=d["status"],
        resumed_from=d["resumed_from"],
        duration_s=d["duration_s"],
        retries=d["retries"],
        next_offset=d.get("next_offset", -1),
        path=d.get("path", "records"),
        path_note=d.get("path_note", ""),
    )


def run_on_spark(
    plan: ReplayPlan,
    *,
    store_uri: str,
    db_url: str | None,
    master: str | None = None,
    target: TargetInfo | None = None,
    spark: Any = None,
) -> ReplayReport:
    """Replay every partition of ``plan`` as Spark tasks; return the report (refused, like
    :func:`.runner.execute`, for a plan with holes unless gaps are allowed, and for a replay
    another live run holds)."""
    require_complete(plan)
    started = time.monotonic()
    if target is None:
        target = check_target(plan)
    ledger = ReplayLedger.open(db_url) if db_url else None
    try:
        # the driver holds the lease and keeps the status for the whole job (see .lifecycle)
        with replay_run(plan, ledger) as outcome:
            report = _run_tasks(plan, store_uri, db_url, master, target, spark, started)
            outcome.status = report.status
            return report
    finally:
        if ledger is not None:
            ledger.engine.dispose()


def _run_tasks(
    plan: ReplayPlan,
    store_uri: str,
    db_url: str | None,
    master: str | None,
    target: TargetInfo,
    spark: Any,
    started: float,
) -> ReplayReport:
    from kafka_archive.spark.session import make_spark_session

    session = spark or make_spark_session(master, app_name=APP_NAME)
    sc = session.sparkContext
    plan_json = plan.to_json(redact=False)
    tasks = [
        (plan_json, p.partition, store_uri, db_url, target.partitions) for p in plan.partitions
    ]
    sc.setJobDescription(f"replay {plan.replay_id}: {len(tasks)} partition(s)")
    rows: list[dict[str, Any]] = sc.parallelize(tasks, len(tasks)).map(partition_task).collect()
    return build_report(plan, [_result_of(r) for r in rows], time.monotonic() - started)
