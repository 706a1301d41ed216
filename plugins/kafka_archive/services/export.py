"""Exports as a service: plan a range exactly as replay does, write Parquet on Spark, commit.

:class:`ExportService` is what ``kafka-archive export``, the export DAG and
``spark_jobs/export.py`` call. The steps:

1. :meth:`ExportService.plan` - resolve the request with the replay planner
   (:func:`kafka_archive.replay.planning.plan.build_plan`): the same ``--from``/``--to`` semantics,
   the same partitions and offset ranges, the same holes. The export id is derived from the
   resolved ranges (:func:`~kafka_archive.export.manifest.export_id_for`).
2. :meth:`ExportService.run` - refuse a plan with holes (unless ``allow_gaps``); if the output's
   committed manifest already has this export id, only finish its clean-up and report it
   (re-running an export never duplicates rows) - unless that manifest says the export is
   incomplete (it stopped at the archive's last stable offset, :mod:`kafka_archive.replay.
   stability`): then it is exported again, whole; otherwise take the export's lease in the
   catalog (one live run per export id; the same lease table replays use, so retention sees
   what a running export reads), run one Spark task per partition, and commit the manifest.

Errors: :class:`~kafka_archive.replay.errors.ReplayError` subclasses for the request (unknown
topic, empty range, holes: ``ReplayGapsError``), ``ReplayBusyError`` when another run holds
the export, :class:`~kafka_archive.store.errors.StoreError` for the archive or the output (a
local output that is a file or cannot be written, and a manifest that is not one this version
reads, are refused before Spark starts),
:class:`~segment_lib.errors.SegmentError` for bad archived bytes, and Spark's own errors for a
failed job (re-running completes the export).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from kafka_archive.frozen import FrozenModel
from kafka_archive.services.resources import ResourceService

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from kafka_archive.export.manifest import ExportManifest, PartitionRange
    from kafka_archive.export.partition import PartitionExport
    from kafka_archive.replay.planning.plan import ReplayPlan
    from kafka_archive.store.base import ObjectStore

__all__ = ["ExportPlan", "ExportReport", "ExportRequest", "ExportService", "topic_ids"]

#: the export formats: Parquet files in a directory, or appends to an Iceberg table
FORMATS = ("parquet", "iceberg")
#: the placeholder target of the replay spec an export is planned with (planning never uses
#: it; it only keeps the replay id of the plan distinct from any real replay's)
_EXPORT_TARGET = "export:"


def _ranges(plan: ReplayPlan) -> list[PartitionRange]:
    from kafka_archive.export.manifest import PartitionRange

    return [
        PartitionRange(partition=p.partition, start_offset=p.start_offset, end_offset=p.end_offset)
        for p in plan.partitions
    ]


def topic_ids(engine: Engine, plan: ReplayPlan) -> dict[int, str | None]:
    """Per partition, the Kafka topic id of the archived segments the plan reads (from their
    ``partition.metadata``, as cataloged); ``None`` where the catalog has none."""
    from sqlalchemy import select

    from kafka_archive.catalog.tables import segments

    out: dict[int, str | None] = {}
    with engine.connect() as conn:
        for p in plan.partitions:
            keys = [o.key for o in p.objects] or [o.key for o in p.tail_objects]
            ids: set[str] = set()
            for i in range(0, len(keys), 500):
                rows = conn.execute(
                    select(segments.c.topic_id).where(
                        segments.c.object_key.in_(keys[i : i + 500]),
                        segments.c.topic_id.is_not(None),
                    )
                )
                ids.update(str(r[0]) for r in rows)
            # the plan reads one incarnation of the topic: one id (several: unknown which)
            out[p.partition] = ids.pop() if len(ids) == 1 else None
    return out


class ExportRequest(FrozenModel):
    """What to export: a topic's range, where to, and how.

    ``from``/``to`` are positions as replay takes them (a time in any form the CLI takes,
    ``offset:N``, ``offset:P=N,...``, ``earliest``, ``latest``); no ``to``: the end of the
    archive. ``output`` is a store URI (``file:///dir``, a path, ``s3://bucket/prefix``).
    """

    model_config = ConfigDict(populate_by_name=True)

    cluster: str = Field(min_length=1)
    topic: str = Field(min_length=1)
    from_: str = Field(alias="from", min_length=1)
    to: str | None = None
    partitions: list[int] | None = None
    output: str = Field(min_length=1)
    format: str = "parquet"
    #: ``--format iceberg``: the table ``CATALOG.NAMESPACE.TABLE`` (default
    #: ``kafka_archive.<cluster>.<topic>``); ``output`` is then the warehouse for new tables
    table: str | None = None
    allow_gaps: bool = False
    max_rows_per_file: int | None = Field(default=None, gt=0)


class ExportPlan(BaseModel):
    """A resolved export: the replay plan of the range, the export id and the output."""

    export_id: str
    request: ExportRequest
    replay_plan_json: str
    #: Iceberg exports: the table, the offsets its last export snapshot holds (``None``: its
    #: first export), and whether nothing lies beyond them (then no plan and no export id)
    table: str | None = None
    previous_offsets: dict[int, int] | None = None
    up_to_date: bool = False

    @property
    def replay_plan(self) -> ReplayPlan:
        from kafka_archive.replay.planning.plan import ReplayPlan

        return ReplayPlan.from_json(self.replay_plan_json)

    def summary(self) -> dict[str, Any]:
        """JSON-ready description (``--dry-run``): the ranges, bytes and holes."""
        if self.up_to_date:
            return {
                "kind": "export-plan",
                "export_id": None,
                "cluster": self.request.cluster,
                "topic": self.request.topic,
                "output": self.request.output,
                "table": self.table,
                "up_to_date": True,
                "previous_offsets": self.previous_offsets,
                "partitions": [],
                "bytes": 0,
                "records_at_most": 0,
            }
        plan = self.replay_plan
        return {
            "kind": "export-plan",
            "export_id": self.export_id,
            "cluster": self.request.cluster,
            "topic": self.request.topic,
            "output": self.request.output,
            "table": self.table,
            "previous_offsets": self.previous_offsets,
            "partitions": [
                {
                    "partition": p.partition,
                    "start_offset": p.start_offset,
                    "end_offset": p.end_offset,
                    "records_at_most": p.records,
                    "bytes": p.bytes,
                    "holes": len(p.holes),
                }
                for p in plan.partitions
            ],
            "bytes": plan.total_bytes,
            "records_at_most": plan.total_records,
        }


class ExportReport(BaseModel):
    """The outcome of :meth:`ExportService.run` (``--json`` prints it as one object)."""

    kind: str = "export"
    export_id: str
    #: "committed", "already-committed", "incomplete" (committed, see below) or, for an
    #: Iceberg table holding everything archived already, "up-to-date"
    status: str
    cluster: str
    topic: str
    output: str
    manifest: str
    files: int
    rows: int
    rows_per_partition: dict[int, int]
    bytes_written: int
    bytes_read: int = 0
    aborted_records: int = 0
    control_batches: int = 0
    open_txn_records: int = 0
    #: partitions whose records above the archive's last stable offset are not in the files
    #: (the manifest says ``complete: false``; running the export again completes it)
    incomplete: list[dict[str, Any]] = Field(default_factory=list)
    #: what to do next (set when ``incomplete``)
    hint: str | None = None
    duration_s: float
    rows_per_s: float
    #: seconds each partition's Spark task took (empty when nothing was exported this run)
    task_s: dict[int, float] = Field(default_factory=dict)
    #: CPU seconds of each partition's task
    task_cpu_s: dict[int, float] = Field(default_factory=dict)
    #: Iceberg exports: the table, the snapshot committed, and the offsets the table holds
    #: now (per partition, the next offset to export)
    table: str | None = None
    snapshot_id: int | None = None
    offsets: dict[int, int] = Field(default_factory=dict)


class ExportService(ResourceService):
    """Exports over the archive and catalog the settings name (see the module docstring).

    Not thread-safe: one per command or task; close it, or use it as a context manager.
    """

    def plan(
        self,
        request: ExportRequest,
        *,
        wait_open_txns_s: float = 0,
        on_wait: Callable[[ReplayPlan], None] | None = None,
        output_options: Mapping[str, Any] | None = None,
    ) -> ExportPlan:
        """Resolve ``request`` against the catalog, as replay would plan it (``wait_open_txns_s``
        / ``on_wait``: as :meth:`~kafka_archive.services.replay.ReplayService.plan`).

        Raises:
            ReplayConfigError: a bad position, an unknown topic or partition, an empty range
                (for an Iceberg table that has exports: a plan that is ``up_to_date``
                instead), a bad ``table``, or a format other than ``parquet``/``iceberg``.
        """
        from kafka_archive.export.manifest import export_id_for
        from kafka_archive.replay.errors import ReplayConfigError
        from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
        from kafka_archive.replay.planning.plan import TargetSpec
        from kafka_archive.replay.runner import plan_replay
        from kafka_archive.services.replay import spec_from_request

        if request.format not in FORMATS:
            raise ReplayConfigError(
                f"unknown export format {request.format!r}",
                hint="Use --format parquet or --format iceberg.",
            )

        def plan_from(from_: str) -> ReplayPlan:
            spec = spec_from_request(
                {
                    "cluster": request.cluster,
                    "topic": request.topic,
                    "partitions": request.partitions,
                    "from": from_,
                    "to": request.to,
                    "allow_gaps": request.allow_gaps,
                },
                TargetSpec(bootstrap_servers=_EXPORT_TARGET, name="export"),
            )

            def once() -> ReplayPlan:
                return plan_replay(
                    spec, CatalogPlanSource(self.resources.catalog(), self.resources.store())
                )

            plan = once()
            if plan.incomplete and wait_open_txns_s > 0:
                from kafka_archive.replay.planning.stability import wait_until_stable

                plan = wait_until_stable(once, wait_open_txns_s, on_wait=on_wait)
            return plan

        if request.format == "iceberg":
            from kafka_archive.services.export_iceberg import plan_iceberg

            return plan_iceberg(self, request, plan_from, dict(output_options or {}))
        plan = plan_from(request.from_)
        ranges = _ranges(plan)
        return ExportPlan(
            export_id=export_id_for(request.cluster, request.topic, ranges),
            request=request,
            replay_plan_json=plan.to_json(),
        )

    def run(
        self,
        plan: ExportPlan,
        *,
        spark_master: str | None = None,
        spark: Any = None,
        output_options: Mapping[str, Any] | None = None,
        store_options: Mapping[str, Any] | None = None,
    ) -> ExportReport:
        """Export ``plan`` on Spark and commit it (see the module docstring).

        ``output_options``/``store_options``: store options (e.g. ``endpoint_url``) for the
        output and the archive, given to every executor too.
        """
        from kafka_archive.export.manifest import (
            check_output,
            clean_output,
            commit,
            open_export_stores,
            read_manifest,
        )
        from kafka_archive.replay.planning.stability import INCOMPLETE
        from kafka_archive.replay.runner import require_complete

        if plan.request.format == "iceberg":
            from kafka_archive.services.export_iceberg import run_iceberg

            return run_iceberg(
                self, plan, spark_master=spark_master, spark=spark,
                output_options=dict(output_options or {}),
                store_options=dict(store_options or {}),
            )  # fmt: skip
        started = time.monotonic()
        replay_plan = plan.replay_plan
        require_complete(replay_plan)
        output, meta = open_export_stores(plan.request.output, **dict(output_options or {}))
        try:
            check_output(output)  # a bad --output is one line here, not a Spark job's stacks
            existing = read_manifest(meta, output)
            if existing is not None and existing.export_id == plan.export_id:
                clean_output(output, meta, existing)  # finishes an interrupted clean-up
                if existing.complete:
                    return self._report(
                        existing, "already-committed", started, output.uri, [], meta.uri
                    )
                # an incomplete export (stopped at the archive's last stable offset) is never
                # served as done: it is exported again, whole, and its manifest replaced
            manifest, results = self._export(
                plan, replay_plan, meta, spark_master, spark,
                dict(output_options or {}), dict(store_options or {}),
            )  # fmt: skip
            commit(output, meta, manifest)
            status = "committed" if manifest.complete else INCOMPLETE
            return self._report(manifest, status, started, output.uri, results, meta.uri)
        finally:
            output.close()
            meta.close()

    def _export(
        self,
        plan: ExportPlan,
        replay_plan: ReplayPlan,
        staging: ObjectStore,
        spark_master: str | None,
        spark: Any,
        output_options: dict[str, Any],
        store_options: dict[str, Any],
    ) -> tuple[ExportManifest, list[PartitionExport]]:
        """Run the tasks under the export's lease: ``(manifest to commit, task results)``;
        the tasks stage their files in ``staging`` (the bookkeeping store)."""
        from kafka_archive.catalog.leases import ObjectLeases
        from kafka_archive.export.manifest import manifest_for
        from kafka_archive.export.partition import PartitionExport
        from kafka_archive.replay.bookkeeping.lease import ReplayLease
        from kafka_archive.replay.planning.stability import incomplete_rows
        from kafka_archive.services.replay import lease_ranges, refuse_pruned
        from kafka_archive.spark.export import ExportTask, run_export_tasks

        catalog = self.resources.catalog()
        ids = topic_ids(catalog.engine, replay_plan)
        tasks = [
            ExportTask(
                export_id=plan.export_id,
                topic=plan.request.topic,
                partition_plan_json=p.model_dump_json(),
                store_uri=self.resources.require("store"),
                output_uri=staging.uri,
                store_options=store_options,
                output_options=output_options,
                max_rows_per_file=plan.request.max_rows_per_file,
                topic_id=ids.get(p.partition),
            )
            for p in replay_plan.partitions
            if not p.empty
        ]
        ranges = lease_ranges(replay_plan)
        # one live run per export id, and the offsets it reads leased so that prune leaves
        # them (a range pruned since planning is refused, as for a replay)
        with (
            ReplayLease(catalog.engine, plan.export_id),
            ObjectLeases(catalog.engine).hold(f"export:{plan.export_id}", ranges),
        ):
            refuse_pruned(catalog, replay_plan, ranges)
            rows = run_export_tasks(
                tasks, master=spark_master or self.resources.settings.spark_master, spark=spark
            )
        results = [PartitionExport.from_dict(r) for r in rows]
        manifest = manifest_for(
            export_id=plan.export_id,
            cluster=plan.request.cluster,
            topic=plan.request.topic,
            topic_id=next(iter(set(ids.values()))) if len(set(ids.values())) == 1 else None,
            ranges=_ranges(replay_plan),
            files=[f for r in results for f in r.files],
            aborted_records=sum(r.aborted_records for r in results),
            control_batches=sum(r.control_batches for r in results),
            open_txn_records=sum(r.open_txn_records for r in results),
            incomplete=incomplete_rows(
                replay_plan, {r.partition: r.stopped_at for r in results if r.stopped_at >= 0}
            ),
        )
        return manifest, results

    @staticmethod
    def _report(
        manifest: ExportManifest,
        status: str,
        started: float,
        uri: str,
        results: list[PartitionExport],
        meta_uri: str,
    ) -> ExportReport:
        from kafka_archive.export.manifest import MANIFEST_KEY
        from kafka_archive.replay.planning.stability import INCOMPLETE_HINT

        per: dict[int, int] = {r.partition: 0 for r in manifest.ranges}
        for f in manifest.files:
            per[f.partition] = per.get(f.partition, 0) + f.rows
        duration = time.monotonic() - started
        return ExportReport(
            export_id=manifest.export_id,
            status=status,
            cluster=manifest.cluster,
            topic=manifest.topic,
            output=uri,
            manifest=f"{meta_uri}/{MANIFEST_KEY}",
            files=len(manifest.files),
            rows=manifest.rows,
            rows_per_partition=per,
            bytes_written=sum(f.bytes for f in manifest.files),
            bytes_read=sum(r.bytes_read for r in results),
            aborted_records=manifest.aborted_records,
            control_batches=manifest.control_batches,
            open_txn_records=manifest.open_txn_records,
            incomplete=manifest.incomplete,
            hint=None if manifest.complete else INCOMPLETE_HINT,
            duration_s=round(duration, 3),
            rows_per_s=round(manifest.rows / duration, 1) if duration > 0 else 0.0,
            task_s={r.partition: r.duration_s for r in results},
            task_cpu_s={r.partition: r.cpu_s for r in results},
        )
