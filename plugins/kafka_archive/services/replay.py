"""Replays as a service: plan, preview, run (in-process or on Spark), resume, list.

:class:`ReplayService` owns what the CLI, the Airflow DAG and the UI used to set up each in its
own way: the store and the catalog (from the settings), the plan source, the ledger, the
choice between running in-process and on Spark, and the order of the steps (plan, register,
check the target, run under the replay's lease, report). Adapters translate their input into a
request (:func:`spec_from_request`) and the reports into their output.

Errors: :class:`~kafka_archive.replay.errors.ReplayError` and its subclasses (each with a
hint), :class:`~kafka_archive.settings.SettingsError`, the catalog's and the store's typed
errors, :class:`~segment_lib.errors.SegmentError` for bad archived bytes, and confluent-kafka's
``KafkaException`` for a target failure no replay step translated. A failed run is resumable:
running the same request (or :meth:`ReplayService.resume`) again continues after the last
committed transaction, without duplicates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Literal

from kafka_archive.services.resources import ResourceService
from kafka_archive.settings import Settings

if TYPE_CHECKING:
    from kafka_archive.catalog.db import Catalog
    from kafka_archive.catalog.leases import LeaseRange
    from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
    from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
    from kafka_archive.replay.planning.plan import ReplayPlan, ReplaySpec, TargetSpec
    from kafka_archive.replay.planning.topic_config import TopicHistory
    from kafka_archive.replay.runner import ReplayReport, TargetInfo
    from kafka_archive.store.base import ObjectStore

__all__ = [
    "DEFAULT_SPARK_THRESHOLD_BYTES",
    "Execution",
    "ReplayService",
    "choose_execution",
    "spec_from_request",
    "topic_config_view",
]

#: ``execution="auto"`` runs plans reading more than this many bytes on Spark
DEFAULT_SPARK_THRESHOLD_BYTES = 1 << 30
Execution = Literal["auto", "in-process", "spark"]


def spec_from_request(request: Mapping[str, Any], target: TargetSpec) -> ReplaySpec:
    """The one translation of a replay request into a :class:`ReplaySpec`.

    ``request`` holds :class:`ReplaySpec`'s own field names; ``from``/``to`` are positions as
    users write them (a time in any form the CLI takes, ``offset:N``, ``offset:P=N,...``,
    ``earliest``, ``latest``); missing or empty entries take the spec's defaults.

    Raises:
        ReplayConfigError: a position that cannot be read, or a value the spec refuses.
    """
    from pydantic import ValidationError

    from kafka_archive.replay.errors import ReplayConfigError
    from kafka_archive.replay.planning.plan import ReplaySpec, parse_position

    given = {k: v for k, v in request.items() if v is not None and v != "" and v != []}
    if "from" not in given:
        raise ReplayConfigError(
            "no start position given (from is empty)",
            hint="Give --from as a time (ISO-8601, epoch ms, -2h), offset:N or earliest.",
        )
    given["from"] = parse_position(str(given["from"]))
    if "to" in given:
        given["to"] = parse_position(str(given["to"]))
    given["target"] = target
    try:
        return ReplaySpec.model_validate(given)
    except ValidationError as exc:
        # one typed error naming each refused field (a bare ValidationError was a server
        # error on the on-call API)
        raise ReplayConfigError(
            "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors()
            )
        ) from None


def topic_config_view(info: TargetInfo) -> dict[str, Any] | None:
    """The target check's view of the target topic's configs, as reports carry it (``None``:
    the plan had no settings): created with, dropped, differences, findings, warnings."""
    check = info.config_check
    if check is None:
        return None
    return {**check.model_dump(mode="json"), "warnings": check.warnings()}


def choose_execution(
    execution: Execution, total_bytes: int, threshold: int = DEFAULT_SPARK_THRESHOLD_BYTES
) -> Literal["in-process", "spark"]:
    """Where a plan reading ``total_bytes`` runs: as asked, or for ``auto`` on Spark above
    ``threshold`` bytes (a few partitions of small segments start faster in-process)."""
    if execution == "auto":
        return "spark" if total_bytes > threshold else "in-process"
    return execution


def lease_holder(plan: ReplayPlan) -> str:
    """The holder name of a replay's object lease."""
    return f"replay:{plan.replay_id}"


def lease_ranges(plan: ReplayPlan) -> list[LeaseRange]:
    """The source offsets a replay reads, per partition (what its lease covers)."""
    from kafka_archive.catalog.leases import LeaseRange

    return [
        LeaseRange(
            plan.spec.cluster,
            plan.spec.topic,
            p.partition,
            p.start_offset,
            # inclusive; the segments read after the range for transaction markers too
            max([p.end_offset, *(t.last_offset for t in p.tail_objects)]),
        )
        for p in plan.partitions
        if not p.empty
    ]


def refuse_pruned(catalog: Catalog, plan: ReplayPlan, ranges: list[LeaseRange]) -> None:
    """Refuse a plan that reads offsets a prune removed after it was planned (the plan's own
    ``pruned`` holes were known and are not read).

    Raises:
        ReplayGapsError: naming the policy and when.
    """
    from kafka_archive.catalog.leases import pruned_in
    from kafka_archive.replay.planning.completeness import ReplayGapsError
    from kafka_archive.timeparse import format_ms

    known = {(part, h.first_offset, h.last_offset) for part, h in plan.holes if h.kind == "pruned"}
    with catalog.engine.connect() as conn:
        found = [
            r
            for r in pruned_in(conn, ranges)
            if (r.partition, r.first_offset, r.last_offset) not in known
        ]
    if found:
        lines = [
            f"partition {r.partition} offsets {r.first_offset}..{r.last_offset} were pruned "
            f"by policy {r.policy}"
            + (f" at {format_ms(r.pruned_at_ms)}" if r.pruned_at_ms is not None else "")
            for r in found
        ]
        raise ReplayGapsError(
            f"replay {plan.replay_id} reads archived data that was pruned after it was "
            "planned: " + "; ".join(lines),
            hint=f"Abandon it (`kafka-archive replay abandon {plan.replay_id}`), then plan the "
            "replay again (`kafka-archive replay run ...`): the new plan starts at the retained "
            "data, or names the pruned range as a hole (--allow-gaps).",
        )


class ReplayService(ResourceService):
    """Replays over the archive and catalog the settings name (see the module docstring).

    Not thread-safe: one per command or task; close it, or use it as a context manager.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        catalog: Catalog | None = None,
        store: ObjectStore | None = None,
        history: TopicHistory | Literal["auto"] | None = "auto",
    ) -> None:
        super().__init__(settings, catalog=catalog, store=store)
        self._ledger: ReplayLedger | None = None
        #: ``"auto"``: looked up once, on first use (see :meth:`history`)
        self._history_arg = history
        self._history: TopicHistory | None = None
        #: what the last :meth:`plan` decided about the request's intent, for the operator
        #: (e.g. "resuming the unfinished replay r-...")
        self.notes: list[str] = []

    # -- the parts ------------------------------------------------------------------------

    @property
    def ledger(self) -> ReplayLedger:
        """Where replays and their progress are recorded (the catalog's replay tables)."""
        if self._ledger is None:
            from kafka_archive.replay.bookkeeping.ledger import ReplayLedger

            self._ledger = ReplayLedger(self.resources.catalog().engine)
        return self._ledger

    def history(self) -> TopicHistory | None:
        """The metadata history the plan reads the source topic's configs at T from
        (:class:`~kafka_archive.services.metadata_history.MetadataHistoryService` over this
        service's catalog, unless one was given - and closed by its giver; ``None``: given as
        none)."""
        if self._history_arg == "auto":
            from kafka_archive.services.metadata_history import MetadataHistoryService

            # over this service's own catalog (the history tables live in it): it owns
            # nothing else, so it is not closed apart from the catalog
            self._history_arg = self._history = MetadataHistoryService(
                self.resources.settings, catalog=self.resources.catalog()
            )
        elif self._history_arg is not None:
            self._history = self._history_arg
        return self._history

    def source(self) -> CatalogPlanSource:
        """What planning reads: the catalog, and the store for exact positions."""
        from kafka_archive.replay.planning.catalog_source import CatalogPlanSource

        return CatalogPlanSource(self.resources.catalog(), self.resources.store())

    # -- the steps ------------------------------------------------------------------------

    def plan(
        self,
        spec: ReplaySpec,
        *,
        register: bool = False,
        lease: bool | None = None,
        wait_open_txns_s: float = 0,
        on_wait: Callable[[ReplayPlan], None] | None = None,
        config_at_ms: int | None = None,
    ) -> ReplayPlan:
        """Resolve ``spec`` against the catalog; ``register``: record it in the ledger now
        (the DAG does, so the plan is visible while it waits for execution); ``lease``
        (default: ``register``): lease its offsets as a queued replay, so that prune leaves
        them until the run takes the lease over (or it expires,
        :data:`~kafka_archive.catalog.leases.QUEUED_TTL_S`). ``wait_open_txns_s``: while a
        partition's range reaches above the archive's last stable offset (a transaction open
        where the archive ends), look at the catalog again every few seconds, at most this
        long (:func:`~kafka_archive.replay.planning.stability.wait_until_stable`; ``on_wait`` is
        told before each pause); the plan that results may still be incomplete.
        ``config_at_ms``: the target topic's settings are the source topic's at this moment
        (a restore's T) instead of at the replay's start."""
        from kafka_archive.replay.planning.intent import resolve_intent
        from kafka_archive.replay.planning.plan_topics import plan_topic_settings
        from kafka_archive.replay.planning.stability import refresh_plan, wait_until_stable
        from kafka_archive.replay.runner import plan_replay

        source = self.source()
        planned = plan_replay(spec, source)
        if planned.incomplete and wait_open_txns_s > 0:

            def again() -> ReplayPlan:
                nonlocal source
                source = self.source()  # a fresh look at the catalog (no cached answers)
                return plan_replay(spec, source)

            planned = wait_until_stable(again, wait_open_txns_s, on_wait=on_wait)
        # the same request run again: the unfinished replay of its intent, or a follow-on of
        # its finished ones (replay.intent), instead of a new replay re-sending what was sent
        plan, note = resolve_intent(self.ledger, planned, lambda s: plan_replay(s, source))
        self.notes = [note] if note else []
        if plan.replay_id != planned.replay_id and self.ledger.run(plan.replay_id) is not None:
            # an unfinished replay resumed: what was archived since it was planned (the marker
            # of a transaction that held it back at the archive's end) is read now
            plan = refresh_plan(plan, source)
        if plan.topic_settings is None:
            # the source topic as it was at the start: what --create-topic creates, and what an
            # existing target is compared with (decided now, so the run creates what the plan
            # says); a resumed replay keeps the settings it was planned with
            plan = plan_topic_settings(plan, source, self.history(), at_ms=config_at_ms)
        known = self.ledger.run(plan.replay_id) is not None
        if register:
            self.ledger.register(plan)
        if register if lease is None else lease:
            # queued: prune must leave its objects until the run takes the lease over; a
            # replay already known (resumed) keeps its durable lease (it may hold data a
            # killed run still needs: no expiry)
            self._leases().take(
                lease_holder(plan), lease_ranges(plan), queued=not known, durable=known
            )
        return plan

    def _leases(self) -> Any:
        from kafka_archive.catalog.leases import ObjectLeases

        return ObjectLeases(self.resources.catalog().engine)

    def preview(self, spec: ReplaySpec, *, check_target: bool = True) -> ReplayReport:
        """A dry run: the plan with every hole, and (``check_target``) what the target would
        do, without writing to it."""
        from kafka_archive.replay.runner import check_target as check
        from kafka_archive.replay.runner import dry_run_report

        plan = self.plan(spec)
        report = dry_run_report(plan)
        report.notes = list(self.notes)
        if check_target:
            info = check(plan, read_only=True)
            report.target_check = {
                "cluster_id": info.cluster_id,
                "partitions": info.partitions,
                "topic_would_be_created": info.created_topic,
            }
            report.topic_config = topic_config_view(info)
        elif plan.topic_settings is not None:
            report.topic_config = {"settings": plan.topic_settings.model_dump(mode="json")}
        return report

    def run(
        self,
        plan: ReplayPlan,
        *,
        execution: Execution = "in-process",
        spark_master: str | None = None,
        spark_threshold_bytes: int = DEFAULT_SPARK_THRESHOLD_BYTES,
        on_records: Callable[[int], None] | None = None,
        on_warning: Callable[[str], None] | None = None,
        target: TargetInfo | None = None,
        data_slot: AbstractContextManager[Any] | None = None,
    ) -> ReplayReport:
        """Check the target (creating the topic when asked) and replay ``plan``; returns the
        report (``report.execution`` says where it ran). ``target``: the answer of
        :meth:`prepare_target` for this plan, asked ahead (the target is then not checked
        again). ``data_slot``: held while the partitions send (in-process: taken once the
        first partitions are prepared, see :func:`~kafka_archive.replay.runner.execute`; on
        Spark: around the whole job). A plan with holes is refused unless
        its request allows gaps; a replay another live run holds is refused
        (:class:`~kafka_archive.replay.bookkeeping.lease.ReplayBusyError`). The run leases the
        plan's offset ranges (prune leaves them) and is refused
        (:class:`~kafka_archive.replay.planning.completeness.ReplayGapsError`) when part of them was
        pruned after it was planned. The lease outlives the run (a killed run included) until
        the replay completes or is abandoned (:meth:`abandon`). ``on_warning`` gets every
        warning about the target topic's configs (dropped configs, findings;
        :mod:`~kafka_archive.replay.target.topic`) after the target check and before anything
        is sent."""
        from kafka_archive.replay.planning.completeness import FINISHED_STATUSES

        ranges = lease_ranges(plan)
        holder = lease_holder(plan)
        leases = self._leases()
        # registered first, so that a lease never outlives a replay nobody can name (a run
        # killed between the two); not tied to this process: an unfinished replay's data must
        # outlive a killed run until the replay completes or is abandoned (`replay abandon`)
        self.ledger.register(plan)
        leases.take(holder, ranges, durable=True)
        try:
            refuse_pruned(self.resources.catalog(), plan, ranges)
        except BaseException:
            leases.release(holder)  # the plan cannot run: nothing of it to keep
            raise
        try:
            report = self._run(
                plan,
                execution=execution,
                spark_master=spark_master,
                spark_threshold_bytes=spark_threshold_bytes,
                on_records=on_records,
                on_warning=on_warning,
                target=target,
                data_slot=data_slot,
            )
        except BaseException:
            if not self.ledger.all_progress(plan.replay_id):
                # nothing delivered (refused before it started: a missing target topic, ...):
                # no resume point to protect; a run of it takes the lease again
                leases.release(holder)
            raise
        if report.status in FINISHED_STATUSES or report.status == "already-done":
            leases.release(holder)
        report.notes = [*self.notes, *report.notes]
        return report

    def prepare_target(self, plan: ReplayPlan) -> TargetInfo:
        """What :meth:`run` does first, asked ahead: record ``plan`` in the ledger, then check
        the target, creating the target topic (and the progress topic) when the plan asks -
        so that a caller running many replays (a restore) creates the next ones' topics while
        others send. Pass the answer to :meth:`run` (``target``). Registered before anything
        is created, so a topic this made is always a known replay's own (a resumed restore
        does not take it for a name collision).

        Raises:
            the target checks' errors (:func:`~kafka_archive.replay.runner.check_target`).
        """
        from kafka_archive.replay.execution.batch_engine import probe_ahead
        from kafka_archive.replay.runner import check_target

        self.ledger.register(plan)
        probe_ahead(plan)  # (cached: the run's partitions take its answer)
        return check_target(plan)

    def _run(
        self,
        plan: ReplayPlan,
        *,
        execution: Execution,
        spark_master: str | None,
        spark_threshold_bytes: int,
        on_records: Callable[[int], None] | None,
        on_warning: Callable[[str], None] | None,
        target: TargetInfo | None,
        data_slot: AbstractContextManager[Any] | None = None,
    ) -> ReplayReport:
        from kafka_archive.replay.runner import check_target

        where = choose_execution(execution, plan.total_bytes, spark_threshold_bytes)
        if where == "in-process" and target is None:
            from kafka_archive.replay.execution.batch_engine import probe_ahead

            # which path the partitions take, asked during the target checks' round trips (not
            # during the lease's SQLite calls: each gives up the GIL, and a thread busy importing
            # kafka-python holds it up to a switch interval each time)
            probe_ahead(plan)
        if target is None:
            target = check_target(plan)
        if target.config_check is not None and on_warning is not None:
            for line in target.config_check.warnings():
                on_warning(line)
        report = self._execute(plan, target, where, spark_master, on_records, data_slot)
        report.topic_config = topic_config_view(target)
        return report

    def _execute(
        self,
        plan: ReplayPlan,
        target: TargetInfo,
        where: Literal["in-process", "spark"],
        spark_master: str | None,
        on_records: Callable[[int], None] | None,
        data_slot: AbstractContextManager[Any] | None = None,
    ) -> ReplayReport:
        from kafka_archive.replay.runner import execute

        if where == "spark":
            from kafka_archive.spark.replay import run_on_spark

            with data_slot if data_slot is not None else nullcontext():
                return run_on_spark(
                    plan,
                    store_uri=self.resources.require("store"),
                    db_url=self.resources.require("db"),
                    master=spark_master or self.resources.settings.spark_master,
                    target=target,
                )
        return execute(
            plan,
            store=self.resources.store(),
            target=target,
            ledger=self.ledger,
            on_records=on_records,
            data_slot=data_slot,
        )

    def resumable(
        self, replay_id: str, *, target_config: Mapping[str, str], allow_gaps: bool = False
    ) -> ReplayPlan:
        """The stored plan of ``replay_id``, with the target settings given again (the
        catalog never stores secrets) and, if asked, gaps allowed.

        Raises:
            ReplayConfigError: no such replay, or its target needs secrets not given.
        """
        from kafka_archive.replay.planning.stability import refresh_plan

        plan = self._stored(replay_id, target_config=target_config)
        # what was archived since (a marker of a transaction that held the run back) is read
        plan = refresh_plan(plan, self.source())
        if allow_gaps and not plan.spec.allow_gaps:
            spec = plan.spec.model_copy(update={"allow_gaps": True})
            plan = plan.model_copy(update={"spec": spec})
        return plan

    def _stored(self, replay_id: str, *, target_config: Mapping[str, str]) -> ReplayPlan:
        """The stored plan of ``replay_id`` as it was planned, with the target settings given
        again (what fencing its producers needs: no archive read).

        Raises:
            ReplayConfigError: no such replay, or its target needs secrets not given.
        """
        from kafka_archive.replay.errors import ReplayConfigError

        plan = self.ledger.plan(replay_id)
        if plan is None:
            raise ReplayConfigError(
                f"no replay {replay_id!r} in the catalog", hint="see `kafka-archive replay status`"
            )
        plan = plan.with_target(plan.spec.target.with_config(dict(target_config)))
        if plan.has_redacted_secrets:
            raise ReplayConfigError(
                "the target needs secret settings that the catalog does not store",
                hint="give them again with --target-config NAME=VALUE",
                missing="target secrets",
            )
        return plan

    def abandon(
        self, replay_id: str, *, target_config: Mapping[str, str], fence: bool = True
    ) -> dict[str, Any]:
        """Close an unfinished replay explicitly: fence its producers on the target (a killed
        run's open transaction is aborted at once), release its object lease (prune may take
        its data) and mark it ``abandoned`` (a re-run of its request plans a new replay).
        ``fence=False``: the target is gone; release without fencing. Returns what was done.

        Raises:
            ReplayConfigError: no such replay, it is finished, or the target needs secrets.
            ReplayBusyError: a live run holds the replay.
            ReplayTargetError: the target did not answer the fencing (nothing is released).
        """
        from kafka_archive.replay.bookkeeping.lease import ReplayLease
        from kafka_archive.replay.errors import ReplayConfigError
        from kafka_archive.replay.planning.completeness import FINISHED_STATUSES
        from kafka_archive.replay.planning.intent import ABANDONED
        from kafka_archive.replay.planning.intent import fence as fence_producers

        run = self.ledger.run(replay_id)
        if run is None:
            raise ReplayConfigError(
                f"no replay {replay_id!r} in the catalog", hint="see `kafka-archive replay status`"
            )
        if run.status in FINISHED_STATUSES:
            raise ReplayConfigError(
                f"replay {replay_id} is {run.status}: there is nothing to abandon",
                hint="a finished replay holds no lease and no open transaction",
            )
        if run.status == ABANDONED:
            return {"replay_id": replay_id, "status": ABANDONED, "fenced": [], "changed": False}
        if fence:
            plan = self._stored(replay_id, target_config=target_config)
        else:
            stored = self.ledger.plan(replay_id)
            assert stored is not None
            plan = stored
        with ReplayLease(self.ledger.engine, replay_id):  # refuses while a live run holds it
            fenced = fence_producers(plan) if fence else []
            self.ledger.set_status(
                replay_id,
                ABANDONED,
                error=None if fence else "abandoned without fencing its producers (--no-fence)",
            )
            self._leases().release(lease_holder(plan))
        return {"replay_id": replay_id, "status": ABANDONED, "fenced": fenced, "changed": True}

    def status(
        self,
        *,
        replay_id: str | None = None,
        cluster: str | None = None,
        topic: str | None = None,
    ) -> list[dict[str, Any]]:
        """Replays in the catalog with their per-partition progress, newest first (one dict
        per replay, the form ``replay status --json`` prints).

        Raises:
            ReplayConfigError: ``replay_id`` is given and unknown.
        """
        from kafka_archive.replay.errors import ReplayConfigError

        runs = self.ledger.runs(cluster=cluster, topic=topic)
        if replay_id:
            runs = [r for r in runs if r.replay_id == replay_id]
            if not runs:
                raise ReplayConfigError(
                    f"no replay {replay_id!r} in the catalog",
                    hint="see `kafka-archive replay status`",
                )
        return [self._status_of(r) for r in runs]

    def _status_of(self, run: Any) -> dict[str, Any]:
        from kafka_archive.replay.bookkeeping.lease import run_alive
        from kafka_archive.replay.planning.intent import (
            CLOSED_STATUSES,
            INTERRUPTED,
            abandon_command,
            resume_command,
        )
        from kafka_archive.replay.planning.plan import ReplayPlan

        progress = self.ledger.all_progress(run.replay_id)
        plan = ReplayPlan.from_json(run.plan_json)
        status = run.status
        if status == "running" and not run_alive(self.ledger.engine, run.replay_id):
            status = INTERRUPTED  # its run is gone (killed): resumable, not running
        resumable = status not in CLOSED_STATUSES
        return {
            "replay_id": run.replay_id,
            "status": status,
            "resumable": resumable,
            "resume": resume_command(run.replay_id) if resumable else None,
            "abandon": abandon_command(run.replay_id) if resumable else None,
            "cluster": run.cluster,
            "topic": run.topic,
            "target": run.target,
            "target_topic": run.target_topic,
            "partition_mapping": run.partition_mapping,
            "created_at_ms": run.created_at_ms,
            "finished_at_ms": run.finished_at_ms,
            "error": run.error,
            "allow_gaps": plan.spec.allow_gaps,
            "holes": len(plan.holes),
            "records_sent": sum(p.records_sent for p in progress),
            "offset_ranges": len(self.ledger.ranges(run.replay_id)),
            "partitions": {
                str(p.source_partition): {
                    "next_offset": p.next_offset,
                    "end_offset": p.end_offset,
                    "done": p.done,
                    "records": p.records_sent,
                    "transactions": p.txn_seq,
                    "first_offset": p.first_offset,
                    "last_offset": p.last_offset,
                }
                for p in progress
            },
        }
