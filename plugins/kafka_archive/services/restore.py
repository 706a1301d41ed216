"""Whole-cluster restores as a service: plan (the preflight), run, status, resume.

A restore moves many topics of an archived cluster, *as they were at one moment T*, into a
target cluster in one resumable unit: their partition counts and configs at T (the metadata
history), optionally their ACLs at T (with a principal map), the data of every partition
before T, exactly once and committed records only, and the consumer groups' positions at T
translated through the replays' offset maps.

It is built from replays, never beside them: each topic is one replay
(:class:`~kafka_archive.services.replay.ReplayService`: ``from`` the range start (``earliest``)
``to`` T, ``--create-topic`` with the configs at T), so each topic resumes exactly once as a
replay does (its intent finds the unfinished replay, its progress topic says where it stopped).
The restore record (:class:`~kafka_archive.replay.bookkeeping.restores.RestoreLedger`) binds
them: the request, T and each topic's replay id.

:meth:`RestoreService.run`: the preflight (:meth:`plan`; any error refuses the run, naming every
problem), the ACLs, ``_schemas`` alone first when selected, then the other topics,
``parallelism`` of them sending at once (each replay runs its own partitions in parallel,
in-process or on Spark) while as many more start (lease, run claim, ``init_transactions``,
resume points: nothing produced) and wait for a data slot, and each group as soon as every
selected topic it committed on is complete. The target topics are made ahead of their data,
several at once (each replay registered first), so that creating them overlaps the data of
those already made; the preflight asks the target while the catalog plans each topic. The
same request run again, or :meth:`resume`, continues an unfinished restore.

Errors: :class:`RestoreRefused` (the preflight found errors; ``details`` hold the plan),
:class:`~kafka_archive.replay.errors.ReplayConfigError` (a bad request, an unknown restore), the
catalog's and settings' typed errors. A topic or group that fails does not stop the others: the
report names it and the restore ends ``failed`` (resumable).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.restore.groups import DONE, restore_status, set_after_data
from kafka_archive.restore.model import (
    GroupEntry,
    GroupResult,
    RestorePlan,
    RestoreReport,
    TopicEntry,
    TopicResult,
)
from kafka_archive.restore.request import SCHEMAS_TOPIC, RestoreRequest
from kafka_archive.services.replay import Execution, ReplayService
from kafka_archive.services.resources import ResourceService
from kafka_archive.timeparse import format_ms, now_ms

if TYPE_CHECKING:
    from kafka_archive.replay.bookkeeping.restores import RestoreLedger
    from kafka_archive.replay.planning.plan import ReplayPlan
    from kafka_archive.replay.runner import TargetInfo
    from kafka_archive.services.metadata_history import MetadataHistoryService
    from kafka_archive.services.restore_preflight import Prepared

__all__ = ["PREPARE_WIDTH", "START_AHEAD", "RestoreRefused", "RestoreService"]

#: target topics made at once ahead of their data (Admin round trips, no records: cheap for
#: the target, and enough to stay ahead of the data workers)
PREPARE_WIDTH = 8
#: topics started ahead of a data slot, per slot (see :meth:`RestoreService._run_topics`)
START_AHEAD = 1


class RestoreRefused(KafkaArchiveError):
    """The preflight found problems that stop the restore (``plan``: the whole report, every
    problem with what to do)."""

    http_status = 409
    api_error = "restore_refused"

    def __init__(self, message: str, *, hint: str | None = None, plan: dict[str, Any]) -> None:
        super().__init__(message, hint=hint)
        self.plan = plan

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "plan": self.plan}


class RestoreService(ResourceService):
    """Restores over the archive and catalog the settings name (see the module docstring).

    Not thread-safe: one per command or task (its workers use replay services of their own).
    """

    @property
    def ledger(self) -> RestoreLedger:
        from kafka_archive.replay.bookkeeping.restores import RestoreLedger

        return RestoreLedger(self.resources.catalog().engine)

    def _replays(self) -> ReplayService:
        """A replay service over this service's catalog and store (not closed apart: it owns
        nothing of its own)."""
        return ReplayService(
            self.resources.settings,
            catalog=self.resources.catalog(),
            store=self.resources.store(),
            history=self._history(),
        )

    def _history(self) -> MetadataHistoryService:
        from kafka_archive.services.metadata_history import MetadataHistoryService

        return MetadataHistoryService(self.resources.settings, catalog=self.resources.catalog())

    # -- plan --------------------------------------------------------------------------------

    def plan(self, request: RestoreRequest, *, check_target: bool = True) -> RestorePlan:
        """The preflight: what the restore would do and every problem it would meet, without
        writing anything (``check_target`` False: the target is not asked, e.g. offline)."""
        return self._prepare(request, check_target=check_target).plan

    def _prepare(self, request: RestoreRequest, *, check_target: bool = True) -> Prepared:
        from kafka_archive.services.restore_preflight import prepare

        return prepare(
            request,
            catalog=self.resources.catalog(),
            replays=self._replays(),
            history=self._history(),
            # this restore ran before: a topic it created empty is its own (no replay says so)
            restarted=self.ledger.get(request.restore_id()) is not None,
            check_target=check_target,
        )

    # -- run ---------------------------------------------------------------------------------

    def run(
        self,
        request: RestoreRequest,
        *,
        execution: Execution = "in-process",
        spark_master: str | None = None,
        on_event: Callable[[str], None] | None = None,
    ) -> RestoreReport:
        """Preflight, then restore (see the module docstring). A finished restore of the same
        request answers its stored report.

        Raises:
            RestoreRefused: the preflight found errors (nothing was written).
        """
        rid = request.restore_id()
        row = self.ledger.get(rid)
        if row is not None and row.status in ("complete", "complete-with-gaps") and row.report_json:
            report = RestoreReport.model_validate_json(row.report_json)
            return report.model_copy(
                update={"notes": [*report.notes, f"restore {rid} is already {row.status}"]}
            )
        prepared = self._prepare(request)
        plan = prepared.plan
        if not plan.ok:
            raise RestoreRefused(
                f"the preflight found {len(plan.errors())} problem(s): "
                + "; ".join(p.message for p in plan.errors()),
                hint="fix each one (every problem says how), then run the same command again; "
                "`kafka-archive restore plan --json` shows the whole report",
                plan=plan.to_json(),
            )
        tell = on_event or (lambda _line: None)
        started = now_ms()
        self.ledger.register(
            rid,
            cluster=request.cluster,
            target=request.target.identity(),
            at_ms=request.at_ms,
            request_json=request.to_json(),
        )
        self.ledger.set_replays(
            rid, {t: p.replay_id for t, p in prepared.replays.items() if p is not None}
        )
        self.ledger.set_status(rid, "running")
        acl_errors: list[str] = []
        if plan.acls:
            from kafka_archive.restore.target import create_acls

            acl_errors = create_acls(request.target.client_config(), plan.acls)
            tell(
                f"ACLs of T: {len(plan.acls) - len(acl_errors)} created, {len(acl_errors)} refused"
            )
        results, groups = self._run_topics(request, prepared, execution, spark_master, tell)
        status = restore_status(results, groups, acl_errors)
        finished = now_ms()
        report = RestoreReport(
            restore_id=rid,
            status=status,
            cluster=request.cluster,
            at_ms=request.at_ms,
            at=format_ms(request.at_ms),
            target=request.target.identity(),
            started_at_ms=started,
            finished_at_ms=finished,
            duration_s=round((finished - started) / 1000, 3),
            records_this_run=sum(r.records_this_run for r in results),
            bytes_this_run=sum(r.bytes_this_run for r in results),
            topics=results,
            groups=groups,
            acls_created=len(plan.acls) - len(acl_errors),
            acl_errors=acl_errors,
            recovery_point_ms={e.source: e.recovery_point_ms for e in plan.topics},
            problems=plan.problems,
            notes=plan.notes,
        )
        failed = [r.source for r in results if r.status not in DONE]
        error = f"topics not restored: {', '.join(failed)}" if failed else None
        self.ledger.set_status(rid, status, error=error, report_json=report.model_dump_json())
        return report

    def _run_topics(
        self,
        request: RestoreRequest,
        prepared: Prepared,
        execution: Execution,
        spark_master: str | None,
        tell: Callable[[str], None],
    ) -> tuple[list[TopicResult], list[GroupResult]]:
        """Every topic's replay (``_schemas`` first and alone), each group applied once its
        topics are in.

        The target topics are made ahead of their data: a pool of :data:`PREPARE_WIDTH`
        workers registers each replay and creates its topic with the configs of T (or the
        empty topic of one with nothing before T), in the restore's order, while the
        ``parallelism`` data workers send the topics already made - so that creating,
        waiting for leaders and comparing configs overlap the data instead of coming before
        it (each data worker would otherwise wait for its topic's creation). Making a topic
        writes no record, so it may run beside ``_schemas``' data.
        """
        plan = prepared.plan
        entries = {e.source: e for e in plan.topics}
        results: dict[str, TopicResult] = {}
        lock = threading.Lock()
        order = [t for t in entries if t == SCHEMAS_TOPIC]
        rest = [t for t in entries if t != SCHEMAS_TOPIC]
        width = max(1, min(PREPARE_WIDTH, len(entries)))
        with ThreadPoolExecutor(width, thread_name_prefix="restore-prepare") as preparer:
            made = {
                t: preparer.submit(self._make_target, request, prepared, entries[t])
                for t in order + rest
            }

            def one(topic: str, sending: AbstractContextManager[Any] | None) -> TopicResult:
                target = made[topic].result()
                if isinstance(target, TopicResult):  # created empty (nothing before T)
                    return target
                replay = prepared.replays[topic]
                assert replay is not None  # (only topics with data get a TargetInfo)
                entry = entries[topic]
                result = self._replay(replay, execution, spark_master, target, sending)
                later = set_after_data(entry.configs_at_t)
                if later and result.status in DONE:
                    from kafka_archive.restore.target import alter_topic_configs

                    alter_topic_configs(request.target.client_config(), entry.target, later)
                with lock:
                    tell(f"{topic} -> {entry.target}: {result.status}, {result.records} records")
                return result

            if order:
                # alone and first: the others start once Schema Registry's store is in (or
                # failed)
                with ThreadPoolExecutor(1, thread_name_prefix="restore") as first:
                    fut = first.submit(one, SCHEMAS_TOPIC, None)
                    results[SCHEMAS_TOPIC] = _result_of(fut, SCHEMAS_TOPIC, entries[SCHEMAS_TOPIC])
            pending = {g.group: g for g in plan.groups}
            groups: list[GroupResult] = []

            def ready_groups() -> None:
                for name, g in list(pending.items()):
                    if all(t in results for t in g.topics):
                        del pending[name]
                        groups.append(self._group(request, prepared, g, results))
                        tell(
                            f"group {name}: {'applied' if groups[-1].applied else groups[-1].error}"
                        )

            ready_groups()
            # request.parallelism topics send at once (the data slots); as many more start
            # meanwhile - lease, run claim, producers, init_transactions, resume points: round
            # trips, nothing produced - and wait for a slot, so that a topic's start overlaps
            # the others' data instead of coming between two topics' data
            sending = threading.BoundedSemaphore(request.parallelism)
            starting = min(len(rest), request.parallelism * (1 + START_AHEAD)) or 1
            with ThreadPoolExecutor(starting, thread_name_prefix="restore") as pool:
                futures: dict[Future[TopicResult], str] = {
                    pool.submit(one, t, sending): t for t in rest
                }
                while futures:
                    done, _ = wait(futures, return_when=FIRST_COMPLETED)
                    for fut in done:
                        topic = futures.pop(fut)
                        results[topic] = _result_of(fut, topic, entries[topic])
                    ready_groups()
        return [results[t] for t in entries], groups

    def _make_target(
        self, request: RestoreRequest, prepared: Prepared, entry: TopicEntry
    ) -> TargetInfo | TopicResult:
        """The target topic of ``entry`` made (see :meth:`_run_topics`): the replay's target
        check, which registers the replay and creates the topic; for a topic with nothing
        before T, its whole result (created empty as it was at T, or nothing when it did not
        exist then)."""
        replay = prepared.replays[entry.source]
        if replay is not None:
            return self._replays().prepare_target(replay)
        if entry.partitions_at_t is None:  # did not exist at T (or unknown)
            return TopicResult(
                source=entry.source,
                target=entry.target,
                replay_id=None,
                status="nothing-before-t",
            )
        from kafka_archive.restore.target import create_as_at

        created = create_as_at(
            request.target.client_config(),
            self._history(),
            cluster=request.cluster,
            topic=entry.source,
            target=entry.target,
            at_ms=request.at_ms,
            partitions=entry.partitions_at_t,
            replication_factor=entry.replication_factor,
        )
        return TopicResult(
            source=entry.source,
            target=entry.target,
            replay_id=None,
            status="created-empty",
            topic_config=created,
        )

    def _replay(
        self,
        plan: ReplayPlan,
        execution: Execution,
        spark_master: str | None,
        target: TargetInfo,
        sending: AbstractContextManager[Any] | None,
    ) -> TopicResult:
        svc = self._replays()  # one per worker: a replay service is not thread-safe
        report = svc.run(
            plan,
            execution=execution,
            spark_master=spark_master,
            target=target,
            data_slot=sending,
        )
        return TopicResult(
            source=plan.spec.topic,
            target=plan.target_topic,
            replay_id=report.replay_id,
            status=report.status,
            records=report.records_sent,
            records_this_run=report.records_sent_this_run,
            bytes_this_run=report.bytes_sent_this_run,
            duration_s=report.duration_s,
            partitions={int(k): v for k, v in report.partitions.items()},
            topic_config=report.topic_config,
        )

    def _group(
        self,
        request: RestoreRequest,
        prepared: Prepared,
        group: GroupEntry,
        results: dict[str, TopicResult],
    ) -> GroupResult:
        from kafka_archive.restore.groups import apply_group

        replay_ids = {
            t: results[t].replay_id or (p.replay_id if p is not None else None)
            for t, p in prepared.replays.items()
            if t in results
        }
        return apply_group(
            self.resources.catalog(),
            self._replays().ledger,
            request,
            group,
            {t: r.status in DONE for t, r in results.items()},
            replay_ids,
        )

    # -- status and resume -------------------------------------------------------------------

    def status(self, restore_id: str | None = None) -> list[dict[str, Any]]:
        """Restores with each topic's replay status, newest first
        (:func:`~kafka_archive.restore.status.status_rows`).

        Raises:
            ReplayConfigError: ``restore_id`` is given and unknown.
        """
        from kafka_archive.restore.status import status_rows

        return status_rows(self.ledger, self._replays().ledger, restore_id)

    def stored_request(
        self, restore_id: str | None, *, target_config: dict[str, str] | None = None
    ) -> RestoreRequest:
        """The request of ``restore_id`` (``None``: the only unfinished restore), with the
        target settings given again (:func:`~kafka_archive.restore.status.stored_request`).

        Raises:
            ReplayConfigError: no such restore, several unfinished, or secrets are missing.
        """
        from kafka_archive.restore.status import stored_request

        return stored_request(self.ledger, restore_id, target_config=target_config)

    def resume(self, restore_id: str | None = None, **kwargs: Any) -> RestoreReport:
        """Continue an unfinished restore (``target_config``: its secrets given again; the
        other keyword arguments are :meth:`run`'s)."""
        target_config = kwargs.pop("target_config", None)
        return self.run(self.stored_request(restore_id, target_config=target_config), **kwargs)


def _result_of(fut: Future[TopicResult], topic: str, entry: TopicEntry) -> TopicResult:
    from kafka_archive.replay.runner import describe_error

    try:
        return fut.result()
    except Exception as exc:  # one topic's failure is reported; the others go on
        return TopicResult(
            source=topic,
            target=entry.target,
            replay_id=entry.replay_id,
            status="failed",
            error=describe_error(exc),
        )
